"""cugemm.quantize without a GPU: block forms and scale shapes, the checks quantize_fp8 makes before
touching the device, the 8-bit formats' value tables and the NumPy encoder against ml_dtypes (nearest
even, saturation, signed zero, NaN), and the NumPy quantiser's scales and rounding bound (the
reference tests/test_gpu_quantize.py holds the GPU paths to, bit for bit)."""
import numpy as np
import pytest

from cugemm import dtypes
from cugemm import quantize as Q

NAMES = ["float8_e4m3fn", "float8_e5m2"]
MAN = {"float8_e4m3fn": 3, "float8_e5m2": 2}    # mantissa bits
BIAS = {"float8_e4m3fn": 7, "float8_e5m2": 15}


def bound(x, s, name):
    """The most |q * s - x| may be (module docstring): the float32 quotient x / s is off by 2^-24
    relative; rounding it to 8 bits by half an ulp, 2^-(m+1) relative, or, among the subnormals, half
    the smallest one, 2^(-bias-m), which the scale multiplies; saturation only takes back the
    division's rounding. So (2^-(m+1) + 2^-23)|x| + s 2^(-bias-m); 2^-22 leaves a margin."""
    return (2.0 ** -(MAN[name] + 1) + 2.0 ** -22) * np.abs(x) + s * 2.0 ** -(BIAS[name] + MAN[name])


def broadcast(scale, shape, block):
    R, C = shape
    br, bc = Q.block_dims(shape, block)
    s = np.asarray(scale, np.float64).reshape(-(-R // br), -(-C // bc))
    return s.repeat(br, 0).repeat(bc, 1)[:R, :C]


# ---- blocks and shapes ---------------------------------------------------------------------------------
@pytest.mark.parametrize("shape, block, want", [
    ((130, 300), "tensor", ()), ((130, 300), "row", (130, 1)), ((130, 300), "col", (1, 300)),
    ((130, 300), (1, 128), (130, 3)), ((130, 300), (128, 128), (2, 3)), ((130, 300), (1, 300), (130, 1)),
    ((130, 300), (130, 1), (1, 300)), ((130, 300), (1000, 1000), (1, 1)), ((128, 256), [128, 128], (1, 2)),
    ((1, 1), "tensor", ()), ((1, 1), (128, 128), (1, 1)), ((0, 5), "row", (0, 1)), ((0, 5), "col", (1, 5)),
    ((0, 5), (1, 128), (0, 1)), ((5, 0), "tensor", ()), ((5, 0), "row", (5, 1)), ((130, 300), (np.int64(3), 5), (44, 60)),
])
def test_scale_shapes(shape, block, want):
    assert Q.scale_shape(shape, block) == want


def test_row_and_col_are_their_blocks():
    assert Q.block_dims((130, 300), "row") == (1, 300) and Q.block_dims((130, 300), "col") == (130, 1)
    assert Q.block_dims((130, 300), "tensor") == (130, 300)


@pytest.mark.parametrize("block", ["rows", "column", "", None, 128, (1,), (1, 2, 3), (0, 128), (1, -1),
                                   (1.0, 128), (True, 128), ("1", "128"), np.array([1, 128])])
def test_bad_blocks(block):
    with pytest.raises(ValueError, match="block .* none of 'tensor', 'row', 'col'"):
        Q.scale_shape((130, 300), block)


def test_fp8_dtype_names():
    assert Q.fp8_dtype("e4m3") is Q.fp8_dtype("float8_e4m3fn") is dtypes.FLOAT8_E4M3
    assert Q.fp8_dtype("e5m2") is Q.fp8_dtype(dtypes.FLOAT8_E5M2) is dtypes.FLOAT8_E5M2
    for bad in ("float16", "e4m3fnuz", "float8", np.float32, None):
        with pytest.raises(TypeError, match="not an 8-bit float"):
            Q.fp8_dtype(bad)


# ---- the checks before the device ----------------------------------------------------------------------
def _fake_cupy(shape, dtype):
    """A CuPy array header over memory nobody reads (no GPU needed to make one)."""
    cupy = pytest.importorskip("cupy")
    mem = cupy.cuda.UnownedMemory(0x7F0000000000, 1 << 20, None, device_id=0)
    return cupy.ndarray(shape, dtype=dtype, memptr=cupy.cuda.MemoryPointer(mem, 0))


class _CpuTensor:
    """What quantize_fp8 reads of a torch tensor on the CPU (told from its type's module)."""
    __module__ = "torch"
    is_cuda, device, dtype, ndim = False, "cpu", "torch.float32", 2


def test_input_checks():
    with pytest.raises(TypeError, match="CuPy array or a torch CUDA tensor, got ndarray"):
        Q.quantize_fp8(np.zeros((4, 4), np.float32))
    with pytest.raises(TypeError, match="torch tensor on cpu; move it to the GPU"):
        Q.quantize_fp8(_CpuTensor())
    with pytest.raises(ValueError, match=r"shape \(16,\); it must be 2-D"):
        Q.quantize_fp8(_fake_cupy((16,), np.float32))
    with pytest.raises(ValueError, match="2-D"):
        Q.quantize_fp8(_fake_cupy((2, 4, 4), np.float16))
    for bad in (np.float64, np.int32, np.uint8):
        with pytest.raises(TypeError, match="pass float32, float16 or bfloat16"):
            Q.quantize_fp8(_fake_cupy((4, 4), bad))
    with pytest.raises(TypeError, match="not an 8-bit float"):
        Q.quantize_fp8(_fake_cupy((4, 4), np.float32), dtype="float16")
    with pytest.raises(ValueError, match="none of 'tensor'"):
        Q.quantize_fp8(_fake_cupy((4, 4), np.float32), block="block")


# ---- the formats ---------------------------------------------------------------------------------------------
def test_tables():
    t = Q.fp8_table("e4m3")
    assert t[0x7E] == 448 and t[0xFE] == -448 and np.isnan(t[[0x7F, 0xFF]]).all()
    assert np.isfinite(np.delete(t, [0x7F, 0xFF])).all()
    assert t[0x01] == 2.0 ** -9 and t[0x08] == 2.0 ** -6 and t[0x38] == 1.0 and t[0x39] == 1.125
    t = Q.fp8_table("e5m2")
    assert t[0x7B] == 57344 and t[0x7C] == np.inf and t[0xFC] == -np.inf and np.isnan(t[[0x7D, 0x7E, 0x7F, 0xFF]]).all()
    assert t[0x01] == 2.0 ** -16 and t[0x3C] == 1.0 and t[0x3D] == 1.25
    assert np.isnan(t).sum() == 6
    for name in NAMES:
        t = Q.fp8_table(name)
        assert t[0] == 0 and not np.signbit(t[0]) and t[0x80] == 0 and np.signbit(t[0x80])
        assert np.nanmax(t[np.isfinite(t)]) == dtypes.FP8_MAX[name]


@pytest.mark.parametrize("name", NAMES)
def test_tables_match_ml_dtypes(name):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    want = np.arange(256, dtype=np.uint8).view(getattr(ml_dtypes, name)).astype(np.float64)
    got = Q.fp8_table(name)
    np.testing.assert_array_equal(got, want)  # NaN where NaN
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def _samples(name, n=400_000, seed=0):
    """float32 values at and around every 8-bit value and halfway point, random bit patterns and
    normal values across the range (subnormals included), both signs."""
    rng = np.random.default_rng(seed)
    t = Q.fp8_table(name)
    fin = np.unique(np.abs(t[np.isfinite(t)]))
    mid = (fin[:-1] + fin[1:]) / 2
    exact = np.concatenate([fin, mid]).astype(np.float32)
    assert (exact.astype(np.float64) == np.concatenate([fin, mid])).all()  # halfway points are float32
    near = np.concatenate([exact, np.nextafter(exact, np.float32(0)), np.nextafter(exact, np.float32(np.inf))])
    bits = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    wide = (rng.standard_normal(n) * np.exp2(rng.integers(-30, 20, n))).astype(np.float32)
    x = np.concatenate([near, -near, bits, wide])
    return x[np.isfinite(x)]


@pytest.mark.parametrize("name", NAMES)
def test_encoder_matches_ml_dtypes_in_range(name):
    """ml_dtypes rounds to nearest even like the encoder; past the largest finite value it gives NaN
    (e4m3fn) or inf (e5m2) where the encoder saturates, so only |x| <= FP8_MAX is compared here."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = _samples(name)
    x = x[np.abs(x) <= dtypes.FP8_MAX[name]]
    want = x.astype(getattr(ml_dtypes, name)).view(np.uint8)
    np.testing.assert_array_equal(Q.encode_fp8_numpy(x, name), want)


@pytest.mark.parametrize("name", NAMES)
def test_encoder_rounds_to_nearest(name):
    """Without ml_dtypes: each code's value is a nearest 8-bit value of x (the table's)."""
    x = _samples(name, n=100_000, seed=1)
    x = x[np.abs(x) <= dtypes.FP8_MAX[name]]
    t = Q.fp8_table(name)
    fin = np.unique(t[np.isfinite(t)])
    got = t[Q.encode_fp8_numpy(x, name)]
    x64 = x.astype(np.float64)
    i = np.clip(np.searchsorted(fin, x64), 1, len(fin) - 1)
    best = np.minimum(np.abs(fin[i] - x64), np.abs(fin[i - 1] - x64))
    np.testing.assert_array_equal(np.abs(got - x64), best)


def test_ties_to_even():
    e4m3 = lambda v: Q.encode_fp8_numpy(np.array(v, np.float32), "e4m3").tolist()  # noqa: E731
    # 1.0 (0x38), 1.125 (0x39), 1.25 (0x3A): halfway points go to the even code
    assert e4m3([1.0625, 1.1875, -1.0625, -1.1875]) == [0x38, 0x3A, 0xB8, 0xBA]
    assert e4m3([np.nextafter(np.float32(1.0625), np.float32(2))]) == [0x39]
    # subnormals: 2^-9 steps; 0.5 * 2^-9 -> 0, 1.5 * 2^-9 -> 2 * 2^-9, 2.5 * 2^-9 -> 2 * 2^-9
    assert e4m3([0.5 * 2 ** -9, 1.5 * 2 ** -9, 2.5 * 2 ** -9, 7.5 * 2 ** -9]) == [0x00, 0x02, 0x02, 0x08]
    # 416 (0x7D) and 448 (0x7E): 432 goes to 448, the even code
    assert e4m3([432.0, 424.0, 440.0]) == [0x7E, 0x7D, 0x7E]
    e5m2 = lambda v: Q.encode_fp8_numpy(np.array(v, np.float32), "e5m2").tolist()  # noqa: E731
    # 1.0 (0x3C), 1.25 (0x3D), 1.5 (0x3E)
    assert e5m2([1.125, 1.375, 1.5 * 2 ** -16, 0.75 * 2 ** -16]) == [0x3C, 0x3E, 0x02, 0x01]


@pytest.mark.parametrize("name", NAMES)
def test_saturation_nan_and_signed_zero(name):
    top = dtypes.FP8_MAX[name]
    mx = {"float8_e4m3fn": 0x7E, "float8_e5m2": 0x7B}[name]
    x = np.array([top, np.nextafter(np.float32(top), np.float32(np.inf)), top * 1.0625, top * 1.25,
                  1e30, np.inf], np.float32)
    assert Q.encode_fp8_numpy(x, name).tolist() == [mx] * len(x)
    assert Q.encode_fp8_numpy(-x, name).tolist() == [mx | 0x80] * len(x)
    assert Q.encode_fp8_numpy(np.array([np.nan, -np.nan, 0.0, -0.0, -1e-30, 1e-30], np.float32),
                              name).tolist() == [0x7F, 0x7F, 0x00, 0x80, 0x80, 0x00]
    # every finite code encodes to itself
    t = Q.fp8_table(name)
    codes = np.flatnonzero(np.isfinite(t)).astype(np.uint8)
    np.testing.assert_array_equal(Q.encode_fp8_numpy(t[codes], name), codes)
    assert Q.encode_fp8_numpy(np.zeros((3, 0)), name).shape == (3, 0)


# ---- the NumPy quantiser -----------------------------------------------------------------------------------
def _matrix(shape, seed=0):
    """Normal values whose rows and columns span 2^-12 .. 2^12, with zeros and a zero block."""
    rng = np.random.default_rng(seed)
    R, C = shape
    x = rng.standard_normal(shape) * np.exp2(rng.integers(-6, 7, (R, 1))) * np.exp2(rng.integers(-6, 7, (1, C)))
    x[rng.random(shape) < 0.01] = 0.0
    x[:2, :130] = 0.0   # all-zero blocks in (1, 128) and row blocks; and some -0.0
    x[-1, :3] = -0.0
    return x.astype(np.float32)


BLOCKS = ["tensor", "row", "col", (1, 128), (128, 128), (3, 5), (1000, 1000)]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("block", BLOCKS, ids=str)
@pytest.mark.parametrize("shape", [(130, 300), (1, 7), (257, 129)])
def test_numpy_quantiser(name, block, shape):
    x = _matrix(shape)
    q, s = Q.quantize_fp8_numpy(x, block, name)
    assert q.shape == x.shape and q.dtype == np.uint8
    assert s.shape == Q.scale_shape(shape, block) and s.dtype == np.float32
    # the scale: amax / FP8_MAX, correctly rounded to float32, and 1 for an all-zero block
    R, C = shape
    br, bc = Q.block_dims(shape, block)
    nr, nc = -(-R // br), -(-C // bc)
    pad = np.zeros((nr * br, nc * bc))
    pad[:R, :C] = np.abs(x)
    amax = pad.reshape(nr, br, nc, bc).max(axis=(1, 3))
    want = np.where(amax == 0, 1.0, amax / dtypes.FP8_MAX[name]).astype(np.float32)
    np.testing.assert_array_equal(s.reshape(nr, nc), want)
    sb = broadcast(s, shape, block)
    deq = Q.dequantize_numpy(q, s, block, name)
    assert (np.abs(deq - x) <= bound(x, sb, name)).all()
    assert (deq[x == 0] == 0).all() and (q[(x == 0) & ~np.signbit(x)] == 0).all()
    assert (q[(x == 0) & np.signbit(x)] == 0x80).all()
    # each block's largest element maps to +-FP8_MAX (its amax divided by amax / FP8_MAX)
    pad[:R, :C] = np.abs(Q.fp8_table(name)[q])
    qmax = pad.reshape(nr, br, nc, bc).max(axis=(1, 3))
    np.testing.assert_array_equal(qmax, np.where(amax == 0, 0.0, dtypes.FP8_MAX[name]))


def test_numpy_quantiser_zero_blocks_and_specials():
    x = np.zeros((4, 256), np.float32)
    x[1, 200] = 3.0
    x[3, 5] = np.nan
    x[2, 130] = np.inf
    q, s = Q.quantize_fp8_numpy(x, (1, 128))
    assert s.tolist()[0] == [1.0, 1.0] and s[1, 0] == 1.0 and s[1, 1] == np.float32(3.0 / 448)
    assert np.isnan(s[3, 0]) and s[3, 1] == 1.0 and s[2, 1] == np.inf and s[2, 0] == 1.0
    assert q[1, 200] == 0x7E and (q[0] == 0).all() and (q[1, :200] == 0).all()
    t = Q.fp8_table("e4m3")
    assert np.isnan(t[q[3, :128]]).all() and np.isnan(t[q[2, 130]]) and (t[q[2, 128:]][[0, 1]] == 0).all()
    q, s = Q.quantize_fp8_numpy(np.zeros((0, 7)), "tensor")
    assert q.shape == (0, 7) and s.shape == () and s == 1
    with pytest.raises(ValueError, match="2-D"):
        Q.quantize_fp8_numpy(np.zeros(5))


def test_row_length_pads_to_128_bytes_only_where_rows_need_padding():
    # 16-byte multiples stay dense (torch._scaled_mm reads them too); the rest are padded to 128 bytes,
    # where TMA reads rows at full speed
    assert [Q.row_length(c) for c in (16, 1040, 2048, 7168)] == [16, 1040, 2048, 7168]
    assert [Q.row_length(c) for c in (1, 100, 129, 1023, 2049)] == [128, 128, 256, 1024, 2176]
