"""cugemm.matmul: the front door, its plan cache, and the prepared launches it replays.

    c = cugemm.matmul(a, b)                       # CuPy in, CuPy out
    y = cugemm.matmul(x, w.T)                     # torch in, torch out, on torch's current stream
    print(cugemm.explain(a, b))                   # what it chose, and why

Semantics are torch.matmul's / cupy.matmul's for float32, float16 and bfloat16 operands of one
type: 2-D products, 1-D operands promoted and squeezed, batched operands (3-D and up) with broadcast
batch dimensions. float32 is exact FP32 unless allow_tf32=True.

How a call runs. Each distinct problem (device, types, shapes, strides, the pointers' 16-byte
alignment, flags) is planned once by cugemm.select (measured tables, else the fallback model) into a
`Ready`: the plan's launches prepared for raw pointers (cugemm.prepared: the kernel handle, grid,
block, shared memory, packed parameters, tensor maps re-pointed per call), its copy stage
(cugemm.relayout) and the size of its workspaces. A call the cache has seen reads the operands'
pointers, shapes and strides straight off them (torch: data_ptr/shape/stride; CuPy:
.data.ptr/.shape/.strides), allocates the result with the caller's own allocator (torch's caching
allocator for torch operands, CuPy's pool for CuPy ones), takes the caller's current stream, and
launches: no CuPy array, DLPack round trip or stream object is built per call. The relayout's
copies come from the same allocator as the result; split-K and skinny partials from a buffer held
per (allocator, device, stream) (cugemm.workspace), made with that allocator.

torch. With torch tensors, a call that autograd must record (grad enabled and an operand requiring
grad) or that torch.compile is tracing goes through the registered op torch.ops.cugemm.matmul
(cugemm.torch_op: fake implementation, autograd through cugemm itself); every other call runs here
directly. CUDA graphs: a problem's first call must run eagerly (it compiles and loads the kernel and
encodes its tensor maps); inside a capture, a problem never run before raises a clear error before
anything is enqueued, so the caller's capture stays valid. A split-K or skinny launch captured on a
stream that holds no buffer yet gets one per call from the capture's own pool (nothing is allocated
outside it); a buffer held before the capture serves the captured launches (the process keeps it).
"""
from __future__ import annotations

import os
import sys
import threading

import numpy as np

from . import device as _device
from . import batched, launch, operand, relayout, select, tuning, workspace
from .ints import round_up
from .variant import INT32_MAX
from .version import __version__
from .prepared import BASES, COUNTERS, PARTIALS, WORK, Prepared, sentinel
from .prepared import A as _A
from .prepared import B as _B
from .prepared import C as _C

MAX_PLANS = 8192
_READY: dict = {}      # plan key -> Ready (the plan cache)
_MEASURED: dict = {}   # device id -> tuning.Measured
_lock = threading.Lock()


TILE_MAX = 256  # the largest tile side of any registered variant (tests/test_big_products.py checks it)
# With CUGEMM_AUTOTUNE=1, called on a plan-cache miss as AUTOTUNE(problem, device id) before choosing:
# cugemm.tuner.autotune, which the package registers here (the tuner runs plans through this module).
AUTOTUNE = None

class CaptureError(RuntimeError):
    """A product cugemm cannot enqueue inside a CUDA-graph capture (raised before enqueueing)."""


# ---- the caller's array library -----------------------------------------------------------------
class _CupyLib:
    """Allocation, stream and the rare copies for CuPy callers."""

    kind = "cupy"

    @staticmethod
    def stream(dev: int) -> int:
        import cupy

        return cupy.cuda.get_current_stream().ptr

    @staticmethod
    def empty(shape, like):
        import cupy

        return cupy.empty(shape, dtype=like.dtype)

    @staticmethod
    def buffer(nbytes: int, dev: int):
        import cupy

        mem = cupy.cuda.alloc(nbytes)
        return mem, mem.ptr

    @staticmethod
    def alloc_zeroed(nbytes: int, dev: int = None):
        return workspace.cupy_alloc(nbytes)

    @staticmethod
    def view(owner, offset: int, dt, shape, strides):
        import cupy

        return cupy.ndarray(shape, dtype=dt.numpy, memptr=owner + offset,
                            strides=tuple(s * dt.itemsize for s in strides))

    copy_padded = staticmethod(relayout.copy_padded_cupy)

    @staticmethod
    def copy(dst, src) -> None:
        relayout.copy_padded_cupy(src, dst)

    @staticmethod
    def capturing(stream: int) -> bool:
        import cupy

        try:
            return cupy.cuda.runtime.streamIsCapturing(stream) != 0
        except Exception:
            return False

    @staticmethod
    def ptr(x) -> int:
        return x.data.ptr

    @staticmethod
    def zero(x) -> None:
        """x = 0, by its bits (bfloat16 arrays included)."""
        x.view(np.uint16 if x.dtype.itemsize == 2 else np.uint32)[...] = 0


class _TorchLib:
    """Allocation, stream and the rare copies for torch callers."""

    kind = "torch"

    @staticmethod
    def stream(dev: int) -> int:
        import torch

        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        return raw(dev) if raw is not None else torch.cuda.current_stream(dev).cuda_stream

    @staticmethod
    def empty(shape, like):
        import torch

        return torch.empty(shape, dtype=like.dtype, device=like.device)

    @staticmethod
    def buffer(nbytes: int, dev: int):
        import torch

        buf = torch.empty(nbytes, dtype=torch.uint8, device=torch.device("cuda", dev))
        return buf, buf.data_ptr()

    @staticmethod
    def alloc_zeroed(nbytes: int, dev: int = None):
        import torch

        buf = torch.zeros(nbytes, dtype=torch.uint8, device=torch.device("cuda", dev if dev is not None
                                                                           else torch.cuda.current_device()))
        return buf, buf.data_ptr()

    @staticmethod
    def view(owner, offset: int, dt, shape, strides):
        import torch

        tdt = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[dt.name]
        return torch.as_strided(owner.view(tdt), shape, strides, offset // dt.itemsize)

    copy_padded = staticmethod(relayout.copy_padded_torch)

    @staticmethod
    def copy(dst, src) -> None:
        dst.copy_(src)

    @staticmethod
    def capturing(stream: int) -> bool:
        import torch

        return torch.cuda.is_current_stream_capturing()

    @staticmethod
    def ptr(x) -> int:
        return x.data_ptr()

    @staticmethod
    def zero(x) -> None:
        x.zero_()


def library(kind: str):
    """The caller's array library record ('torch' or 'cupy'): allocation, current stream, capture
    test, zeroed buffers, an array's address, zeroing (what cugemm.grouped and cugemm.workspace use)."""
    return _TorchLib if kind == "torch" else _CupyLib


def _cupy():
    try:
        import cupy
    except ImportError:
        raise RuntimeError("cugemm.matmul needs CuPy: pip install 'cugemm[cuda13]' (or '[cuda12]')") from None
    return cupy


# ---- the tables ---------------------------------------------------------------------------------------
def measured(dev_id: int) -> tuning.Measured:
    """The tuning cache and shipped table of device `dev_id` (loaded once)."""
    m = _MEASURED.get(dev_id)
    if m is None:
        dev = _device.get(dev_id)
        key = tuning.gpu_key(dev.name, _cupy().cuda.runtime.driverGetVersion(), __version__)
        m = _MEASURED[dev_id] = tuning.Measured(tuning.load_tuned(key), tuning.load_shipped(dev.name))
    return m


def reload_tuning() -> None:
    """Forget the loaded tuning cache, shipped table and every plan (tune() calls it)."""
    with _lock:
        _MEASURED.clear()
        _READY.clear()
        _SHAPES.clear()
    relayout.clear()


# ---- planning -----------------------------------------------------------------------------------------
def problem_of(A: operand.Operand, B: operand.Operand, C: operand.Operand, allow_tf32: bool,
               dev_id: int) -> select.Problem:
    """The select.Problem of 2-D operand records A (M x K), B (K x N), C (M x N)."""
    dt = A.dtype
    (M, K), N = A.shape, B.shape[1]
    return select.Problem(M, N, K, dt, A.layout_class(), B.layout_class(), C.layout_class(),
                          _device.get(dev_id), bool(allow_tf32) and dt.name == "float32")


def choose(A, B, C, allow_tf32: bool, variant, dev_id: int) -> select.Choice:
    """select.select's choice for a 2-D problem (ValueError when no variant, or not the named one,
    computes it)."""
    p = problem_of(A, B, C, allow_tf32, dev_id)
    names = None
    if variant is not None:
        from .registry import get_variant

        names = [get_variant(variant).name]
    choice = select.select(p, measured(dev_id), names)
    if choice.plan is None:
        if variant is not None and choice.refused:
            raise ValueError(f"cugemm.matmul: {choice.refused[0][0].name} cannot compute this "
                             f"{p.M}x{p.N}x{p.K} {p.dtype.name} product: {choice.refused[0][1]}")
        raise ValueError(f"cugemm.matmul: no registered variant computes this {p.M}x{p.N}x{p.K} "
                         f"{p.dtype.name} product on sm_{p.device.cc}:\n{choice}")
    return choice


class Ready:
    """A plan with its launches prepared for raw pointers (see the module docstring).

    plan       the select.Plan
    stage      its relayout.CopyStage, or None (no copies)
    relay      the Prepared relayout launch, or None
    gemm       the Prepared GEMM launch (with programmatic dependent launch after the relayout)
    need       the workspace.Need of the kernel's scratch memory, or None
    fast       whether a call is only launches (no copy by the array library, no copy of C back)
    direct     whether it is one launch on A, B and C where they lie (no copy, no workspace)"""

    __slots__ = ("plan", "stage", "relay", "gemm", "need", "fast", "direct", "dev")

    def __init__(self, plan: select.Plan, A, B, C, dev: int, epilogue: tuple | None = None):
        v = plan.variant
        Mp, Np, Kp = plan.dims
        state = launch.loaded(v, dev)
        fn, info, _ = state
        stage = relayout.stage_for(plan, A, B, dev) if plan.copies else None
        # the operands as the kernel sees them, at sentinel addresses (cugemm.prepared)
        ws = sentinel(WORK)
        Ak = stage.operand(0, ws) if plan.copy_a else A._replace(ptr=sentinel(_A))
        Bk = stage.operand(1, ws) if plan.copy_b else B._replace(ptr=sentinel(_B))
        Ck = stage.operand(2, ws) if plan.via_c else C._replace(ptr=sentinel(_C))
        self.need = v.workspace_fn(v, Mp, Np, Kp, info) if v.workspace_fn is not None else None
        work = workspace.Work(sentinel(PARTIALS), sentinel(COUNTERS)) if self.need is not None else None
        args = (np.uint64(Ak.ptr), np.uint64(Bk.ptr), np.uint64(Ck.ptr), np.int32(Mp), np.int32(Np), np.int32(Kp))
        args += v.extra_args(Ak, Bk, Ck, Mp, Np, Kp, raw=True, work=work, dev=info)
        if epilogue is not None:  # a fused epilogue's arguments (cugemm.epilogue) end the launch's
            args = args[:-len(epilogue)] + tuple(epilogue)
        relays = stage is not None and stage.fn is not None
        pdl = relays and not stage.by_array and v.pdl and os.environ.get("CUGEMM_PDL", "1") != "0"
        self.gemm = Prepared(fn.kernel.ptr, launch.grid_of(v, Mp, Np, Kp, state), v.block, v.smem_dynamic, args, pdl)
        self.relay = Prepared(stage.fn.kernel.ptr, stage.grid, relayout.BLOCK, 0,
                              stage.args(sentinel(_A), sentinel(_B), ws)) if relays else None
        self.plan, self.stage, self.dev = plan, stage, dev
        self.fast = stage is None or not (stage.by_array or plan.via_c)
        self.direct = stage is None and self.need is None

    def serve(self, lib, stream: int, a_ptr: int, b_ptr: int, c_ptr: int, a, b, out) -> None:
        """The serving paths' call: a direct plan's one launch; a plan without copies whose kernel
        needs a workspace launched on the stream's held buffer when it has one big enough;
        anything else through run()."""
        if self.direct:
            self.gemm.launch((a_ptr, b_ptr, c_ptr), stream)
            return
        if self.stage is None and workspace.launch_held(self.gemm, lib.kind, self.dev, stream, self.need,
                                                        (a_ptr, b_ptr, c_ptr)):
            return
        self.run(lib, stream, a_ptr, b_ptr, c_ptr, a, b, out)

    def run(self, lib, stream: int, a_ptr: int, b_ptr: int, c_ptr: int, a=None, b=None, out=None,
            extra=()) -> None:
        """One product on `stream`: the copies, the GEMM, the copy of C back. a, b, out: the arrays
        (needed only when not `fast`); extra: (base, address) pairs of the other bases the launch
        reads (a fused epilogue's vectors, cugemm.epilogue)."""
        bases = [0] * BASES
        bases[_A], bases[_B], bases[_C] = a_ptr, b_ptr, c_ptr
        for k, ptr in extra:
            bases[k] = ptr
        keep = []
        if self.stage is not None:
            owner, bases[WORK] = lib.buffer(self.stage.nbytes, self.dev)
            keep.append(owner)
        if self.need is not None:  # the stream's buffer; a new one is not kept from inside a capture
            bases[PARTIALS], bases[COUNTERS] = workspace.for_launch(lib, self.dev, stream, self.need, keep)
        if self.relay is not None:
            self.relay.launch(bases, stream)
        if self.stage is not None and self.stage.by_array:
            for i in self.stage.by_array:
                dt, shape, strides, off = self.stage.view_geometry(i)
                lib.copy_padded((a, b)[i], lib.view(keep[0], off, dt, shape, strides))
        self.gemm.launch(bases, stream)
        if self.plan.via_c:
            dt, shape, strides, off = self.stage.view_geometry(2)
            M, N = out.shape
            lib.copy(out, lib.view(keep[0], off, dt, shape, strides)[:M, :N])
        # the buffers go back to their allocator here, stream-ordered: the launches above hold them


def plan_key(dev: int, A: operand.Operand, B: operand.Operand, C: operand.Operand, allow_tf32, variant) -> tuple:
    """What a plan depends on: device, type, shapes, strides, the pointers' 16-byte alignment, flags."""
    return (dev, A.dtype, bool(allow_tf32), variant, A.shape, A.strides, B.shape, B.strides, C.shape, C.strides,
            A.ptr & 15, B.ptr & 15, C.ptr & 15)


def ready_for(A, B, C, allow_tf32: bool, variant, dev: int, lib, verbose=False) -> Ready:
    """The Ready of this 2-D problem: from the cache, or planned and prepared now (not inside a
    CUDA-graph capture: CaptureError, before anything is enqueued)."""
    key = plan_key(dev, A, B, C, allow_tf32, variant)
    r = _READY.get(key)
    if r is not None:
        return r
    not_capturing(lib, dev, f"{A.shape[0]}x{B.shape[1]}x{A.shape[1]} {A.dtype.name}")
    if variant is None and AUTOTUNE is not None and os.environ.get("CUGEMM_AUTOTUNE", "") not in ("", "0"):
        AUTOTUNE(problem_of(A, B, C, allow_tf32, dev), dev)  # times the bucket's plans once, then reloads
    choice = choose(A, B, C, allow_tf32, variant, dev)
    if _verbose(verbose):
        print(choice, file=sys.stderr)
    plan = choice.plan
    v = plan.variant
    if not plan.copies:  # a plan reading the operands in place: every rule of the launch, checked once
        launch.check_operands(v, A, B, C)
    return _file(key, Ready(plan, A, B, C, dev))


def not_capturing(lib, dev: int, what: str, who: str = "cugemm.matmul") -> None:
    """CaptureError, before anything is enqueued, when the caller's stream is capturing a CUDA graph:
    planning a problem never run before (kernel compilation and loading, tensor-map encoding) cannot
    happen inside a capture. `who` names the entry point (cugemm.grouped_matmul uses it too)."""
    if lib.capturing(lib.stream(dev)):
        raise CaptureError(
            f"{who}: this {what} product (these shapes, strides and alignment) has not run on this "
            "device before, and planning it (kernel compilation and loading, tensor-map encoding) cannot "
            "happen inside a CUDA-graph capture; run it once eagerly before capturing. Nothing was enqueued.")


def _file(key, r):
    """r filed in the plan cache under `key` (the cache emptied first when full); returns r."""
    with _lock:
        if len(_READY) >= MAX_PLANS:
            _READY.clear()
            _SHAPES.clear()
        _READY[key] = r
    return r


def _verbose(verbose) -> bool:
    return bool(verbose) or os.environ.get("CUGEMM_EXPLAIN", "") not in ("", "0")


# ---- operands and shapes ------------------------------------------------------------------------------
def _broadcast(x: tuple, y: tuple) -> tuple:
    """NumPy's broadcast of two batch shapes, in plain comparisons (so that torch_op's fake
    implementation can ask it of symbolic sizes too)."""
    n = max(len(x), len(y))
    out = []
    for p, q in zip((1,) * (n - len(x)) + x, (1,) * (n - len(y)) + y):
        if p == q or q == 1:
            out.append(p)
        elif p == 1:
            out.append(q)
        else:
            raise ValueError(f"cugemm.matmul: batch dimensions {x} and {y} do not broadcast")
    return tuple(out)


def result_shape(a_shape, b_shape):
    """(broadcast batch, M, K, N, the result's shape as returned, the squeezed axes) of
    torch.matmul / cupy.matmul; works on symbolic sizes (torch_op's fake implementation uses it)."""
    if len(a_shape) == 0 or len(b_shape) == 0:
        raise ValueError("cugemm.matmul: scalar operands are not allowed (use a * b)")
    squeeze = []
    if len(a_shape) == 1:
        a_shape = (1,) + tuple(a_shape)
        squeeze.append(-2)
    if len(b_shape) == 1:
        b_shape = tuple(b_shape) + (1,)
        squeeze.append(-1)
    a_shape, b_shape = tuple(a_shape), tuple(b_shape)
    M, K = a_shape[-2:]
    K2, N = b_shape[-2:]
    if K != K2:
        raise ValueError(f"cugemm.matmul: inner dimensions differ: A is {'x'.join(map(str, a_shape))}, "
                         f"B is {'x'.join(map(str, b_shape))}")
    batch = _broadcast(tuple(a_shape[:-2]), tuple(b_shape[:-2]))
    shape = batch + (M, N)
    final = tuple(d for i, d in enumerate(shape) if i - len(shape) not in squeeze)
    return batch, M, K, N, final, squeeze


def _record(x, what: str) -> operand.Operand:
    op = operand.describe(x, what, "cugemm.matmul")
    if op.dtype is None or op.dtype.name not in ("float32", "float16", "bfloat16"):
        raise TypeError(f"cugemm.matmul: {what} has dtype {operand.dtype_name(op)}; cugemm multiplies float32, "
                        "float16 or bfloat16")
    return op


def expand(op: operand.Operand, batch: tuple, is_a: bool) -> tuple:
    """(batch strides, 2-D shape, 2-D strides) of `op` broadcast to `batch` + its last two dims (a
    1-D operand promoted as torch.matmul does: A to (1, K), B to (K, 1); the new dim of extent 1)."""
    shape, strides = list(op.shape), list(op.strides)
    if len(shape) == 1:
        if is_a:
            shape, strides = [1, shape[0]], [shape[0] * op.dtype.itemsize, strides[0]]
        else:
            shape, strides = [shape[0], 1], [strides[0], op.dtype.itemsize]
    lead = len(batch) - (len(shape) - 2)
    bstr = []
    for i, d in enumerate(batch):
        j = i - lead
        if j < 0 or shape[j] == 1:
            bstr.append(0)
        else:
            bstr.append(strides[j])
    return tuple(bstr), tuple(shape[-2:]), tuple(strides[-2:])


def _split(A, B, O, batch: tuple, M: int, N: int) -> tuple:
    """(batch strides of A, of B, of C, then A, B and C as 2-D records) of records broadcast to
    `batch` (O: the output, batch + (M, N))."""
    a_b, a2s, a2st = expand(A, batch, True)
    b_b, b2s, b2st = expand(B, batch, False)
    return (a_b, b_b, tuple(O.strides[:len(batch)]), A._replace(shape=a2s, strides=a2st),
            B._replace(shape=b2s, strides=b2st), O._replace(shape=(M, N), strides=tuple(O.strides[-2:])))


def stacked_rows(lead, lead_strides, cols: int, itemsize: int):
    """(rows, row stride) of a batched operand whose batch and row dims (`lead`, byte strides
    `lead_strides`) merge into one dimension of evenly spaced rows, else None."""
    dims = [(d, s) for d, s in zip(lead, lead_strides) if d != 1]
    for (d0, s0), (d1, s1) in zip(dims, dims[1:]):
        if s0 != s1 * d1:
            return None
    rows = 1
    for d, _ in dims:
        rows *= d
    return rows, (dims[-1][1] if dims else cols * itemsize)


def fold(A2, B2, C2, batch, a_b, b_b, c_b):
    """(A, B, C) as one 2-D product when B does not vary over the batch and A's and C's batches
    stack into rows (activations against one weight: (B, M, K) @ (K, N)), else None."""
    if any(s for d, s in zip(batch, b_b) if d != 1):
        return None
    (M, K), N = A2.shape, B2.shape[1]
    ra = stacked_rows(batch + (M,), a_b + (A2.strides[0],), K, A2.dtype.itemsize)
    rc = stacked_rows(batch + (M,), c_b + (C2.strides[0],), N, C2.dtype.itemsize)
    if ra is None or rc is None or ra[1] == 0 or rc[1] == 0:
        return None
    return (A2._replace(shape=(ra[0], K), strides=(ra[1], A2.strides[1])), B2,
            C2._replace(shape=(rc[0], N), strides=(rc[1], C2.strides[1])))


# ---- the front door -------------------------------------------------------------------------------------
def torch_matmul(a, b, out=None, *, allow_tf32: bool = False, variant=None, verbose: bool = False):
    """A @ B for torch CUDA tensors, on torch's current stream, with no autograd (the operands'
    memory is read directly: what torch.ops.cugemm.matmul runs). Returns `out` or a new tensor."""
    if _TENSOR is None:
        _see_torch(sys.modules["torch"])
    allow_tf32 = bool(allow_tf32)
    serving = out is None and a.dim() >= 2 and b.dim() >= 2
    if serving:
        c = _torch_fast(a, b, allow_tf32, variant)
        if c is not None:
            return c
    c, r = _general_ready(a, b, out, allow_tf32, variant, verbose, _TorchLib)
    if serving and r is not None and r.fast and c.data_ptr() & 15 == 0 and c.is_contiguous():
        key = _torch_key(a, b, allow_tf32, variant)
        with _lock:  # filed under the serving path's key: a fresh dense result, 16-byte aligned
            if len(c.shape) > 3 or b.dim() > 2:
                _SHAPES[key] = tuple(c.shape)
            _READY[key] = r
    return c


def _torch_key(a, b, allow_tf32, variant=None) -> tuple:
    """The torch serving path's plan key (the result is a fresh dense tensor, 16-byte aligned; a
    named variant is part of it, as in plan_key)."""
    return (a.get_device(), a.dtype, b.dtype, bool(allow_tf32), a.shape, b.shape, a.stride(), b.stride(),
            a.data_ptr() & 15, b.data_ptr() & 15, variant)


def _torch_fast(a, b, allow_tf32: bool, variant=None):
    """The serving path of a torch product planned before (2-D, or batched: rows that stack against a
    2-D B, or a batch in one launch; a named variant too): one look-up, one allocation, the launches;
    None when the plan cache does not hold it."""
    pa, pb, sa, sb = a.data_ptr(), b.data_ptr(), a.shape, b.shape
    dev = a.get_device()
    key = (dev, a.dtype, b.dtype, allow_tf32, sa, sb, a.stride(), b.stride(), pa & 15, pb & 15, variant)
    r = _READY.get(key)
    if r is None:
        return None
    # sizes as arguments, not a tuple: torch's fastest spelling of empty (H200 host: 2.0 us against 3.1)
    device = _DEVICES.get(dev) or _torch_device(dev)
    if len(sb) == 2 and len(sa) == 2:
        c = _torch_empty(sa[0], sb[1], dtype=a.dtype, device=device)
    elif len(sb) == 2 and len(sa) == 3:
        c = _torch_empty(sa[0], sa[1], sb[1], dtype=a.dtype, device=device)
    else:  # more batch dimensions, or a batched B: the result's shape filed with the plan
        c = _torch_empty(_SHAPES[key], dtype=a.dtype, device=device)
    r.serve(_TorchLib, _torch_stream(dev), pa, pb, c.data_ptr(), a, b, c)
    return c


_DEVICES: dict = {}   # device index -> torch.device
_SHAPES: dict = {}    # torch serving key -> the result's shape, for the products whose shape is not A's rows
                      # by B's columns (more than one batch dimension, a batched B)


def _torch_device(dev: int):
    import torch

    d = _DEVICES[dev] = torch.device("cuda", dev)
    return d


_torch_stream = _TorchLib.stream
_torch_empty = None     # torch.empty
_TENSOR = None          # torch.Tensor, once a torch call has been seen
_is_compiling = None    # torch.compiler.is_compiling
_grad_enabled = None    # torch.is_grad_enabled


def _on_device(dev: int):
    import cupy

    return cupy.cuda.Device(dev)


def _cupy_key(a, b, out, allow_tf32, variant=None) -> tuple:
    """The CuPy serving path's plan key: the problem as a fresh result (out None) or `out` gives it,
    and the named variant (None: matmul's choice)."""
    o = ("new",) if out is None else (out.strides, out.data.ptr & 15)
    return ("cupy", a.device.id, a.dtype, bool(allow_tf32), a.shape, b.shape, a.strides, b.strides,
            a.data.ptr & 15, b.data.ptr & 15, variant) + o


def _cupy_matmul(a, b, out, allow_tf32, variant, verbose):
    """The CuPy caller's serving path for 2-D operands planned before, or None (the general path
    then checks, plans and runs it)."""
    if out is not None:
        cupy = sys.modules["cupy"]
        if type(out) is not cupy.ndarray or out.shape != (a.shape[0], b.shape[1]) or out.dtype != a.dtype:
            return None
        ext = operand.extent(out.shape, out.strides, out.data.ptr, out.itemsize)
        if any(operand.overlaps(ext, operand.extent(x.shape, x.strides, x.data.ptr, x.itemsize)) for x in (a, b)):
            return None  # (overlap depends on the pointers, which the key does not hold)
    r = _READY.get(_cupy_key(a, b, out, allow_tf32, variant))
    if r is None:
        return None
    c = _CupyLib.empty((a.shape[0], b.shape[1]), a) if out is None else out
    r.serve(_CupyLib, _CupyLib.stream(0), a.data.ptr, b.data.ptr, c.data.ptr, a, b, c)
    return c


def _general(a, b, out, allow_tf32, variant, verbose, lib):
    """Any product: records, shapes, batching, the plan of each 2-D product, its run. Returns out."""
    return _general_ready(a, b, out, allow_tf32, variant, verbose, lib)[0]


def _general_ready(a, b, out, allow_tf32, variant, verbose, lib):
    """_general, returning (out, the Ready it ran when the product was one 2-D product, else None)."""
    A, B = _record(a, "A"), _record(b, "B")
    if A.dtype is not B.dtype:
        raise TypeError(f"cugemm.matmul: A is {A.dtype.name} and B is {B.dtype.name}; cugemm multiplies "
                        "operands of one type (cast one of them first)")
    batch, M, K, N, final, squeeze = result_shape(A.shape, B.shape)
    full = batch + (M, N)
    like = a
    if out is None:
        out = lib.empty(final, like)
    O = operand.describe(out, "out", "cugemm.matmul")
    if tuple(O.shape) != final:
        raise ValueError(f"cugemm.matmul: out has shape {tuple(O.shape)}, the product is {final}")
    if O.dtype is not A.dtype:
        raise TypeError(f"cugemm.matmul: out has dtype {operand.dtype_name(O)}, the product is {A.dtype.name}")
    if O.readonly:
        raise ValueError("cugemm.matmul: out is read-only")
    dev = _device_of(a, lib)
    if M == 0 or N == 0 or 0 in batch:
        return out, None
    # out viewed with the squeezed dims back (stride irrelevant: extent 1)
    o_shape, o_strides = list(O.shape), list(O.strides)
    for ax in sorted(squeeze, reverse=True):
        pos = len(full) + ax
        o_shape.insert(pos, 1)
        o_strides.insert(pos, 0)
    O = O._replace(shape=tuple(o_shape), strides=tuple(o_strides))
    a_b, b_b, c_b, A2, B2, C2 = _split(A, B, O, batch, M, N)
    # the output must not overlap an input (it would be read while written)
    c_ext = operand.extent(O.shape, O.strides, O.ptr, O.dtype.itemsize)
    for what, X in (("A", A), ("B", B)):
        if operand.overlaps(c_ext, operand.extent(X.shape, X.strides, X.ptr, X.dtype.itemsize)):
            raise ValueError(f"cugemm.matmul: out overlaps {what}; the kernel would read what it overwrites")
    if K == 0:
        lib.zero(out)
        return out, None
    stream = lib.stream(dev)
    with _on_device(dev):
        folded = fold(A2, B2, C2, batch, a_b, b_b, c_b) if batch else (A2, B2, C2)
        if folded is not None:
            return out, _run2d(*folded, allow_tf32, variant, verbose, lib, dev, stream, a, b, out)
        r = _batched_ready(A, B, O, batch, M, N, K, a_b, b_b, c_b, A2, B2, C2, variant, verbose, dev, lib,
                           allow_tf32)
        if r is not None:  # the whole batch in one launch (cugemm.batched)
            r.serve(lib, stream, A.ptr, B.ptr, O.ptr, a, b, out)
            return out, r
        else:  # products too large for 32-bit indices, run piece by piece (or what no batched form takes:
            # another type, a GPU before sm_80, which the 2-D path then refuses)
            for idx in np.ndindex(*batch):
                Ai = A2._replace(ptr=A.ptr + sum(i * s for i, s in zip(idx, a_b)))
                Bi = B2._replace(ptr=B.ptr + sum(i * s for i, s in zip(idx, b_b)))
                Ci = C2._replace(ptr=O.ptr + sum(i * s for i, s in zip(idx, c_b)))
                _run2d(Ai, Bi, Ci, allow_tf32, variant, verbose, lib, dev, stream, a, b, out)
    return out, None


def _batched_ready(A, B, O, batch, M, N, K, a_b, b_b, c_b, A2, B2, C2, variant, verbose, dev, lib,
                   allow_tf32: bool = False):
    """The cached or new batched.BatchedReady of a batched product, or None where it has no batched
    form (or is too large for 32-bit indices per product: then it runs product by product). Like
    ready_for, it plans nothing inside a CUDA-graph capture."""
    if pieces(M, N, K) != (M, N, K):
        return None
    key = batched.plan_key(dev, A, B, O, variant, allow_tf32)
    r = _READY.get(key)
    if r is not None:
        return r
    not_capturing(lib, dev, f"batched {M}x{N}x{K} {A.dtype.name}")
    r = batched.plan_batched(A, B, O, batch, M, N, K, a_b, b_b, c_b, A2, B2, C2, dev, measured(dev), variant,
                             allow_tf32)
    if r is None:
        return None
    if _verbose(verbose):
        print(r.choice, file=sys.stderr)
    return _file(key, r)


def pieces(M: int, N: int, K: int) -> tuple[int, int, int]:
    """(m, n, k): the largest blocks of rows, columns and depth into which an M x N x K product is cut
    so that each block's A, B and C have fewer than 2^31 elements even rounded up to whole tiles of
    TILE_MAX (the kernels' 32-bit indices, Variant.check_dims); (M, N, K) when it needs no cut. Rows
    are cut first, then columns (their C blocks are strided views, which every plan takes), and K
    only when a TILE_MAX x TILE_MAX block of C is still too deep."""
    t, limit = TILE_MAX, INT32_MAX
    r = lambda x: round_up(max(x, 1), t)  # noqa: E731
    if max(r(M) * r(K), r(K) * r(N), r(M) * r(N)) <= limit:
        return M, N, K
    k = K if r(K) * t <= limit else limit // t // t * t
    n = N if r(k) * r(N) <= limit else limit // r(k) // t * t
    m = min(M, limit // max(r(k), r(n)) // t * t)
    return m, min(n, N), k


def _run2d(A, B, C, allow_tf32, variant, verbose, lib, dev, stream, a, b, out) -> Ready | None:
    """Run one 2-D product (cut into pieces first when it is too large for 32-bit indices); the
    Ready it ran, or None for a cut product."""
    M, K = A.shape
    N = B.shape[1]
    m, n, k = pieces(M, N, K)
    if (m, n, k) != (M, N, K):
        _run_pieces(A, B, C, (m, n, k), allow_tf32, variant, verbose, lib, dev, stream, a, b, out)
        return None
    r = ready_for(A, B, C, allow_tf32, variant, dev, lib, verbose)
    if r.fast:
        r.run(lib, stream, A.ptr, B.ptr, C.ptr)
    else:  # the array library's copies need 2-D arrays over the same memory
        r.run(lib, stream, A.ptr, B.ptr, C.ptr, _view2d(a, A, lib), _view2d(b, B, lib), _view2d(out, C, lib))
    return r


def _run_pieces(A, B, C, sizes, allow_tf32, variant, verbose, lib, dev, stream, a, b, out) -> None:
    """C = A @ B in blocks of `sizes` (pieces): each block of C from its rows of A and columns of B,
    every block a product of its own (with its own plan); blocks of K are summed in float32 in a
    scratch array of the caller's library and rounded once into C."""
    (M, K), N = A.shape, B.shape[1]
    m, n, k = sizes
    (sa0, sa1), (sb0, sb1), (sc0, sc1) = A.strides, B.strides, C.strides
    for i in range(0, M, m):
        mi = min(m, M - i)
        for j in range(0, N, n):
            nj = min(n, N - j)
            Cij = C._replace(shape=(mi, nj), ptr=C.ptr + i * sc0 + j * sc1)
            blocks = [(A._replace(shape=(mi, min(k, K - p)), ptr=A.ptr + i * sa0 + p * sa1),
                       B._replace(shape=(min(k, K - p), nj), ptr=B.ptr + p * sb0 + j * sb1)) for p in range(0, K, k)]
            if len(blocks) == 1:
                _run2d(*blocks[0], Cij, allow_tf32, variant, verbose, lib, dev, stream, a, b, out)
                continue
            part = lib.empty((mi, nj), out)  # each K block's product, dense
            P = operand.describe(part, "out", "cugemm.matmul")
            total = None
            for Ap, Bp in blocks:
                _run2d(Ap, Bp, P, allow_tf32, variant, verbose, lib, dev, stream, a, b, part)
                total = _as_float32(part, lib) if total is None else total + _as_float32(part, lib)
            _view2d(out, Cij, lib)[...] = total.astype(part.dtype) if lib is _CupyLib else total.to(part.dtype)


def _as_float32(x, lib):
    return x.astype(np.float32) if lib is _CupyLib else x.float()


def _view2d(x, op: operand.Operand, lib):
    """A 2-D array of the library over op's memory (x: an array sharing its allocation)."""
    size = op.dtype.itemsize
    if lib is _TorchLib:
        import torch

        base = x.data_ptr() - x.storage_offset() * size
        return torch.as_strided(x, op.shape, tuple(s // size for s in op.strides), (op.ptr - base) // size)
    import cupy

    return cupy.ndarray(op.shape, dtype=op.dtype.numpy, memptr=x.data + (op.ptr - x.data.ptr), strides=op.strides)


def _device_of(a, lib) -> int:
    if lib is _TorchLib:
        return a.get_device()
    return a.device.id


def wants_op(a, b) -> bool:
    """Whether a torch call must go through the registered op: torch.compile tracing it, or autograd
    recording it (torch's functions, bound by _see_torch)."""
    return _is_compiling() or (_grad_enabled() and (a.requires_grad or b.requires_grad))


def dispatch(a, b, out, variant, allow_tf32, verbose, op):
    """cugemm.matmul (its documentation is there): the serving paths, the checks, the general path.
    `op(a, b, allow_tf32=)` runs a torch product that autograd must record or torch.compile is
    tracing (the registered operator, cugemm.torch_op.matmul; passed in by the caller, so that this
    module does not import the torch layer above it)."""
    t = _TENSOR
    if type(a) is t and type(b) is t and out is None and not wants_op(a, b):
        c = _torch_fast(a, b, allow_tf32 is True, variant)  # the serving path of a torch product planned before
        if c is not None:
            return c
    cupy = sys.modules.get("cupy")
    if cupy is not None and type(a) is cupy.ndarray and type(b) is cupy.ndarray and a.ndim == 2 and b.ndim == 2:
        done = _cupy_matmul(a, b, out, allow_tf32, variant, verbose)
        if done is not None:
            return done
    if operand.is_torch(a) or operand.is_torch(b):
        torch = sys.modules["torch"]
        _see_torch(torch)
        if not (operand.is_torch(a) and operand.is_torch(b)):
            raise TypeError("cugemm.matmul: one operand is a torch tensor and the other is not; pass two "
                            "torch tensors (torch.as_tensor / torch.from_dlpack) or two CuPy arrays")
        if a.device.type != "cuda" or b.device.type != "cuda":
            raise TypeError(f"cugemm.matmul: the operands are on {a.device} and {b.device}; move them to the GPU")
        if a.device != b.device:
            raise ValueError(f"cugemm.matmul: the operands are on {a.device} and {b.device}; put them on one GPU")
        if wants_op(a, b):
            if variant is not None:
                raise ValueError("cugemm.matmul: variant= is not available under autograd or torch.compile")
            r = op(a, b, allow_tf32=allow_tf32)
            if out is not None:
                out.copy_(r)
                return out
            return r
        if out is not None and not operand.is_torch(out):
            raise TypeError("cugemm.matmul: out must be a torch tensor when the operands are")
        return torch_matmul(a, b, out, allow_tf32=bool(allow_tf32), variant=variant, verbose=verbose)
    cupy = _cupy()
    _device.current()
    a, b = _as_cupy(a, "A"), _as_cupy(b, "B")
    if out is not None:
        out = _as_cupy(out, "out")
    c = _general(a, b, out, allow_tf32, variant, verbose, _CupyLib)
    if a.ndim == 2 and b.ndim == 2 and type(c) is cupy.ndarray:
        _remember_cupy(a, b, c, None if out is None else c, allow_tf32, variant)
    return c


def _see_torch(torch) -> None:
    global _TENSOR, _is_compiling, _grad_enabled, _torch_empty, _torch_stream
    if _TENSOR is None:
        _is_compiling, _grad_enabled, _torch_empty = torch.compiler.is_compiling, torch.is_grad_enabled, torch.empty
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # torch's own fast accessor
        if raw is not None:
            _torch_stream = raw
        _TENSOR = torch.Tensor


def _remember_cupy(a, b, c, out, allow_tf32, variant=None) -> None:
    """File the Ready of a 2-D CuPy product just run under the CuPy serving path's key (a fresh
    result's key assumes a 16-byte-aligned pointer, as CuPy's pool gives)."""
    if not (a.size and b.size and c.size) or c.data.ptr & 15:
        return
    A, B, C = (operand.describe(x, w, "cugemm.matmul") for x, w in ((a, "A"), (b, "B"), (c, "out")))
    r = _READY.get(plan_key(a.device.id, A, B, C, allow_tf32, variant))
    if r is not None and r.fast:
        with _lock:
            _READY[_cupy_key(a, b, out, allow_tf32, variant)] = r


def _as_cupy(x, what: str):
    """A CuPy view of a GPU array (no copy): CuPy arrays as they are, DLPack objects through
    DLPack (which keeps bfloat16), __cuda_array_interface__ objects in place."""
    cupy = _cupy()
    if type(x) is cupy.ndarray:
        return x
    if isinstance(x, np.ndarray):
        raise TypeError(f"cugemm.matmul: {what} is a host numpy array; pass a GPU array (cupy.asarray(x))")
    if hasattr(x, "__cuda_array_interface__"):
        op = operand.describe(x, what, "cugemm.matmul")
        arr = cupy.asarray(x)
        if op.dtype is not None and arr.dtype != op.dtype.numpy:
            arr = arr.view(op.dtype.numpy)
        return arr
    if hasattr(x, "__dlpack__"):
        return cupy.from_dlpack(x)
    raise TypeError(f"cugemm.matmul: {what} must be a GPU array (cupy.ndarray, torch tensor, or an object "
                    f"with __cuda_array_interface__ or __dlpack__), got {type(x).__name__}")


def explain(a, b, out=None, *, variant=None, allow_tf32: bool = False) -> select.Choice:
    """The choice matmul(a, b, out) makes (for batched operands: of the batch in one launch, ranked as
    its stacked rows' product, or of its first 2-D product where it has no batched form):
    `print(cugemm.explain(a, b))` lists the chosen plan, the other candidates with their estimated
    times and where each estimate comes from, and every refused variant with the rule that refuses
    it. Runs nothing on the GPU."""
    A, B = _record(a, "A"), _record(b, "B")
    if A.dtype is not B.dtype:
        raise TypeError(f"cugemm.matmul: A is {A.dtype.name} and B is {B.dtype.name}; cugemm multiplies "
                        "operands of one type (cast one of them first)")
    batch, M, K, N, final, _ = result_shape(A.shape, B.shape)
    a_b, a2s, a2st = expand(A, batch, True)
    b_b, b2s, b2st = expand(B, batch, False)
    A2, B2 = A._replace(shape=a2s, strides=a2st), B._replace(shape=b2s, strides=b2st)
    if out is not None:
        O = operand.describe(out, "out", "cugemm.matmul")
        C2 = O._replace(shape=(M, N), strides=tuple(O.strides[-2:]) if len(O.shape) >= 2 else
                        (O.strides[-1] * N, O.strides[-1]))
        c_b = tuple(O.strides[:len(batch)])
    else:  # a fresh dense result
        size = A.dtype.itemsize
        C2 = operand.of_layout((M, N), A.dtype, "row", N, 256)
        c_b = tuple(operand.dense_strides(batch + (M, N), size, "C")[:len(batch)])
    folded = fold(A2, B2, C2, batch, a_b, b_b, c_b) if batch else (A2, B2, C2)
    dev = _device_of(a, _TorchLib if operand.is_torch(a) else _CupyLib) if hasattr(a, "device") else \
        _device.current()
    if folded is not None:
        A2, B2, C2 = folded
    else:
        O = C2._replace(shape=batch + (M, N), strides=c_b + C2.strides)
        d = batched.decide(A, B, O, batch, M, N, K, a_b, b_b, c_b, A2, B2, C2, _device.get(dev), measured(dev),
                           variant, allow_tf32)
        if d is not None:
            return d[0]
    return choose(A2, B2, C2, allow_tf32, variant, dev)


def batched_ready(a, b, out, variant=None):
    """The batched.BatchedReady that matmul(a, b, out=out, variant=variant) runs for CuPy arrays of at
    least 3 dimensions whose product is a batch in one launch (planned now if new), or None. The tuner
    times its launch."""
    A, B, O = (operand.describe(x, w, "cugemm.matmul") for x, w in ((a, "A"), (b, "B"), (out, "out")))
    batch, M, K, N, _, _ = result_shape(A.shape, B.shape)
    a_b, b_b, c_b, A2, B2, C2 = _split(A, B, O, batch, M, N)
    return _batched_ready(A, B, O, batch, M, N, K, a_b, b_b, c_b, A2, B2, C2, variant, False, a.device.id, _CupyLib)


def execute_batched(r, a, b, out) -> None:
    """Run the batched.BatchedReady `r` (batched_ready's) on CuPy arrays, on the current CuPy stream
    (the tuner times batched plans this way)."""
    r.serve(_CupyLib, _CupyLib.stream(a.device.id), a.data.ptr, b.data.ptr, out.data.ptr, a, b, out)


def execute(plan: select.Plan, a, b, out) -> None:
    """Run `plan` on 2-D CuPy arrays (the tuner times plans this way), on the current CuPy stream."""
    A, B, C = (operand.describe(x, w, "cugemm.matmul") for x, w in ((a, "A"), (b, "B"), (out, "out")))
    dev = a.device.id
    key = ("plan", id(plan), plan_key(dev, A, B, C, False, None))
    r = _READY.get(key)
    if r is None or r.plan is not plan:
        r = Ready(plan, A, B, C, dev)
        with _lock:
            _READY[key] = r
    r.run(_CupyLib, _CupyLib.stream(dev), A.ptr, B.ptr, C.ptr, a, b, out)


def plans_cached() -> int:
    """How many prepared plans the cache holds."""
    return len(_READY)
