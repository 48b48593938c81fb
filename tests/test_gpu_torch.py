"""cugemm as a torch citizen, on a GPU: the registered op (opcheck), torch.compile, gradients against
torch in float64, CUDA-graph capture and replay of every kind of plan, streams and threads.
Every test carries the gpu marker (pytestmark); the file skips where torch is not importable."""
import copy
import functools
import threading

import pytest

try:
    import torch
except ImportError as e:
    pytest.skip(f"torch is not importable: {e}", allow_module_level=True)

import cugemm  # noqa: E402
import cugemm.torch_op as top  # noqa: E402

pytestmark = pytest.mark.gpu

# relative Frobenius error against a float64 reference computed by torch
TOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.5e-2}
DTYPES = list(TOL)
SPLITK = "hgemm_wgmma_m64n128k16_splitk_stage6"


def rel_err(x, ref) -> float:
    ref = ref.double()
    return ((x.double() - ref).norm() / ref.norm().clamp_min(1e-300)).item()


def rand(shape, dtype, requires_grad=False):
    x = torch.randn(shape, device="cuda", dtype=torch.float32).to(dtype)
    return x.requires_grad_(requires_grad)


def assert_close64(x, ref, dtype, factor=1.0):
    assert x.shape == ref.shape and x.dtype == dtype
    err = rel_err(x, ref)
    assert err < factor * TOL[dtype], f"relative error {err:.3g} >= {factor * TOL[dtype]:.3g}"


# ---- the op ----------------------------------------------------------------------------------------------
OP_CASES = {  # name: (A's shape, B's shape or ('T', W's shape) for B = W.T)
    "2d": ((64, 96), (96, 80)),
    "x@W.T": ((2, 16, 64), ("T", (48, 64))),
    "x2d@W.T": ((33, 64), ("T", (40, 64))),
    "batched": ((3, 32, 64), (3, 64, 40)),
    "broadcast": ((2, 1, 16, 32), (3, 32, 24)),
    "A2d_B3d": ((16, 32), (3, 32, 24)),
    "1d_left": ((64,), (64, 40)),
    "1d_right": ((3, 16, 64), (64,)),
}


def op_operands(case, dtype, requires_grad=False):
    sa, sb = OP_CASES[case]
    a = rand(sa, dtype, requires_grad)
    if sb[0] == "T":
        return a, rand(sb[1], dtype, requires_grad).T
    return a, rand(sb, dtype, requires_grad)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", list(OP_CASES))
def test_opcheck(case, dtype):
    a, b = op_operands(case, dtype, requires_grad=True)
    torch.library.opcheck(torch.ops.cugemm.matmul.default, (a, b, False))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", list(OP_CASES))
def test_op_forward(case, dtype):
    a, b = op_operands(case, dtype)
    y = top.matmul(a, b)
    assert_close64(y, torch.matmul(a.double(), b.double()), dtype)


@pytest.mark.parametrize("sa,sb,da,db", [((3, 4), (5, 6), torch.float16, torch.float16),
                                         ((2, 3, 4), (3, 4, 5), torch.float32, torch.float32),
                                         ((3, 4), (4, 5), torch.float16, torch.float32),
                                         ((3, 4), (4, 5), torch.float64, torch.float64)], ids=str)
def test_errors_same_kind_eager_and_fake(sa, sb, da, db):
    kinds = []
    for dev in ("cuda", "meta"):
        a, b = torch.zeros(sa, dtype=da, device=dev), torch.zeros(sb, dtype=db, device=dev)
        with pytest.raises((TypeError, ValueError)) as e:
            top.matmul(a, b)
        kinds.append(e.type)
    assert kinds[0] is kinds[1]


# ---- torch.compile ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_compile_fullgraph_function(dtype):
    torch._dynamo.reset()
    f = torch.compile(lambda x, w: cugemm.matmul(x, w.T), fullgraph=True)
    x, w = rand((4, 96, 256), dtype), rand((384, 256), dtype)
    y = f(x, w)
    ref = x.double() @ w.double().T
    assert_close64(y, ref, dtype)
    assert_close64(cugemm.matmul(x, w.T), ref, dtype)
    # and with autograd through the compiled graph
    xg, wg = x.detach().requires_grad_(), w.detach().requires_grad_()
    y = f(xg, wg)
    gy = rand(y.shape, dtype)
    gx, gw = torch.autograd.grad(y, (xg, wg), gy)
    assert_close64(gx, gy.double() @ w.double(), dtype)
    assert_close64(gw, gy.double().reshape(-1, 384).T @ x.double().reshape(-1, 256), dtype)


def test_compile_dynamic_shapes():
    torch._dynamo.reset()
    f = torch.compile(lambda a, b: cugemm.matmul(a, b), fullgraph=True, dynamic=True)
    for M in (40, 72, 130):
        a, b = rand((2, M, 64), torch.float16), rand((64, 48), torch.float16)
        assert_close64(f(a, b), a.double() @ b.double(), torch.float16)


class MLP(torch.nn.Module):
    def __init__(self, d=256, h=512):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(d, h), torch.nn.Linear(h, d, bias=False)

    def forward(self, x):
        return self.fc2(torch.nn.functional.gelu(self.fc1(x)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_compile_module_with_linear(dtype, monkeypatch):
    from cugemm import serve

    calls = []
    kernel = serve.torch_matmul  # what the operator's CUDA kernel calls (torch_op looks it up per call)

    def counting(*args, **kw):
        calls.append(1)
        return kernel(*args, **kw)

    monkeypatch.setattr(serve, "torch_matmul", counting)
    torch._dynamo.reset()
    stock = MLP().cuda().to(dtype)
    routed = copy.deepcopy(stock)
    assert top.route_linears(routed) == 2
    ref64 = copy.deepcopy(stock).double()
    x = rand((4, 32, 256), dtype)
    compiled = torch.compile(routed, fullgraph=True)
    with torch.no_grad():
        y = compiled(x)
        ref = ref64(x.double())
    assert calls, "the compiled module did not run cugemm's kernel"
    assert_close64(y, ref, dtype, factor=2)
    # a training step through the compiled module: gradients of every parameter
    y = compiled(x)
    gy = rand(y.shape, dtype)
    grads = torch.autograd.grad(y, list(routed.parameters()), gy)
    refs = torch.autograd.grad(ref64(x.double()), list(ref64.parameters()), gy.double())
    for g, r in zip(grads, refs):
        assert_close64(g, r, dtype, factor=2)


# ---- gradients ---------------------------------------------------------------------------------------------
GRAD_CASES = {
    "2d": ((128, 96), (96, 80)),
    "batched": ((4, 64, 96), (4, 96, 80)),
    "A3d_B2d": ((4, 64, 96), (96, 80)),
    "A2d_B3d": ((64, 96), (4, 96, 80)),
    "broadcast4d": ((2, 1, 64, 96), (3, 96, 80)),
    "1d_left": ((96,), (96, 80)),
    "1d_right": ((64, 96), (96,)),
    "1d_batched": ((96,), (4, 96, 80)),
    "1d_1d": ((96,), (96,)),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", list(GRAD_CASES))
def test_grads_vs_torch(case, dtype):
    sa, sb = GRAD_CASES[case]
    a, b = rand(sa, dtype, True), rand(sb, dtype, True)
    y = cugemm.matmul(a, b)
    assert y.grad_fn is not None
    gy = rand(y.shape, dtype)
    ga, gb = torch.autograd.grad(y, (a, b), gy)
    a64, b64 = a.detach().double().requires_grad_(), b.detach().double().requires_grad_()
    ra, rb = torch.autograd.grad(torch.matmul(a64, b64), (a64, b64), gy.double())
    assert_close64(y, torch.matmul(a64, b64), dtype)
    assert_close64(ga, ra, dtype)
    assert_close64(gb, rb, dtype)


def test_grad_of_sum_and_one_operand():
    a, b = rand((3, 64, 96), torch.float16, True), rand((96, 80), torch.float16)
    cugemm.matmul(a, b).sum().backward()
    assert b.grad is None
    assert_close64(a.grad, b.double().sum(1).expand(3, 64, 96), torch.float16)


@pytest.mark.parametrize("case", ["2d", "A3d_B2d", "broadcast4d", "1d_batched"])
def test_double_backward(case):
    sa, sb = GRAD_CASES[case]
    a, b = rand(sa, torch.float32, True), rand(sb, torch.float32, True)
    a64, b64 = a.detach().double().requires_grad_(), b.detach().double().requires_grad_()
    out = []
    for mm, x, w in ((cugemm.matmul, a, b), (torch.matmul, a64, b64)):
        y = mm(x, w)
        gy = torch.ones_like(y)
        gx, gw = torch.autograd.grad(y, (x, w), gy, create_graph=True)
        out.append(torch.autograd.grad((gx * gx).sum() + (gw * gw).sum(), (x, w)))
    for g, r in zip(*out):
        assert_close64(g, r, torch.float32)


# ---- CUDA graphs ---------------------------------------------------------------------------------------------
GRAPH_CASES = {  # name: (dtype, operand shapes, expression of (matmul, *operands), cugemm keywords)
    "aligned_2d_f16": (torch.float16, [(256, 384), (384, 512)], lambda mm, a, b: mm(a, b), {}),
    "aligned_2d_bf16": (torch.bfloat16, [(256, 384), (384, 512)], lambda mm, a, b: mm(a, b), {}),
    "aligned_2d_f32": (torch.float32, [(256, 384), (384, 512)], lambda mm, a, b: mm(a, b), {}),
    "x@W.T": (torch.bfloat16, [(1024, 768), (3072, 768)], lambda mm, x, w: mm(x, w.T), {}),
    "odd_relayout": (torch.float16, [(1023, 777), (777, 1025)], lambda mm, a, b: mm(a, b), {}),
    "skinny_m8": (torch.float16, [(8, 4096), (4096, 4096)], lambda mm, x, w: mm(x, w.T), {}),
    "splitk_shape": (torch.float16, [(128, 4096), (4096, 4096)], lambda mm, a, b: mm(a, b), {}),
    "splitk_forced": (torch.float16, [(128, 4096), (4096, 4096)], lambda mm, a, b: mm(a, b), {"variant": SPLITK}),
    "batched": (torch.float16, [(4, 256, 128), (4, 128, 512)], lambda mm, a, b: mm(a, b), {}),
    "x3d@W.T": (torch.bfloat16, [(2, 64, 768), (768, 768)], lambda mm, x, w: mm(x, w.T), {}),
}


@pytest.mark.parametrize("case", list(GRAPH_CASES))
def test_cuda_graph_capture_and_replay(case):
    dtype, shapes, expr, kw = GRAPH_CASES[case]
    if kw.get("variant") and kw["variant"] not in {v.name for v in cugemm.variants()}:
        pytest.skip(f"no variant {kw['variant']}")
    mm = functools.partial(cugemm.matmul, **kw)
    ops = [rand(s, dtype) for s in shapes]
    run = lambda: expr(mm, *ops)  # noqa: E731
    run()                                  # the problem's first call, eager
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = run()
    for x, s in zip(ops, shapes):          # new operands, in place
        x.copy_(rand(s, dtype))
    g.replay()
    torch.cuda.synchronize()
    assert_close64(out, expr(torch.matmul, *[x.double() for x in ops]), dtype)
    eager = run()
    for i in range(100):
        out.fill_(float("nan"))
        g.replay()
        assert torch.equal(out, eager), f"replay {i} differs from the eager result"


def test_capture_of_an_unseen_problem_leaves_later_captures_working():
    from cugemm import serve

    a, b = rand((328, 264), torch.float16), rand((264, 200), torch.float16)   # never run before
    g = torch.cuda.CUDAGraph()
    captured = True
    try:
        with torch.cuda.graph(g):
            out = cugemm.matmul(a, b)
    except RuntimeError as e:
        captured = False
        assert isinstance(e, getattr(serve, "CaptureError", ())) or "cugemm" in str(e), str(e)
    if captured:
        g.replay()
        torch.cuda.synchronize()
        assert_close64(out, a.double() @ b.double(), torch.float16)
    # the process can still capture: a warmed problem in a fresh graph
    x, w = rand((96, 256), torch.float16), rand((384, 256), torch.float16)
    cugemm.matmul(x, w.T)
    torch.cuda.synchronize()
    g2 = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g2):
        y = cugemm.matmul(x, w.T)
        z = torch.matmul(x, w.T)                           # torch's own work in the same capture
    x.copy_(rand((96, 256), torch.float16))
    g2.replay()
    torch.cuda.synchronize()
    assert_close64(y, x.double() @ w.double().T, torch.float16)
    assert_close64(z, x.double() @ w.double().T, torch.float16)
    # and the unseen problem now runs eagerly
    assert_close64(cugemm.matmul(a, b), a.double() @ b.double(), torch.float16)


# ---- streams and threads -------------------------------------------------------------------------------------
def test_runs_on_the_current_stream():
    a, b = rand((512, 384), torch.float16), rand((384, 640), torch.float16)
    cugemm.matmul(a, b)                                   # planned and loaded
    new = rand((512, 384), torch.float16)
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(200_000_000)                    # ~0.1 s of GPU time on s
        a.copy_(new)                                      # ...then new values, on s
        y = cugemm.matmul(a, b)                           # must see them: ordered after the copy
    s.synchronize()
    assert_close64(y, new.double() @ b.double(), torch.float16)


def test_threads_with_their_own_streams():
    dtype = torch.float16
    xs = [rand((192, 256), dtype) for _ in range(5)]
    w = rand((320, 256), dtype)
    refs = [x.double() @ w.double().T for x in xs]
    cugemm.matmul(xs[0], w.T)
    torch.cuda.synchronize()
    errors, results = [], {}

    def work(t):
        try:
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                results[t] = [cugemm.matmul(xs[i % 5], w.T) for i in range(50)]
            s.synchronize()
        except Exception as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    for t in range(2):
        assert len(results[t]) == 50
        for i, y in enumerate(results[t]):
            assert_close64(y, refs[i % 5], dtype)
