"""GPU correctness of rung 10's `_bcol` forms (kernels/hgemm_wgmma/08_small_m.cu with B_COL): the x @ W.T
of a linear layer, B the transposed view of a dense row-major N x K weight W, read where it lies (K-major
128-byte-swizzled B panels; with clusters along M each block multicasts half of every panel's n rows).
Each form on mid-size activations against large weights (M = 64..512 tokens) and on ragged shapes: the
output starts NaN-poisoned between NaN guard zones (an unwritten element or a write outside C fails),
checked against the float64 reference (cugemm.accuracy's tolerance), and against the row-major sibling
(same kernel, B_COL = false) run on the same values with B copied row-major. The fitted widths (BN = 40,
48, 80: one K-major panel of BN n rows) have no row-major sibling: the reference alone judges them, at
shapes whose last tile is partly past N (N = 1000 = 25 x 40 but not a multiple of 48 or 80)."""
import pytest

import cugemm
from cugemm import accuracy, testing
from cugemm.families import hgemm_wgmma

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")

BCOL = [v.name for v in hgemm_wgmma.VARIANTS if v.template == "hgemm_wgmma_small_m" and v.param_dict["B_COL"]]
# (M, N, K): LLM projections at mid-size token counts; (100, 1000, 776): ragged M, N a multiple of no
# tile width (the last tile's last B panel / piece partly past N).
SHAPES = [(64, 4096, 4096), (128, 4096, 11008), (192, 5120, 5120), (256, 768, 3072), (100, 1000, 776),
          (512, 2304, 768)]
# Edges the list above misses: N = 776 leaves 8 columns in the last tile (with clusters along M the second
# block's half-panel piece lies wholly past N and is not copied); M = 16 (A boxes of 16 rows), K = 72 (one
# whole K-tile and one of 8), N = 4104 (a last tile of 8 columns).
EXTRA = [(100, 776, 1000), (16, 4104, 72)]
CASES = [(name, s) for s in SHAPES + EXTRA for name in BCOL]  # shape-major: inputs made once per shape

_values: dict = {}


def _inputs(dtype, M, N, K):
    """A (M x K, row-major), W (N x K, row-major: B = W.T) and the float64 A @ W.T, once per (dtype, shape)."""
    key = (dtype, M, N, K)
    if key not in _values:
        _values.clear()
        a = testing.cast(cupy.random.standard_normal((M, K), dtype=cupy.float32), dtype)
        w = testing.cast(cupy.random.standard_normal((N, K), dtype=cupy.float32), dtype)
        ref = testing.to_float64(a) @ testing.to_float64(w).T
        _values[key] = (a, w, ref)
    return _values[key]


def _run_poisoned(v, a, b, M, N, guard=64):
    """cugemm.run(v, a, b, out=C) with C dense (M x N) in a NaN-poisoned buffer between NaN guard zones;
    returns C after checking that nothing outside it was written and nothing inside it left NaN."""
    buf = testing.poisoned((M * N + 2 * guard,), v.dtype_out)
    c = buf[guard:guard + M * N].reshape(M, N)
    before = buf.view(cupy.uint16).copy()
    got = cugemm.run(v, a, b, out=c)
    assert got is c
    cupy.cuda.get_current_stream().synchronize()
    raw = buf.view(cupy.uint16)
    assert bool((raw[:guard] == before[:guard]).all()) and bool((raw[-guard:] == before[-guard:]).all()), \
        f"{v.name} wrote outside C at {M}x{N}"
    assert not bool(cupy.isnan(testing.to_float64(c)).any()), f"{v.name} left elements of C unwritten at {M}x{N}"
    return c


def test_every_form_is_covered():
    assert len(BCOL) >= 12 and all(n.endswith(("_bcol", "_bcol_bf16")) for n in BCOL)


@pytest.mark.parametrize("name,shape", CASES, ids=[f"{n}-{'x'.join(map(str, s))}" for n, s in CASES])
def test_bcol_form_matches_reference_and_row_major_sibling(name, shape):
    M, N, K = shape
    v = cugemm.get_variant(name)
    assert (v.a_layout, v.b_layout) == ("row", "col")
    a, w, ref = _inputs(v.dtype_in, M, N, K)
    b = w.T  # W.T: column-major K x N, no copy
    assert b.flags.f_contiguous and b.shape == (K, N)
    c = _run_poisoned(v, a, b, M, N)
    tol = accuracy.tolerance(v.math_dtype, v.dtype_acc)
    err, ok = accuracy.check(c, ref, v)
    assert ok, f"{name} {shape}: rel err {err:.2e} over {tol}"

    if v.param_dict["BN"] % 32:  # a fitted width: no row-major sibling
        return
    # the row-major sibling (the same kernel with B_COL = false) on the same values, B copied K x N
    row = cugemm.get_variant(name.replace("_bcol", ""))
    assert row.param_dict == {**v.param_dict, "B_COL": False} and row.b_layout == "row"
    b_row = cupy.ascontiguousarray(w.view(cupy.uint16).T).view(w.dtype)  # by the bits: no bf16 arithmetic
    c_row = _run_poisoned(row, a, b_row, M, N)
    err_row, ok_row = accuracy.check(c_row, ref, row)
    assert ok_row, f"{row.name} {shape}: rel err {err_row:.2e} over {tol}"
    diff = accuracy.rel_error(c, testing.to_float64(c_row))
    assert accuracy.within(diff, v.math_dtype, v.dtype_acc), \
        f"{name} {shape}: differs from {row.name} by {diff:.2e} (rel), over {tol}"


@pytest.mark.parametrize("name", [n for n in BCOL if not n.endswith("_bf16")][:2] + [BCOL[-1]])
def test_bcol_form_allocates_its_output(name):
    """out=None: cugemm.run allocates C; the same values as into a given C."""
    v = cugemm.get_variant(name)
    M, N, K = 100, 1000, 776
    a, w, ref = _inputs(v.dtype_in, M, N, K)
    c = cugemm.run(v, a, w.T)
    assert c.shape == (M, N) and c.flags.c_contiguous
    assert accuracy.check(c, ref, v)[1]
