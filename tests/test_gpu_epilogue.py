"""Fused epilogues on a GPU (cugemm.epilogue, cugemm.linear, cugemm.gemm): every composition of the
parts on a fused kernel, both paths (fused and matmul + a pass) through the front doors, CuPy and
torch, against float64 references with NaN-poisoned outputs; in-place beta updates, odd shapes,
bad input; torch autograd, torch.compile, opcheck and CUDA-graph replay. Tolerances:
cugemm.accuracy.TOLERANCE (the 16-bit types' rows: the rounding of D dominates)."""
import numpy as np
import pytest

cupy = pytest.importorskip("cupy")

import cugemm  # noqa: E402
from cugemm import accuracy, epilogue, serve, testing, toolkit  # noqa: E402
from cugemm import operand  # noqa: E402

pytestmark = pytest.mark.gpu

DTYPES = ("float16", "bfloat16")
BASE = {"float16": "hgemm_wgmma_m64n128k16_persistent_cluster2_tma_store_stage6_bcol",
        "bfloat16": "hgemm_wgmma_m64n128k16_persistent_cluster2_tma_store_stage6_bcol_bf16"}


def tol(dtype) -> float:
    return accuracy.tolerance(dtype, "float32")


def rel(x, ref) -> float:
    x = testing.to_float64(x) if not isinstance(x, np.ndarray) else x
    x = cupy.asnumpy(x) if isinstance(x, cupy.ndarray) else x
    return float(np.linalg.norm(x - ref) / max(np.linalg.norm(ref), 1e-300))


def rnd(shape, dtype, scale=1.0):
    return testing.cast(cupy.random.standard_normal(shape, dtype=cupy.float32) * scale, dtype)


def f64(x):
    return cupy.asnumpy(testing.to_float64(x))


def records(a, b, c):
    return tuple(serve._record(v, w) for v, w in ((a, "A"), (b, "B"), (c, "C")))


# ---- every composition on a fused kernel -------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("spec", epilogue.specs(), ids=lambda s: s.tag)
def test_every_composition_on_the_fused_kernel(dtype, spec):
    M, N, K = 200, 264, 136   # partial tiles in M and N, 3 K-tiles
    a = rnd((M, K), dtype)
    w = rnd((N, K), dtype)
    b = w.T
    bias = rnd((N if spec.bias != "row" else M,), dtype) if spec.bias else None
    src = rnd((M, N), dtype) if spec.src else None
    out = testing.poisoned((M, N), dtype)
    aux = testing.poisoned((M, N), dtype) if spec.aux else None
    alpha, beta = 0.75, -1.25
    A, B, C = records(a, b, out)
    plan = epilogue.choice(A, B, C, spec)  # the default choice fuses too (or says why not)
    epilogue.execute(serve.library("cupy"), A, B, C, a, b, out, spec, bias, src, aux, alpha, beta, 0,
                     base=BASE[dtype])
    d, pre = epilogue.reference(f64(a) @ f64(w).T, spec, None if bias is None else f64(bias),
                                None if src is None else f64(src), alpha, beta)
    assert rel(out, d) < tol(dtype)
    if spec.aux:
        assert rel(aux, pre) < tol(dtype)
    assert plan is None or "_ep_" in plan.variant.name  # the default choice: a fused form, or None
    key = [k for k, f in epilogue._FUSED.items() if k[1] == spec and f is not None and k[0][3] == BASE[dtype]]
    assert key, "the named base ran fused"


def _values(dtype) -> np.ndarray:
    """Every finite value of the 16-bit type in [-12, 12] (0 and |x| >= 2^-14), as float32."""
    bits = np.arange(1 << 16, dtype=np.uint32)
    f = (bits << 16).view(np.float32) if dtype == "bfloat16" else bits.astype(np.uint16).view(np.float16).astype(np.float32)
    return np.unique(f[np.isfinite(f) & (np.abs(f) <= 12) & ((np.abs(f) >= 2.0 ** -14) | (f == 0))])


def _ulp(v: np.ndarray, dtype) -> np.ndarray:
    """The spacing of the 16-bit type at |v| (its subnormal spacing below the normal range)."""
    mant, emin = (7, -126) if dtype == "bfloat16" else (10, -14)
    e = np.floor(np.log2(np.maximum(np.abs(v), 2.0 ** emin)))
    return 2.0 ** (e - mant)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("act", ["relu", "gelu", "gelu_tanh", "silu"])
def test_activation_of_every_value(dtype, act):
    """The kernel's activation (the sigmoid forms of lib/epilogue.cuh) at every value x of the type
    in [-12, 12]: A's first column holds x, W's first column ones, the rest zeros, so the fp32
    accumulator is x exactly; D must be within one spacing of the type of the float64 act(x), plus
    2.5e-7 max(1, |x|) where the result is tiny (the libm forms round 1 + erf(x / sqrt 2) to 0 below
    x = -5.3 too)."""
    xs = _values(dtype)
    M, N, K = len(xs), 64, 16
    a32 = np.zeros((M, K), dtype=np.float32)
    a32[:, 0] = xs
    w32 = np.zeros((N, K), dtype=np.float32)
    w32[:, 0] = 1.0
    a, w = testing.cast(cupy.asarray(a32), dtype), testing.cast(cupy.asarray(w32), dtype)
    out = testing.poisoned((M, N), dtype)
    spec = epilogue.Spec(act)
    A, B, C = records(a, w.T, out)
    epilogue.execute(serve.library("cupy"), A, B, C, a, w.T, out, spec, None, None, None, 1.0, 0.0, 0,
                     base=BASE[dtype])
    got = f64(out)
    ref = epilogue.activate_np(xs.astype(np.float64), act)
    bound = _ulp(ref, dtype) + 2.5e-7 * np.maximum(1.0, np.abs(xs))
    err = np.abs(got - ref[:, None])
    worst = int(np.argmax(err.max(axis=1)))
    assert np.all(err <= bound[:, None]), (xs[worst], got[worst, 0], ref[worst])
    assert np.all(got == got[:, :1])  # every column the same


SMALL_M = {"float16": "hgemm_wgmma_m64n64k16_small_m_stage12_bcol",
           "bfloat16": "hgemm_wgmma_m64n64k16_small_m_stage12_bcol_bf16"}
ANY_C = {"float16": "hgemm_wgmma_m64n256k16_persistent_cluster2_anyc_stage3_bcol",
         "bfloat16": "hgemm_wgmma_m64n256k16_persistent_cluster2_anyc_stage3_bcol_bf16"}
PINGPONG = {"float16": "hgemm_wgmma_m64n128k16_persistent_pingpong_cluster2_tma_store_stage6_bcol",
            "bfloat16": "hgemm_wgmma_m64n128k16_persistent_pingpong_cluster2_tma_store_stage6_bcol_bf16"}
STAGED = {"float16": "hgemm_wgmma_m64n256k16_persistent_cluster2_tma_staged_stage3_bcol",
          "bfloat16": "hgemm_wgmma_m64n256k16_persistent_cluster2_tma_staged_stage3_bcol_bf16"}
STAGED_128 = {"float16": "hgemm_wgmma_m64n128k16_persistent_cluster2_tma_staged_stage6_bcol",
              "bfloat16": "hgemm_wgmma_m64n128k16_persistent_cluster2_tma_staged_stage6_bcol_bf16"}
MMA = {"float16": "hgemm_mma_m16n8k16_mma2x4_warp4x8x4_stage3_swizzle_bswizzle_rbuf_epi_edge",
       "bfloat16": "bgemm_mma_m16n8k16_mma2x4_warp4x8x4_stage3_swizzle_bswizzle_rbuf_epi_edge"}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("spec", epilogue.COVER, ids=lambda s: s.tag)
@pytest.mark.parametrize("bases,shape", [(SMALL_M, (40, 200, 136)), (ANY_C, (300, 520, 136)),
                                         (MMA, (300, 520, 136)), (PINGPONG, (2040, 2304, 136)),
                                         (STAGED, (4000, 2200, 136)), (STAGED_128, (2040, 2304, 136))],
                         ids=["64_row_rung", "any_c_deferred", "mma_sync_rung", "ping_pong", "staged_256",
                              "staged_128"])
def test_covering_compositions_on_other_forms(dtype, spec, bases, shape):
    """The 64-row rung (one partial tile, a partial last column tile), the ANY_C form, whose storing
    warps apply the activation and the residual, the sm_80 mma.sync rung (several tiles, partial
    ones at both edges; run here as sm_90 code), rung 7's ping-pong form (288 tiles: blocks of 2
    and 3 tiles, each consumer's epilogue beside the other's K loop; a partial last tile row), and
    the STAGED form, whose storing warps finish the slabs in place and TMA-store them (128 x 256:
    288 tiles, 2-3 a block, so every slab is restaged; a last tile row of 32 rows and a last tile
    column of 152 columns, its narrow edge; 128 x 128: 288 tiles)."""
    M, N, K = shape
    SMALL_M = bases  # noqa: N806 - the base of this form
    if not epilogue.capable(cugemm.get_variant(SMALL_M[dtype])):
        pytest.skip(f"{SMALL_M[dtype]} takes no epilogue under NVRTC {toolkit.nvrtc_version()} (cugemm.epilogue.capable)")
    a, w = rnd((M, K), dtype), rnd((N, K), dtype)
    bias = rnd((N if spec.bias != "row" else M,), dtype) if spec.bias else None
    src = rnd((M, N), dtype) if spec.src else None
    out = testing.poisoned((M, N), dtype)
    aux = testing.poisoned((M, N), dtype) if spec.aux else None
    A, B, C = records(a, w.T, out)
    r = epilogue.execute(serve.library("cupy"), A, B, C, a, w.T, out, spec, bias, src, aux, 1.5, 0.5, 0,
                         base=SMALL_M[dtype])
    assert r is not None and r.plan.variant.name.startswith(SMALL_M[dtype] + "_ep_")
    d, pre = epilogue.reference(f64(a) @ f64(w).T, spec, None if bias is None else f64(bias),
                                None if src is None else f64(src), 1.5, 0.5)
    assert rel(out, d) < tol(dtype)
    if spec.aux:
        assert rel(aux, pre) < tol(dtype)


# ---- the front doors ---------------------------------------------------------------------------------
SHAPES = [(256, 512, 256),     # aligned: fused
          (16, 1024, 512),     # few rows: the 64-row rung may win (then matmul + a pass)
          (777, 390, 200),     # partial tiles
          (130, 66, 1000),     # narrow N
          (33, 54, 17),        # K % 8 != 0: relayout copies
          (40, 31, 64)]        # odd N: no fused kernel (pairs), matmul + a pass


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("act", [None, "relu", "gelu", "gelu_tanh", "silu"])
def test_linear_cupy(dtype, shape, act):
    M, N, K = shape
    x, w, bias, res = rnd((M, K), dtype), rnd((N, K), dtype, 0.5), rnd((N,), dtype), rnd((M, N), dtype)
    ref, pre = epilogue.reference(f64(x) @ f64(w).T, epilogue.Spec(act, "col", "post"), f64(bias), f64(res))
    y = cugemm.linear(x, w, bias, act, residual=res)
    assert y.shape == (M, N) and y.dtype == x.dtype
    assert rel(y, ref) < tol(dtype)
    if act is not None:
        y2, p2 = cugemm.linear(x, w, bias, act, aux=True)
        r2, pre2 = epilogue.reference(f64(x) @ f64(w).T, epilogue.Spec(act, "col"), f64(bias))
        assert rel(y2, r2) < tol(dtype) and rel(p2, pre2) < tol(dtype)


def test_linear_batched_input_and_no_bias():
    x, w = rnd((3, 5, 64), "bfloat16"), rnd((96, 64), "bfloat16")
    y = cugemm.linear(x, w, activation="silu")
    ref = epilogue.activate_np(np.einsum("bmk,nk->bmn", f64(x), f64(w)), "silu")
    assert y.shape == (3, 5, 96) and rel(y, ref) < tol("bfloat16")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(256, 512, 128), (100, 72, 40), (33, 54, 17), (64, 31, 64)],
                         ids=lambda s: "x".join(map(str, s)))
def test_gemm_alpha_beta_in_place_and_nan_c(dtype, shape):
    M, N, K = shape
    a, b, c = rnd((M, K), dtype), rnd((K, N), dtype), rnd((M, N), dtype)
    prod = f64(a) @ f64(b)
    # beta = 0 never reads C: a C of NaNs leaks nothing
    out = testing.poisoned((M, N), dtype)
    nan_c = testing.poisoned((M, N), dtype)
    cugemm.gemm(a, b, nan_c, alpha=2.0, beta=0.0, out=out)
    assert rel(out, 2.0 * prod) < tol(dtype)
    # alpha, beta into a poisoned out
    out = testing.poisoned((M, N), dtype)
    r = cugemm.gemm(a, b, c, alpha=0.5, beta=1.5, out=out)
    assert r is out and rel(out, 0.5 * prod + 1.5 * f64(c)) < tol(dtype)
    # in place: D is C
    c0 = f64(c)
    cugemm.gemm(a, b, c, alpha=1.0, beta=1.0, out=c)
    assert rel(c, prod + c0) < tol(dtype)
    # a C^T view (column-major source) as well
    ct = rnd((N, M), dtype)
    d = cugemm.gemm(a, b, ct.T, beta=-1.0)
    assert rel(d, prod - f64(ct).T) < tol(dtype)


def test_float32_runs_the_unfused_path():
    x, w, bias = rnd((64, 48), "float32"), rnd((40, 48), "float32"), rnd((40,), "float32")
    y = cugemm.linear(x, w, bias, "gelu")
    ref, _ = epilogue.reference(f64(x) @ f64(w).T, epilogue.Spec("gelu", "col"), f64(bias))
    assert rel(y, ref) < 1e-5


def test_bad_input():
    x, w, bias = rnd((8, 16), "float16"), rnd((24, 16), "float16"), rnd((24,), "float16")
    with pytest.raises(ValueError, match="unknown activation"):
        cugemm.linear(x, w, bias, "tanhh")
    with pytest.raises(ValueError, match="bias must have shape"):
        cugemm.linear(x, w, rnd((23,), "float16"))
    with pytest.raises(TypeError, match="bias has dtype"):
        cugemm.linear(x, w, rnd((24,), "bfloat16"))
    with pytest.raises(ValueError, match="K"):
        cugemm.linear(x, rnd((24, 15), "float16"))
    with pytest.raises(ValueError, match="residual"):
        cugemm.linear(x, w, residual=rnd((8, 23), "float16"))
    with pytest.raises(ValueError, match="aux=True"):
        cugemm.linear(x, w, aux=True)
    a, b = rnd((8, 16), "float16"), rnd((16, 24), "float16")
    with pytest.raises(TypeError, match="alpha"):
        cugemm.gemm(a, b, alpha="2")
    with pytest.raises(TypeError, match="beta"):
        cugemm.gemm(a, b, rnd((8, 24), "float16"), beta=None)
    with pytest.raises(ValueError, match="needs c"):
        cugemm.gemm(a, b, beta=1.0)
    with pytest.raises(ValueError, match="shape"):
        cugemm.gemm(a, b, rnd((8, 23), "float16"), beta=1.0)


def test_the_fused_path_is_taken_where_it_should_be():
    x, w = rnd((2048, 1024), "bfloat16"), rnd((3072, 1024), "bfloat16")
    out = cupy.empty((2048, 3072), dtype=x.dtype)
    A, B, C = records(x, w.T, out)
    q = epilogue.choice(A, B, C, epilogue.Spec("gelu", "col"))
    assert q is not None and "_ep_gelu_bcol" in q.variant.name
    x, w = rnd((40, 64), "bfloat16"), rnd((31, 64), "bfloat16")   # odd N: pairs cross the edge
    out = cupy.empty((40, 31), dtype=x.dtype)
    assert epilogue.choice(*records(x, w.T, out), epilogue.Spec("gelu", "col")) is None


# ---- torch ------------------------------------------------------------------------------------------
torch = pytest.importorskip("torch", exc_type=ImportError)
TDT = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}
GRAD_TOL = {torch.float16: 5e-3, torch.bfloat16: 3e-2, torch.float32: 1e-4}


def trand(shape, dtype, scale=1.0, grad=False):
    return (torch.randn(shape, device="cuda") * scale).to(dtype).requires_grad_(grad)


def trel(x, ref) -> float:
    return ((x.double() - ref.double()).norm() / ref.double().norm().clamp_min(1e-300)).item()


def torch_linear(x, w, b, act, r):
    y = torch.nn.functional.linear(x.double(), w.double(), None if b is None else b.double())
    y = epilogue.torch_activate(y, act)
    return y + r.double() if r is not None else y


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("act", [None, "relu", "gelu", "gelu_tanh", "silu"])
@pytest.mark.parametrize("shape", [(2, 96, 128, 256), (1, 300, 136, 64), (1, 16, 512, 1024)])
def test_torch_linear_forward_and_gradients(dtype, act, shape):
    B_, M, N, K = shape
    dt = TDT[dtype]
    x = trand((B_, M, K), dt, grad=True)
    w = trand((N, K), dt, 0.1, grad=True)
    b = trand((N,), dt, grad=True)
    r = trand((B_, M, N), dt, grad=True)
    y = cugemm.linear(x, w, b, act, r)
    ref = torch_linear(x, w, b, act, r)
    assert y.dtype == dt and y.shape == ref.shape and trel(y, ref) < tol(dtype if dtype != "float32" else "float32") * 2
    g = torch.randn_like(y)
    gx, gw, gb, gr = torch.autograd.grad(y, (x, w, b, r), g)
    xd, wd, bd, rd = (t.detach().double().requires_grad_() for t in (x, w, b, r))
    rx, rw, rb, rr = torch.autograd.grad(torch_linear(xd, wd, bd, act, rd), (xd, wd, bd, rd), g.double())
    for got, want in ((gx, rx), (gw, rw), (gb, rb), (gr, rr)):
        assert got.dtype == dt and trel(got, want) < GRAD_TOL[dt]


def test_torch_gemm_gradients():
    a, b, c = trand((64, 96), torch.float32, grad=True), trand((96, 80), torch.float32, grad=True), \
        trand((64, 80), torch.float32, grad=True)
    d = cugemm.gemm(a, b, c, alpha=0.5, beta=2.0)
    g = torch.randn_like(d)
    ga, gb, gc = torch.autograd.grad(d, (a, b, c), g)
    ad, bd, cd = (t.detach().double().requires_grad_() for t in (a, b, c))
    ra, rb, rc = torch.autograd.grad(0.5 * ad @ bd + 2.0 * cd, (ad, bd, cd), g.double())
    for got, want in ((ga, ra), (gb, rb), (gc, rc)):
        assert trel(got, want) < 1e-4


def test_torch_compile_fullgraph_and_opcheck():
    import cugemm.torch_op as top

    x, w, b = trand((128, 256), torch.bfloat16), trand((512, 256), torch.bfloat16, 0.1), trand((512,), torch.bfloat16)
    f = torch.compile(lambda x, w, b: cugemm.linear(x, w, b, "gelu"), fullgraph=True)
    assert torch.equal(f(x, w, b), cugemm.linear(x, w, b, "gelu"))
    g = torch.compile(lambda a, c: cugemm.gemm(a, w.T, c, beta=1.0), fullgraph=True)
    c = trand((128, 512), torch.bfloat16)
    assert torch.equal(g(x, c), cugemm.gemm(x, w.T, c, beta=1.0))
    top.register()
    torch.library.opcheck(torch.ops.cugemm.linear.default, (x, w, b, "gelu", None, True))
    torch.library.opcheck(torch.ops.cugemm.linear.default, (x.float().requires_grad_(), w.float(), None, None, None, False))
    torch.library.opcheck(torch.ops.cugemm.gemm.default, (x, w.T, c, 2.0, 0.5))


def test_cuda_graph_replay_of_linear():
    x, w, b = trand((256, 512), torch.float16), trand((1024, 512), torch.float16, 0.1), trand((1024,), torch.float16)
    r = trand((256, 1024), torch.float16)
    eager = cugemm.linear(x, w, b, "gelu", r)  # planned (and compiled) outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = cugemm.linear(x, w, b, "gelu", r)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(y, eager)
    x.copy_(torch.randn_like(x))
    graph.replay()
    assert torch.equal(y, cugemm.linear(x, w, b, "gelu", r))


def test_the_torch_serving_path_reads_new_tensors_each_call():
    from cugemm import fused

    w, b = trand((768, 512), torch.bfloat16, 0.1), trand((768,), torch.bfloat16)
    c = trand((192, 768), torch.bfloat16)
    for i in range(3):  # the first call plans and files, the next ones are served from the cache
        x = trand((2, 96, 512), torch.bfloat16)
        r = trand((2, 96, 768), torch.bfloat16)
        y, pre = cugemm.linear(x, w, b, "gelu", r, aux=True)
        ref = torch_linear(x, w, b, "gelu", r)
        assert trel(y, ref) < tol("bfloat16") and trel(pre, torch_linear(x, w, b, None, None)) < tol("bfloat16")
        d = cugemm.gemm(x.reshape(192, 512), w.T, c, alpha=0.5, beta=2.0)
        assert trel(d, 0.5 * x.reshape(192, 512).double() @ w.double().T + 2.0 * c.double()) < tol("bfloat16")
    assert any(k[0] == "gemm" for k in fused._SERVED) and any(k[0] == x.shape for k in fused._SERVED)
