"""Batched products in one launch (cugemm.batched, rung 7's BATCHED form) on a GPU.

Each case multiplies fresh random operands against the float64 reference with the tolerance of
cugemm.accuracy, into an output poisoned with NaN (and, where the case gives `out`, a view inside a
larger poisoned buffer whose margins must stay poisoned: nothing is written outside the output).
Cases: batch counts from 2 to 300; A and B row- and column-major, padded, misaligned; dimensions
that are not multiples of 8 (copied into padded batches); broadcast operands that collapse (one
matrix for every product) and that do not (copied); CuPy and torch; the plan cache's second call;
capture in a CUDA graph and replay after the inputs change in place.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import cugemm
from cugemm import accuracy, serve, testing

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")


def _random(dtype, shape):
    return testing.cast(cupy.random.standard_normal(shape, dtype=cupy.float32), dtype)


def _bits(x):
    return x.view(cupy.uint16 if x.itemsize == 2 else cupy.uint32)


def _relaid(x, layout):
    """x (dense, row-major) as 'row', 'col' (a transposed view of a dense copy), 'padded' (rows with
    8 spare elements) or 'offset' (one element into its buffer: 2-byte aligned)."""
    if layout == "col":
        return cupy.ascontiguousarray(x.swapaxes(-1, -2)).swapaxes(-1, -2)
    if layout == "padded":
        buf = cupy.empty(x.shape[:-1] + (x.shape[-1] + 8,), dtype=x.dtype)
        _bits(buf[..., :x.shape[-1]])[...] = _bits(x)
        return buf[..., :x.shape[-1]]
    if layout == "offset":
        flat = cupy.empty(x.size + 1, dtype=x.dtype)
        view = flat[1:].reshape(x.shape)
        _bits(view)[...] = _bits(x)
        return view
    return x


def _check(c, a0, b0):
    ref = cupy.matmul(testing.to_float64(a0), testing.to_float64(b0))
    assert c.shape == ref.shape
    err = accuracy.rel_error(c, ref)
    assert accuracy.within(err, str(a0.dtype) if a0.dtype != cupy.float32 else "float32", "float32"), err


def _guarded_out(shape, dtype):
    """A view of `shape` inside a poisoned buffer with 3 spare rows and 16 spare columns per matrix;
    returns (view, buffer)."""
    buf = testing.poisoned(shape[:-2] + (shape[-2] + 3, shape[-1] + 16), dtype)
    return buf[..., 1:1 + shape[-2], 8:8 + shape[-1]], buf


def _margins_poisoned(buf, shape):
    inner = cupy.zeros(buf.shape, dtype=bool)
    inner[..., 1:1 + shape[-2], 8:8 + shape[-1]] = True
    return bool(cupy.isnan(testing.to_float64(buf))[~inner].all())


# (batch of A, batch of B, M, N, K, layout of A, layout of B, dtype)
CASES = [
    ((64,), (64,), 512, 512, 64, "row", "row", "float16"),
    ((32,), (32,), 1024, 1024, 128, "row", "col", "bfloat16"),       # q @ k.T
    ((8, 4), (8, 4), 200, 328, 96, "row", "col", "float16"),          # two batch dims, edge tiles
    ((300,), (300,), 64, 64, 64, "row", "row", "bfloat16"),           # many small products
    ((3,), (3,), 130, 260, 72, "col", "col", "float16"),              # A and B column-major
    ((5,), (5,), 257, 1000, 136, "col", "row", "bfloat16"),
    ((2, 3), (1, 3), 96, 136, 200, "row", "row", "float16"),          # B broadcast over dim 0: copied
    ((1,), (6,), 384, 256, 64, "row", "row", "float16"),              # A broadcast: one matrix
    ((6,), (1,), 384, 256, 64, "col", "col", "bfloat16"),             # B broadcast, A's rows do not stack
    ((4,), (4,), 100, 77, 61, "row", "row", "float16"),               # N, K not multiples of 8: copies
    ((4,), (4,), 128, 128, 128, "padded", "padded", "bfloat16"),      # strided rows, in place
    ((3,), (3,), 128, 96, 64, "offset", "row", "float16"),            # A 2-byte aligned: copied
    ((7,), (7,), 1, 640, 256, "row", "col", "float16"),               # one row per product
    ((2,), (2,), 3000, 2000, 256, "row", "row", "bfloat16"),
    # float32 (exact): the FP32 batched form, dense rows (a transposed B is copied), any shape
    ((16,), (16,), 200, 136, 72, "row", "col", "float32"),
    ((4,), (4,), 100, 77, 61, "row", "row", "float32"),
    ((2, 3), (3,), 96, 128, 64, "row", "row", "float32"),             # B one window: read in place
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[0])) + f"-{c[2]}x{c[3]}x{c[4]}-{c[5]},{c[6]}-{c[7]}")
@pytest.mark.parametrize("api", ["cupy", "torch"])
def test_batched_products_match_float64(case, api):
    ba, bb, M, N, K, la, lb, dt = case
    a0, b0 = _random(dt, ba + (M, K)), _random(dt, bb + (K, N))
    a, b = _relaid(a0, la), _relaid(b0, lb)
    shape = tuple(np.broadcast_shapes(ba, bb)) + (M, N)
    out, buf = _guarded_out(shape, dt)
    choice = cugemm.explain(a, b, out)
    if api == "torch":
        torch = pytest.importorskip("torch")
        c = cugemm.matmul(torch.from_dlpack(a), torch.from_dlpack(b), out=torch.from_dlpack(out))
        torch.cuda.synchronize()
    else:
        c = cugemm.matmul(a, b, out=out)
        cupy.cuda.Device().synchronize()
    _check(out, a0, b0)
    assert _margins_poisoned(buf, shape), "a write outside the output"
    assert "batched" in choice.plan.variant.name and "one launch" in choice.plan.note, str(choice)
    assert c is not None


def test_fresh_result_and_the_serving_path():
    """Without out: a dense result; the second call with the same geometry takes the cached plan
    (torch: the serving path keyed by shapes and strides) and stays right on new data."""
    torch = pytest.importorskip("torch")
    for dt in (torch.float16, torch.bfloat16):
        for trans in (False, True):
            q = torch.randn(24, 640, 128, device="cuda", dtype=dt)
            kk = torch.randn(24, 640, 128, device="cuda", dtype=dt).transpose(1, 2) if trans else \
                torch.randn(24, 128, 640, device="cuda", dtype=dt)
            first = cugemm.matmul(q, kk)
            plans = serve.plans_cached()
            q2 = torch.randn_like(q)
            second = cugemm.matmul(q2, kk)
            assert serve.plans_cached() == plans
            for c, x in ((first, q), (second, q2)):
                ref = torch.matmul(x.double(), kk.double())
                err = float((c.double() - ref).norm() / ref.norm())
                assert accuracy.within(err, "float16" if dt == torch.float16 else "bfloat16", "float32"), err


def test_cuda_graph_replays_a_batched_product():
    """Captured after one eager call; the inputs changed in place between replays; 20 replays
    bit-identical to an eager call on the same inputs."""
    torch = pytest.importorskip("torch")
    a = torch.randn(48, 256, 64, device="cuda", dtype=torch.float16)
    b = torch.randn(48, 64, 320, device="cuda", dtype=torch.float16)
    cugemm.matmul(a, b)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        cugemm.matmul(a, b)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        c = cugemm.matmul(a, b)
    for _ in range(3):
        a.copy_(torch.randn_like(a))
        b.copy_(torch.randn_like(b))
        g.replay()
        torch.cuda.synchronize()
        eager = cugemm.matmul(a, b)
        assert torch.equal(c, eager)
        ref = torch.matmul(a.double(), b.double())
        assert float((c.double() - ref).norm() / ref.norm()) < accuracy.tolerance("float16", "float32")
    snap = c.clone()
    for _ in range(20):
        g.replay()
    torch.cuda.synchronize()
    assert torch.equal(c, snap)


def test_autograd_through_a_batched_product():
    """dA = dC B^T and dB = A^T dC, themselves batched products, match torch's."""
    torch = pytest.importorskip("torch")
    a = torch.randn(6, 96, 80, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    b = torch.randn(6, 80, 136, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    g = torch.randn(6, 96, 136, device="cuda", dtype=torch.bfloat16)
    cugemm.matmul(a, b).backward(g)
    ga, gb = a.grad.double(), b.grad.double()
    ra = torch.matmul(g.double(), b.detach().double().transpose(1, 2))
    rb = torch.matmul(a.detach().double().transpose(1, 2), g.double())
    tol = accuracy.tolerance("bfloat16", "float32")
    assert float((ga - ra).norm() / ra.norm()) < tol and float((gb - rb).norm() / rb.norm()) < tol


def test_a_named_batched_form_runs_and_others_are_refused():
    a, b = _random("float16", (5, 200, 64)), _random("float16", (5, 64, 192))
    out = testing.poisoned((5, 200, 192), "float16")
    cugemm.matmul(a, b, out=out, variant="hgemm_wgmma_m64n64k16_persistent_tma_store_stage8_batched")
    _check(out, a, b)
    with pytest.raises(ValueError, match="not a batched form"):
        cugemm.matmul(a, b, variant="hgemm_wgmma_m64n64k16_persistent_tma_store_stage8_bcol_batched")
    assert math.isfinite(float(out.astype(cupy.float32).sum()))


@pytest.mark.parametrize("sa,sb", [((64, 96), (4, 96, 80)), ((2, 1, 64, 96), (3, 96, 80)), ((3, 64, 96), (96, 80)),
                                   ((4, 64, 96), (4, 96, 80)), ((64, 96), (96, 80)), ((2, 3, 64, 96), (96, 80)),
                                   ((4, 1, 64, 96), (1, 5, 96, 80))], ids=str)
def test_the_serving_path_keeps_every_result_shape(sa, sb):
    """torch operands: the second and third calls of a geometry take the serving path (a result of the
    shape filed with the plan); each result has torch.matmul's shape and values."""
    torch = pytest.importorskip("torch")
    for _ in range(3):
        a = torch.randn(*sa, device="cuda", dtype=torch.float16)
        b = torch.randn(*sb, device="cuda", dtype=torch.float16)
        c = cugemm.matmul(a, b)
        ref = torch.matmul(a.double(), b.double())
        assert c.shape == ref.shape
        err = float((c.double() - ref).norm() / ref.norm())
        assert accuracy.within(err, "float16", "float32"), err


MMA_FORMS = [v.name for v in cugemm.variants("*_edge_batched")]


@pytest.mark.parametrize("name", MMA_FORMS)
@pytest.mark.parametrize("case", [c for c in CASES if c[4] % 8 == 0 and c[3] % 8 == 0 and c[7] != "float32"][:8],
                         ids=lambda c: "x".join(map(str, c[0])) + f"-{c[2]}x{c[3]}x{c[4]}-{c[5]},{c[6]}")
def test_the_mma_sync_batched_form(name, case):
    """The batched form of the GPUs without wgmma (named here; sm_90 runs it too): dense row-major
    products in grid z, each operand read in place when it is one window of dense matrices, copied
    dense otherwise (column-major, padded or misaligned operands, a broadcast that is not a window)."""
    ba, bb, M, N, K, la, lb, _ = case
    dt = cugemm.get_variant(name).dtype_in
    a0, b0 = _random(dt, ba + (M, K)), _random(dt, bb + (K, N))
    a, b = _relaid(a0, la), _relaid(b0, lb)
    shape = tuple(np.broadcast_shapes(ba, bb)) + (M, N)
    out, buf = _guarded_out(shape, dt)
    cugemm.matmul(a, b, out=out, variant=name)
    cupy.cuda.Device().synchronize()
    _check(out, a0, b0)
    assert _margins_poisoned(buf, shape), "a write outside the output"
    choice = cugemm.explain(a, b, out, variant=name)
    assert choice.plan.variant.name == name and "one launch" in choice.plan.note


# float32 with allow_tf32 on sm_90: the TF32 rung's batched form (row-major A and B read in place
# where they are one window of 16-byte lines; C's rows dense); off sm_90, exact FP32 in one launch
TF32_CASES = [
    ((8,), (8,), 1024, 1024, 128, "row", "row"),       # the shape that looped before (8 x 4096^2 x 128's kind)
    ((64,), (64,), 512, 512, 64, "row", "row"),
    ((2, 3), (3,), 300, 200, 96, "row", "row"),        # B one window: read in place by 2 x 3 products
    ((1,), (6,), 256, 384, 64, "row", "row"),          # A one matrix for every product
    ((4,), (4,), 100, 77, 61, "row", "row"),           # N, K not multiples of 4: copies
    ((5,), (5,), 257, 136, 72, "padded", "col"),       # strided A in place, a transposed B copied
    ((3,), (3,), 64, 640, 40, "row", "row"),           # one tile row, a partial last K-tile
    ((12,), (12,), 256, 256, 64, "row", "col"),        # q @ k.T: B read column-major in place (_bcol)
    ((2, 3), (2, 3), 200, 77, 36, "row", "col"),       # N not a multiple of 4: a 'col' B needs none
    ((4,), (1,), 130, 300, 68, "padded", "col"),       # B one matrix for every product, strided A
]


@pytest.mark.parametrize("case", TF32_CASES, ids=lambda c: "x".join(map(str, c[0])) + f"-{c[2]}x{c[3]}x{c[4]}-{c[5]},{c[6]}")
def test_tf32_batches_are_one_launch(case):
    ba, bb, M, N, K, la, lb = case
    a0, b0 = _random("float32", ba + (M, K)), _random("float32", bb + (K, N))
    a, b = _relaid(a0, la), _relaid(b0, lb)
    shape = tuple(np.broadcast_shapes(ba, bb)) + (M, N)
    out, buf = _guarded_out(shape, "float32")
    choice = cugemm.explain(a, b, out, allow_tf32=True)
    cugemm.matmul(a, b, out=out, allow_tf32=True)
    cupy.cuda.Device().synchronize()
    ref = cupy.matmul(testing.to_float64(a0), testing.to_float64(b0))
    err = accuracy.rel_error(out, ref)
    v = choice.plan.variant
    assert v.batched and "one launch" in choice.plan.note, str(choice)
    if cupy.cuda.Device().compute_capability.startswith("9"):
        assert v.math_dtype == "tfloat32", v.name
        if lb == "col":
            assert v.b_layout == "col", v.name
    assert accuracy.within(err, v.math_dtype, "float32"), err
    assert _margins_poisoned(buf, shape), "a write outside the output"


def test_a_named_2d_kernel_is_refused_for_a_batch():
    a, b = _random("float16", (5, 200, 64)), _random("float16", (5, 64, 192))
    with pytest.raises(ValueError, match="2-D kernel"):
        cugemm.matmul(a, b, variant="hgemm_wgmma_m64n128k16_persistent_tma_store_stage6")


@pytest.mark.parametrize("dtype,variant", [("float32", None),
                                           ("float16", next(n for n in MMA_FORMS if n.startswith("hgemm_mma")))])
def test_more_than_65535_products(dtype, variant):
    """Past CUDA's 65535 blocks in grid z a dense batched form takes one launch per 65535 products."""
    n = 70001
    a0, b0 = _random(dtype, (n, 5, 16)), _random(dtype, (n, 16, 8))
    out = testing.poisoned((n, 5, 8), dtype)
    cugemm.matmul(a0, b0, out=out, variant=variant)
    cupy.cuda.Device().synchronize()
    _check(out, a0, b0)
    tail = cupy.matmul(testing.to_float64(a0[-3:]), testing.to_float64(b0[-3:]))
    assert accuracy.rel_error(out[-3:], tail) < accuracy.tolerance(dtype, "float32")
