"""cugemm.serve on the GPU: the serving paths (torch and CuPy callers) give the float64 reference's
product for every plan kind, keep giving it when the same problem comes back at other addresses
(tensor maps re-pointed, workspaces re-allocated), and plan each problem once."""
from __future__ import annotations

import pytest

import cugemm
from cugemm import accuracy, prepared, serve

pytestmark = pytest.mark.gpu
TOL = {"float16": 2e-3, "bfloat16": 1.5e-2, "float32": 1e-5}

# (M, N, K, B layout): direct, x @ W.T, skinny (M <= 16), split-K-sized, odd (relayout), any-C (odd N)
CASES = [(256, 512, 384, "row"), (1024, 3072, 768, "col"), (8, 4096, 4096, "col"), (13, 2048, 1024, "row"),
         (128, 4096, 4096, "row"), (1023, 1025, 777, "row"), (777, 1001, 512, "col"), (64, 768, 3072, "col"),
         (4096, 4096, 1024, "col"), (3000, 3072, 768, "col")]


def _rel(c, ref):
    import numpy as np

    c = np.asarray(c, dtype=np.float64)
    return float(np.linalg.norm(c - ref) / max(np.linalg.norm(ref), 1e-30))


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def test_tensormap_address_is_patchable_here():
    pytest.importorskip("cupy")
    assert prepared.tensormap_address_patchable()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("M,N,K,bl", CASES, ids=lambda x: str(x))
def test_torch_serving_path(torch, dtype, M, N, K, bl):
    """First call (planned) and later calls on fresh operands at other addresses: each against
    float64; the later calls come from the plan cache (no new plan)."""
    dt = getattr(torch, dtype)
    for rep in range(3):
        x = torch.randn(M, K, device="cuda", dtype=dt)
        w = torch.randn(N, K, device="cuda", dtype=dt) if bl == "col" else torch.randn(K, N, device="cuda", dtype=dt)
        b = w.T if bl == "col" else w
        before = serve.plans_cached()
        c = cugemm.matmul(x, b)
        if rep:
            assert serve.plans_cached() == before, "a planned problem must not be planned again"
        assert c.shape == (M, N) and c.dtype == dt and c.is_contiguous()
        ref = (x.double() @ b.double()).cpu().numpy()
        err = _rel(c.float().cpu().numpy(), ref)
        assert err < TOL[dtype], (rep, err)


@pytest.mark.parametrize("M,N,K,bl", CASES[:6], ids=lambda x: str(x))
def test_cupy_serving_path(M, N, K, bl):
    cupy = pytest.importorskip("cupy")
    from cugemm import testing

    for rep in range(3):
        a, b = testing.random_operands("float16", M, N, K)
        if bl == "col":
            b = cupy.ascontiguousarray(b.T).T
        out = cupy.full((M, N), cupy.nan, dtype=cupy.float16) if rep == 2 else None
        c = cugemm.matmul(a, b, out=out)
        if out is not None:
            assert c is out
        err = accuracy.rel_error(c, accuracy.reference(a, b))
        assert err < TOL["float16"], (rep, err)


def test_torch_batched_broadcast_and_vectors(torch):
    dt = torch.bfloat16
    cases = [((4, 256, 128), (128, 192)), ((4, 256, 128), (4, 128, 192)), ((2, 1, 64, 96), (3, 96, 80)),
             ((128,), (128, 256)), ((64, 128), (128,)), ((3, 32, 128), (128,)), ((128,), (2, 128, 64))]
    for sa, sb in cases:
        a = torch.randn(*sa, device="cuda", dtype=dt)
        b = torch.randn(*sb, device="cuda", dtype=dt)
        c = cugemm.matmul(a, b)
        ref = torch.matmul(a.double(), b.double())
        assert c.shape == ref.shape, (sa, sb)
        assert _rel(c.float().cpu().numpy(), ref.cpu().numpy()) < TOL["bfloat16"], (sa, sb)


def test_torch_out_and_transposed_a(torch):
    x = torch.randn(512, 300, device="cuda", dtype=torch.float16)
    w = torch.randn(300, 640, device="cuda", dtype=torch.float16)
    out = torch.full((640, 512), float("nan"), device="cuda", dtype=torch.float16)
    r = cugemm.matmul(w.T, x.T, out=out)
    assert r is out
    ref = (w.double().T @ x.double().T).cpu().numpy()
    assert _rel(out.float().cpu().numpy(), ref) < TOL["float16"]


def test_torch_float32_and_tf32(torch):
    a = torch.randn(300, 500, device="cuda")
    b = torch.randn(500, 200, device="cuda")
    ref = (a.double() @ b.double()).cpu().numpy()
    assert _rel(cugemm.matmul(a, b).cpu().numpy(), ref) < TOL["float32"]
    assert _rel(cugemm.matmul(a, b, allow_tf32=True).cpu().numpy(), ref) < 1e-3


def test_torch_errors(torch):
    x = torch.randn(8, 16, device="cuda", dtype=torch.float16)
    with pytest.raises(ValueError, match="inner dimensions"):
        cugemm.matmul(x, torch.randn(15, 4, device="cuda", dtype=torch.float16))
    with pytest.raises(TypeError, match="one type"):
        cugemm.matmul(x, torch.randn(16, 4, device="cuda", dtype=torch.bfloat16))
    with pytest.raises(TypeError, match="float64|dtype"):
        cugemm.matmul(x.double(), x.double().T)
    with pytest.raises(TypeError, match="GPU|cpu"):
        cugemm.matmul(x.cpu(), x.cpu().T)
    with pytest.raises(ValueError, match="overlaps"):
        big = torch.randn(64, 64, device="cuda", dtype=torch.float16)
        cugemm.matmul(big[:, :16], big[:16, :16], out=big[:, 16:32])


def test_capture_of_an_unplanned_problem_raises_before_enqueueing(torch):
    """A problem never run before cannot be planned inside a capture: CaptureError, nothing
    enqueued, and the caller's capture can still be ended and replayed."""
    x = torch.randn(96, 200, device="cuda", dtype=torch.float16)
    w = torch.randn(168, 200, device="cuda", dtype=torch.float16)
    g = torch.cuda.CUDAGraph()
    y = None
    with torch.cuda.graph(g):
        with pytest.raises(serve.CaptureError, match="eagerly"):
            cugemm.matmul(x, w.T)
        y = x * 2
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(y, x * 2)


def test_torch_empty_sum_is_zeros(torch):
    """K = 0: the product is zeros (no kernel), on the torch serving path's first call and the next."""
    for dt in (torch.float16, torch.float32):
        for _ in range(2):
            c = cugemm.matmul(torch.empty(4, 0, device="cuda", dtype=dt), torch.empty(0, 5, device="cuda", dtype=dt))
            assert c.shape == (4, 5) and bool((c == 0).all())
