"""cugemm.quantize_fp8 on a GPU (CuPy and torch inputs), held to the NumPy reference in
cugemm/quantize.py bit for bit: the hardware's cvt.rn.satfinite against encode_fp8_numpy on the same
float32 values (around every 8-bit value and halfway point, random bit patterns, past the range,
infinities); for float32, float16 and bfloat16 inputs, every block form, shapes with partial blocks
(130 x 300 in 128 x 128 and 1 x 128 blocks) and both 8-bit types: the scales equal amax / FP8_MAX
(1 for an all-zero block), the codes equal quantize_fp8_numpy's, q * scale is within one 8-bit
rounding of x (the bound below), and torch and CuPy give the same bits; transposed inputs, empty
ones, blocks holding NaN or Inf, and the input errors raised on the GPU.
"""
from __future__ import annotations

import numpy as np
import pytest

from cugemm import dtypes
from cugemm import quantize as Q

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")

NAMES = ["float8_e4m3fn", "float8_e5m2"]
INPUTS = ["float32", "float16", "bfloat16"]
BLOCKS = ["tensor", "row", "col", (1, 128), (128, 128), (3, 5), (1000, 1000)]
SHAPES = [(130, 300), (257, 129), (1, 7)]
MAN = {"float8_e4m3fn": 3, "float8_e5m2": 2}    # mantissa bits
BIAS = {"float8_e4m3fn": 7, "float8_e5m2": 15}


def bound(x, s, name):
    """The most |q * s - x| may be: the float32 quotient x / s is off by 2^-24 relative; rounding it
    to 8 bits by half an ulp, 2^-(m+1) relative (m mantissa bits), or, among the subnormals, by half
    the smallest one, 2^(-bias-m), which the scale multiplies; saturation only takes back the
    division's rounding. So (2^-(m+1) + 2^-23)|x| + s 2^(-bias-m); 2^-22 leaves a margin."""
    return (2.0 ** -(MAN[name] + 1) + 2.0 ** -22) * np.abs(x) + s * 2.0 ** -(BIAS[name] + MAN[name])


def _matrix(shape, seed=0):
    """float32 normal values whose rows and columns span 2^-12 .. 2^12 (float16 holds them), with
    zeros, -0.0 and all-zero blocks (the first two rows' first 130 columns)."""
    rng = np.random.default_rng(seed)
    R, C = shape
    x = rng.standard_normal(shape) * np.exp2(rng.integers(-6, 7, (R, 1))) * np.exp2(rng.integers(-6, 7, (1, C)))
    x[rng.random(shape) < 0.01] = 0.0
    x[:2, :130] = 0.0
    x[-1, :3] = -0.0
    return x.astype(np.float32)


def _host(x32, dtype):
    """x32 rounded to the input type, in NumPy (bfloat16: ml_dtypes), and its exact float32 values."""
    if dtype == "bfloat16":
        ml_dtypes = pytest.importorskip("ml_dtypes")
        h = x32.astype(ml_dtypes.bfloat16)
    else:
        h = x32.astype(dtype)
    return h, h.astype(np.float32)


def _to_cupy(h):
    if h.dtype.name == "bfloat16":
        return cupy.asarray(h.view(np.uint16)).view(h.dtype)
    return cupy.asarray(h)


def _to_torch(torch, h):
    if h.dtype.name == "bfloat16":
        return torch.from_numpy(h.view(np.int16).copy()).cuda().view(torch.bfloat16)
    return torch.from_numpy(h.copy()).cuda()


def _want_scale(x32, block, name):
    """amax(|x| over each block) / FP8_MAX in float64, rounded once to float32; 1 for zero blocks."""
    R, C = x32.shape
    br, bc = Q.block_dims(x32.shape, block)
    nr, nc = -(-R // br), -(-C // bc)
    pad = np.zeros((nr * br, nc * bc))
    pad[:R, :C] = np.abs(x32)
    amax = pad.reshape(nr, br, nc, bc).max(axis=(1, 3))
    return np.where(amax == 0, 1.0, amax / dtypes.FP8_MAX[name]).astype(np.float32).reshape(
        Q.scale_shape(x32.shape, block))


def _check(codes, s, x32, block, name):
    """Codes and scales (NumPy) of x32 against the reference, the scale rule and the bound."""
    want_q, want_s = Q.quantize_fp8_numpy(x32, block, name)
    assert s.dtype == np.float32 and s.shape == Q.scale_shape(x32.shape, block)
    np.testing.assert_array_equal(s, _want_scale(x32, block, name))
    np.testing.assert_array_equal(s, want_s)
    np.testing.assert_array_equal(codes, want_q)
    R, C = x32.shape
    br, bc = Q.block_dims(x32.shape, block)
    sb = s.astype(np.float64).reshape(-(-R // br), -(-C // bc)).repeat(br, 0).repeat(bc, 1)[:R, :C]
    deq = Q.dequantize_numpy(codes, s, block, name)
    assert (np.abs(deq - x32) <= bound(x32, sb, name)).all()
    assert (codes[(x32 == 0) & ~np.signbit(x32)] == 0).all() and (codes[(x32 == 0) & np.signbit(x32)] == 0x80).all()


def _samples(name):
    """float32 values at, halfway between and one ulp either side of every 8-bit value, random bit
    patterns (NaN left out), values past FP8_MAX and infinities, both signs."""
    rng = np.random.default_rng(3)
    t = Q.fp8_table(name)
    fin = np.unique(np.abs(t[np.isfinite(t)]))
    exact = np.concatenate([fin, (fin[:-1] + fin[1:]) / 2]).astype(np.float32)
    near = np.concatenate([exact, np.nextafter(exact, np.float32(0)), np.nextafter(exact, np.float32(np.inf))])
    top = dtypes.FP8_MAX[name]
    big = np.array([top * 1.0625, top * 1.125, top * 1.2, 1e30, 3e38, np.inf], np.float32)
    bits = rng.integers(0, 2 ** 32, 1 << 20, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x = np.concatenate([near, big, -near, -big, bits])
    return x[~np.isnan(x)]


# ---- the conversion --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_hardware_cast_matches_numpy_encoder(name):
    v = _samples(name)
    got = cupy.asnumpy(Q._encode_cupy(cupy, cupy.asarray(v), name))
    np.testing.assert_array_equal(got, Q.encode_fp8_numpy(v, name))
    nan = Q._encode_cupy(cupy, cupy.asarray(np.array([np.nan, -np.nan], np.float32)), name)
    assert np.isnan(Q.fp8_table(name)[cupy.asnumpy(nan)]).all()


# ---- CuPy and torch inputs ---------------------------------------------------------------------------------
def _assert_rows_aligned(strides, shape):
    """q is row-major with rows 16 bytes apart: dense when C % 16 == 0, else padded to a multiple of
    128 (one byte per element, so byte and element strides agree)."""
    R, C = shape
    assert strides[1] == 1 or C <= 1
    assert R <= 1 or strides[0] == (C if C % 16 == 0 else -(-C // 128) * 128), (strides, shape)



@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("block", BLOCKS, ids=str)
@pytest.mark.parametrize("dtype", INPUTS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_cupy(shape, dtype, block, name):
    h, x32 = _host(_matrix(shape), dtype)
    q, s = Q.quantize_fp8(_to_cupy(h), block, name)
    assert isinstance(q, cupy.ndarray) and q.shape == shape and q.dtype == dtypes.get(name).numpy
    _assert_rows_aligned(q.strides, shape)
    codes = cupy.asnumpy(q.view(cupy.uint8))
    _check(codes, cupy.asnumpy(s), x32, block, name)
    np.testing.assert_array_equal(cupy.asnumpy(Q.to_float64(q)), Q.fp8_table(name)[codes])
    np.testing.assert_array_equal(cupy.asnumpy(Q.to_float64(q.view(cupy.uint8), name)), Q.fp8_table(name)[codes])


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("block", BLOCKS, ids=str)
@pytest.mark.parametrize("dtype", INPUTS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_torch_and_cupy_agree(shape, dtype, block, name):
    torch = pytest.importorskip("torch", exc_type=ImportError)
    h, x32 = _host(_matrix(shape), dtype)
    q, s = Q.quantize_fp8(_to_torch(torch, h), block, name)
    assert q.is_cuda and q.dtype == getattr(torch, name) and tuple(q.shape) == shape
    _assert_rows_aligned(q.stride(), shape)
    assert s.is_cuda and s.dtype == torch.float32
    codes, scale = q.view(torch.uint8).cpu().numpy(), s.cpu().numpy()
    _check(codes, scale, x32, block, name)
    qc, sc = Q.quantize_fp8(_to_cupy(h), block, name)
    np.testing.assert_array_equal(codes, cupy.asnumpy(qc.view(cupy.uint8)))
    np.testing.assert_array_equal(scale, cupy.asnumpy(sc))
    np.testing.assert_array_equal(Q.to_float64(q).cpu().numpy(), Q.fp8_table(name)[codes])


@pytest.mark.parametrize("dtype", INPUTS)
@pytest.mark.parametrize("lib", ["cupy", "torch"])
def test_transposed_input(lib, dtype):
    h, x32 = _host(_matrix((300, 130), seed=5), dtype)  # x is its transpose: 130 x 300, column-major
    if lib == "torch":
        torch = pytest.importorskip("torch", exc_type=ImportError)
        q, s = Q.quantize_fp8(_to_torch(torch, h).T, (128, 128))
        codes, scale = q.view(torch.uint8).cpu().numpy(), s.cpu().numpy()
    else:
        q, s = Q.quantize_fp8(_to_cupy(h).T, (128, 128))
        codes, scale = cupy.asnumpy(q.view(cupy.uint8)), cupy.asnumpy(s)
    _check(codes, scale, np.ascontiguousarray(x32.T), (128, 128), "float8_e4m3fn")


@pytest.mark.parametrize("lib", ["cupy", "torch"])
def test_zero_blocks_nan_and_inf(lib):
    """An all-zero block: scale 1 and q 0; a block holding NaN: scale NaN (and q NaN); one holding
    Inf: scale Inf (q 0 for its finite elements, NaN for the infinite one)."""
    x = np.zeros((4, 256), np.float32)
    x[1, 200], x[3, 5], x[2, 130] = 3.0, np.nan, np.inf
    if lib == "torch":
        torch = pytest.importorskip("torch", exc_type=ImportError)
        q, s = Q.quantize_fp8(torch.from_numpy(x).cuda(), (1, 128))
        codes, scale = q.view(torch.uint8).cpu().numpy(), s.cpu().numpy()
    else:
        q, s = Q.quantize_fp8(cupy.asarray(x), (1, 128))
        codes, scale = cupy.asnumpy(q.view(cupy.uint8)), cupy.asnumpy(s)
    want_q, want_s = Q.quantize_fp8_numpy(x, (1, 128))
    np.testing.assert_array_equal(scale, want_s)  # NaN where NaN
    assert scale[0].tolist() == [1.0, 1.0] and np.isnan(scale[3, 0]) and scale[2, 1] == np.inf
    t = Q.fp8_table("e4m3")
    np.testing.assert_array_equal(t[codes], t[want_q])  # NaN codes may differ in their bits
    assert (codes[:2] == 0).sum() == 511 and codes[1, 200] == 0x7E
    assert np.isnan(t[codes[3, :128]]).all() and np.isnan(t[codes[2, 130]]) and (codes[2, 128:130] == 0).all()


@pytest.mark.parametrize("shape", [(0, 5), (5, 0)])
@pytest.mark.parametrize("block", ["tensor", "row", "col", (1, 128)], ids=str)
def test_empty(shape, block):
    q, s = Q.quantize_fp8(cupy.zeros(shape, cupy.float16), block, "e5m2")
    assert q.shape == shape and q.dtype == dtypes.FLOAT8_E5M2.numpy
    assert s.shape == Q.scale_shape(shape, block) and bool((s == 1).all())
    torch = pytest.importorskip("torch", exc_type=ImportError)
    q, s = Q.quantize_fp8(torch.zeros(shape, device="cuda"), block, "e5m2")
    assert tuple(q.shape) == shape and q.dtype == torch.float8_e5m2
    assert tuple(s.shape) == Q.scale_shape(shape, block) and bool((s == 1).all())


def test_input_errors():
    with pytest.raises(TypeError, match="pass float32, float16 or bfloat16"):
        Q.quantize_fp8(cupy.zeros((4, 4), cupy.float64))
    with pytest.raises(ValueError, match="2-D"):
        Q.quantize_fp8(cupy.zeros((4,), cupy.float32))
    torch = pytest.importorskip("torch", exc_type=ImportError)
    with pytest.raises(TypeError, match="move it to the GPU"):
        Q.quantize_fp8(torch.zeros((4, 4)))
    with pytest.raises(TypeError, match="pass float32, float16 or bfloat16"):
        Q.quantize_fp8(torch.zeros((4, 4), dtype=torch.float64, device="cuda"))
    with pytest.raises(ValueError, match="none of 'tensor'"):
        Q.quantize_fp8(torch.zeros((4, 4), device="cuda"), block=(0, 4))
