"""GPU correctness of the split-K rung's _bcol forms (kernels/hgemm_wgmma/07_splitk.cu with B_COL,
cugemm/families/hgemm_wgmma_splitk.py): B is the transposed view W.T of a row-major N x K weight W
(the x @ W.T of a linear layer), read where it lies, no copy. Each form against the float64
reference (cugemm.accuracy tolerances) into a NaN-poisoned C between NaN guard zones, on shapes
where the plan splits K (M = 1..256 tokens against LLM weights) and on ragged ones (N and K not
multiples of the tile: partial B panels, a dead panel, a partial last K-tile) with the split forced
(cugemm.splitk.plan replaced by a plan of S slices); the result is bit-for-bit repeatable, the
per-slab counters are left at zero, and it agrees with the row-major sibling's on the same values
(within the tolerance)."""
import pytest

import cugemm
from cugemm import accuracy, device, launch, splitk, testing, workspace

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")

BCOL = ["hgemm_wgmma_m64n256k16_splitk_stage4_bcol", "hgemm_wgmma_m64n128k16_splitk_stage6_bcol",
        "hgemm_wgmma_m64n256k16_splitk_stage4_bcol_bf16", "hgemm_wgmma_m64n128k16_splitk_stage6_bcol_bf16"]
# Shapes the plan splits on an H100 / H200 (132 SMs) for at least one tile width, the ragged ones
# (200 x 1000 x 776: partial last tile column and K-tile; 200 x 776 x 1032: a 256-wide tile with one
# live B panel of four) whatever it does there; test_forced_splits splits those.
SHAPES = [(128, 4096, 4096), (192, 5120, 5120), (256, 11008, 4096), (64, 768, 3072), (200, 1000, 776),
          (1, 4096, 4096), (200, 776, 1032)]
RAGGED = [(200, 1000, 776), (200, 776, 1032), (1, 776, 1032)]
CASES = [(name, s) for s in SHAPES for name in BCOL]  # shape-major: inputs made once per (dtype, shape)

_values: dict = {}


def _row_sibling(name: str) -> str:
    return name.replace("_bcol", "")


def _dense_copy(x):
    """A C-contiguous copy of x, by its bits (no bfloat16 arithmetic in CuPy needed)."""
    return cupy.ascontiguousarray(x.view(cupy.uint16)).view(x.dtype)


def _inputs(dtype, M, N, K):
    """(A, W.T, B row-major, float64 reference): A M x K row-major; W an N x K row-major weight and B
    = W.T its column-major K x N view (no copy); the same values row-major for the sibling; A @ B in
    float64. Made once per (dtype, shape)."""
    key = (dtype, M, N, K)
    if key not in _values:
        _values.clear()
        a, b_row = testing.random_operands(dtype, M, N, K)
        w = _dense_copy(b_row.T)  # N x K row-major
        b = w.T
        assert b.flags.f_contiguous and not b.flags.c_contiguous or min(K, N) == 1
        assert b.shape == (K, N) and b.data.ptr == w.data.ptr
        _values[key] = (a, b, b_row, accuracy.reference(a, b_row))
    return _values[key]


def _run_poisoned(v, a, b):
    c, guards_ok = testing.run_guarded(v, a, b)
    assert guards_ok, f"{v.name} wrote outside C"
    assert not bool(cupy.isnan(testing.to_float64(c)).any()), f"{v.name} left elements of C unwritten"
    return c


def _counters_zero(v, M, N, K):
    """The per-slab counters of the stream's workspace are back at zero after the launch."""
    cupy.cuda.get_current_stream().synchronize()
    dev = cupy.cuda.runtime.getDevice()
    held = workspace.held_buffer("cupy", dev, cupy.cuda.get_current_stream().ptr)
    need = splitk.workspace_need(v, M, N, K, device.get(dev))
    if need.counters == 0:  # no split tile: no counter used
        return
    assert held is not None
    buf, grown = held
    assert grown.counters >= need.counters
    assert int(buf[:4 * grown.counters].view(cupy.uint32).max()) == 0, "a counter was left non-zero"


def _bits_equal(x, y) -> bool:
    return bool((x.view(cupy.uint16) == y.view(cupy.uint16)).all())


def _forced_plan(S: int):
    """splitk.plan with the tail tiles split S ways, capped as the kernel requires (at most kt slices,
    at most one wave of slices: (tiles - dp_tiles) * splits <= grid); whole tiles in full waves as
    splitk.plan runs them."""

    def plan(M, N, K, bn, sms):
        T = -(-M // splitk.BM) * -(-N // bn)
        kt = -(-K // splitk.BK)
        dp = T // sms * sms
        tail = T - dp
        best = max(1, min(S, kt, sms // tail)) if tail else 1
        if best == 1:
            dp = T
        return dp, best, max(1, min(dp + (T - dp) * best, sms))

    return plan


@pytest.fixture
def force_splits(monkeypatch):
    """force(S) replaces splitk.plan (which the split-K rung's grid, workspace and argument rules
    call) by _forced_plan(S) for the test; the launcher's grid memo of every variant cleared around it
    (it is keyed by shape only)."""
    dev = cupy.cuda.runtime.getDevice()
    real = splitk.plan

    def clear():
        for name in BCOL:
            launch.loaded(cugemm.get_variant(name), dev)[2].clear()

    def force(S):
        monkeypatch.setattr(splitk, "plan", _forced_plan(S))
        clear()

    yield force
    monkeypatch.setattr(splitk, "plan", real)
    clear()


@pytest.mark.parametrize("name,shape", CASES, ids=[f"{n}-{'x'.join(map(str, s))}" for n, s in CASES])
def test_matches_float64_reference(name, shape):
    v = cugemm.get_variant(name)
    assert v.b_layout == "col" and v.param_dict["B_COL"]
    a, b, _, ref = _inputs(v.dtype_in, *shape)
    c = _run_poisoned(v, a, b)
    err, ok = accuracy.check(c, ref, v)
    dp, S, grid = splitk.plan(*shape, v.tile[1], device.get().sms)
    assert ok, (f"{name} {shape} (dp_tiles={dp}, splits={S}, grid={grid}): rel err {err:.2e} over "
                f"{accuracy.tolerance(v.math_dtype, v.dtype_acc)}")
    _counters_zero(v, *shape)


def test_the_shapes_split():
    """The plan splits K for most of SHAPES on this GPU (the point of the cases above)."""
    sms = device.get().sms
    split = [(bn, s) for s in SHAPES for bn in (256, 128) if splitk.plan(*s, bn, sms)[1] > 1]
    assert len(split) >= len(SHAPES), f"only {split} split on {sms} SMs"
    for s in ((128, 4096, 4096), (1, 4096, 4096), (64, 768, 3072)):
        assert all(splitk.plan(*s, bn, sms)[1] > 1 for bn in (256, 128)), s


@pytest.mark.parametrize("name", BCOL)
@pytest.mark.parametrize("shape", RAGGED, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("S", [2, 3, 5, 13])
def test_forced_splits(force_splits, name, shape, S):
    """Ragged shapes split S ways (capped by the plan's one wave of slices and K-tiles): slices of
    unequal K-tile counts, the last one holding the partial K-tile, partial and dead B panels."""
    v = cugemm.get_variant(name)
    force_splits(S)
    M, N, K = shape
    dp, got, _ = splitk.plan(M, N, K, v.tile[1], device.get().sms)
    assert got > 1 and got <= S, (dp, got)
    a, b, _, ref = _inputs(v.dtype_in, M, N, K)
    c = _run_poisoned(v, a, b)
    err, ok = accuracy.check(c, ref, v)
    assert ok, f"{name} {shape} S={got}: rel err {err:.2e}"
    _counters_zero(v, M, N, K)
    again = _run_poisoned(v, a, b)
    assert _bits_equal(again, c), "not repeatable"


@pytest.mark.parametrize("name", BCOL)
@pytest.mark.parametrize("shape", [(128, 4096, 4096), (200, 1000, 776)], ids=lambda s: "x".join(map(str, s)))
def test_deterministic(force_splits, name, shape):
    """Three runs give the same bits (the last slice adds the partials in slice order, whatever order
    the slices finished in); 200 x 1000 x 776 split 4 ways by force."""
    v = cugemm.get_variant(name)
    if shape == (200, 1000, 776):
        force_splits(4)
    assert splitk.plan(*shape, v.tile[1], device.get().sms)[1] > 1, "the case must split K"
    a, b, _, ref = _inputs(v.dtype_in, *shape)
    first = _run_poisoned(v, a, b)
    for _ in range(3):
        assert _bits_equal(_run_poisoned(v, a, b), first), f"{name} {shape}: not bit-for-bit repeatable"
    assert accuracy.check(first, ref, v)[1]
    _counters_zero(v, *shape)


@pytest.mark.parametrize("name", BCOL)
@pytest.mark.parametrize("shape", [(128, 4096, 4096), (256, 11008, 4096), (200, 1000, 776), (1, 4096, 4096)],
                         ids=lambda s: "x".join(map(str, s)))
def test_agrees_with_the_row_major_sibling(name, shape):
    """The same values with B row-major through the row-major sibling (same plan, tiles and slice
    order): the results agree within the tolerance (the report says how many elements differ at all)."""
    v, row = cugemm.get_variant(name), cugemm.get_variant(_row_sibling(name))
    a, b, b_row, ref = _inputs(v.dtype_in, *shape)
    c_col = _run_poisoned(v, a, b)
    c_row = _run_poisoned(row, a, b_row)
    assert accuracy.check(c_row, ref, row)[1]
    err, ok = accuracy.check(c_col, testing.to_float64(c_row), v)
    differ = int((c_col.view(cupy.uint16) != c_row.view(cupy.uint16)).sum())
    assert ok, f"{name} {shape}: rel err {err:.2e} against {row.name}, {differ} elements differ"


@pytest.mark.parametrize("name", BCOL[:1] + BCOL[-1:])
def test_refuses_a_row_major_b(name):
    """A _bcol form takes W.T only: a row-major B is refused before launch."""
    v = cugemm.get_variant(name)
    a, b, b_row, _ = _inputs(v.dtype_in, 64, 768, 3072)
    with pytest.raises(ValueError, match="F-contiguous"):
        cugemm.run(v, a, b_row)
