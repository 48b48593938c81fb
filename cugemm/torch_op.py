"""cugemm as a torch operator: torch.ops.cugemm.matmul, with autograd and torch.compile support.

    import cugemm.torch_op as top
    y = top.matmul(x, w.T)                        # differentiable; cugemm on forward and backward
    f = torch.compile(lambda x, w: cugemm.matmul(x, w.T), fullgraph=True)
    top.route_linears(model)                      # every nn.Linear of a model runs cugemm.matmul

The operator is `cugemm::matmul(Tensor a, Tensor b, bool allow_tf32=False) -> Tensor` with a CUDA
kernel (cugemm.serve.torch_matmul on torch's current stream), a fake implementation (shapes and
errors only: torch.compile, export, meta tensors) and an autograd formula whose two products are
this operator again (so the backward pass runs cugemm too, and double backward works).

`cugemm::linear(...)` and `cugemm::gemm(...)` (LINEAR_SCHEMA, GEMM_SCHEMA) are cugemm.linear and
cugemm.gemm (cugemm.fused): CUDA kernels, fake implementations, autograd (linear's activation
gradient from the pre-activation it keeps, its bias gradient; gemm's alpha- and beta-scaled ones).

`cugemm::grouped_matmul(Tensor a, Tensor b, Tensor ends, bool masked=False, bool allow_tf32=False) -> Tensor` is
cugemm.grouped_matmul (cugemm.grouped) for torch.compile and autograd: CUDA kernel, fake
implementation and a backward (_grouped_backward: dA by the grouped kernel, dB per group; the
contiguous layout's dB reads the offsets on the host, one sync).

Eager calls of cugemm.matmul on torch tensors do not come here: serve.dispatch reads the tensors'
pointers directly. It sends a product here only when autograd must record it (grad enabled and an
operand requires grad) or when torch.compile traces it (torch.compiler.is_compiling()). So this
module costs nothing on the eager inference path; what it costs is paid by backward passes and by
compiled graphs, which call the operator through the dispatcher on every run.

Why torch.library.Library + register_fake/register_autograd and not torch.library.custom_op: both
build the same dispatcher entry (same schema, same Python autograd kernel made by
torch._library.autograd.make_autograd_impl), but custom_op wraps the device kernel in two more
layers: a torch._disable_dynamo wrapper, whose first call imports torch._dynamo and whose every call
enters dynamo's disable context, and an output-aliasing check. Measured on a CPU with a trivial
kernel (torch 2.13): a call through the dispatcher took 7.3 us via Library vs 8.1 us via custom_op
without grad, 10.0 vs 11.8 us with grad; custom_op's first call took 1.2 s (the torch._dynamo
import), while defining and registering everything via Library took 0.7 ms, its first call 0.7 ms,
and torch._dynamo was never imported (a backward pass in a process that never compiles should not
pay for it). custom_op's extras (a schema inferred from type hints, mutation checks) buy nothing for
one fixed, functional schema; the pt2_compliant tag it adds is added here by hand.

Registration happens once per process: at this module's import (which imports torch; cugemm's
package import never imports this module) and again lazily from matmul() / register(), each a no-op
once the operator exists, also across importlib.reload and a second copy of this module (the
Library object is kept in the module's globals, which a reload keeps).
"""
from __future__ import annotations

import threading

import torch

from . import serve

QUALNAME = "cugemm::matmul"
SCHEMA = "matmul(Tensor a, Tensor b, bool allow_tf32=False) -> Tensor"
# cugemm.grouped_matmul as an operator (what torch.compile traces and autograd records): `ends` are
# the offsets (masked False: A (rows, K)) or the counts (masked True: A (G, max_m, K))
GROUPED_QUALNAME = "cugemm::grouped_matmul"
GROUPED_SCHEMA = "grouped_matmul(Tensor a, Tensor b, Tensor ends, bool masked=False, bool allow_tf32=False) -> Tensor"
# cugemm.scaled_matmul (FP8, cugemm.scaled) as an operator for torch.compile; no autograd (as
# torch._scaled_mm): FP8 training recipes quantise gradients themselves
SCALED_QUALNAME = "cugemm::scaled_matmul"
SCALED_SCHEMA = ("scaled_matmul(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, Tensor? bias=None, "
                 "ScalarType? out_dtype=None, bool use_fast_accum=False) -> Tensor")
# cugemm.linear and cugemm.gemm (cugemm.fused: a product and its epilogue in one kernel). linear's
# second result is the pre-activation when keep_pre (what its backward pass reads), else empty.
LINEAR_QUALNAME = "cugemm::linear"
LINEAR_SCHEMA = ("linear(Tensor x, Tensor weight, Tensor? bias=None, str? activation=None, Tensor? residual=None, "
                 "bool keep_pre=False) -> (Tensor, Tensor)")
GEMM_QUALNAME = "cugemm::gemm"
GEMM_SCHEMA = "gemm(Tensor a, Tensor b, Tensor? c=None, float alpha=1.0, float beta=0.0) -> Tensor"
DTYPES = (torch.float16, torch.bfloat16, torch.float32)

_LIB = globals().get("_LIB")            # the Library holding the registrations (survives reload)
_OP = globals().get("_OP")              # torch.ops.cugemm.matmul.default once registered
_GROUPED_OP = globals().get("_GROUPED_OP")  # torch.ops.cugemm.grouped_matmul.default once registered
_LOCK = globals().get("_LOCK") or threading.Lock()


# ---- shapes and checks (the fake implementation; also usable by others) ------------------------------
def result_shape(a_shape, b_shape) -> tuple:
    """The shape of matmul(a, b) by torch.matmul's rules (cugemm.serve.result_shape's: 1-D operands
    promoted and squeezed back, batch dimensions broadcast; ValueError with cugemm.matmul's messages).
    Works with symbolic sizes."""
    return serve.result_shape(a_shape, b_shape)[4]


def check(a, b) -> tuple:
    """The result's shape, after the checks cugemm.matmul makes of two tensors: TypeError for a dtype
    other than float16, bfloat16, float32 or for two different dtypes, ValueError for shapes."""
    name = lambda x: str(x.dtype).replace("torch.", "")  # noqa: E731 (cugemm's spelling: 'float16')
    for what, x in (("A", a), ("B", b)):
        if x.dtype not in DTYPES:
            raise TypeError(f"cugemm.matmul: {what} has dtype {name(x)}; cugemm multiplies float32, float16 "
                            "or bfloat16")
    if a.dtype != b.dtype:
        raise TypeError(f"cugemm.matmul: A is {name(a)} and B is {name(b)}; cugemm multiplies operands "
                        "of one type (cast one of them first)")
    if a.device != b.device:
        raise ValueError(f"cugemm.matmul: A is on {a.device} and B on {b.device}")
    return result_shape(a.shape, b.shape)


def _fake(a, b, allow_tf32=False):
    return a.new_empty(check(a, b))


# ---- the CUDA kernel --------------------------------------------------------------------------------
def _cuda(a, b, allow_tf32=False):
    return serve.torch_matmul(a, b, allow_tf32=allow_tf32)


def _grouped_fake(a, b, ends, masked=False, allow_tf32=False):
    """The grouped result's shape: (rows, N), or (G, max_m, N) for the masked layout (cugemm.grouped
    checks the rest when it runs)."""
    if b.dim() != 3 or a.dim() != (3 if masked else 2):
        raise ValueError(f"cugemm.grouped_matmul: A {tuple(a.shape)} and B {tuple(b.shape)} are not a grouped product")
    shape = (a.shape[0], a.shape[1], b.shape[2]) if masked else (a.shape[0], b.shape[2])
    return a.new_empty(shape)


def _grouped_cuda(a, b, ends, masked=False, allow_tf32=False):
    from . import grouped

    return grouped.grouped_matmul(a, b, None if masked else ends, counts=ends if masked else None,
                                  allow_tf32=allow_tf32)


def _grouped_setup_context(ctx, inputs, output):
    a, b, ends, masked, allow_tf32 = inputs
    ctx.save_for_backward(a, b, ends)
    ctx.masked, ctx.allow_tf32 = masked, allow_tf32


def _grouped_backward(ctx, grad):
    """dA_g = dC_g B_g^T by the grouped kernel itself (B's transposed view; rows of A in no group get
    zero); dB_g = A_g^T dC_g over each group's rows: for the masked layout one batched product with
    the rows past each count zeroed in A and dC (no device sync); for the contiguous layout one
    product per group, whose row ranges the host reads from the offsets (one device sync, clamped as
    the kernel clamps them). The rows a group does not own contribute nothing to either gradient."""
    from . import grouped

    a, b, ends = ctx.saved_tensors
    need_a, need_b = ctx.needs_input_grad[:2]
    masked, tf32 = ctx.masked, ctx.allow_tf32
    g = grad.contiguous()
    ga = gb = None
    if need_a:
        ga = torch.zeros(a.shape, dtype=a.dtype, device=a.device)
        bt = b.transpose(1, 2)
        grouped.grouped_matmul(g, bt, None if masked else ends, ga, counts=ends if masked else None, allow_tf32=tf32)
    if need_b:
        if masked:
            m = a.shape[1]
            keep = (torch.arange(m, device=a.device)[None, :] < ends.clamp(0, m)[:, None]).unsqueeze(-1)
            zero = torch.zeros((), dtype=a.dtype, device=a.device)
            gb = serve.torch_matmul(torch.where(keep, a, zero).transpose(1, 2), torch.where(keep, g, zero),
                                    allow_tf32=tf32)
        else:
            gb = torch.zeros(b.shape, dtype=b.dtype, device=b.device)
            for i, (start, end) in enumerate(grouped.group_rows(ends.tolist(), a.shape[0])):
                if end > start:
                    gb[i] = serve.torch_matmul(a[start:end].transpose(0, 1), g[start:end], allow_tf32=tf32)
    return ga, gb, None, None, None


# ---- autograd -----------------------------------------------------------------------------------------
def _setup_context(ctx, inputs, output):
    a, b, allow_tf32 = inputs
    ctx.save_for_backward(a, b)
    ctx.allow_tf32 = allow_tf32


def _dense(g):
    """g, copied when it repeats elements (a stride of 0, as the gradient of a sum is)."""
    if any(st == 0 and n > 1 for st, n in zip(g.stride(), g.shape)):
        return g.contiguous()
    return g


def _backward(ctx, grad):
    """dA = dC @ B^T and dB = A^T @ dC by this operator, 1-D operands promoted and the gradients of
    broadcast batch dimensions summed back to each operand's shape."""
    a, b = ctx.saved_tensors
    need_a, need_b = ctx.needs_input_grad[:2]
    tf32 = ctx.allow_tf32
    a2 = a.unsqueeze(0) if a.dim() == 1 else a         # M x K (batched)
    b2 = b.unsqueeze(-1) if b.dim() == 1 else b        # K x N (batched)
    g = grad
    if b.dim() == 1:
        g = g.unsqueeze(-1)
    if a.dim() == 1:
        g = g.unsqueeze(-2)                            # batch + (M, N)
    g = _dense(g)
    ga = gb = None
    if need_a:
        if a2.dim() == 2 and b2.dim() > 2:             # one A for every batch: one long-K product
            M, K = a2.shape
            ga = matmul(g.movedim(-2, 0).reshape(M, -1), b2.movedim(-2, 0).reshape(K, -1).mT, allow_tf32=tf32)
        else:
            ga = matmul(g, b2.mT, allow_tf32=tf32).sum_to_size(a2.shape)
        ga = ga.reshape(a.shape)
    if need_b:
        if b2.dim() == 2 and a2.dim() > 2:             # activations against one weight: fold the rows
            K, N = b2.shape
            gb = matmul(a2.reshape(-1, K).mT, g.reshape(-1, N), allow_tf32=tf32)
        else:
            gb = matmul(a2.mT, g, allow_tf32=tf32).sum_to_size(b2.shape)
        gb = gb.reshape(b.shape)
    return ga, gb, None


# ---- linear and gemm (cugemm.fused) -------------------------------------------------------------------
def _linear_cuda(x, weight, bias=None, activation=None, residual=None, keep_pre=False):
    from . import fused

    y, pre = fused.linear_impl(serve.library("torch"), x, weight, bias, activation, residual, keep_pre)
    return y, (pre if pre is not None else x.new_empty(0))


def _linear_fake(x, weight, bias=None, activation=None, residual=None, keep_pre=False):
    from . import epilogue, fused

    epilogue.activation_name(activation)
    shape = fused.linear_shapes(x.shape, weight.shape, None if bias is None else bias.shape,
                                None if residual is None else residual.shape)
    y = x.new_empty(shape)
    return y, (x.new_empty(shape) if keep_pre and activation is not None else x.new_empty(0))


def _linear_setup_context(ctx, inputs, output):
    x, weight, bias, activation, residual, keep_pre = inputs
    ctx.activation = activation
    ctx.has_bias, ctx.has_residual = bias is not None, residual is not None
    ctx.save_for_backward(x, weight, output[1] if activation is not None else None)


def activation_grad(pre, activation):
    """d act / d pre at `pre` (float32): the formulas of kernels/lib/epilogue.cuh differentiated."""
    x = pre.float()
    if activation == "relu":
        return (x > 0).float()
    if activation == "gelu":
        return 0.5 * (1.0 + torch.erf(x * 0.7071067811865476)) + x * torch.exp(-0.5 * x * x) * 0.3989422804014327
    if activation == "gelu_tanh":
        c = 0.7978845608028654
        t = torch.tanh(c * (x + 0.044715 * x ** 3))
        return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3 * 0.044715 * x * x)
    if activation == "silu":
        sg = torch.sigmoid(x)
        return sg * (1.0 + x * (1.0 - sg))
    raise ValueError(activation)


def _linear_backward(ctx, grad_y, grad_pre):
    """dx = g W, dW = g^T x, db = sum of g's rows, d residual = dy, with g = dy * act'(pre) (+ d pre
    where the pre-activation was used)."""
    x, weight, pre = ctx.saved_tensors
    N, K = weight.shape
    g = grad_y
    if ctx.activation is not None:
        g = (grad_y.float() * activation_grad(pre, ctx.activation))
        if grad_pre is not None and grad_pre.numel():
            g = g + grad_pre.float()
        g = g.to(grad_y.dtype)
    g2 = _dense(g).reshape(-1, N)
    need = ctx.needs_input_grad
    gx = matmul(g2, weight).reshape(x.shape) if need[0] else None
    gw = matmul(g2.mT, x.reshape(-1, K)) if need[1] else None
    gb = g2.float().sum(0).to(g2.dtype) if ctx.has_bias and need[2] else None
    gr = grad_y if ctx.has_residual and need[4] else None
    return gx, gw, gb, None, gr, None


def _gemm_cuda(a, b, c=None, alpha=1.0, beta=0.0):
    from . import fused

    return fused.gemm_impl(serve.library("torch"), a, b, c, alpha, beta)


def _gemm_fake(a, b, c=None, alpha=1.0, beta=0.0):
    from . import fused

    return a.new_empty(fused.gemm_shapes(a.shape, b.shape, None if c is None else c.shape))


def _gemm_setup_context(ctx, inputs, output):
    a, b, c, alpha, beta = inputs
    ctx.alpha, ctx.beta = alpha, beta
    ctx.save_for_backward(a, b)


def _gemm_backward(ctx, grad):
    a, b = ctx.saved_tensors
    need = ctx.needs_input_grad
    g = _dense(grad)
    ga = gemm(g, b.mT, None, ctx.alpha, 0.0) if need[0] else None
    gb = gemm(a.mT, g, None, ctx.alpha, 0.0) if need[1] else None
    gc = (grad * ctx.beta) if need[2] else None
    return ga, gb, gc, None, None


def linear(x, weight, bias=None, activation=None, residual=None, keep_pre=False):
    """cugemm.linear through torch.ops.cugemm.linear: (y, pre or an empty tensor)."""
    register()
    return torch.ops.cugemm.linear.default(x, weight, bias, activation, residual, keep_pre)


def gemm(a, b, c=None, alpha=1.0, beta=0.0):
    """cugemm.gemm through torch.ops.cugemm.gemm."""
    register()
    return torch.ops.cugemm.gemm.default(a, b, c, float(alpha), float(beta))


# ---- registration -----------------------------------------------------------------------------------
def _defined(qualname: str = QUALNAME) -> bool:
    try:
        torch._C._dispatch_find_schema_or_throw(qualname, "")
        return True
    except RuntimeError:
        return False


def library():
    """The torch.library.Library holding this module's registrations (None in a copy of the module
    that found the operator already defined)."""
    return _LIB


def register():
    """Define torch.ops.cugemm.matmul (CUDA kernel, fake implementation, autograd) unless this
    process already has it; returns the OpOverload. Safe to call any number of times, from any
    thread."""
    global _LIB, _OP, _GROUPED_OP
    if _OP is not None:
        return _OP
    with _LOCK:
        if _OP is None:
            if _LIB is None and not _defined():
                lib = torch.library.Library("cugemm", "DEF")
                lib.define(SCHEMA, tags=(torch.Tag.pt2_compliant_tag,))
                lib.impl("matmul", _cuda, "CUDA")
                torch.library.register_fake(QUALNAME, _fake, lib=lib)
                torch.library.register_autograd(QUALNAME, _backward, setup_context=_setup_context, lib=lib)
                lib.define(GROUPED_SCHEMA, tags=(torch.Tag.pt2_compliant_tag,))
                lib.impl("grouped_matmul", _grouped_cuda, "CUDA")
                torch.library.register_fake(GROUPED_QUALNAME, _grouped_fake, lib=lib)
                torch.library.register_autograd(GROUPED_QUALNAME, _grouped_backward,
                                                setup_context=_grouped_setup_context, lib=lib)
                lib.define(SCALED_SCHEMA, tags=(torch.Tag.pt2_compliant_tag,))
                lib.impl("scaled_matmul", _scaled_cuda, "CUDA")
                torch.library.register_fake(SCALED_QUALNAME, _scaled_fake, lib=lib)
                lib.define(LINEAR_SCHEMA, tags=(torch.Tag.pt2_compliant_tag,))
                lib.impl("linear", _linear_cuda, "CUDA")
                torch.library.register_fake(LINEAR_QUALNAME, _linear_fake, lib=lib)
                torch.library.register_autograd(LINEAR_QUALNAME, _linear_backward,
                                                setup_context=_linear_setup_context, lib=lib)
                lib.define(GEMM_SCHEMA, tags=(torch.Tag.pt2_compliant_tag,))
                lib.impl("gemm", _gemm_cuda, "CUDA")
                torch.library.register_fake(GEMM_QUALNAME, _gemm_fake, lib=lib)
                torch.library.register_autograd(GEMM_QUALNAME, _gemm_backward, setup_context=_gemm_setup_context,
                                                lib=lib)
                _LIB = lib
            _GROUPED_OP = torch.ops.cugemm.grouped_matmul.default
            _OP = torch.ops.cugemm.matmul.default
    return _OP


def matmul(a, b, *, allow_tf32: bool = False):
    """a @ b (torch.matmul's semantics) through torch.ops.cugemm.matmul: autograd and torch.compile
    see one operator; the CUDA kernel is cugemm's."""
    op = _OP if _OP is not None else register()
    return op(a, b, allow_tf32)


def grouped_matmul(a, b, ends, masked: bool = False, allow_tf32: bool = False):
    """cugemm.grouped_matmul through torch.ops.cugemm.grouped_matmul (what torch.compile traces):
    `ends` the offsets, or (masked) the counts."""
    op = _GROUPED_OP
    if op is None:
        register()
        op = torch.ops.cugemm.grouped_matmul.default
    return op(a, b, ends, masked, allow_tf32)


def scaled_matmul(a, b, scale_a, scale_b, bias=None, out_dtype=None, use_fast_accum=False):
    """cugemm.scaled_matmul through torch.ops.cugemm.scaled_matmul (what torch.compile traces)."""
    register()
    return torch.ops.cugemm.scaled_matmul.default(a, b, scale_a, scale_b, bias, out_dtype, use_fast_accum)


def _scaled_cuda(a, b, scale_a, scale_b, bias=None, out_dtype=None, use_fast_accum=False):
    from . import scaled

    return scaled.scaled_matmul(a, b, scale_a, scale_b, out_dtype or torch.bfloat16, bias,
                                use_fast_accum=use_fast_accum)


def _scaled_fake(a, b, scale_a, scale_b, bias=None, out_dtype=None, use_fast_accum=False):
    """Shapes and the checks that need no data: (M, N) of out_dtype (bfloat16 by default)."""
    from . import scaled

    for what, x in (("A", a), ("B", b)):
        if x.dim() != 2 or x.dtype not in (torch.float8_e4m3fn, torch.float8_e5m2):
            raise TypeError(f"{scaled.WHO}: {what} must be a 2-D float8_e4m3fn / float8_e5m2 tensor, got "
                            f"{x.dtype} {tuple(x.shape)}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"{scaled.WHO}: inner dimensions differ: A is {tuple(a.shape)}, B is {tuple(b.shape)}")
    scaled.scale_mode(a.shape[0], b.shape[1], a.shape[1], tuple(scale_a.shape), tuple(scale_b.shape))
    dt = out_dtype or torch.bfloat16
    M, N = a.shape[0], b.shape[1]
    Np = scaled.padded_cols(N, torch.empty((), dtype=dt).element_size())  # the kernel's result's rows
    return a.new_empty_strided((M, N), (Np, 1), dtype=dt)


# ---- nn.Linear -----------------------------------------------------------------------------------------
class Linear(torch.nn.Linear):
    """nn.Linear (weight N x K, optional bias) whose forward is cugemm.matmul(x, W.T) + bias: eager
    calls without autograd take cugemm.matmul's direct path, the others this operator. Same
    parameters, state_dict and init as nn.Linear."""

    allow_tf32: bool = False
    _wt = None      # weight.T, made once for calls autograd does not record
    _wt_of = None   # the weight it is a view of

    def forward(self, x):
        w = self.weight
        if torch.is_grad_enabled() and w.requires_grad:
            wt = w.T  # recorded by autograd: a view made in this call
        else:  # the same view every call (a (B, T, K) x takes cugemm.matmul's serving path as it is)
            wt = self._wt
            if wt is None or self._wt_of is not w or wt.data_ptr() != w.data_ptr():
                with torch.no_grad():
                    wt = w.T
                # plain attributes (Module.__setattr__ would register the Parameter a second time)
                self.__dict__["_wt"], self.__dict__["_wt_of"] = wt, w
        y = serve.dispatch(x, wt, None, None, self.allow_tf32, False, matmul)  # cugemm.matmul's front door
        if self.bias is None:
            return y
        if torch.is_grad_enabled() and (y.requires_grad or self.bias.requires_grad):
            return y + self.bias
        return y.add_(self.bias)  # y is this call's own result: no second allocation

    @classmethod
    def from_linear(cls, lin: torch.nn.Linear, *, allow_tf32: bool = False) -> "Linear":
        """A Linear that shares lin's weight and bias (no copy)."""
        new = cls.__new__(cls)
        torch.nn.Module.__init__(new)
        new.in_features, new.out_features = lin.in_features, lin.out_features
        new.weight = lin.weight
        new.bias = lin.bias
        new.allow_tf32 = allow_tf32
        new.train(lin.training)
        return new


def route_linears(model: torch.nn.Module, *, allow_tf32: bool = False) -> int:
    """Replace, in place, every module of exactly type nn.Linear below `model` by a Linear sharing
    its parameters (subclasses of nn.Linear, which may have their own forward, are left alone; so is
    `model` itself). A module reachable under several names is replaced by one Linear. Returns how
    many distinct nn.Linear modules were replaced."""
    done: dict = {}

    def walk(m):
        for name, child in list(m._modules.items()):  # every name (named_children skips repeats)
            if type(child) is torch.nn.Linear:
                if id(child) not in done:
                    done[id(child)] = Linear.from_linear(child, allow_tf32=allow_tf32)
                setattr(m, name, done[id(child)])
            elif child is not None and not isinstance(child, Linear):
                walk(child)

    walk(model)
    return len(done)


register()
