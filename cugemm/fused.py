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
from .prepared import AUX, BASES, BIAS, SRC

_SERVED: dict = {}   # torch serving key -> (serve.Ready of the fused launch, result shape, keeps pre)
MAX_SERVED = 1024

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
    if type(x) is serve._TENSOR and not serve.wants_op(x, weight) and not (
            bias is not None and bias.requires_grad or residual is not None and residual.requires_grad):
        hit = _served(x, weight, bias, activation, residual, aux)
        if hit is not None:
            return hit
    act = epilogue.activation_name(activation)
    if aux and act is None:
        raise ValueError("cugemm.linear: aux=True returns the pre-activation; give an activation")
    lib = _lib_of(x, weight, bias, residual)
    if lib.kind == "torch" and _wants_op(x, weight, bias, residual):
        y, pre = op(x, weight, bias, act, residual, bool(aux) or act is not None)
        return (y, pre) if aux else y
    y, pre = linear_impl(lib, x, weight, bias, act, residual, aux, serve_key=(
        _serving_key(x, weight, bias, activation, residual, aux) if lib.kind == "torch" else None))
    return (y, pre) if aux else y


# ---- the torch serving path: a linear layer called before, from its tensors' pointers ----------------
def _serving_key(x, weight, bias, activation, residual, aux) -> tuple:
    """What a fused linear's launch depends on: shapes, strides, types, device, 16-byte alignment
    classes of every operand, the activation and aux (the result is a fresh dense tensor)."""
    return (x.shape, x.stride(), x.dtype, x.get_device(), weight.shape, weight.stride(), weight.dtype,
            x.data_ptr() & 15, weight.data_ptr() & 15,
            None if bias is None else (bias.shape, bias.stride(), bias.dtype, bias.data_ptr() & 15),
            None if residual is None else (residual.shape, residual.stride(), residual.dtype,
                                           residual.data_ptr() & 15),
            activation, bool(aux))


def _served(x, weight, bias, activation, residual, aux):
    """The result of a linear layer whose fused launch is cached (one look-up, the allocations, the
    launch), or None when it is not."""
    e = _SERVED.get(_serving_key(x, weight, bias, activation, residual, aux))
    if e is None:
        return None
    y, pre = _launch_served(e, x, weight, bias, residual, aux)
    return (y, pre) if aux else y


def _launch_served(e, a, b, bias, src, aux):
    """A filed fused launch (Ready, result shape, keeps pre) on the operands' pointers and fresh
    results from torch's allocator: (D, pre or None)."""
    r, shape, keeps_pre = e
    empty = serve._torch_empty
    d = empty(shape, dtype=a.dtype, device=a.device)
    pre = empty(shape, dtype=a.dtype, device=a.device) if keeps_pre else None
    bases = [0] * BASES
    bases[0], bases[1], bases[2] = a.data_ptr(), b.data_ptr(), d.data_ptr()
    if bias is not None:
        bases[BIAS] = bias.data_ptr()
    if src is not None:
        bases[SRC] = src.data_ptr()
    if pre is not None:
        bases[AUX] = pre.data_ptr()
    stream = serve._torch_stream(a.get_device())
    if r.direct:
        r.gemm.launch(bases, stream)
    else:
        r.run(serve.library("torch"), stream, bases[0], bases[1], bases[2],
              extra=[(k, bases[k]) for k in (BIAS, SRC, AUX) if bases[k]])
    return d, pre


def _file(key, entry) -> None:
    with serve._lock:
        if len(_SERVED) >= MAX_SERVED:
            _SERVED.clear()
        _SERVED[key] = entry


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


def linear_impl(lib, x, weight, bias, act, residual, want_pre: bool, serve_key=None):
    """The eager linear: (y, pre or None), on the caller's current stream, no autograd. serve_key:
    file a fused launch that reads the tensors where they lie under it (the torch serving path)."""
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
        r = _run(lib, x2, weight.T, y, spec, bias, r2, pre, 1.0, 1.0, who)
        in_place = lib.ptr(x2) == lib.ptr(x) and (r2 is None or lib.ptr(r2) == lib.ptr(residual))
        if serve_key is not None and r is not None and r.fast and in_place and y.data_ptr() & 15 == 0:
            _file(serve_key, (r, shape, pre is not None))
    y = y.reshape(shape)
    return y, (pre.reshape(shape) if pre is not None else None)


def _run(lib, a, b, out, spec, bias, src, aux, alpha, beta, who):
    """out = the epilogue of a @ b (2-D): fused where cugemm.epilogue finds a plan (returns its
    serve.Ready), else matmul + a pass (returns None)."""
    if a.shape[1] == 0:  # an empty sum: the epilogue of zeros
        lib.zero(out)
        epilogue.elementwise(lib, out, spec, bias, src, aux, alpha, beta)
        return None
    dev = _device(a, lib)
    if serve._TENSOR is None and lib.kind == "torch":
        serve._see_torch(sys.modules["torch"])
    A, B, C = (serve._record(v, w) for v, w in ((a, "A"), (b, "B"), (out, "out")))
    if lib.kind == "cupy":
        with serve._on_device(dev):
            return epilogue.execute(lib, A, B, C, a, b, out, spec, bias, src, aux, alpha, beta, dev)
    return epilogue.execute(lib, A, B, C, a, b, out, spec, bias, src, aux, alpha, beta, dev)


# ---- gemm ---------------------------------------------------------------------------------------------
def gemm(a, b, c=None, alpha=1.0, beta=0.0, out=None, *, op=None):
    """alpha * a @ b + beta * c (BLAS), a (M, K), b (K, N), c (M, N). beta = 0 never reads c (NaNs
    in it do not leak); out=c updates c in place. Returns out, or a new array (torch tensors: with
    autograd; torch.compile traces it: `op`, the registered operator, as in linear)."""
    who = "cugemm.gemm"
    alpha, beta = _number(alpha, "alpha", who), _number(beta, "beta", who)
    if type(a) is serve._TENSOR and out is None and not serve.wants_op(a, b) and not (
            c is not None and c.requires_grad):
        key = _gemm_key(a, b, c, alpha, beta)
        e = _SERVED.get(key)
        if e is not None:
            return _launch_served(e, a, b, None, c if beta != 0.0 else None, None)[0]
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
    src = c if beta != 0.0 else None
    if src is None and alpha == 1.0:  # the plain product
        return epilogue.product(lib, a, b, out)
    spec = epilogue.Spec(None, "", "pre" if src is not None else "", False)
    fresh = out is None
    if fresh:
        out = lib.empty(shape, a)
    if shape[0] and shape[1]:
        r = _run(lib, a, b, out, spec, None, src, None, alpha, beta, who)
        if lib.kind == "torch" and fresh and r is not None and r.fast and out.data_ptr() & 15 == 0:
            _file(_gemm_key(a, b, c, alpha, beta), (r, shape, False))
    return out


def _gemm_key(a, b, c, alpha, beta) -> tuple:
    """The torch serving path's key of a gemm into a fresh result (as _serving_key)."""
    return ("gemm", a.shape, a.stride(), a.dtype, a.get_device(), b.shape, b.stride(), b.dtype,
            a.data_ptr() & 15, b.data_ptr() & 15,
            None if c is None else (c.shape, c.stride(), c.dtype, c.data_ptr() & 15), alpha, beta)
