"""FP8 quantisation: cugemm.quantize_fp8 makes the operands and scales of cugemm.scaled_matmul.

    q, s = quantize_fp8(x, block=(1, 128))                 # activations: a scale per 1 x 128 block
    q, s = quantize_fp8(w, block=(128, 128), dtype="e4m3")  # weights: per 128 x 128 block
    x_approx = to_float64(q) * <s broadcast over its blocks>

x       a 2-D CUDA array (R, C): a CuPy array of float32, float16 or ml_dtypes.bfloat16, or a torch
        CUDA tensor of float32, float16 or bfloat16. The results are of x's library, on x's device
        and current stream.
block   the blocks that share one scale, and the scale's shape:
            "tensor"      one block (R, C)                     scale shape ()
            "row"         one per row: blocks (1, C)           scale shape (R, 1)
            "col"         one per column: blocks (R, 1)        scale shape (1, C)
            (br, bc)      br x bc blocks (positive ints), the last row and column of blocks partial
                          where br, bc do not divide R, C      scale shape (ceil(R/br), ceil(C/bc))
        (1, 128) are DeepSeek-V3's activation blocks, (128, 128) its weight blocks.
dtype   "float8_e4m3fn" ("e4m3", largest finite 448) or "float8_e5m2" ("e5m2", largest 57344).

Returns (q, scale). scale: float32, scale = amax(|x| over the block) / FP8_MAX (the float32
division, correctly rounded), and 1.0 for a block whose amax is 0. q: x's shape, row-major, its
rows 16-byte aligned (C % 16 != 0: a view of an (R, C rounded up to a multiple of 128) buffer whose
padding holds zeros (row_length), so that cugemm.scaled_matmul's tensor maps read it in place, as they read C % 16 == 0 rows,
instead of copying it), the 8-bit type: torch.float8_e4m3fn / torch.float8_e5m2 tensors, or CuPy arrays of dtype
ml_dtypes.float8_e4m3fn / float8_e5m2. CuPy (14) accepts those dtypes for arrays and views but has
no arithmetic, astype or copy kernels for them: read such an array through `q.view(cupy.uint8)`
or `to_float64(q)`. Each element is q = x / scale, the float32 quotient rounded to the nearest
8-bit value (ties to even) and saturated to +-FP8_MAX (the quotient exceeds FP8_MAX only by a
rounding of the division); so x ~ q * scale within one 8-bit rounding (relative 2^-4 for e4m3,
2^-3 for e5m2, plus half the smallest subnormal times the scale near zero). The torch and CuPy
paths give the same bits: the same float32 division, then the same rounding (torch's conversion
after clamping; CuPy's through the hardware's cvt.rn.satfinite, sm_89 and newer).

NaN and Inf are not checked (that would cost a device sync): a NaN or Inf in a block makes that
block's scale NaN or Inf and its q values NaN or 0, and cugemm.scaled_matmul refuses non-finite
scales when it checks them.

cast_fp8(x32, dtype): a float32 CuPy array rounded to the 8-bit type as it is (no scale).
Also here, with no GPU needed: scale_shape(shape, block); encode_fp8_numpy (the rounding above,
in NumPy: the reference the GPU paths are tested against); fp8_table (the 256 values of an 8-bit
type); quantize_fp8_numpy and dequantize_numpy (the whole quantiser and its inverse in NumPy). On
the GPU, to_float64(q) reads 8-bit arrays exactly: cupy.asarray(fp8_table(name))[q.view(cupy.uint8)].
"""
from __future__ import annotations

import numbers
import sys

import numpy as np

from . import dtypes, operand
from .ints import cdiv

WHO = "cugemm.quantize_fp8"
ROW_ALIGN = 16  # q's rows start a multiple of 16 bytes apart (TMA's rule for the rows scaled_matmul reads)
PAD_ALIGN = 128  # rows that need padding are padded to a multiple of 128 bytes: TMA reads rows whose
# starts are not 128 bytes apart at about 2/3 of the speed (H100, 1000 x 7776 x K: 607 TFLOP/s with
# 2064-byte rows against 947 with 2048 and 978 with 2176)


def row_length(C: int) -> int:
    """The row length (bytes = elements) of q for C columns: C where C % 16 == 0, else C rounded up
    to a multiple of 128."""
    return C if C % ROW_ALIGN == 0 else cdiv(C, PAD_ALIGN) * PAD_ALIGN
INPUTS = ("float32", "float16", "bfloat16")
_FORMATS = {"float8_e4m3fn": (4, 3, 7), "float8_e5m2": (5, 2, 15)}  # exponent bits, mantissa bits, bias
_NAN = 0x7F  # the NaN code encode_fp8_numpy writes (a NaN in both formats)


# ---- names and shapes (no GPU) -------------------------------------------------------------------
def fp8_dtype(dtype) -> dtypes.DType:
    """The cugemm DType of an 8-bit float name ('float8_e4m3fn', 'e4m3', 'float8_e5m2', 'e5m2'),
    DType or dtype; TypeError for anything else."""
    try:
        d = dtypes.get(dtype)
    except TypeError:
        d = None
    if d is None or not d.fp8:
        raise TypeError(f"{WHO}: dtype {dtype!r} is not an 8-bit float; pass 'float8_e4m3fn' ('e4m3') "
                        f"or 'float8_e5m2' ('e5m2')")
    return d


def block_dims(shape: tuple, block) -> tuple:
    """(br, bc): the rows and columns of one block of `block` (module docstring) over an array of
    `shape` (R, C); ValueError for a block of no known form."""
    R, C = shape
    if isinstance(block, str):
        dims = {"tensor": (R, C), "row": (1, C), "col": (R, 1)}.get(block)
        if dims is None:
            raise ValueError(f"{WHO}: block {block!r} is none of 'tensor', 'row', 'col' or (rows, cols)")
        return max(dims[0], 1), max(dims[1], 1)  # an empty x still has blocks of positive size
    if isinstance(block, (tuple, list)) and len(block) == 2 and all(
            isinstance(b, numbers.Integral) and not isinstance(b, bool) and b > 0 for b in block):
        return int(block[0]), int(block[1])
    raise ValueError(f"{WHO}: block {block!r} is none of 'tensor', 'row', 'col' or (rows, cols) of two "
                     f"positive ints, e.g. (1, 128) or (128, 128)")


def scale_shape(shape: tuple, block) -> tuple:
    """The shape of the scales of an (R, C) array quantised in `block`s: () for 'tensor', (R, 1)
    for 'row', (1, C) for 'col', (ceil(R/br), ceil(C/bc)) for (br, bc)."""
    (R, C), (br, bc) = shape, block_dims(shape, block)
    if isinstance(block, str):  # these shapes also when x is empty
        return {"tensor": (), "row": (R, 1), "col": (1, C)}[block]
    return cdiv(R, br), cdiv(C, bc)


# ---- the 8-bit formats in NumPy (no GPU) -------------------------------------------------------------
def fp8_table(dtype) -> np.ndarray:
    """The float64 value of each of the 256 codes of an 8-bit float (index = the bit pattern):
    e4m3fn has NaN at 0x7F and 0xFF and no infinities; e5m2 has +-inf at 0x7C / 0xFC and NaN where
    the exponent is 31 and the mantissa is not 0. -0.0 at 0x80."""
    name = fp8_dtype(dtype).name
    e, m, bias = _FORMATS[name]
    code = np.arange(256)
    exp, man = (code >> m) & ((1 << e) - 1), code & ((1 << m) - 1)
    mag = np.where(exp == 0, man * 2.0 ** (1 - bias - m), (1 + man / 2.0 ** m) * 2.0 ** (exp - bias))
    if name == "float8_e4m3fn":
        mag[(exp == 15) & (man == 7)] = np.nan
    else:
        mag[exp == 31] = np.where(man[exp == 31] == 0, np.inf, np.nan)
    return np.where(code >= 128, -mag, mag)


def encode_fp8_numpy(x, dtype="float8_e4m3fn") -> np.ndarray:
    """The 8-bit codes (uint8, x's shape) of x taken as float32: round to nearest, ties to even,
    saturating at +-FP8_MAX (+-inf too: the hardware's satfinite), the sign kept (-0.0 and negative
    values that round to zero give 0x80), NaN -> 0x7F. Exact: the halfway points are compared in
    float64."""
    name = fp8_dtype(dtype).name
    x = np.asarray(x, dtype=np.float32)
    table = fp8_table(name)
    top = int(np.flatnonzero(table == dtypes.FP8_MAX[name])[0])  # the code of the largest finite
    pos = table[:top + 1]                                        # the non-negative finite values, rising
    a = np.abs(x).astype(np.float64)
    hi = np.minimum(np.searchsorted(pos, np.where(np.isnan(a), 0.0, a)), top)  # first value >= a
    lo = np.maximum(hi - 1, 0)
    below, above = a - pos[lo], pos[hi] - a  # above < 0 past the largest: hi (saturation)
    code = np.where(below < above, lo, np.where(above < below, hi, np.where(hi % 2 == 0, hi, lo)))
    code = code | (np.signbit(x).astype(np.int64) << 7)
    return np.where(np.isnan(x), _NAN, code).astype(np.uint8)


def quantize_fp8_numpy(x, block="tensor", dtype="float8_e4m3fn"):
    """quantize_fp8 in NumPy: (codes uint8 (R, C), scale float32 of scale_shape), the same bits as
    the GPU paths give for the same values (x: any 2-D array; it is taken as float32)."""
    name = fp8_dtype(dtype).name
    x = np.asarray(x, dtype=np.float32)
    if x.ndim != 2:
        raise ValueError(f"{WHO}: x has shape {x.shape}; it must be 2-D (R, C)")
    R, C = x.shape
    br, bc = block_dims(x.shape, block)
    if x.size == 0:
        return np.zeros(x.shape, np.uint8), np.ones(scale_shape(x.shape, block), np.float32)
    nr, nc = cdiv(R, br), cdiv(C, bc)
    pad = np.zeros((nr * br, nc * bc), np.float32)
    pad[:R, :C] = x
    amax = np.abs(pad).reshape(nr, br, nc, bc).max(axis=(1, 3))
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = np.where(amax == 0, np.float32(1), amax / np.float32(dtypes.FP8_MAX[name])).astype(np.float32)
        v = pad.reshape(nr, br, nc, bc) / scale[:, None, :, None]
    codes = encode_fp8_numpy(v.reshape(nr * br, nc * bc)[:R, :C], name)
    return codes, scale.reshape(scale_shape(x.shape, block))


def dequantize_numpy(codes, scale, block="tensor", dtype="float8_e4m3fn") -> np.ndarray:
    """float64 (R, C): the values of the 8-bit `codes` (uint8 (R, C)) times their blocks' `scale`
    (exact: a 4-bit significand times a 24-bit one)."""
    codes, scale = np.asarray(codes, np.uint8), np.asarray(scale, np.float64)
    R, C = codes.shape
    br, bc = block_dims(codes.shape, block)
    if codes.size == 0:
        return np.zeros(codes.shape)
    s = scale.reshape(cdiv(R, br), cdiv(C, bc)).repeat(br, axis=0).repeat(bc, axis=1)[:R, :C]
    return fp8_table(dtype)[codes] * s


# ---- on the GPU --------------------------------------------------------------------------------------
def quantize_fp8(x, block="tensor", dtype="float8_e4m3fn"):
    """(q, scale): x (R, C) quantised to an 8-bit float with one float32 scale per block (module
    docstring): block 'tensor', 'row', 'col' or (rows, cols); dtype 'float8_e4m3fn' or 'float8_e5m2'."""
    torch_in = operand.is_torch(x)
    cupy = sys.modules.get("cupy")
    if torch_in:
        if not getattr(x, "is_cuda", False):
            raise TypeError(f"{WHO}: x is a torch tensor on {x.device}; move it to the GPU")
        dt = dtypes.from_torch(x.dtype)
    elif cupy is not None and isinstance(x, cupy.ndarray):
        dt = dtypes.from_numpy(x.dtype)
    else:
        raise TypeError(f"{WHO}: x must be a CuPy array or a torch CUDA tensor, got {type(x).__name__}")
    if x.ndim != 2:
        raise ValueError(f"{WHO}: x has shape {tuple(x.shape)}; it must be 2-D (R, C)")
    if dt is None or dt.name not in INPUTS:
        raise TypeError(f"{WHO}: x is {x.dtype}; pass float32, float16 or bfloat16")
    out = fp8_dtype(dtype)
    shape = tuple(int(n) for n in x.shape)
    dims = block_dims(shape, block)
    sshape = scale_shape(shape, block)
    if torch_in:
        return _quantize_torch(x, shape, dims, sshape, out.name)
    with x.device:
        return _quantize_cupy(cupy, x, dt, shape, dims, sshape, out)


def _quantize_torch(x, shape, dims, sshape, name):
    torch = sys.modules["torch"]
    fp8 = getattr(torch, name)
    R, C = shape
    if R * C == 0:
        return torch.empty(shape, dtype=fp8, device=x.device), torch.ones(sshape, dtype=torch.float32, device=x.device)
    (br, bc), fmax = dims, dtypes.FP8_MAX[name]
    nr, nc = cdiv(R, br), cdiv(C, bc)
    pad = torch.zeros((nr * br, nc * bc), dtype=torch.float32, device=x.device)
    pad[:R, :C] = x  # exact: float16 and bfloat16 values are float32 values
    x4 = pad.view(nr, br, nc, bc)
    amax = x4.abs().amax(dim=(1, 3))
    # divide by a GPU tensor: torch divides by a Python number as a product with its reciprocal
    # (BinaryDivTrueKernel.cu), which can differ from the division by one ulp
    scale = torch.where(amax == 0, torch.ones_like(amax), amax / torch.full_like(amax, fmax))
    v = (x4 / scale[:, None, :, None]).view(nr * br, nc * bc)[:R, :C]
    Cp = row_length(C)  # the zero padding encodes to 0
    vp = torch.zeros((R, Cp), dtype=torch.float32, device=x.device)
    vp[:, :C] = v
    q = vp.clamp_(-fmax, fmax).to(fp8)  # torch's conversion: nearest even, NaN beyond the range
    return q[:, :C], scale.reshape(sshape)


def _quantize_cupy(cupy, x, dt, shape, dims, sshape, out):
    R, C = shape
    if R * C == 0:
        return cupy.zeros(shape, cupy.uint8).view(out.numpy), cupy.ones(sshape, cupy.float32)
    if dt.name == "bfloat16":  # by its bits: no bfloat16 arithmetic in CuPy needed
        x32 = (x.view(cupy.uint16).astype(cupy.uint32) << 16).view(cupy.float32)
    else:
        x32 = x.astype(cupy.float32, copy=False)
    (br, bc), fmax = dims, np.float32(dtypes.FP8_MAX[out.name])
    nr, nc = cdiv(R, br), cdiv(C, bc)
    if (nr * br, nc * bc) != (R, C):
        pad = cupy.zeros((nr * br, nc * bc), cupy.float32)
        pad[:R, :C] = x32
        x32 = pad
    x4 = x32.reshape(nr, br, nc, bc)
    amax = cupy.abs(x4).max(axis=(1, 3))  # NaN propagates
    scale = cupy.where(amax == 0, np.float32(1), amax / fmax).astype(cupy.float32, copy=False)
    Cp = row_length(C)  # the zero padding encodes to 0
    v = cupy.zeros((R, Cp), cupy.float32)
    v[:, :C] = (x4 / scale[:, None, :, None]).reshape(nr * br, nc * bc)[:R, :C]
    return _encode_cupy(cupy, v, out.name).view(out.numpy)[:, :C], scale.reshape(sshape)


_SOURCE = r"""
extern "C" __global__ void cugemm_encode_FMT(const float* __restrict__ x, unsigned char* __restrict__ q,
                                             long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        unsigned short pair;  // {upper byte: the first source (0), lower byte: the second (x[i])}
        asm("cvt.rn.satfinite.FMTx2.f32 %0, %2, %1;" : "=h"(pair) : "f"(x[i]), "f"(0.0f));
        q[i] = (unsigned char)(pair & 0xFF);
    }
}
"""
_KERNELS: dict = {}


def _encode_cupy(cupy, v, name):
    """The 8-bit codes (uint8, v's shape) of a contiguous float32 CuPy array, by the hardware's
    cvt.rn.satfinite (nearest even, saturating): encode_fp8_numpy's bits for finite and infinite v."""
    dev = cupy.cuda.Device()
    cc = int(dev.compute_capability)
    if cc < 89:
        raise RuntimeError(f"{WHO}: converting to 8-bit floats needs an sm_89 or newer GPU; device "
                           f"{dev.id} is sm_{cc}")
    fmt = {"float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2"}[name]
    kernel = _KERNELS.get(fmt)
    if kernel is None:
        kernel = _KERNELS[fmt] = cupy.RawKernel(_SOURCE.replace("FMT", fmt), f"cugemm_encode_{fmt}")
    q = cupy.empty(v.shape, cupy.uint8)
    n = v.size
    if n:
        threads = 256
        blocks = min(cdiv(n, threads), 65535 * 8)
        kernel((blocks,), (threads,), (v, q, np.int64(n)))
    return q


def cast_fp8(x32, dtype="float8_e4m3fn"):
    """A float32 CuPy array rounded to an 8-bit float without a scale (nearest even, saturating at
    +-FP8_MAX): a CuPy array of the ml_dtypes 8-bit type, x32's shape, row-major (cugemm.testing's
    random operands)."""
    import cupy

    name = fp8_dtype(dtype).name
    v = cupy.ascontiguousarray(x32, dtype=cupy.float32)
    with v.device:
        return _encode_cupy(cupy, v, name).view(dtypes.get(name).numpy)


def to_float64(q, dtype=None):
    """An 8-bit float CuPy array or torch tensor, exactly, in float64 (same library and shape):
    CuPy through fp8_table indexed by the codes; a uint8 CuPy array of codes needs `dtype`."""
    if operand.is_torch(q):
        torch = sys.modules["torch"]
        return q.to(torch.float64)
    import cupy

    name = fp8_dtype(dtype if dtype is not None else q.dtype).name
    return cupy.asarray(fp8_table(name))[q.view(cupy.uint8)]
