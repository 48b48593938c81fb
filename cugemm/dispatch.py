"""cugemm.matmul: one call that runs the fastest registered kernel able to compute a product.

    c = cugemm.matmul(a, b)                       # CuPy in, CuPy out
    y = cugemm.matmul(x, w.T)                     # torch in, torch out (DLPack, no copy)
    print(cugemm.explain(a, b))                   # what it chose, and why

Semantics are cupy.matmul's for float32, float16 and bfloat16 operands of the same type: 2-D
products, 1-D operands promoted and squeezed, and batched operands (3-D and up) with broadcast
batch dimensions. float32 is exact FP32 unless allow_tf32=True. The work runs on the current stream
(CuPy's; for torch tensors torch's current stream on their device).

Each distinct problem (shape, type, strides, alignment, GPU) is planned once by cugemm.select:
the variants that can compute it are ranked by measured times (the tuning cache `tune` writes, then
the table shipped for this GPU) or the fallback model. Layouts a kernel reads directly (row-major,
transposed views such as x @ W.T, padded rows for the TMA kernels) run in place; anything else is
copied once into a workspace in the kernel's layout with 16-byte-aligned rows, zero-padded where the
kernel's shape rules need it. Padding adds only exact zeros to each sum, so the result is bit for
bit the one the kernel computes on the unpadded operands. No autograd: torch tensors that require
grad are read through detach().
"""
from __future__ import annotations

import contextlib
import os
import sys

import numpy as np

from . import dtypes, launch, select, tuning

_PLANS: dict = {}      # problem key -> select.Plan (the dispatch cache)
_DEVICES: dict = {}    # device id -> select.Device
_MEASURED: dict = {}   # device id -> tuning.Measured
MAX_PLANS = 8192
TUNE_PLANS, TUNE_SPREAD = 6, 5.0


def _cupy():
    try:
        import cupy
    except ImportError:
        raise RuntimeError("cugemm.matmul needs CuPy: pip install 'cugemm[cuda13]' (or '[cuda12]')") from None
    return cupy


# ---- operands -------------------------------------------------------------------------------------
def _is_torch(x) -> bool:
    return type(x).__module__.split(".", 1)[0] == "torch"


def _as_cupy(x, what: str):
    """A CuPy view of a GPU array (no copy): CuPy arrays as they are, torch tensors and DLPack
    objects through DLPack (which keeps bfloat16), __cuda_array_interface__ objects in place."""
    cupy = _cupy()
    if type(x) is cupy.ndarray:
        return x
    if _is_torch(x):
        if x.device.type != "cuda":
            raise TypeError(f"cugemm.matmul: {what} is a torch tensor on {x.device}; move it to the GPU")
        return cupy.from_dlpack(x.detach())
    if isinstance(x, np.ndarray):
        raise TypeError(f"cugemm.matmul: {what} is a host numpy array; pass a GPU array (cupy.asarray(x))")
    if hasattr(x, "__cuda_array_interface__"):
        op = launch.describe(x, what, "cugemm.matmul")
        return launch._cupy_view(x, op)
    if hasattr(x, "__dlpack__"):
        return cupy.from_dlpack(x)
    raise TypeError(f"cugemm.matmul: {what} must be a GPU array (cupy.ndarray, torch tensor, or an object "
                    f"with __cuda_array_interface__ or __dlpack__), got {type(x).__name__}")


def _dtype_of(x, what: str) -> dtypes.DType:
    dt = dtypes.from_numpy(x.dtype)
    if dt is None:
        raise TypeError(f"cugemm.matmul: {what} has dtype {x.dtype}; cugemm multiplies float32, float16 "
                        "or bfloat16")
    return dt


def _int_view(x):
    """The same memory as unsigned integers (copies and fills of bfloat16 then need no bf16 math)."""
    cupy = _cupy()
    return x.view(cupy.uint16 if x.dtype.itemsize == 2 else cupy.uint32)


def _copy(dst, src):
    _int_view(dst)[...] = _int_view(src)


def _zero(x):
    if x.size:
        _int_view(x).fill(0)


# ---- the device -----------------------------------------------------------------------------------
def _device(dev_id: int) -> select.Device:
    d = _DEVICES.get(dev_id)
    if d is None:
        cupy = _cupy()
        info = launch.device_info(dev_id)
        name = cupy.cuda.runtime.getDeviceProperties(dev_id)["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
        d = _DEVICES[dev_id] = select.Device(info.cc, info.sms, info.smem_optin, name)
    return d


def _measured(dev_id: int) -> tuning.Measured:
    m = _MEASURED.get(dev_id)
    if m is None:
        from . import __version__

        dev = _device(dev_id)
        key = tuning.gpu_key(dev.name, _cupy().cuda.runtime.driverGetVersion(), __version__)
        m = _MEASURED[dev_id] = tuning.Measured(tuning.load_tuned(key), tuning.load_shipped(dev.name))
    return m


def reload_tuning() -> None:
    """Forget the loaded tuning cache, shipped table and every plan (tune() calls it)."""
    _MEASURED.clear()
    _PLANS.clear()
    _COPY_STAGES.clear()


# ---- planning -------------------------------------------------------------------------------------
def problem_of(a, b, c, allow_tf32: bool, dev_id: int) -> select.Problem:
    """The select.Problem of 2-D CuPy arrays a (M x K), b (K x N), c (M x N)."""
    dt = dtypes.from_numpy(a.dtype)
    size = dt.itemsize
    (M, K), N = a.shape, b.shape[1]
    return select.Problem(M, N, K, dt,
                          select.operand_info(a.shape, a.strides, size, a.data.ptr),
                          select.operand_info(b.shape, b.strides, size, b.data.ptr),
                          select.operand_info(c.shape, c.strides, size, c.data.ptr),
                          _device(dev_id), bool(allow_tf32) and dt.name == "float32")


def _verbose(verbose) -> bool:
    return bool(verbose) or os.environ.get("CUGEMM_EXPLAIN", "") not in ("", "0")


def _key(dev_id: int, a, b, c, allow_tf32, variant) -> tuple:
    """What a plan depends on: device, types, shapes, strides and the pointers' 16-byte alignment."""
    return (dev_id, a.dtype, b.dtype, bool(allow_tf32), variant, a.shape, b.shape, c.shape, a.strides, b.strides,
            c.strides, a.data.ptr % 16, b.data.ptr % 16, c.data.ptr % 16)


def _plan(a, b, c, allow_tf32: bool, variant, verbose) -> tuple[select.Plan, bool]:
    """(the plan for this problem, whether it is new: planned by this call)."""
    cupy = _cupy()
    dev_id = cupy.cuda.runtime.getDevice()
    key = _key(dev_id, a, b, c, allow_tf32, variant)
    plan = _PLANS.get(key)
    if plan is not None:
        return plan, False
    choice = _choose(a, b, c, allow_tf32, variant, dev_id)
    if _verbose(verbose):
        print(choice, file=sys.stderr)
    if len(_PLANS) >= MAX_PLANS:
        _PLANS.clear()
    _PLANS[key] = choice.plan
    return choice.plan, True


def _choose(a, b, c, allow_tf32, variant, dev_id) -> select.Choice:
    p = problem_of(a, b, c, allow_tf32, dev_id)
    names = None
    if variant is not None:
        from .registry import get_variant

        names = [get_variant(variant).name]
    choice = select.select(p, _measured(dev_id), names)
    if choice.plan is None:
        if variant is not None and choice.refused:
            raise ValueError(f"cugemm.matmul: {choice.refused[0][0].name} cannot compute this "
                             f"{p.M}x{p.N}x{p.K} {p.dtype.name} product: {choice.refused[0][1]}")
        raise ValueError(f"cugemm.matmul: no registered variant computes this {p.M}x{p.N}x{p.K} "
                         f"{p.dtype.name} product on sm_{p.device.cc}:\n{choice}")
    return choice


# ---- the copies of a plan ---------------------------------------------------------------------------
# kernels/util/relayout.cu makes all the operand copies of a plan in one launch, from a table of two
# jobs (struct RelayoutJobs) passed by value. _RELAYOUT_JOB mirrors struct RelayoutJob field for
# field (tests/test_relayout.py compares the two layouts); the RELAYOUT_* numbers are the kernel's
# constants of the same names (compared there too).
_RELAYOUT_JOB = np.dtype({
    "names": ["src_rs", "src_cs", "ld", "rows", "cols", "rows_p", "chunks", "segs", "units", "across", "reserved"],
    "formats": ["<i8", "<i8", "<i8", "<i4", "<i4", "<i4", "<i4", "<u4", "<u4", "<i4", "<i4"],
    "offsets": [0, 8, 16, 24, 28, 32, 36, 40, 44, 48, 52],
    "itemsize": 56})
_RELAYOUT_JOBS = np.dtype([("a", _RELAYOUT_JOB), ("b", _RELAYOUT_JOB)])
RELAYOUT_THREADS, RELAYOUT_CHUNKS = 256, 4
_RELAYOUT_BLOCK = (RELAYOUT_THREADS, 1, 1)
RELAYOUT_BLOCKS_PER_SM = 5  # its __launch_bounds__: the grid is this many blocks an SM at most
WORKSPACE_ALIGN = 256       # each copy in the plan's workspace starts at a multiple of this
_INT_LIMIT = 2 ** 31
_RELAYOUT: dict = {}        # device id -> {element size: kernel}
_COPY_STAGES: dict = {}     # id(plan) -> _CopyStage (it holds the plan, so the id stays its own)


def _relayout_kernel(itemsize: int, dev: int | None = None):
    """kernels/util/relayout.cu's kernel for elements of `itemsize` bytes, on device `dev` (default:
    the current one)."""
    if dev is None:
        dev = _cupy().cuda.runtime.getDevice()
    fns = _RELAYOUT.get(dev)
    if fns is None:
        from . import jit

        text = jit._file_source(jit.KERNEL_DIR / "util" / "relayout.cu")
        loaded = jit.load_source(text, ["relayout<unsigned short>", "relayout<unsigned int>"],
                                 what="kernels/util/relayout.cu")
        fns = _RELAYOUT[dev] = {2: loaded["relayout<unsigned short>"], 4: loaded["relayout<unsigned int>"]}
    return fns[itemsize]


def _relayout_job(shape, strides, ptr: int, size: int, layout: str, ld: int, dims: tuple):
    """The RelayoutJob fields (a tuple in _RELAYOUT_JOB's order) that copy a 2-D source of `shape`,
    `strides` (bytes) and pointer `ptr` into a `layout` destination with leading dimension `ld`,
    zero-padded to `dims`; None when the kernel cannot make this copy (destination rows that cannot
    be written 16 bytes at a time, a source not aligned to its elements, sizes past its 32-bit
    counters): CuPy copies it then."""
    (r, c), (s0, s1) = shape, strides
    rows_d, cols_d = dims
    if layout == "row":  # the destination's rows are the source's rows...
        rows, cols, rs, cs, rows_p, cols_p = r, c, s0, s1, rows_d, cols_d
    else:                # ...or its columns: the copy of the transposed source
        rows, cols, rs, cs, rows_p, cols_p = c, r, s1, s0, cols_d, rows_d
    if ld * size % 16 or ptr % size or rs % size or cs % size:
        return None
    rs, cs = rs // size, cs // size
    if cols <= 1:
        cs = 1  # the stride of a single column is never used: read it as a contiguous row
    vec = 16 // size
    chunks = -(-cols_p // vec)
    across = cs != 1 and rows > 1 and abs(rs) < abs(cs)  # source columns contiguous: lanes take rows
    if across:
        segs = -(-chunks // RELAYOUT_CHUNKS)
        units = -(-rows_p // 32) * segs
    else:
        segs = -(-chunks // (32 * RELAYOUT_CHUNKS))
        units = rows_p * segs
    if units >= _INT_LIMIT or (chunks + 32 * RELAYOUT_CHUNKS) * vec >= _INT_LIMIT or rows_p + 32 >= _INT_LIMIT:
        return None
    return (rs, cs, ld, rows, cols, rows_p, chunks, segs, units, int(across), 0)


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


class _CopyStage:
    """The copies of one plan, with everything about them that the data pointers do not change,
    worked out once: the workspace (one allocation holding A's copy, B's and C's, each at a
    WORKSPACE_ALIGN-aligned offset), the relayout kernel's job table (as the CPointer the launch
    passes), its grid, and each copy's Operand record less its pointer. Built from
    ((x, layout, ld, dims) for A, the same for B) with layout '' for an operand not copied, and
    for C through a workspace (dtype, ld_c, dims) or None. Immutable once built (threads share it)."""

    __slots__ = ("key", "plan", "nbytes", "offsets", "specs", "ops", "fn", "grid", "jobs", "args",
                 "by_kernel", "by_cupy")

    def __init__(self, copies, dev: int, c=None, key=None, plan=None):
        from cupy.cuda.function import CPointer

        self.key, self.plan = key, plan
        jobs = np.zeros(1, _RELAYOUT_JOBS)
        offsets, specs, ops, by_kernel, by_cupy = [0, 0, 0], [None] * 3, [None] * 3, [False, False], []
        size, end, units = 0, 0, 0
        for i, (x, layout, ld, dims) in enumerate(copies):
            if not layout:
                continue
            size = x.dtype.itemsize
            offsets[i] = end
            specs[i] = (x.dtype, layout, ld, dims)
            ops[i] = _copy_operand(x.dtype, layout, ld, dims)
            end = _round_up(end + (dims[0] if layout == "row" else dims[1]) * ld * size, WORKSPACE_ALIGN)
            job = _relayout_job(x.shape, x.strides, x.data.ptr, size, layout, ld, dims)
            if job is None or units + job[8] >= _INT_LIMIT:
                by_cupy.append(i)
            else:
                jobs[0]["ab"[i]] = job
                by_kernel[i] = True
                units += job[8]
        if c is not None:
            dtype, ld_c, dims = c
            offsets[2] = end
            specs[2] = (dtype, "row", ld_c, dims)
            ops[2] = _copy_operand(dtype, "row", ld_c, dims)
            end += dims[0] * ld_c * dtype.itemsize
        self.nbytes, self.offsets, self.specs, self.ops = max(end, 1), tuple(offsets), tuple(specs), tuple(ops)
        self.by_kernel, self.by_cupy = tuple(by_kernel), tuple(by_cupy)
        self.fn = self.grid = self.args = None
        self.jobs = jobs  # the host bytes self.args points at: kept alive with the stage
        if units:
            warps = RELAYOUT_THREADS // 32
            sms = launch.device_info(dev).sms
            self.fn = _relayout_kernel(size, dev)
            self.grid = (max(1, min(-(-units // warps), sms * RELAYOUT_BLOCKS_PER_SM)), 1, 1)
            self.args = CPointer(jobs.ctypes.data)

    def copy(self, a, b, mem) -> None:
        """Copy a and b (CuPy arrays; None where not copied) into the workspace `mem` (a
        MemoryPointer). Pointers go to the kernel as CuPy arrays and MemoryPointers, which CuPy
        reads in C; a job with no units gets `mem` as its (unread) source."""
        if self.fn is not None:
            off = self.offsets
            self.fn(self.grid, _RELAYOUT_BLOCK,
                    (self.args, a if self.by_kernel[0] else mem, mem + off[0] if off[0] else mem,
                     b if self.by_kernel[1] else mem, mem + off[1] if off[1] else mem))
        for i in self.by_cupy:
            _copy_by_cupy((a, b)[i], self.view(i, mem), *self.specs[i][3])

    def operand(self, i: int, base: int) -> launch.Operand:
        """The Operand record of copy i (0: A, 1: B, 2: C) in the workspace at address `base`."""
        shape, dt, typestr, strides, c_contig, f_contig = self.ops[i]
        return launch.Operand(shape, dt, typestr, strides, base + self.offsets[i], False, c_contig, f_contig)

    def view(self, i: int, mem):
        """Copy i as a CuPy array over the workspace `mem` (a MemoryPointer, which the view keeps)."""
        dtype, layout, ld, (rows, cols) = self.specs[i]
        lines = rows if layout == "row" else cols
        buf = _cupy().ndarray((lines, ld), dtype=dtype, memptr=mem + self.offsets[i])
        return buf[:, :cols] if layout == "row" else buf[:, :rows].T


def _copy_operand(dtype, layout: str, ld: int, dims: tuple) -> tuple:
    """launch.Operand's fields but the pointer (and readonly) for a copy laid out `layout`."""
    size = dtype.itemsize
    strides = (ld * size, size) if layout == "row" else (size, ld * size)
    return (tuple(dims), dtypes.from_numpy(dtype), dtype, strides, launch._contiguous(dims, strides, size, "C"),
            launch._contiguous(dims, strides, size, "F"))


def _copy_by_cupy(x, view, rows: int, cols: int) -> None:
    """CuPy's strided copy of x into `view` (rows x cols, x's extent or more), zeros past x's."""
    r, c = x.shape
    if rows > r:
        _zero(view[r:, :])
    if cols > c:
        _zero(view[:r, c:])
    _copy(view[:r, :c], x)


def _copy_stage(plan: select.Plan, a, b, dev: int) -> _CopyStage:
    """The plan's _CopyStage for operands of a's and b's shapes and strides (cached per plan)."""
    key = (a.shape, a.strides, b.shape, b.strides, dev)
    stage = _COPY_STAGES.get(id(plan))
    if stage is None or stage.plan is not plan or stage.key != key:
        Mp, Np, Kp = plan.dims
        c = (plan.variant.dt_out.numpy, plan.ld_c, (Mp, Np)) if plan.via_c else None
        stage = _CopyStage(((a, plan.copy_a, plan.ld_a, (Mp, Kp)), (b, plan.copy_b, plan.ld_b, (Kp, Np))),
                           dev, c, key, plan)
        if len(_COPY_STAGES) >= MAX_PLANS:
            _COPY_STAGES.clear()
        _COPY_STAGES[id(plan)] = stage
    return stage


def _relayout(x, layout: str, ld: int, dims: tuple):
    """A copy of 2-D `x` laid out `layout` with leading dimension `ld`, its extent grown to `dims`
    with zeros (the rows or columns past x's): the relayout kernel with one job when the copy's rows
    can be written 16 bytes at a time, else CuPy's strided copy. (A plan's copies go through
    _copy_stage, both in one launch.)"""
    cupy = _cupy()
    stage = _CopyStage(((x, layout, ld, dims), (None, "", 0, ())), cupy.cuda.runtime.getDevice())
    mem = cupy.cuda.alloc(stage.nbytes)
    stage.copy(x, None, mem)
    return stage.view(0, mem)


def _copies(plan: select.Plan, a, b):
    """(A, B) as the plan's kernel reads them: CuPy views of the plan's copies in a fresh workspace
    (the views keep it alive), or the operand itself where it is not copied. For the tests and
    scripts/copy_plan_probe.py."""
    cupy = _cupy()
    stage = _copy_stage(plan, a, b, cupy.cuda.runtime.getDevice())
    mem = cupy.cuda.alloc(stage.nbytes)
    stage.copy(a, b, mem)
    return (stage.view(0, mem) if plan.copy_a else a), (stage.view(1, mem) if plan.copy_b else b)


def _execute(plan: select.Plan, a, b, out, check: bool = False) -> None:
    """Run a plan on 2-D CuPy arrays: its copies (one relayout launch for A and B), the kernel, the
    copy of C back. What a copy plan spends on the host before its GEMM launch is on the clock of
    a single call, so the per-plan work is cached (_copy_stage) and the copies are passed to the
    launcher as raw addresses with their Operand records."""
    v = plan.variant
    Mp, Np, Kp = plan.dims
    if not (plan.copy_a or plan.copy_b or plan.via_c):
        A, B, C = launch.describe(a, "A", v.name), launch.describe(b, "B", v.name), launch.describe(out, "out", v.name)
        if check:
            launch.check_operands(v, A, B, C)
        launch.launch(v, a, b, out, A, B, C, Mp, Np, Kp)
        return
    cupy = _cupy()
    dev = cupy.cuda.runtime.getDevice()
    stage = _copy_stage(plan, a, b, dev)
    mem = cupy.cuda.alloc(stage.nbytes)  # freed (to CuPy's pool, stream-ordered) when this returns
    base = mem.ptr
    stage.copy(a if plan.copy_a else None, b if plan.copy_b else None, mem)
    # a copy goes to the launcher as its address (launch passes a non-CuPy operand's A.ptr)
    if plan.copy_a:
        A = stage.operand(0, base)
        a = A.ptr
    else:
        A = launch.describe(a, "A", v.name)
    if plan.copy_b:
        B = stage.operand(1, base)
        b = B.ptr
    else:
        B = launch.describe(b, "B", v.name)
    if plan.via_c:
        C = stage.operand(2, base)
        c = C.ptr
    else:
        C, c = launch.describe(out, "out", v.name), out
    if check:
        launch.check_operands(v, A, B, C)
    # right after the relayout kernel: the GEMM may start beside its tail (cugemm/pdl.py;
    # CUGEMM_PDL=0 launches it plainly)
    pdl = stage.fn is not None and not stage.by_cupy and os.environ.get("CUGEMM_PDL", "1") != "0"
    launch.launch(v, a, b, c, A, B, C, Mp, Np, Kp, dev, pdl=pdl)
    if plan.via_c:
        M, N = out.shape
        _copy(out, stage.view(2, mem)[:M, :N])


def _matmul2d(a, b, out, allow_tf32, variant, verbose) -> None:
    M, K = a.shape
    N = b.shape[1]
    if M == 0 or N == 0:
        return
    if K == 0:
        _zero(out)
        return
    plan, new = _plan(a, b, out, allow_tf32, variant, verbose)
    _execute(plan, a, b, out, check=new)  # a plan's first run checks every rule of the launch


# ---- the front door -------------------------------------------------------------------------------
def _prepare(a, b, out):
    """(a, b, out as CuPy arrays, out's shape as returned: 1-D operands squeezed)."""
    a_, b_ = _as_cupy(a, "A"), _as_cupy(b, "B")
    dt = _dtype_of(a_, "A")
    if _dtype_of(b_, "B") is not dt:
        raise TypeError(f"cugemm.matmul: A is {a_.dtype} and B is {b_.dtype}; cugemm multiplies operands "
                        "of one type (cast one of them first)")
    if a_.ndim == 0 or b_.ndim == 0:
        raise ValueError("cugemm.matmul: scalar operands are not allowed (use a * b)")
    squeeze = []
    if a_.ndim == 1:
        a_ = a_[None, :]
        squeeze.append(-2)
    if b_.ndim == 1:
        b_ = b_[:, None]
        squeeze.append(-1)
    M, K = a_.shape[-2:]
    K2, N = b_.shape[-2:]
    if K != K2:
        raise ValueError(f"cugemm.matmul: inner dimensions differ: A is {'x'.join(map(str, a_.shape))}, "
                         f"B is {'x'.join(map(str, b_.shape))}")
    try:
        batch = tuple(np.broadcast_shapes(a_.shape[:-2], b_.shape[:-2]))
    except ValueError:
        raise ValueError(f"cugemm.matmul: batch dimensions {a_.shape[:-2]} and {b_.shape[:-2]} do not "
                         "broadcast") from None
    shape = batch + (M, N)
    final = tuple(d for i, d in enumerate(shape) if i - len(shape) not in squeeze)
    if out is not None:
        out_ = _as_cupy(out, "out")
        if tuple(out_.shape) != final:
            raise ValueError(f"cugemm.matmul: out has shape {tuple(out_.shape)}, the product is {final}")
        if out_.dtype != a_.dtype:
            raise TypeError(f"cugemm.matmul: out has dtype {out_.dtype}, the product is {a_.dtype}")
        out_ = out_.reshape(shape) if squeeze else out_
    else:
        out_ = _cupy().empty(shape, dtype=a_.dtype)
    return a_, b_, out_, final


def _rows(x):
    """x (..., R, C) as a 2-D (rows, C) view when its leading dimensions merge into one, else None."""
    dims = [(d, st) for d, st in zip(x.shape[:-1], x.strides[:-1]) if d != 1]
    for (d0, s0), (d1, s1) in zip(dims, dims[1:]):
        if s0 != s1 * d1:
            return None
    rows = 1
    for d, _ in dims:
        rows *= d
    row_stride = dims[-1][1] if dims else x.shape[-1] * x.itemsize
    from cupy.lib.stride_tricks import as_strided

    return as_strided(x, (rows, x.shape[-1]), (row_stride, x.strides[-1]))


def _fold(a, b, out):
    """(A, B, C) as one 2-D product when B has no batch (or a batch of one) and the batches of A and
    C stack into rows, as for activations against one weight matrix ((B, M, K) @ (K, N)), else None."""
    if any(d != 1 for d in b.shape[:-2]) or a.shape[:-2] != out.shape[:-2]:
        return None
    a2, o2 = _rows(a), _rows(out)
    if a2 is None or o2 is None:
        return None
    return a2, b.reshape(b.shape[-2:]), o2


def _overlap(x, y) -> bool:
    """Whether the byte ranges two non-empty 2-D arrays with non-negative strides span intersect."""
    lo_x, lo_y = x.data.ptr, y.data.ptr
    hi_x = lo_x + (x.shape[0] - 1) * x.strides[0] + (x.shape[1] - 1) * x.strides[1] + x.itemsize
    hi_y = lo_y + (y.shape[0] - 1) * y.strides[0] + (y.shape[1] - 1) * y.strides[1] + y.itemsize
    return lo_x < hi_y and lo_y < hi_x


def _planned_2d(cupy, a, b, out, allow_tf32, variant):
    """The fast path of a 2-D CuPy product planned before (same types, shapes, strides, alignment,
    device): the plan's run, with none of the general path's conversions and checks; None when
    the product is not such a one (the general path then checks, plans and runs it). What a host
    spends here is what a skinny product's time is made of when its operands outrun the L2."""
    if out is None:
        if a.shape[1] != b.shape[0] or a.dtype != b.dtype or 0 in a.shape or 0 in b.shape:
            return None
        c = cupy.empty((a.shape[0], b.shape[1]), dtype=a.dtype)
    elif type(out) is cupy.ndarray and not (_overlap(out, a) or _overlap(out, b)):
        c = out  # (overlap depends on the pointers, which the plan's key does not hold)
    else:
        return None
    plan = _PLANS.get(_key(cupy.cuda.runtime.getDevice(), a, b, c, allow_tf32, variant))
    if plan is None:
        return None
    _execute(plan, a, b, c)
    return c


def _torch_stream(cupy, torch, dev):
    """torch's current stream on `dev` as a CuPy stream."""
    ts = torch.cuda.current_stream(dev)
    try:
        return cupy.cuda.Stream.from_external(ts)
    except (AttributeError, TypeError):  # CuPy before from_external / torch without __cuda_stream__
        return cupy.cuda.ExternalStream(ts.cuda_stream, dev.index or 0)


def matmul(a, b, out=None, *, variant=None, allow_tf32: bool = False, verbose: bool = False):
    """A @ B with the fastest registered kernel that computes it (cupy.matmul's semantics).

    a, b        float32, float16 or bfloat16 GPU arrays of one type: CuPy arrays, torch tensors,
                objects with __cuda_array_interface__ or __dlpack__; 1-D, 2-D or batched (N-D,
                batch dimensions broadcast)
    out         optional result array (CuPy or torch) of the product's shape and type
    variant     run this variant (a name or alias) instead of choosing; copies are still made
                where it needs them, and ValueError says why when it cannot compute the product
    allow_tf32  float32 only: TF32 tensor-core variants may be chosen (about 3e-4 relative error)
    verbose     print the choice and the reasons (also: environment CUGEMM_EXPLAIN=1) the first
                time each problem is planned
    Returns `out` if given, else a new array: a torch tensor when an operand is one, else CuPy.
    """
    cupy = sys.modules.get("cupy")
    if cupy is not None and type(a) is cupy.ndarray and type(b) is cupy.ndarray and a.ndim == 2 and b.ndim == 2:
        done = _planned_2d(cupy, a, b, out, allow_tf32, variant)
        if done is not None:
            return done
    cupy = _cupy()
    launch._cuda_device()
    torch = sys.modules.get("torch") if any(_is_torch(x) for x in (a, b, out) if x is not None) else None
    with contextlib.ExitStack() as ctx:
        if torch is not None:  # torch's current stream on the tensors' device
            dev = next(x.device for x in (a, b, out) if x is not None and _is_torch(x))
            ctx.enter_context(cupy.cuda.Device(dev.index or 0))
            ctx.enter_context(_torch_stream(cupy, torch, dev))
        a_, b_, out_, final = _prepare(a, b, out)
        if out_.ndim == 2:
            _matmul2d(a_, b_, out_, allow_tf32, variant, verbose)
        else:
            folded = _fold(a_, b_, out_)
            if folded is not None:
                _matmul2d(*folded, allow_tf32, variant, verbose)
            else:
                batch = out_.shape[:-2]
                ab = cupy.broadcast_to(a_, batch + a_.shape[-2:])
                bb = cupy.broadcast_to(b_, batch + b_.shape[-2:])
                for idx in np.ndindex(*batch):
                    _matmul2d(ab[idx], bb[idx], out_[idx], allow_tf32, variant, verbose)
    if out is not None:
        return out
    result = out_.reshape(final) if out_.shape != final else out_
    if torch is not None:
        return torch.from_dlpack(result)
    return result


def explain(a, b, out=None, *, variant=None, allow_tf32: bool = False) -> select.Choice:
    """The choice matmul(a, b, out) makes (of its first 2-D product, for batched operands):
    `print(cugemm.explain(a, b))` lists the chosen plan, the other candidates with their estimated
    times and where each estimate comes from, and every refused variant with the rule that refuses
    it. Runs nothing on the GPU."""
    cupy = _cupy()
    launch._cuda_device()
    a_, b_, out_, _ = _prepare(a, b, out)
    if out_.ndim > 2:
        folded = _fold(a_, b_, out_)
        if folded is not None:
            a_, b_, out_ = folded
        else:
            batch = out_.shape[:-2]
            idx = (0,) * len(batch)
            a_ = cupy.broadcast_to(a_, batch + a_.shape[-2:])[idx]
            b_ = cupy.broadcast_to(b_, batch + b_.shape[-2:])[idx]
            out_ = out_[idx]
    return _choose(a_, b_, out_, allow_tf32, variant, cupy.cuda.runtime.getDevice())


# ---- tuning -----------------------------------------------------------------------------------------
def _operands(dtype, M: int, N: int, K: int, a_layout: str = "row", b_layout: str = "row"):
    """Fresh random (A, B) of `dtype` for tune and the tests: A M x K and B K x N, each row-major or
    a transposed view of a row-major array ('col')."""
    from . import testing

    a, b = testing.random_operands(dtype, M, N, K)
    if a_layout == "col":
        a = _cupy().ascontiguousarray(a.T).T
    if b_layout == "col":
        b = _cupy().ascontiguousarray(b.T).T
    return a, b


def tune(shapes, dtype="float16", *, layouts=("row", "row"), allow_tf32: bool = False, variants=None,
         path=None, ship: bool = False, iters: int = 20, log=None) -> list[dict]:
    """Time every plan matmul could run for each (M, N, K) in `shapes` on this GPU and record the
    times in the tuning cache (tuning.cache_path(), or `path`), which matmul reads from then on.

    dtype     'float16' / 'f16', 'bfloat16', 'float32' (with allow_tf32 the TF32 variants too)
    layouts   (A, B): 'row' or 'col' (transposed views), the operands' layout class to tune
    variants  names or a glob to limit the candidates (default: matmul's candidates)
    ship      write a shipped table (cugemm/tables/<model>.json for this GPU, or `path`) instead
    Each plan's result is checked against the float64 reference before it is timed; a wrong one
    is reported and not recorded. Every plan is timed alternating with cupy.matmul on the same
    operands (the bench's Timer.measure_pair). Returns one dict per (shape, variant) with the
    times in microseconds and the ratio to cupy.matmul.
    """
    from . import __version__, accuracy, testing
    from .bench.timing import Timer

    cupy = _cupy()
    launch._cuda_device()
    dt = dtypes.get(dtype)
    if dt.name == "tfloat32":
        dt, allow_tf32 = dtypes.FLOAT32, True
    dev_id = cupy.cuda.runtime.getDevice()
    device = _device(dev_id)
    timer = Timer(warmup=2, iters=iters, budget_s=0.25)
    rows, entries = [], {}
    for M, N, K in shapes:
        a, b = _operands(dt.name, M, N, K, *layouts)
        out = testing.poisoned((M, N), dt.name)
        ref = accuracy.reference(a, b)
        p = problem_of(a, b, out, allow_tf32, dev_id)
        choice = select.select(p, None, variants)
        # plans the model puts far behind its best are not timed (at most TUNE_PLANS, within
        # TUNE_SPREAD of the best modelled time), unless the candidates were named
        best = choice.ranked[0].est_us if choice.ranked else 0.0
        todo = choice.ranked if variants is not None else \
            [q for q in choice.ranked if q.est_us <= TUNE_SPREAD * best][:TUNE_PLANS]
        rec = {"shape": [M, N, K], "us": {}}
        for plan in todo:
            name = plan.variant.name
            row = {"M": M, "N": N, "K": K, "dtype": dt.name, "variant": name, "plan": plan.describe()}
            try:
                out = testing.poisoned((M, N), dt.name)
                _execute(plan, a, b, out, check=True)
                err = accuracy.rel_error(out, ref)
                math_dt = plan.variant.math_dtype
                if not accuracy.within(err, math_dt, plan.variant.dtype_acc):
                    row.update(status="FAIL", rel_err=err)
                    rows.append(row)
                    continue
                base_out = cupy.empty((M, N), dtype=a.dtype)
                t, tb = timer.measure_pair(lambda: _execute(plan, a, b, out),
                                           lambda: cupy.matmul(a, b, out=base_out))
            except Exception as e:  # a plan that cannot run here is reported, not recorded
                row.update(status="error", detail=f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
                rows.append(row)
                continue
            us, base_us = 1e3 * t["median"], 1e3 * tb["median"]
            rec["us"][name] = us
            rec["baseline_us"] = min(base_us, rec.get("baseline_us", base_us))
            row.update(status="ok", us=us, baseline_us=base_us, pct=100.0 * base_us / us, rel_err=err)
            rows.append(row)
            if log is not None:
                log(row)
        if rec["us"]:
            entries[tuning.bucket_key(tuning.problem_group(p), M, N, K)] = rec
    if entries:
        if ship:
            target = path or tuning.shipped_path(device.name)
            if target is None:
                raise ValueError(f"no shipped table is named for {device.name!r}; pass path=")
            tuning.merge(target, None, entries)
        else:
            key = tuning.gpu_key(device.name, cupy.cuda.runtime.driverGetVersion(), __version__)
            tuning.merge(path or tuning.cache_path(), key, entries)
    reload_tuning()
    return rows
