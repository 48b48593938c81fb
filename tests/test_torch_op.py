"""cugemm.torch_op without a GPU: registration, the fake implementation's shapes and errors on meta
tensors, the autograd formula (checked with a CPU kernel that this file registers for the test's
duration: torch.matmul, so gradcheck can run in float64), and route_linears."""
import importlib
import importlib.util
import subprocess
import sys

import pytest

try:  # a missing torch, or one whose libraries do not load, skips the file
    import torch
except ImportError as e:
    pytest.skip(f"torch is not importable: {e}", allow_module_level=True)

import cugemm.torch_op as top  # noqa: E402
from cugemm import serve  # noqa: E402

DTYPES = [torch.float16, torch.bfloat16, torch.float32]

SHAPES = [  # (A, B): 1-D, 2-D, batched, broadcast, empty
    ((7,), (7,)), ((7,), (7, 5)), ((3, 7), (7,)), ((3, 7), (7, 5)), ((1, 1), (1, 1)),
    ((4, 3, 7), (7, 5)), ((3, 7), (4, 7, 5)), ((7,), (4, 7, 5)), ((4, 3, 7), (7,)),
    ((4, 3, 7), (4, 7, 5)), ((2, 1, 3, 7), (6, 7, 5)), ((1, 3, 7), (6, 7, 5)), ((6, 1, 3, 7), (1, 2, 7, 5)),
    ((0, 7), (7, 5)), ((3, 0), (0, 5)), ((3, 7), (7, 0)), ((0, 3, 7), (7, 5)),
]


def meta(shape, dtype=torch.float32):
    return torch.empty(shape, dtype=dtype, device="meta")


# ---- registration -----------------------------------------------------------------------------------------
def test_cugemm_import_does_not_import_torch_or_this_module():
    code = "import sys, cugemm; print('torch' in sys.modules, 'cugemm.torch_op' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_registration_is_idempotent():
    op = top.register()
    assert op is top.register() is torch.ops.cugemm.matmul.default
    assert str(op._schema) == "cugemm::matmul(Tensor a, Tensor b, bool allow_tf32=False) -> Tensor"
    assert torch.Tag.pt2_compliant_tag in op.tags
    lib = top.library()
    importlib.reload(top)
    assert top.library() is lib and top.register() is op
    # a second copy of the module (another name, its own globals) finds the operator and defines nothing
    spec = importlib.util.spec_from_file_location("cugemm._torch_op_copy", top.__file__)
    copy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(copy)
    assert copy.library() is None and copy.register() is op
    assert top.matmul(meta((3, 4)), meta((4, 5))).shape == (3, 5)


def test_registration_in_a_fresh_process_imports_no_dynamo():
    code = ("import sys, torch, cugemm.torch_op as t; t.register(); t.register(); "
            "y = t.matmul(torch.empty(2, 3, device='meta'), torch.empty(3, 4, device='meta')); "
            "print(tuple(y.shape), 'torch._dynamo' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["(2,", "4)", "False"]


def test_cuda_kernel_registered_and_no_cpu_kernel():
    assert torch._C._dispatch_has_kernel_for_dispatch_key(top.QUALNAME, "CUDA")
    assert not torch._C._dispatch_has_kernel_for_dispatch_key(top.QUALNAME, "CPU")
    with pytest.raises(NotImplementedError):
        top.matmul(torch.ones(2, 3), torch.ones(3, 4))


# ---- the fake implementation --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("sa,sb", SHAPES, ids=str)
def test_fake_matches_torch_matmul_on_meta(sa, sb, dtype):
    a, b = meta(sa, dtype), meta(sb, dtype)
    y, ref = top.matmul(a, b), torch.matmul(a, b)
    assert (y.shape, y.dtype, y.device) == (ref.shape, ref.dtype, ref.device)
    assert top.result_shape(sa, sb) == tuple(ref.shape)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_fake_transposed_weight_view(dtype):
    x, w = meta((2, 9, 768), dtype), meta((3072, 768), dtype)
    assert top.matmul(x, w.T).shape == (2, 9, 3072)
    assert top.matmul(x[0], w.T, allow_tf32=True).shape == (9, 3072)


def test_fake_under_fake_tensor_mode():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        bf16 = torch.bfloat16
        y = torch.ops.cugemm.matmul(torch.empty(5, 1, 3, 4, dtype=bf16), torch.empty(6, 4, 2, dtype=bf16))
    assert y.shape == (5, 6, 3, 2) and y.dtype == torch.bfloat16


@pytest.mark.parametrize("sa,sb", [((3, 4), (5, 6)), ((4,), (5,)), ((3, 4), (5,)), ((2, 3, 4), (3, 4, 5)),
                                   ((2, 2, 3, 4), (3, 4, 5))], ids=str)
def test_fake_shape_errors(sa, sb):
    with pytest.raises(RuntimeError):  # torch.matmul refuses them too
        torch.matmul(meta(sa), meta(sb))
    with pytest.raises(ValueError, match="cugemm.matmul"):
        top.matmul(meta(sa), meta(sb))
    with pytest.raises(ValueError):
        top.result_shape(sa, sb)


def test_fake_scalar_operand():
    with pytest.raises(ValueError, match="scalar"):
        top.matmul(meta(()), meta((3,)))


@pytest.mark.parametrize("da,db", [(torch.float64, torch.float64), (torch.float16, torch.float32),
                                   (torch.bfloat16, torch.float16), (torch.int32, torch.int32),
                                   (torch.float32, torch.float8_e4m3fn)], ids=str)
def test_fake_dtype_errors(da, db):
    with pytest.raises(TypeError, match="cugemm.matmul"):
        top.matmul(meta((3, 4), da), meta((4, 5), db))


# ---- autograd, with a CPU kernel registered for the test ------------------------------------------------
@pytest.fixture
def cpu_kernel():
    """Register torch.matmul as cugemm::matmul's CPU kernel; yields the list of its calls' shapes."""
    calls = []

    def kernel(a, b, allow_tf32=False):
        calls.append((tuple(a.shape), tuple(b.shape)))
        return torch.matmul(a, b).contiguous()

    lib = torch.library.Library("cugemm", "IMPL")
    lib.impl("matmul", kernel, "CPU")
    yield calls
    lib._destroy()


GRAD_SHAPES = [s for s in SHAPES if 0 not in s[0] + s[1]]


@pytest.mark.parametrize("sa,sb", GRAD_SHAPES, ids=str)
def test_gradcheck_and_double_backward(cpu_kernel, sa, sb):
    g = torch.Generator().manual_seed(0)
    a = torch.randn(sa, dtype=torch.float64, generator=g, requires_grad=True)
    b = torch.randn(sb, dtype=torch.float64, generator=g, requires_grad=True)
    assert torch.autograd.gradcheck(top.matmul, (a, b))
    assert torch.autograd.gradgradcheck(top.matmul, (a, b))
    assert cpu_kernel  # the products ran through the operator


@pytest.mark.parametrize("sa,sb", GRAD_SHAPES, ids=str)
def test_grads_match_torch_matmul(cpu_kernel, sa, sb):
    g = torch.Generator().manual_seed(1)
    a = torch.randn(sa, generator=g, requires_grad=True)
    b = torch.randn(sb, generator=g, requires_grad=True)
    y = top.matmul(a, b)
    gy = torch.randn(y.shape, generator=g)
    ga, gb = torch.autograd.grad(y, (a, b), gy)
    ra, rb = torch.autograd.grad(torch.matmul(a, b), (a, b), gy)
    assert ga.shape == a.shape and gb.shape == b.shape
    torch.testing.assert_close(ga, ra, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(gb, rb, rtol=1e-5, atol=1e-5)


def test_backward_products_run_through_the_operator(cpu_kernel):
    x = torch.randn(4, 3, 8, requires_grad=True)
    w = torch.randn(6, 8, requires_grad=True)
    y = top.matmul(x, w.T)
    del cpu_kernel[:]
    y.backward(torch.randn(y.shape))
    # dX = dY @ W (batched @ 2-D) and dW^T = X^T @ dY folded into one 2-D product over the 12 rows
    assert sorted(cpu_kernel) == sorted([((4, 3, 6), (6, 8)), ((8, 12), (12, 6))])


def test_backward_respects_needs_input_grad(cpu_kernel):
    x = torch.randn(5, 8, requires_grad=True)
    w = torch.randn(8, 6)
    y = top.matmul(x, w)
    del cpu_kernel[:]
    gy = torch.randn(5, 6)
    y.backward(gy)
    assert cpu_kernel == [((5, 6), (6, 8))] and w.grad is None
    torch.testing.assert_close(x.grad, gy @ w.T)


def test_backward_of_a_sum(cpu_kernel):
    """The gradient of .sum() repeats one element (strides 0): the backward still computes it."""
    a = torch.randn(2, 3, 4, requires_grad=True)
    b = torch.randn(4, 5, requires_grad=True)
    top.matmul(a, b).sum().backward()
    torch.testing.assert_close(a.grad, b.sum(1).expand(2, 3, 4))
    torch.testing.assert_close(b.grad, a.sum((0, 1))[:, None].expand(4, 5))


@pytest.mark.parametrize("sa,sb", [((3, 7), (7, 5)), ((4, 3, 7), (7, 5)), ((2, 1, 3, 7), (6, 7, 5)), ((7,), (4, 7, 5))],
                         ids=str)
def test_opcheck(cpu_kernel, sa, sb):
    a, b = torch.randn(sa, requires_grad=True), torch.randn(sb, requires_grad=True)
    torch.library.opcheck(torch.ops.cugemm.matmul.default, (a, b, False))


def test_compile_fullgraph_dynamic(cpu_kernel):
    f = torch.compile(lambda x, w: top.matmul(x, w.T), fullgraph=True, backend="aot_eager", dynamic=True)
    for rows in (3, 5, 9):
        x = torch.randn(2, rows, 8, requires_grad=True)
        w = torch.randn(6, 8, requires_grad=True)
        y = f(x, w)
        torch.testing.assert_close(y, x @ w.T)
        y.sum().backward()
        torch.testing.assert_close(w.grad, torch.ones(2 * rows, 6).T @ x.detach().reshape(-1, 8))


# ---- Linear and route_linears ----------------------------------------------------------------------------
class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.shared = torch.nn.Linear(8, 8)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 8, bias=False))
        self.again = self.shared                     # one module under two names
        self.attn = torch.nn.MultiheadAttention(8, 2)  # its out_proj is a subclass of nn.Linear
        self.heads = torch.nn.ModuleList([torch.nn.Linear(8, 4) for _ in range(3)])


def test_route_linears_counts_and_shares_parameters():
    model = torch.nn.Sequential(Block(), torch.nn.LayerNorm(8), torch.nn.Linear(8, 2))
    params = dict(model.named_parameters())
    keys = list(model.state_dict())
    assert top.route_linears(model) == 1 + 2 + 3 + 1
    after = dict(model.named_parameters())
    assert after.keys() == params.keys() and all(after[k] is params[k] for k in params)
    assert list(model.state_dict()) == keys
    blk = model[0]
    assert type(blk.shared) is top.Linear and blk.again is blk.shared
    assert type(blk.attn.out_proj) is not top.Linear and isinstance(blk.attn.out_proj, torch.nn.Linear)
    assert all(type(h) is top.Linear for h in blk.heads) and type(model[2]) is top.Linear
    assert blk.mlp[2].bias is None and blk.mlp[2].weight is params["0.mlp.2.weight"]
    assert top.route_linears(model) == 0


def test_from_linear_keeps_attributes():
    lin = torch.nn.Linear(5, 3).eval()
    new = top.Linear.from_linear(lin, allow_tf32=True)
    assert (new.in_features, new.out_features, new.training, new.allow_tf32) == (5, 3, False, True)
    assert new.weight is lin.weight and new.bias is lin.bias
    assert top.Linear(5, 3).allow_tf32 is False and top.Linear(5, 3, bias=False).bias is None
    assert "in_features=5, out_features=3" in repr(new)


def routed_to_op(monkeypatch) -> list:
    """serve.dispatch (cugemm.matmul's front door, which Linear.forward calls) replaced by a call of the
    torch op it is handed, as dispatch makes under autograd (a CPU tensor has no cugemm kernel); returns
    the list of the other arguments of each call."""
    seen = []

    def dispatch(a, b, out, variant, allow_tf32, verbose, op):
        seen.append((out, variant, allow_tf32, verbose, op))
        return op(a, b, allow_tf32=allow_tf32)

    monkeypatch.setattr(serve, "dispatch", dispatch)
    return seen


def test_linear_forward_and_backward(cpu_kernel, monkeypatch):
    """With cugemm.matmul's dispatch routed to the operator (as it is under autograd)."""
    seen = routed_to_op(monkeypatch)
    ref = torch.nn.Linear(8, 6)
    lin = top.Linear.from_linear(ref)
    x = torch.randn(2, 3, 8, requires_grad=True)
    y = lin(x)
    torch.testing.assert_close(y, ref(x))
    y.sum().backward()
    gw, gb, gx = lin.weight.grad.clone(), lin.bias.grad.clone(), x.grad.clone()
    lin.zero_grad()
    x.grad = None
    ref(x).sum().backward()
    torch.testing.assert_close((gw, gb, gx), (ref.weight.grad, ref.bias.grad, x.grad))
    with torch.no_grad():
        torch.testing.assert_close(lin(x), ref(x))
    assert len(seen) == 2 and all(s == (None, None, False, False, top.matmul) for s in seen)


def test_linear_trainable_bias_only(cpu_kernel, monkeypatch):
    routed_to_op(monkeypatch)
    lin = top.Linear(8, 6)
    lin.weight.requires_grad_(False)
    x = torch.randn(4, 5, 8)                      # 3-D: passed as it is (cugemm.matmul folds the rows)
    y = lin(x)
    assert y.shape == (4, 5, 6) and y.requires_grad
    y.sum().backward()
    torch.testing.assert_close(lin.bias.grad, torch.full((6,), 20.0))
    with torch.inference_mode():
        torch.testing.assert_close(lin(x), x @ lin.weight.T + lin.bias)
    assert cpu_kernel[-1] == ((4, 5, 8), (8, 6))
