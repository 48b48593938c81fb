"""FP8 products (cugemm.scaled_matmul, the fp8_wgmma ladder) on a GPU.

Every case quantises fresh random normal operands with cugemm.quantize_fp8 and checks the result
against the float64 product of the dequantised operands (cugemm.quantize.to_float64 times the
scales broadcast over their blocks), with cugemm.accuracy's tolerance, into an output poisoned with
NaN (an unwritten element fails). Cases: every scaling mode (per-tensor, per-row, block) with and
without fast accumulation, the three operand type pairs, the three output types, odd shapes and K
tails (copies, zero padding), a bias, CuPy operands, every registered variant through variant=;
the promoted rung's error against torch._scaled_mm's on the same inputs; torch.compile and
torch.library.opcheck of the operator; CUDA-graph capture; the errors raised before launching.
"""
from __future__ import annotations

import pytest

import cugemm
from cugemm import accuracy
from cugemm.quantize import to_float64

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch", exc_type=ImportError)
cupy = pytest.importorskip("cupy")

E4, E5 = "float8_e4m3fn", "float8_e5m2"
TYPES = [(E4, E4), (E4, E5), (E5, E4)]
OUTS = ["bfloat16", "float16", "float32"]
BLOCKS = {"tensor": ("tensor", "tensor"), "row": ("row", "row"), "block": ((1, 128), (128, 128))}
SHAPES = [(256, 512, 256), (129, 136, 4096), (300, 520, 272), (1, 8, 16), (4095, 4097, 1023), (77, 300, 100),
          (1000, 777, 2049)]


def expand(scale, R: int, C: int, block):
    """A scale array broadcast to the (R, C) elements it scales (float64)."""
    s = scale.double()
    if block == "tensor":
        return s.reshape(1, 1).expand(R, C)
    if block == "row":
        return s.reshape(R, 1).expand(R, C)
    br, bc = block
    return s.repeat_interleave(br, 0)[:R].repeat_interleave(bc, 1)[:, :C]


def case(M, N, K, mode, ta=E4, tb=E4, seed=0):
    """(qa, b, scale_a, scale_b, float64 reference): A (M, K) and W (N, K) quantised, B = W.T."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(M, K, device="cuda", generator=g)
    w = torch.randn(N, K, device="cuda", generator=g) * 0.5
    ba, bw = BLOCKS[mode]
    qa, sa = cugemm.quantize_fp8(x, ba, ta)
    qw, sw = cugemm.quantize_fp8(w, bw, tb)
    ref = (to_float64(qa) * expand(sa, M, K, ba)) @ (to_float64(qw) * expand(sw, N, K, bw)).t()
    sb = sw if mode == "tensor" else sw.t()  # row: (1, N); block: (ceil(K/128), ceil(N/128))
    return qa, qw.t(), sa, sb, ref


def poisoned(M, N, out):
    return torch.full((M, N), float("nan"), dtype=getattr(torch, out), device="cuda")


def check(c, ref, what):
    got = c.double()
    assert not bool(torch.isnan(got).any()), f"{what}: elements left unwritten"
    err = ((got - ref).norm() / ref.norm()).item() if ref.numel() else 0.0
    assert accuracy.within(err, E4, "float32"), f"{what}: rel err {err:.2e}"
    return err


@pytest.mark.parametrize("fast", [False, True], ids=["promoted", "fastacc"])
@pytest.mark.parametrize("mode", ["tensor", "row", "block"])
@pytest.mark.parametrize("types", TYPES, ids=lambda t: f"{t[0][6:10]}x{t[1][6:10]}")
@pytest.mark.parametrize("out", OUTS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_scaled_matches_float64(shape, out, types, mode, fast):
    if fast and mode == "block":
        pytest.skip("block scales always promote")
    M, N, K = shape
    qa, b, sa, sb, ref = case(M, N, K, mode, *types)
    c = poisoned(M, N, out)
    r = cugemm.scaled_matmul(qa, b, sa, sb, out_dtype=out, out=c, use_fast_accum=fast)
    assert r is c
    check(c, ref, f"{mode} {types} {out} {shape}")


@pytest.mark.parametrize("v", cugemm.variants(family="fp8_wgmma"), ids=lambda v: v.name)
def test_every_variant_through_variant(v):
    p = v.param_dict
    mode = ("tensor", "row", "block")[p["SCALE"]] if "SCALE" in p else "row" if p["ROW"] else "tensor"
    M, N, K = 2 * v.tile[0] + 7, 3 * v.tile[1] - 8, 3 * 128 + 16
    qa, b, sa, sb, ref = case(M, N, K, mode, v.dtype_in, v.dt_b.name, seed=1)
    c = poisoned(M, N, v.dtype_out)
    cugemm.scaled_matmul(qa, b, sa, sb, out_dtype=v.dtype_out, out=c, variant=v.name)
    check(c, ref, v.name)


def test_bias_and_fresh_output():
    M, N, K = 200, 264, 512
    qa, b, sa, sb, ref = case(M, N, K, "row")
    bias = torch.randn(N, device="cuda", dtype=torch.bfloat16)
    c = cugemm.scaled_matmul(qa, b, sa, sb, bias=bias)
    assert c.dtype == torch.bfloat16 and c.shape == (M, N) and c.is_contiguous()
    check(c, ref + bias.double(), "bias")
    c = cugemm.scaled_matmul(qa, b, sa, sb, out_dtype="float32", bias=bias.float(), use_fast_accum=True)
    check(c, ref + bias.double(), "bias fast")


def test_promoted_error_no_larger_than_torch():
    """Rung 3 sums at most 128 products in the tensor cores (as cuBLASLt without fast accumulation);
    rungs 1-2 sum all of K there, which shows at K = 4096 in fp32 out."""
    M, N, K = 1024, 1024, 4096
    for mode in ("tensor", "row"):
        qa, b, sa, sb, ref = case(M, N, K, mode, seed=3)
        ours = cugemm.scaled_matmul(qa, b, sa, sb, out_dtype="float32").double()
        fast = cugemm.scaled_matmul(qa, b, sa, sb, out_dtype="float32", use_fast_accum=True).double()
        ta, tb = (sa.reshape(1), sb.reshape(1)) if mode == "tensor" else (sa, sb)
        theirs = torch._scaled_mm(qa, b, ta, tb, out_dtype=torch.float32).double()
        e = [((x - ref).norm() / ref.norm()).item() for x in (ours, fast, theirs)]
        assert e[0] <= 1.02 * e[2], (mode, e)
        assert e[0] < e[1], (mode, e)


def test_cupy_operands():
    M, N, K = 300, 256, 384
    x = cupy.random.standard_normal((M, K), dtype=cupy.float32)
    w = cupy.random.standard_normal((N, K), dtype=cupy.float32)
    for ba, bw in (("tensor", "tensor"), ("row", "row"), ((1, 128), (128, 128))):
        qa, sa = cugemm.quantize_fp8(x, ba)
        qw, sw = cugemm.quantize_fp8(w, bw)
        sb = sw if ba == "tensor" else sw.T
        c = cugemm.scaled_matmul(qa, qw.T, sa, sb, out_dtype="float32")
        assert isinstance(c, cupy.ndarray) and c.shape == (M, N)
        ea = expand(torch.from_dlpack(sa), M, K, ba)
        ew = expand(torch.from_dlpack(sw), N, K, bw)
        ref = (torch.from_dlpack(to_float64(qa)) * ea) @ (torch.from_dlpack(to_float64(qw)) * ew).t()
        check(torch.from_dlpack(c), ref, f"cupy {ba}")


def test_odd_c_in_place():
    """A C whose rows are not 16-byte aligned (odd N, or a view at an odd offset) is written by the
    kernel itself, bounded: the margins of the buffer stay NaN."""
    M, N, K = 131, 77, 256
    qa, b, sa, sb, ref = case(M, N, K, "tensor")
    buf = torch.full((M + 2, N + 3), float("nan"), dtype=torch.bfloat16, device="cuda")
    out = buf[1:M + 1, 1:N + 1]  # row stride N + 3, 2-byte aligned start
    cugemm.scaled_matmul(qa, b, sa, sb, out=out)
    check(out, ref, "odd C view")
    assert bool(torch.isnan(buf[0]).all() and torch.isnan(buf[-1]).all() and torch.isnan(buf[:, 0]).all()
                and torch.isnan(buf[:, -2:]).all()), "wrote outside the view"


def dense(q):
    """q's values in a dense array (8-bit floats copied through their bytes)."""
    return q.view(torch.uint8).contiguous().view(q.dtype)


@pytest.mark.parametrize("shape", [(128, 256, 256), (257, 130, 1023), (64, 200, 100)], ids=str)
def test_operands_that_need_a_copy(shape):
    """A row-major (K, N) B, and operands of K % 16 != 0 in dense rows (quantize_fp8 pads its rows
    to 128-byte multiples; these do not): copied with zero padding before the kernel reads them."""
    M, N, K = shape
    qa, b, sa, sb, ref = case(M, N, K, "block")
    c = cugemm.scaled_matmul(dense(qa), dense(b.t()).t(), sa, sb)  # dense rows of K bytes
    check(c, ref, "dense odd-K operands")
    c = cugemm.scaled_matmul(qa, dense(b), sa, sb)  # (K, N) row-major
    check(c, ref, "row-major B")


def test_torch_compile_and_opcheck():
    from cugemm import torch_op

    torch_op.register()
    qa, b, sa, sb, ref = case(256, 256, 256, "row")
    f = torch.compile(lambda a, b, x, y: cugemm.scaled_matmul(a, b, x, y), fullgraph=True)
    torch.testing.assert_close(f(qa, b, sa, sb), cugemm.scaled_matmul(qa, b, sa, sb), rtol=0, atol=0)
    # (opcheck's schema test compares inputs with arithmetic torch has no float8 kernels for)
    torch.library.opcheck(torch.ops.cugemm.scaled_matmul.default, (qa, b, sa, sb, None, torch.bfloat16, False),
                          test_utils=("test_autograd_registration", "test_faketensor"))


def test_cuda_graph_capture_and_replay():
    M, N, K = 512, 512, 1024
    qa, b, sa, sb, ref = case(M, N, K, "block")
    cugemm.scaled_matmul(qa, b, sa, sb, check_scales=False)  # compile and prepare outside the capture
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        c = cugemm.scaled_matmul(qa, b, sa, sb, check_scales=False)
    qa2, b2, sa2, sb2, ref2 = case(M, N, K, "block", seed=9)
    qa.copy_(qa2), b.copy_(b2), sa.copy_(sa2), sb.copy_(sb2)
    g.replay()
    torch.cuda.synchronize()
    check(c, ref2, "graph replay")


def test_bad_input_raises_before_launch():
    qa, b, sa, sb, _ = case(64, 64, 128, "row")
    with pytest.raises(ValueError, match="match no scaling mode"):
        cugemm.scaled_matmul(qa, b, sa[:32], sb)
    with pytest.raises(TypeError, match="scales are float32"):
        cugemm.scaled_matmul(qa, b, sa.half(), sb)
    with pytest.raises(TypeError, match="multiplies 8-bit floats"):
        cugemm.scaled_matmul(qa.float(), b, sa, sb)
    with pytest.raises(ValueError, match="NaN or infinite"):
        cugemm.scaled_matmul(qa, b, sa * float("nan"), sb)
    with pytest.raises(ValueError, match="bias has shape"):
        cugemm.scaled_matmul(qa, b, sa, sb, bias=torch.zeros(3, device="cuda"))
    e5 = qa.view(torch.uint8).view(torch.float8_e5m2)
    with pytest.raises(TypeError, match="both float8_e5m2"):
        cugemm.scaled_matmul(e5, b.view(torch.uint8).view(torch.float8_e5m2), sa, sb)
    with pytest.raises(TypeError, match="out_dtype"):
        cugemm.scaled_matmul(qa, b, sa, sb, out_dtype="float8_e4m3fn")
    with pytest.raises(ValueError, match="is not the"):
        cugemm.scaled_matmul(qa, b, sa, sb, variant=cugemm.variants("fp8_wgmma*_tensor")[0].name)
