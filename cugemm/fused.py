"""cugemm.linear and cugemm.gemm: a product and its epilogue in one kernel (cugemm.epilogue).

    y = cugemm.linear(x, w, b, activation="gelu")          # F.gelu(F.linear(x, w, b)), one launch
    y = cugemm.linear(x, w, b, residual=r)                 # F.linear(x, w, b) + r
    y, pre = cugemm.linear(x, w, b, activation="silu", aux=True)   # pre: x @ w.T + b
    d = cugemm.gemm(a, b, c, alpha=2.0, beta=0.5)          # 2 a @ b + 0.5 c (BLAS); out=c updates c

Operands are CuPy arrays or torch CUDA tensors of one type (float16, bfloat16; float32 runs the
product and a separate pass). A torch call that autograd must record or torch.compile traces goes
through the registered ops torch.ops.cugemm.linear / torch.ops.cugemm.gemm (cugemm/torch_op.py:
fake implementations, and autograd: linear's activation gradient from the saved pre-activation).
"""
from __future__ import annotations

import numbers
import sys

from . import epilogue, operand, serve

_KINDS = ("float16", "bfloat16", "float32")


def _lib_of(*xs):
    """The callers' library (serve's record): every array given must be of one library."""
    given = [x for x in xs if x is not None]
    torch_ = [operand.is_torch(x) for x in given]
    if any(torch_) and not all(torch_):
        raise TypeError("cugemm: some operands are torch tensors and others are not; pass one library's arrays")
    return serve.library("torch" if all(torch_) and torch_ else "cupy")


def _dtype(x, what: str, who: str):
    op = operand.describe(x, what, who)
    if op.dtype is None or op.dtype.name not in _KINDS:
        raise TypeError(f"{who}: {what} has dtype {operand.dtype_name(op)}; cugemm multiplies float32, "
                        "float16 or bfloat16")
    return op.dtype


def _same(x, dt, what: str, who: str) -> None:
    if x is not None and _dtype(x, what, who).name != dt.name:
        raise TypeError(f"{who}: {what} has dtype {_dtype(x, what, who).name}; the product's is {dt.name}")


def _number(v, what: str, who: str) -> float:
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{who}: {what} must be a real number, got {type(v).__name__}")
    return float(v)


def _device(x, lib) -> int:
    return x.get_device() if lib.kind == "torch" else x.device.id


def _wants_op(*xs) -> bool:
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    if torch.compiler.is_compiling():
        return True
    return torch.is_grad_enabled() and any(x is not None and x.requires_grad for x in xs)


# ---- linear -------------------------------------------------------------------------------------------
def linear(x, weight, bias=None, activation=None, residual=None, *, aux: bool = False, op=None):
    """act(x @ weight.T + bias) + residual, F.linear's layout: x (..., K), weight (N, K), bias (N,),
    residual of the result's shape (..., N). activation: None, 'relu', 'gelu' (erf), 'gelu_tanh',
    'silu'. aux=True (with an activation) also returns the pre-activation x @ weight.T + bias.
    torch tensors get autograd (fp16, bf16, fp32) and trace under torch.compile: `op(x, weight,
    bias, activation, residual, keep_pre)` is the registered operator (passed in by the package,
    so that this module does not import the torch layer above it)."""
    act = epilogue.activation_name(activation)
    if aux and act is None:
        raise ValueError("cugemm.linear: aux=True returns the pre-activation; give an activation")
    lib = _lib_of(x, weight, bias, residual)
    if lib.kind == "torch" and _wants_op(x, weight, bias, residual):
        y, pre = op(x, weight, bias, act, residual, bool(aux) or act is not None)
        return (y, pre) if aux else y
    y, pre = linear_impl(lib, x, weight, bias, act, residual, aux)
    return (y, pre) if aux else y


def linear_shapes(x_shape, w_shape, bias_shape, residual_shape, who: str = "cugemm.linear") -> tuple:
    """The result's shape, after linear's shape checks (ValueError); works with symbolic sizes."""
    if len(w_shape) != 2:
        raise ValueError(f"{who}: weight must be 2-D (N, K), got shape {tuple(w_shape)}")
    if len(x_shape) < 1 or x_shape[-1] != w_shape[1]:
        raise ValueError(f"{who}: x's last dimension ({tuple(x_shape)}) must be weight's K ({w_shape[1]})")
    N = w_shape[0]
    if bias_shape is not None and tuple(bias_shape) != (N,):
        raise ValueError(f"{who}: bias must have shape ({N},), got {tuple(bias_shape)}")
    shape = tuple(x_shape[:-1]) + (N,)
    if residual_shape is not None and tuple(residual_shape) != shape:
        raise ValueError(f"{who}: residual must have the result's shape {shape}, got {tuple(residual_shape)}")
    return shape


def linear_impl(lib, x, weight, bias, act, residual, want_pre: bool):
    """The eager linear: (y, pre or None), on the caller's current stream, no autograd."""
    who = "cugemm.linear"
    dt = _dtype(x, "x", who)
    for v, what in ((weight, "weight"), (bias, "bias"), (residual, "residual")):
        _same(v, dt, what, who)
    shape = linear_shapes(tuple(x.shape), tuple(weight.shape), None if bias is None else tuple(bias.shape),
                          None if residual is None else tuple(residual.shape))
    N, K = weight.shape
    x2 = x.reshape(-1, K)
    M = x2.shape[0]
    y = lib.empty((M, N), x2)
    pre = lib.empty((M, N), x2) if want_pre and act is not None else None
    r2 = residual.reshape(M, N) if residual is not None else None
    spec = epilogue.Spec(act, "col" if bias is not None else "", "post" if residual is not None else "",
                         pre is not None)
    if M and N:
        _run(lib, x2, weight.T, y, spec, bias, r2, pre, 1.0, 1.0, who)
    y = y.reshape(shape)
    return y, (pre.reshape(shape) if pre is not None else None)


def _run(lib, a, b, out, spec, bias, src, aux, alpha, beta, who) -> None:
    """out = the epilogue of a @ b (2-D): fused where cugemm.epilogue finds a plan, else matmul + a pass."""
    if a.shape[1] == 0:  # an empty sum: the epilogue of zeros
        lib.zero(out)
        epilogue_only(lib, out, spec, bias, src, aux, alpha, beta)
        return
    dev = _device(a, lib)
    if serve._TENSOR is None and lib.kind == "torch":
        serve._see_torch(sys.modules["torch"])
    A, B, C = (serve._record(v, w) for v, w in ((a, "A"), (b, "B"), (out, "out")))
    if lib.kind == "cupy":
        with serve._on_device(dev):
            epilogue.execute(lib, A, B, C, a, b, out, spec, bias, src, aux, alpha, beta, dev)
    else:
        epilogue.execute(lib, A, B, C, a, b, out, spec, bias, src, aux, alpha, beta, dev)


def epilogue_only(lib, d, spec, bias, src, aux, alpha, beta) -> None:
    if lib.kind == "torch":
        epilogue._torch_pass(d, spec, bias, src, aux, alpha, beta)
    else:
        epilogue._cupy_pass(d, spec, bias, src, aux, alpha, beta)


# ---- gemm ---------------------------------------------------------------------------------------------
def gemm(a, b, c=None, alpha=1.0, beta=0.0, out=None, *, op=None):
    """alpha * a @ b + beta * c (BLAS), a (M, K), b (K, N), c (M, N). beta = 0 never reads c (NaNs
    in it do not leak); out=c updates c in place. Returns out, or a new array (torch tensors: with
    autograd; torch.compile traces it: `op`, the registered operator, as in linear)."""
    who = "cugemm.gemm"
    alpha, beta = _number(alpha, "alpha", who), _number(beta, "beta", who)
    lib = _lib_of(a, b, c, out)
    if beta != 0.0 and c is None:
        raise ValueError(f"{who}: beta = {beta} needs c")
    if lib.kind == "torch" and _wants_op(a, b, c if beta != 0.0 else None):
        d = op(a, b, c if beta != 0.0 else None, alpha, beta)
        if out is not None:
            out.copy_(d)
            return out
        return d
    return gemm_impl(lib, a, b, c, alpha, beta, out)


def gemm_shapes(a_shape, b_shape, c_shape, who: str = "cugemm.gemm") -> tuple:
    if len(a_shape) != 2 or len(b_shape) != 2:
        raise ValueError(f"{who}: a and b must be 2-D, got {tuple(a_shape)} and {tuple(b_shape)}")
    if a_shape[1] != b_shape[0]:
        raise ValueError(f"{who}: a is {tuple(a_shape)} and b {tuple(b_shape)}: K differs")
    shape = (a_shape[0], b_shape[1])
    if c_shape is not None and tuple(c_shape) != shape:
        raise ValueError(f"{who}: c must have the product's shape {shape}, got {tuple(c_shape)}")
    return shape


def gemm_impl(lib, a, b, c, alpha: float, beta: float, out=None):
    who = "cugemm.gemm"
    dt = _dtype(a, "a", who)
    for v, what in ((b, "b"), (c, "c"), (out, "out")):
        _same(v, dt, what, who)
    shape = gemm_shapes(tuple(a.shape), tuple(b.shape), None if c is None else tuple(c.shape))
    if out is not None and tuple(out.shape) != shape:
        raise ValueError(f"{who}: out must have shape {shape}, got {tuple(out.shape)}")
    if out is None:
        out = lib.empty(shape, a)
    src = c if beta != 0.0 else None
    if src is None and alpha == 1.0:  # the plain product
        return epilogue.product(lib, a, b, out)
    spec = epilogue.Spec(None, "", "pre" if src is not None else "", False)
    if shape[0] and shape[1]:
        _run(lib, a, b, out, spec, None, src, None, alpha, beta, who)
    return out
