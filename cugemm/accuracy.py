"""How cugemm decides a result is right: the float64 reference and the one tolerance table.

The reference multiplies the same (already rounded) inputs in float64 on the GPU. The error of a
result C is the relative Frobenius norm ||C - ref|| / ||ref||; NaN anywhere (an element the kernel
never wrote, since tests and the bench poison the output with NaN first) makes it NaN, which fails.

TOLERANCE is keyed by (math dtype, accumulate dtype): the type the multiplies see (the input type,
or 'tfloat32' for TF32 tensor-core variants of float32 inputs) and the accumulator's. Each bound sits
well above the error measured on an H200 (random normal inputs) and well below what a real indexing
or pipeline bug gives (a wrong or missing K slice is an O(1e-1) error):
  (float32, float32): every FFMA variant and cupy.matmul measured 5.7e-7 at 4096x4096x1024 and
                      1.1e-6 at 4096x4096x4096 -> bound 1e-5.
  (float16, float32): fp16 inputs and output, fp32 accumulation (tensor cores): 2.1e-4 at K=1024 and
                      K=4096, the same as cupy.matmul (it is the fp16 rounding of C) -> bound 2e-3.
  (float16, float16): fp16 accumulation (half2 kernels, WMMA _f16acc): grows as sqrt(K): 4.7e-3
                      at K=1024, 9.3e-3 at K=4096, 1.3e-2 at 8192^3 -> bound 2e-2, which holds to
                      K of about 16k; past that, accumulate in fp32.
  (bfloat16, float32): bf16 inputs and output, fp32 accumulation: dominated by the bf16 rounding of
                      C (8 significant bits, unit roundoff 3.9e-3: about 1.6e-3 expected for random
                      data) -> bound 1e-2.
  (tfloat32, float32): TF32 multiplies of fp32 inputs: 2.9e-4 at 4096^3 and 3.0e-4 at 8192^3, the
                      same as cupy.matmul with CUPY_TF32=1 -> bound 2e-3.
  (float8_e4m3fn / float8_e5m2, float32): 8-bit inputs against the float64 product of the same
                      8-bit values (quantisation is the caller's; scales included), bf16 / fp16 /
                      fp32 out: the bf16 rounding of C (1.7e-3 measured, H100) plus the FP8 tensor
                      cores' accumulation where K is summed inside them (fast accumulation: 1.1e-3 at
                      K = 4096 in fp32 out, 2.1e-3 in bf16 out; promoted every 128 k: 1.0e-4) -> bound 1e-2.
"""
from __future__ import annotations

import math

from . import dtypes
from .testing import to_float64

TOLERANCE: dict[tuple[str, str], float] = {
    ("float32", "float32"): 1e-5,
    ("float16", "float32"): 2e-3,
    ("float16", "float16"): 2e-2,
    ("bfloat16", "float32"): 1e-2,
    ("tfloat32", "float32"): 2e-3,
    ("float8_e4m3fn", "float32"): 1e-2,
    ("float8_e5m2", "float32"): 1e-2,
}


def tolerance(math_dtype, dtype_acc) -> float:
    key = (dtypes.get(math_dtype).name, dtypes.get(dtype_acc).name)
    try:
        return TOLERANCE[key]
    except KeyError:
        raise KeyError(f"no tolerance documented for {key[0]} multiplies accumulated in {key[1]}; "
                       "add it to cugemm.accuracy.TOLERANCE") from None


def reference(a, b):
    """A @ B in float64 on the GPU, from the same (already rounded) inputs."""
    import cupy

    return cupy.matmul(to_float64(a), to_float64(b))


def rel_error(c, ref) -> float:
    """||C - ref||_F / ||ref||_F in float64; NaN when C holds a NaN or Inf."""
    import cupy

    diff = to_float64(c) - ref
    num = float(cupy.sqrt(cupy.sum(diff * diff)))
    den = float(cupy.sqrt(cupy.sum(ref * ref)))
    if not math.isfinite(num):
        return float("nan")
    return num / den if den else num


def scaled_error(c, a, b, ref) -> float:
    """rel_error, except that the scale is the larger of ||ref|| and || |A| |B| || / sqrt(K): a
    product of a few elements can cancel (one dot product of random values may be near 0), and then
    its relative error says nothing about the kernel (TF32's rounding of the terms, 2^-11 each, is
    then a large part of a small sum). For random matrices of many elements the second term is the
    smaller one (|A| |B| grows as K, A B as sqrt(K)), so the bound is the table's. a, b: the
    operands (batched or 2-D), ref their float64 product."""
    import cupy

    err = rel_error(c, ref)
    K = a.shape[-1]
    absref = cupy.matmul(cupy.abs(to_float64(a)), cupy.abs(to_float64(b)))
    scale = float(cupy.linalg.norm(absref.ravel())) / math.sqrt(max(K, 1))
    den = float(cupy.linalg.norm(ref.ravel()))
    return err * den / max(den, scale) if den and math.isfinite(err) else err


def within(err: float, math_dtype, dtype_acc) -> bool:
    return math.isfinite(err) and err <= tolerance(math_dtype, dtype_acc)


def check(c, ref, variant) -> tuple[float, bool]:
    """(relative error, within the variant's tolerance)."""
    err = rel_error(c, ref)
    return err, within(err, variant.math_dtype, variant.dtype_acc)
