"""GPU correctness: every variant on shapes derived from its tiles and rules, against the float64
reference, with the output poisoned with NaN (an unwritten element fails) and NaN guard zones
around it (a write outside C fails). Tolerances: cugemm.accuracy.TOLERANCE, the one table."""
import dataclasses

import pytest

import cugemm
from cugemm import accuracy, testing
from cugemm.registry import variants

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")


def shapes_for(v):
    """(M, N, K) cases for a variant: the smallest legal shape, a non-square multi-tile one and a
    large one; any-shape variants add primes, 1x1x1, K below the K slice and odd row lengths;
    variants that take any M with N, K multiples of their row alignment (16-byte rows) add shapes
    that cut every tile edge within that rule."""
    bk = max(v.tile[2], 8)
    cases = [v.tile_shape(), v.tile_shape(3, 2, max(5, 40 // bk)),
             v.tile_shape(-(-2048 // v.tile[0]), -(-1536 // v.tile[1]), -(-1024 // max(v.tile[2], 1)))]
    if v.any_shape:
        cases += [(1, 1, 1), (257, 263, 251), (127, 131, bk + 3), (64, 96, 3),
                  (33, 17, 9), (1, 1000, 37), (1000, 1, 37)]
    elif v.multiple_of[0] == 1:
        an, ak = v.multiple_of[1], v.multiple_of[2]
        cases += [(1, an, ak), (17, 3 * an, ak), (127, an, 512 * ak), (255, 33 * an, 9 * ak),
                  (4095, 513 * an, 127 * ak)]
    if v.max_m:  # kernels for skinny products: the same N and K, M within its limit
        cases = list(dict.fromkeys((min(M, v.max_m), N, K) for M, N, K in cases))
    return cases


CASES = [(v, s) for v in variants() for s in shapes_for(v)]


def randn(*shape):
    return cupy.random.standard_normal(shape, dtype=cupy.float32)


def operands(v, M, N, K):
    """Fresh random normal A (MxK) and B (KxN) in the variant's dtype and layouts (a 'col' operand
    is column-major: the transposed view of a row-major array, as x.T or W.T would be)."""
    return testing.variant_operands(v, M, N, K)


def run_checked(v, a, b, guard=64):
    """Run into a NaN-poisoned C that sits between two NaN guard zones; return (C, guards intact)."""
    return testing.run_guarded(v, a, b, guard)


@pytest.mark.parametrize("v,shape", CASES, ids=[f"{v.name}-{'x'.join(map(str, s))}" for v, s in CASES])
def test_matches_float64_reference(v, shape):
    a, b = operands(v, *shape)
    c, guards_ok = run_checked(v, a, b)
    # scaled: the smallest legal shapes (1 x 1 x 4 for TF32 with a column-major B) are single dot
    # products, which may cancel
    err = accuracy.scaled_error(c, a, b, accuracy.reference(a, b))
    ok = accuracy.within(err, v.math_dtype, v.dtype_acc)
    assert guards_ok, f"{v.name} wrote outside C at {shape}"
    assert not bool(cupy.isnan(testing.to_float64(c)).any()), f"{v.name} left elements of C unwritten at {shape}"
    assert ok, f"{v.name} {shape}: rel err {err:.2e} over {accuracy.tolerance(v.math_dtype, v.dtype_acc)}"


@pytest.mark.parametrize("v", [v for v in variants(any_shape=True) if v.align <= 4], ids=lambda v: v.name)
def test_any_shape_variant_takes_unaligned_views(v):
    # operands that start 4 bytes into an allocation, with odd row lengths
    M, N, K = 77, 45, 29
    a = randn(M * K + 1).astype(v.dtype_in)[1:].reshape(M, K)
    b = randn(K * N + 1).astype(v.dtype_in)[1:].reshape(K, N)
    if v.layout == "col":
        a = a.ravel().reshape(K, M).T
        b = b.ravel().reshape(N, K).T
    assert a.data.ptr % 16 and b.data.ptr % 16
    c = cugemm.run(v, a, b)
    assert accuracy.check(c, accuracy.reference(a, b), v)[1]


def test_out_none_allocates_and_matches_out():
    v = cugemm.get_variant("sgemm_warp_tile")
    a, b = randn(256, 128), randn(128, 512)
    c1 = cugemm.run(v, a, b)
    c2 = cupy.full((256, 512), cupy.nan, dtype=cupy.float32)
    cugemm.run(v.name, a, b, out=c2)
    assert c1.shape == (256, 512) and c1.dtype == cupy.float32
    assert bool((c1 == c2).all())


@pytest.mark.parametrize("shape", [(0, 128, 8), (128, 0, 8), (128, 128, 0), (0, 0, 0)])
def test_zero_sizes_need_no_launch(shape):
    M, N, K = shape
    a, b = randn(M, K), randn(K, N)
    c = cugemm.run("sgemm_any_shape", a, b)
    assert c.shape == (M, N)
    assert bool((c == 0).all())
    out = cupy.full((M, N), cupy.nan, dtype=cupy.float32)
    assert cugemm.run("sgemm_t_8x8_sliced_k_f32x4", a, b, out=out) is out and bool((out == 0).all())


def test_real_arrays_rejected_before_launch():
    v = cugemm.get_variant("sgemm_t_8x8_sliced_k_f32x4")
    a, b = randn(128, 16), randn(16, 256)
    with pytest.raises(ValueError, match="C-contiguous"):
        cugemm.run(v, cupy.asfortranarray(a), b)
    with pytest.raises(ValueError, match="C-contiguous"):
        cugemm.run(v, a, randn(16, 512)[:, ::2])
    with pytest.raises(ValueError, match="16-byte aligned"):
        cugemm.run(v, randn(128 * 16 + 1)[1:].reshape(128, 16), b)
    with pytest.raises(TypeError, match="float64"):
        cugemm.run(v, a.astype(cupy.float64), b)
    with pytest.raises(ValueError, match="not a multiple of 128"):
        cugemm.run(v, randn(100, 16), b)


def test_too_old_gpu_is_refused():
    v = dataclasses.replace(cugemm.get_variant("sgemm_naive_f32"), name="future_kernel", min_arch=990)
    with pytest.raises(RuntimeError, match="needs compute capability"):
        cugemm.run(v, randn(16, 16), randn(16, 16))


class _CAI:
    def __init__(self, arr):
        self.arr = arr
        self.__cuda_array_interface__ = arr.__cuda_array_interface__


def test_cuda_array_interface_inputs_without_copy():
    a, b = randn(128, 64), randn(64, 256)
    out = cupy.full((128, 256), cupy.nan, dtype=cupy.float32)
    got = cugemm.run("sgemm_warp_tile", _CAI(a), _CAI(b), out=_CAI(out))
    assert got.data.ptr == out.data.ptr  # written in place: no copy was made
    assert accuracy.within(accuracy.rel_error(out, accuracy.reference(a, b)), "float32", "float32")


def test_dlpack_inputs():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    a = torch.randn(128, 64, device="cuda")
    b = torch.randn(64, 256, device="cuda")
    c = cugemm.run("sgemm_warp_tile", a, b)
    ref = (a.double() @ b.double()).cpu().numpy()
    assert abs(cupy.asnumpy(c) - ref).max() < 1e-3


def _bf16_variant():
    bf = variants(dtype="bfloat16")
    assert bf, "no bfloat16 variant registered"
    return bf[0]


def test_bf16_from_cupy_and_torch():
    """bfloat16 from CuPy (ml_dtypes arrays) and from torch (its __cuda_array_interface__ says
    only '<V2'; cugemm reads the tensor's dtype, and a torch `out` is written in place)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("ml_dtypes")
    v = _bf16_variant()
    M, N, K = v.tile_shape(2, 1, 2)
    a, b = testing.random_operands("bfloat16", M, N, K)
    ref = accuracy.reference(a, b)
    c = cugemm.run(v, a, b)
    assert c.dtype.name == "bfloat16" and accuracy.check(c, ref, v)[1]
    ta = torch.from_dlpack(a)
    tb = torch.from_dlpack(b)
    assert ta.dtype == torch.bfloat16
    tout = torch.full((M, N), float("nan"), dtype=torch.bfloat16, device="cuda")
    got = cugemm.run(v, ta, tb, out=tout)
    torch.cuda.synchronize()
    assert got.data.ptr == tout.data_ptr() and got.dtype.name == "bfloat16"
    assert accuracy.check(got, ref, v)[1]
    with pytest.raises(TypeError, match="the variant takes bfloat16"):
        cugemm.run(v, ta.half(), tb.half())


def test_runs_on_the_current_stream():
    a, b = randn(512, 256), randn(256, 512)
    ref = accuracy.reference(a, b)
    with cupy.cuda.Stream(non_blocking=True) as s:
        c = cugemm.run("sgemm_warp_tile", a, b)
        s.synchronize()
    assert accuracy.within(accuracy.rel_error(c, ref), "float32", "float32")
