"""GPU correctness of the top Hopper rung's operand forms (cugemm/families/hgemm_wgmma.py): every
operand layout read without a copy (A column-major, B column-major, both; B column-major also with
rung 7's 128x64, 128x128 and 128x192 tiles; every form with 192-row tiles and every ping-pong form),
any M, N, K with padded leading dimensions (the padding poisoned with NaN: TMA must not read it), and the ANY_C epilogue
writing a C that is only 2-byte aligned with an odd row stride. C starts NaN-poisoned; what lies
around it in its buffer (row padding, guard elements) must come back untouched. Tolerances:
cugemm.accuracy, as in tests/test_gpu.py."""
import pytest

import cugemm
from cugemm import accuracy, testing

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")

_P = "hgemm_wgmma_m64n256k16_persistent_cluster2"
FORMS = {"": ("row", "row"), "_acol": ("col", "row"), "_bcol": ("row", "col"), "_acol_bcol": ("col", "col")}
# (8191, 2049, 72): 4.4 rounds of 66 clusters with a narrow last tile column (edge-last serpentine walk)
SHAPES = [(1, 1, 1), (17, 23, 9), (127, 8, 4096), (4095, 4097, 1023), (4096, 4096, 4096), (8191, 2049, 72)]
SMALL = SHAPES[:4]


def _tma_shape(shape):
    """The TMA-store forms need N % 8 == 0 (a TMA store writes a row's last 16-byte piece whole)."""
    M, N, K = shape
    return M, -(-N // 8) * 8, K


def _cases(bf: str, shapes) -> list:
    out = []
    for s in shapes:  # shape-major: each shape's inputs and float64 reference are made once
        out += [(f"{_P}_anyc_stage3{suffix}{bf}", s) for suffix in FORMS]
    for s in map(_tma_shape, shapes):
        out += [(f"{_P}_tma_store_stage4{suffix}{bf}", s) for suffix in FORMS]
    return out


# Rung 7's narrower tiles read x @ W.T's W where it lies (_tile_forms' _bcol forms): 128x64 (one B panel,
# multicast by block 0 of the cluster), 128x128 and 128x192 (an odd panel count: alternating staging boxes).
# (1000, 776, 520): a mid size with partial last tile columns at every width (776 = 12.1 x 64, 6.1 x 128,
# 4.04 x 192) and a partial last tile row.
NARROW_BCOL = [f"hgemm_wgmma_m64n{bn}k16_persistent_cluster2_tma_store_stage{stages}_bcol"
               for bn, stages in ((64, 8), (128, 6), (192, 4))]
NARROW_SHAPES = SHAPES + [(1000, 776, 520)]


def _narrow_cases(bf: str, shapes) -> list:
    return [(name + bf, s) for s in map(_tma_shape, shapes) for name in NARROW_BCOL]


# Rung 7 with 192-row tiles (three consumer warpgroups), every registered form: (2048, 2304, 768) is
# exactly one round of 132 192x192 tiles whose last tile row is 128 rows live; (3000, 3072, 768) two
# rounds with a partial last tile row; with clusters of 2 an odd tile-row count leaves a block past M.
WG3 = [f"hgemm_wgmma_m64n{bn}k16_persistent_wg3{c}_tma_store_stage{stages}{col}{bf}"
       for bn, stages in ((192, 3), (128, 4)) for c in ("", "_cluster2") for col in ("", "_bcol")
       for bf in ("", "_bf16")]
WG3_SHAPES = [(1, 1, 1), (17, 23, 9), (1000, 776, 520), (2048, 2304, 768), (3000, 3072, 768)]


def _wg3_cases() -> list:
    return [(name, s) for s in map(_tma_shape, WG3_SHAPES) for name in WG3]


# Rung 7's ping-pong schedule (PINGPONG: the two consumers take whole 128x128 tiles in turn), every
# registered form: one tile (consumer 1 idle), 63 tiles (blocks of one), 2048x2304x768 (288 tiles: some
# blocks take 2, some 3, so a consumer with no next tile hands no turn over), 3000x3072x768 (576 tiles,
# a partial last tile row; with clusters an odd tile-row count leaves a block past M), and 8191x2049x72
# (4 rounds, one K-tile a tile: the ring wraps many times per tile, its skips crossing the wrap).
PINGPONG = [f"hgemm_wgmma_m64n128k16_persistent_pingpong{c}_tma_store_stage6{col}{bf}"
            for c in ("", "_cluster2") for col in ("", "_bcol") for bf in ("", "_bf16")]
PINGPONG_SHAPES = [(17, 23, 9), (1000, 776, 520), (2048, 2304, 768), (3000, 3072, 768), (8191, 2049, 72)]


def _pingpong_cases() -> list:
    return [(name, s) for s in map(_tma_shape, PINGPONG_SHAPES) for name in PINGPONG]


CASES = (_cases("", SHAPES) + _cases("_bf16", SMALL) + _narrow_cases("", NARROW_SHAPES)
         + _narrow_cases("_bf16", SMALL + NARROW_SHAPES[-1:]) + _wg3_cases() + _pingpong_cases())

_values: dict = {}


def _inputs(dtype, M, N, K):
    """Row-major A, B values and their float64 product, made once per (dtype, shape)."""
    key = (dtype, M, N, K)
    if key not in _values:
        _values.clear()
        a, b = testing.random_operands(dtype, M, N, K)
        _values[key] = (a, b, accuracy.reference(a, b))
    return _values[key]


def _round8(n: int) -> int:
    return -(-n // 8) * 8


def _padded(x, layout):
    """x (rows x cols) as a strided view in `layout` whose leading dimension is a multiple of 8
    elements plus 8 (never dense); the padding holds NaN."""
    rows, cols = x.shape
    bits = x.view(cupy.uint16)  # copied by their bits (no bfloat16 arithmetic in CuPy needed)
    if layout == "row":
        buf = testing.poisoned((rows, _round8(cols) + 8), x.dtype.name)
        buf.view(cupy.uint16)[:, :cols] = bits
        return buf[:, :cols]
    buf = testing.poisoned((cols, _round8(rows) + 8), x.dtype.name)
    buf.view(cupy.uint16)[:, :rows] = bits.T
    return buf[:, :rows].T


def _output(v, M, N, guard=9):
    """(C view, its whole buffer, the mask of C's elements in the buffer). TMA-store forms: a row
    stride padded to 16 bytes plus 16; ANY_C: dense rows of N elements starting `guard` elements into
    the buffer (9: 2 bytes past 16, so neither pointer nor row stride 16-byte aligned when N is odd),
    guard elements around."""
    if v.param_dict["ANY_C"]:
        buf = testing.poisoned((M * N + 2 * guard,), v.dtype_out)
        c = buf[guard:guard + M * N].reshape(M, N)
        mask = cupy.zeros(buf.shape, dtype=bool)
        mask[guard:guard + M * N] = True
        return c, buf, mask
    buf = testing.poisoned((M, _round8(N) + 8), v.dtype_out)
    mask = cupy.zeros(buf.shape, dtype=bool)
    mask[:, :N] = True
    return buf[:, :N], buf, mask


@pytest.mark.parametrize("name,shape", CASES, ids=[f"{n}-{'x'.join(map(str, s))}" for n, s in CASES])
def test_form_matches_float64_reference(name, shape):
    M, N, K = shape
    v = cugemm.get_variant(name)
    a, b, ref = _inputs(v.dtype_in, M, N, K)
    va, vb = _padded(a, v.a_layout), _padded(b, v.b_layout)
    c, buf, mask = _output(v, M, N)
    before = buf.view(cupy.uint16).copy()
    got = cugemm.run(v, va, vb, out=c)
    assert got is c
    cupy.cuda.get_current_stream().synchronize()
    outside = ~mask
    assert bool((buf.view(cupy.uint16)[outside] == before[outside]).all()), f"{name} wrote outside C at {shape}"
    assert not bool(cupy.isnan(testing.to_float64(c)).any()), f"{name} left elements of C unwritten at {shape}"
    err, ok = accuracy.check(c, ref, v)
    assert ok, f"{name} {shape}: rel err {err:.2e} over {accuracy.tolerance(v.math_dtype, v.dtype_acc)}"


@pytest.mark.parametrize("name", [f"{_P}_tma_store_stage4_acol_bcol", f"{_P}_anyc_stage3_bcol", *NARROW_BCOL,
                                  NARROW_BCOL[0] + "_bf16", WG3[2], WG3[7], PINGPONG[2], PINGPONG[7]])
def test_dense_transposed_views(name):
    """The no-copy case itself: a.T and W.T of dense row-major arrays, an aligned dense C."""
    v = cugemm.get_variant(name)
    M, N, K = 1000, 776, 520
    a, b, ref = _inputs(v.dtype_in, M, N, K)
    va = cupy.ascontiguousarray(a.T).T if v.a_layout == "col" else a
    vb = cupy.ascontiguousarray(b.T).T if v.b_layout == "col" else b
    c = cugemm.run(v, va, vb)
    assert accuracy.check(c, ref, v)[1]


@pytest.mark.parametrize("name", [f"{_P}_tma_store_stage4_bcol", *NARROW_BCOL])
def test_tma_store_forms_refuse_a_ragged_n(name):
    """N % 8 != 0 is ANY_C's: a TMA-store form refuses it before launch."""
    v = cugemm.get_variant(name)
    a, b, _ = _inputs(v.dtype_in, 17, 23, 9)
    with pytest.raises(ValueError, match="N=23 is not a multiple of 8"):
        cugemm.run(v, _padded(a, "row"), _padded(b, "col"))


# ANY_C's row parities and narrow edges: rows of C that start 2 bytes past a 4-byte word ("odd":
# every other row with an odd N) are written with 2-byte stores, the others with 4-byte ones, and
# only the tile's live panels. N: a narrow edge whose last live panel ends the row (64, 192,
# 320 = 256 + 64), one column past a tile (257), odd and even row strides; guard 8 puts C 16-byte
# aligned (rows alternate even, odd with an odd N), guard 9 2 bytes past.
@pytest.mark.parametrize("guard", [8, 9])
@pytest.mark.parametrize("N", [64, 192, 257, 320, 1023])
def test_any_c_row_parities(N, guard):
    v = cugemm.get_variant(f"{_P}_anyc_stage3")
    M, K = 131, 40
    a, b, ref = _inputs(v.dtype_in, M, N, K)
    c, buf, mask = _output(v, M, N, guard)
    before = buf.view(cupy.uint16).copy()
    assert cugemm.run(v, _padded(a, "row"), _padded(b, "row"), out=c) is c
    cupy.cuda.get_current_stream().synchronize()
    assert bool((buf.view(cupy.uint16)[~mask] == before[~mask]).all()), f"wrote outside C at N={N}, guard {guard}"
    assert not bool(cupy.isnan(testing.to_float64(c)).any()), f"elements of C unwritten at N={N}, guard {guard}"
    err, ok = accuracy.check(c, ref, v)
    assert ok, f"N={N}, guard {guard}: rel err {err:.2e}"


# Rung 7's fitted widths (BN = 48 .. 224, not a multiple of 64, and 192 x 144 / 160; x @ W.T only, dense
# operands): each
# against the float64 reference with C dense between NaN guard zones; the shapes leave a partial last
# tile column at every width (N = 776, 1000, 1048) and a partial last tile row, one K-tile of 8, and
# (1024, 768, 3072) the judge's shape the widths were made for.
FITTED = [v.name for v in cugemm.variants() if v.template == "hgemm_wgmma_persistent" and v.param_dict["BN"] % 64]
FITTED_SHAPES = [(17, 24, 8), (1000, 776, 520), (300, 1000, 72), (1024, 768, 3072), (2050, 1048, 136)]
FITTED_CASES = [(n, s) for s in FITTED_SHAPES for n in FITTED]


def test_fitted_forms_are_registered():
    assert len(FITTED) == 18 and all(n.endswith(("_bcol", "_bcol_bf16")) for n in FITTED)
    assert sum("_wg3_" in n for n in FITTED) == 4  # 192 x 144 and 192 x 160


@pytest.mark.parametrize("name,shape", FITTED_CASES, ids=[f"{n}-{'x'.join(map(str, s))}" for n, s in FITTED_CASES])
def test_fitted_form_matches_float64_reference(name, shape, guard=64):
    M, N, K = shape
    v = cugemm.get_variant(name)
    a, b, ref = _inputs(v.dtype_in, M, N, K)
    w = cupy.ascontiguousarray(b.view(cupy.uint16).T).view(b.dtype)  # W (N x K, row-major): B = W.T
    buf = testing.poisoned((M * N + 2 * guard,), v.dtype_out)
    c = buf[guard:guard + M * N].reshape(M, N)
    before = buf.view(cupy.uint16).copy()
    assert cugemm.run(v, a, w.T, out=c) is c
    cupy.cuda.get_current_stream().synchronize()
    raw = buf.view(cupy.uint16)
    assert bool((raw[:guard] == before[:guard]).all()) and bool((raw[-guard:] == before[-guard:]).all()), \
        f"{name} wrote outside C at {shape}"
    assert not bool(cupy.isnan(testing.to_float64(c)).any()), f"{name} left elements of C unwritten at {shape}"
    err, ok = accuracy.check(c, ref, v)
    assert ok, f"{name} {shape}: rel err {err:.2e} over {accuracy.tolerance(v.math_dtype, v.dtype_acc)}"
