"""The operand copies of cugemm.matmul's copy plans: kernels/util/relayout.cu and its host side.

A plan (cugemm.select.Plan) may read A or B from a copy in the kernel's layout, with rows aligned to
16 bytes and zero-padded up to the variant's shape rules, and may compute C into a workspace that
is copied back. `CopyStage` works out, once per plan and operand geometry, everything about those
copies that the data pointers do not change: the workspace (one allocation holding A's copy, B's
and C's, each at a WORKSPACE_ALIGN-aligned offset), the relayout kernel's job table (both copies in
one launch, passed by value), its grid, and each copy's Operand record relative to the workspace.

JOB mirrors `struct RelayoutJob` field for field and JOBS `struct RelayoutJobs` (tests/test_relayout.py
compares the two layouts with the compiled kernel's); THREADS, CHUNKS and BLOCKS_PER_SM are the
kernel's RELAYOUT_* constants. A copy the kernel cannot make (a destination whose rows cannot be
written 16 bytes at a time, a source not aligned to its elements, sizes past its 32-bit counters) is
listed in `by_array` and made by the caller's array library (CuPy or torch) instead.
"""
from __future__ import annotations

import threading

import numpy as np

from . import device as _device
from . import operand
from .ints import round_up

JOB = np.dtype({
    "names": ["src_rs", "src_cs", "ld", "rows", "cols", "rows_p", "chunks", "segs", "units", "across", "reserved"],
    "formats": ["<i8", "<i8", "<i8", "<i4", "<i4", "<i4", "<i4", "<u4", "<u4", "<i4", "<i4"],
    "offsets": [0, 8, 16, 24, 28, 32, 36, 40, 44, 48, 52],
    "itemsize": 56})
JOBS = np.dtype([("a", JOB), ("b", JOB)])
THREADS, CHUNKS = 256, 4
BLOCK = (THREADS, 1, 1)
BLOCKS_PER_SM = 5     # its __launch_bounds__: the grid is this many blocks an SM at most
WORKSPACE_ALIGN = 256  # each copy in the plan's workspace starts at a multiple of this
_INT_LIMIT = 2 ** 31
MAX_STAGES = 8192

_KERNELS: dict = {}    # device id -> {element size: CuPy kernel}
_STAGES: dict = {}     # (id(plan), geometry) -> CopyStage
_lock = threading.Lock()


def kernel(itemsize: int, dev: int | None = None):
    """kernels/util/relayout.cu's kernel (a CuPy RawModule function) for elements of `itemsize`
    bytes, loaded on device `dev` (default: the current one)."""
    if dev is None:
        dev = _device.current()
    fns = _KERNELS.get(dev)
    if fns is None:
        from . import jit

        text = jit.file_source(jit.KERNEL_DIR / "util" / "relayout.cu")
        loaded = jit.load_source(text, ["relayout<unsigned short>", "relayout<unsigned int>"],
                                 what="kernels/util/relayout.cu")
        fns = _KERNELS[dev] = {2: loaded["relayout<unsigned short>"], 4: loaded["relayout<unsigned int>"]}
    return fns[itemsize]


def job(shape, strides, ptr: int, size: int, layout: str, ld: int, dims: tuple):
    """The RelayoutJob fields (a tuple in JOB's order) that copy a 2-D source of `shape`, `strides`
    (bytes) and pointer `ptr` into a `layout` destination with leading dimension `ld`, zero-padded
    to `dims`; None when the kernel cannot make this copy (see the module docstring)."""
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
        segs = -(-chunks // CHUNKS)
        units = -(-rows_p // 32) * segs
    else:
        segs = -(-chunks // (32 * CHUNKS))
        units = rows_p * segs
    if units >= _INT_LIMIT or (chunks + 32 * CHUNKS) * vec >= _INT_LIMIT or rows_p + 32 >= _INT_LIMIT:
        return None
    return (rs, cs, ld, rows, cols, rows_p, chunks, segs, units, int(across), 0)


class CopyStage:
    """The copies of one plan for one operand geometry (see the module docstring). Built from
    ((Operand, layout, ld, dims) for A, the same for B), layout '' for an operand not copied, and
    for C through a workspace (DType, ld_c, dims) or None. Immutable once built (threads share it).

    nbytes     the workspace's size
    offsets    (A, B, C) byte offsets of the copies in it
    ops        (A, B, C) Operand records of the copies at address 0 (`operand(i, base)` rebases)
    by_kernel  (A copied by the kernel, B copied by the kernel)
    by_array   indices (0: A, 1: B) of copies the caller's array library makes
    fn, grid   the relayout kernel and its grid (None when it copies nothing)
    jobs       the job table (host bytes, passed to the kernel by value)"""

    __slots__ = ("nbytes", "offsets", "specs", "ops", "fn", "grid", "jobs", "by_kernel", "by_array")

    def __init__(self, copies, dev: int, c=None):
        jobs = np.zeros(1, JOBS)
        offsets, specs, ops, by_kernel, by_array = [0, 0, 0], [None] * 3, [None] * 3, [False, False], []
        size, end, units = 0, 0, 0
        for i, (x, layout, ld, dims) in enumerate(copies):
            if not layout:
                continue
            size = x.dtype.itemsize
            offsets[i] = end
            specs[i] = (x.dtype, layout, ld, dims)
            ops[i] = operand.of_layout(dims, x.dtype, layout, ld, 0)
            end = round_up(end + (dims[0] if layout == "row" else dims[1]) * ld * size, WORKSPACE_ALIGN)
            j = job(x.shape, x.strides, x.ptr, size, layout, ld, dims)
            if j is None or units + j[8] >= _INT_LIMIT:
                by_array.append(i)
            else:
                jobs[0]["ab"[i]] = j
                by_kernel[i] = True
                units += j[8]
        if c is not None:
            dt, ld_c, dims = c
            offsets[2] = end
            specs[2] = (dt, "row", ld_c, dims)
            ops[2] = operand.of_layout(dims, dt, "row", ld_c, 0)
            end += dims[0] * ld_c * dt.itemsize
        self.nbytes, self.offsets, self.specs, self.ops = max(end, 1), tuple(offsets), tuple(specs), tuple(ops)
        self.by_kernel, self.by_array = tuple(by_kernel), tuple(by_array)
        self.fn = self.grid = None
        self.jobs = jobs
        if units:
            warps = THREADS // 32
            self.fn = kernel(size, dev)
            self.grid = (max(1, min(-(-units // warps), _device.get(dev).sms * BLOCKS_PER_SM)), 1, 1)

    def operand(self, i: int, base: int) -> operand.Operand:
        """The Operand record of copy i (0: A, 1: B, 2: C) in the workspace at address `base`."""
        return self.ops[i]._replace(ptr=base + self.offsets[i])

    def args(self, a_ptr: int, b_ptr: int, base: int) -> tuple:
        """The relayout kernel's arguments (jobs, src A, dst A, src B, dst B) as raw values; a job
        with no units gets the workspace as its (unread) source and destination."""
        off = self.offsets
        return (self.jobs,
                np.uint64(a_ptr if self.by_kernel[0] else base), np.uint64(base + off[0]),
                np.uint64(b_ptr if self.by_kernel[1] else base), np.uint64(base + off[1]))

    def view_geometry(self, i: int) -> tuple:
        """(dtype, shape, element strides, byte offset) of copy i as the array the kernel reads
        (the first rows x cols of its lines), for a CuPy or torch view over the workspace."""
        dt, layout, ld, (rows, cols) = self.specs[i]
        strides = (ld, 1) if layout == "row" else (1, ld)
        return dt, (rows, cols), strides, self.offsets[i]

    def copy_cupy(self, a, b, mem) -> None:
        """Copy CuPy arrays a and b (None where not copied) into the workspace `mem` (a CuPy
        MemoryPointer) on the current CuPy stream: the kernel, then CuPy for by_array copies."""
        import cupy

        if self.fn is not None:
            jobs, *ptrs = self.args(a.data.ptr if a is not None else 0, b.data.ptr if b is not None else 0,
                                    mem.ptr)
            from cupy.cuda.function import CPointer

            self.fn(self.grid, BLOCK, (CPointer(jobs.ctypes.data), *ptrs))
        for i in self.by_array:
            dt, shape, strides, off = self.view_geometry(i)
            buf = cupy.ndarray(shape, dtype=dt.numpy, memptr=mem + off,
                               strides=tuple(s * dt.itemsize for s in strides))
            copy_padded_cupy((a, b)[i], buf)

    def view_cupy(self, i: int, mem):
        """Copy i as a CuPy array over the workspace `mem` (a MemoryPointer, which the view keeps)."""
        import cupy

        dt, (rows, cols), strides, off = self.view_geometry(i)
        _, layout, ld, _ = self.specs[i]
        lines = rows if layout == "row" else cols
        buf = cupy.ndarray((lines, ld), dtype=dt.numpy, memptr=mem + off)
        return buf[:, :cols] if layout == "row" else buf[:, :rows].T


def int_view(x):
    """The same memory as unsigned integers (copies and fills of bfloat16 then need no bf16 math)."""
    import cupy

    return x.view(cupy.uint16 if x.dtype.itemsize == 2 else cupy.uint32)


def copy_padded_cupy(x, view) -> None:
    """CuPy's strided copy of x into `view` (x's extent or more), zeros past x's."""
    r, c = x.shape
    rows, cols = view.shape
    if rows > r:
        int_view(view[r:, :]).fill(0)
    if cols > c:
        int_view(view[:r, c:]).fill(0)
    int_view(view[:r, :c])[...] = int_view(x)


def copy_padded_torch(x, view) -> None:
    """torch's strided copy of x into `view` (x's extent or more), zeros past x's."""
    r, c = x.shape
    rows, cols = view.shape
    if rows > r:
        view[r:, :].zero_()
    if cols > c:
        view[:r, c:].zero_()
    view[:r, :c].copy_(x)


def stage_for(plan, A: operand.Operand, B: operand.Operand, dev: int) -> CopyStage:
    """The plan's CopyStage for operands of A's and B's geometry (cached; pointers do not matter
    but their alignment to the element size does, which the plan's key already fixes)."""
    key = (id(plan), A.shape, A.strides, B.shape, B.strides, dev)
    hit = _STAGES.get(key)
    if hit is not None and hit[0] is plan:
        return hit[1]
    Mp, Np, Kp = plan.dims
    c = (plan.variant.dt_out, plan.ld_c, (Mp, Np)) if plan.via_c else None
    stage = CopyStage(((A, plan.copy_a, plan.ld_a, (Mp, Kp)), (B, plan.copy_b, plan.ld_b, (Kp, Np))), dev, c)
    with _lock:
        if len(_STAGES) >= MAX_STAGES:
            _STAGES.clear()
        _STAGES[key] = (plan, stage)  # the plan is held so that its id stays its own
    return stage


def clear() -> None:
    with _lock:
        _STAGES.clear()


# ---- CuPy helpers for tests and probes ------------------------------------------------------------
def relayout_cupy(x, layout: str, ld: int, dims: tuple):
    """A copy of the 2-D CuPy array `x` laid out `layout` with leading dimension `ld`, its extent
    grown to `dims` with zeros: the relayout kernel with one job (CuPy's copy where it cannot)."""
    import cupy

    X = operand.describe(x, "x", "relayout")
    stage = CopyStage(((X, layout, ld, dims), (None, "", 0, ())), _device.current())
    mem = cupy.cuda.alloc(stage.nbytes)
    stage.copy_cupy(x, None, mem)
    return stage.view_cupy(0, mem)


def copies_cupy(plan, a, b):
    """(A, B) as the plan's kernel reads them: CuPy views of the plan's copies in a fresh workspace
    (the views keep it alive), or the operand itself where it is not copied."""
    import cupy

    A, B = operand.describe(a, "A", "relayout"), operand.describe(b, "B", "relayout")
    stage = stage_for(plan, A, B, _device.current())
    mem = cupy.cuda.alloc(stage.nbytes)
    stage.copy_cupy(a if plan.copy_a else None, b if plan.copy_b else None, mem)
    return (stage.view_cupy(0, mem) if plan.copy_a else a), (stage.view_cupy(1, mem) if plan.copy_b else b)
