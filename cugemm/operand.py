"""The operand record: what cugemm knows of one matrix before it launches anything, and the rules
that ask where it lies in memory.

    op = operand.describe(x, "A", "cugemm.matmul")   # CuPy, torch, __cuda_array_interface__ objects
    op.shape, op.dtype, op.strides (bytes), op.ptr, op.readonly, op.c_contiguous, op.f_contiguous
    op.layout_class()                                  # Layout: 'row' / 'col' / '' , ld, alignment

Everything here is plain Python over metadata: no CuPy, no torch and no GPU are needed, so the
rules run (and are tested) on a machine without one. One rule for each question:

- `layout_rule`: is a 2-D operand laid out as a kernel reads it ('row': rows contiguous, 'col':
  columns contiguous; dense, or any aligned leading dimension for a `strided` kernel)? The launcher
  (cugemm.launch.check_operands) raises its answer; the planner (cugemm.select, through `fits`)
  asks it of an operand's Layout to decide what must be copied.
- `extent` / `overlaps`: the byte range an operand spans, and whether two ranges intersect (an
  output must not overlap an input it is computed from).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from . import dtypes


class Operand(NamedTuple):
    """What the launcher (and a variant's args_fn) knows of a matrix: its shape, element type
    (None: a dtype cugemm has no name for), strides in bytes, data pointer, and flags."""

    shape: tuple
    dtype: object        # cugemm.dtypes.DType or None
    typestr: object      # the dtype as the array reports it (a typestr, NumPy or torch dtype: messages)
    strides: tuple
    ptr: int
    readonly: bool
    c_contiguous: bool
    f_contiguous: bool

    def layout_class(self) -> "Layout":
        """This 2-D operand's Layout (what cugemm.select plans with)."""
        return layout_of(self.shape, self.strides, self.dtype.itemsize, self.ptr)


def dense_strides(shape, itemsize, order) -> tuple:
    """Byte strides of a dense array of `shape` in `order` ('C' or 'F')."""
    strides, step = [], itemsize
    for dim in (reversed(shape) if order == "C" else shape):
        strides.append(step)
        step *= dim
    return tuple(reversed(strides)) if order == "C" else tuple(strides)


def contiguous(shape, strides, itemsize, order) -> bool:
    """Whether `strides` (bytes) lay `shape` out densely in `order` ('C' or 'F')."""
    expected = itemsize
    dims = list(zip(shape, strides))
    for dim, stride in (reversed(dims) if order == "C" else dims):
        if dim > 1 and stride != expected:
            return False
        expected *= dim
    return True


def is_torch(x) -> bool:
    """Whether x is a torch tensor (told from its type's module: torch need not be imported)."""
    return type(x).__module__.split(".", 1)[0] == "torch"


def library_of(x, who: str) -> str:
    """'torch' or 'cupy': the array library of a torch CUDA tensor or a CuPy array (the entry points
    that answer in the caller's own library, cugemm.grouped and cugemm.scaled); TypeError naming `who`
    for anything else."""
    import sys

    if is_torch(x):
        return "torch"
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(x, cupy.ndarray):
        return "cupy"
    raise TypeError(f"{who}: operands must be torch CUDA tensors or CuPy arrays, got {type(x).__name__}")


def of_layout(shape, dt: dtypes.DType, layout: str, ld: int, ptr: int) -> Operand:
    """The record of a 2-D matrix of `shape` laid out `layout` ('row' or 'col') with leading
    dimension `ld` (elements) at `ptr`: a copy cugemm makes in a workspace."""
    size = dt.itemsize
    strides = (ld * size, size) if layout == "row" else (size, ld * size)
    return Operand(tuple(shape), dt, dt.name, strides, ptr, False, contiguous(shape, strides, size, "C"),
                   contiguous(shape, strides, size, "F"))


def describe(x, what: str, vname: str) -> Operand:
    """The record of a device array: a cupy.ndarray, a torch CUDA tensor, or anything with
    __cuda_array_interface__. TypeError (naming `vname` and `what`) for anything else."""
    import sys

    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(x, cupy.ndarray):
        # _c_contiguous / _f_contiguous: CuPy's own flags, read without building a flags object
        d = x.dtype
        return Operand(x.shape, dtypes.from_numpy(d), d, x.strides, x.data.ptr, False,
                       x._c_contiguous, x._f_contiguous)
    if is_torch(x) and hasattr(x, "data_ptr"):
        if x.device.type != "cuda":
            raise TypeError(f"{vname}: {what} is a torch tensor on {x.device}; move it to the GPU")
        size = x.element_size()
        shape = tuple(x.shape)
        strides = tuple(s * size for s in x.stride())
        return Operand(shape, dtypes.from_torch(x.dtype), x.dtype, strides, x.data_ptr(), False,
                       contiguous(shape, strides, size, "C"), contiguous(shape, strides, size, "F"))
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        shape = tuple(cai["shape"])
        np_dtype = dtypes._np_dtype(cai["typestr"])
        ptr, readonly = cai["data"]
        strides = cai.get("strides") or dense_strides(shape, np_dtype.itemsize, "C")
        strides = tuple(strides)
        return Operand(shape, dtypes.of_typestr(cai["typestr"], getattr(x, "dtype", None)), cai["typestr"],
                       strides, int(ptr or 0), bool(readonly),
                       contiguous(shape, strides, np_dtype.itemsize, "C"),
                       contiguous(shape, strides, np_dtype.itemsize, "F"))
    if isinstance(x, np.ndarray):
        raise TypeError(f"{vname}: {what} is a host numpy array; pass a GPU array (cupy.asarray(x))")
    raise TypeError(
        f"{vname}: {what} must be a GPU array (cupy.ndarray, torch tensor, or an object with "
        f"__cuda_array_interface__ or __dlpack__), got {type(x).__name__}")


def dtype_name(op: Operand) -> str:
    """The operand's element type for a message (an unnamed 2-byte void explained)."""
    if op.dtype is not None:
        return op.dtype.name
    if is_torch(op.typestr) or str(op.typestr).startswith("torch."):
        return str(op.typestr)
    d = np.dtype(op.typestr)
    if d.kind == "V":
        return (f"{op.typestr} (an unnamed {d.itemsize}-byte type: torch reports "
                "bfloat16 so through __cuda_array_interface__; pass the tensor itself or use "
                "cupy.from_dlpack, which keep bfloat16)")
    return d.name


# ---- where it lies --------------------------------------------------------------------------------
def extent(shape, strides, ptr: int, itemsize: int) -> tuple[int, int]:
    """[first, last) byte addresses an array spans (strides may be any non-negative values); an
    empty array spans nothing."""
    if not all(shape):
        return ptr, ptr
    return ptr, ptr + sum((d - 1) * abs(s) for d, s in zip(shape, strides)) + itemsize


def overlaps(x: tuple, y: tuple) -> bool:
    """Whether two extents (from `extent`) intersect; an empty one intersects nothing."""
    return x[1] > x[0] and y[1] > y[0] and x[0] < y[1] and y[0] < x[1]


def layout_rule(shape, strides, itemsize: int, layout: str, strided: bool, align: int) -> str:
    """'' when a 2-D operand of `shape` and `strides` (bytes) lies as a kernel reads it, else the
    broken rule, worded for the user.

    'row': elements of a row adjacent (stride[1] == itemsize), rows `ld` bytes apart; 'col': the
    same with rows and columns swapped. ld must be the dense one unless the kernel is `strided`,
    which takes any ld of at least a row that is a multiple of `align` bytes."""
    rows, cols = shape
    if layout == "row":
        inner, outer, span, lines = strides[1], strides[0], cols, rows
        kind, fix = "row-major", "cupy.ascontiguousarray"
    else:
        inner, outer, span, lines = strides[0], strides[1], rows, cols
        kind, fix = "column-major", "cupy.asfortranarray"
    dense = span * itemsize
    if (span <= 1 or inner == itemsize) and (lines <= 1 or outer == dense):
        if strided and lines > 1 and dense % align:  # a strided kernel's tensor maps need aligned lines
            return (f"has {'rows' if layout == 'row' else 'columns'} of {dense} bytes, not a multiple of {align} "
                    f"(rule: the kernel's tensor maps read lines that start {align}-byte aligned); pass it with "
                    "a padded leading dimension, or use cugemm.matmul, which pads it")
        return ""
    if not strided:
        contig = "C-contiguous" if layout == "row" else "F-contiguous"
        return f"must be {contig} ({kind}, dense); make a copy first ({fix})"
    if span > 1 and inner != itemsize:
        return f"must be {kind} with adjacent elements ({'stride[1]' if layout == 'row' else 'stride[0]'} " \
               f"== {itemsize} bytes), got strides {tuple(strides)}; make a copy first ({fix})"
    if outer < dense or outer % align:
        return (f"leading dimension of {outer} bytes breaks the rule: at least {dense} bytes (one "
                f"{'row' if layout == 'row' else 'column'}) and a multiple of {align}")
    return ""


@dataclass(frozen=True)
class Layout:
    """An operand's layout class, what planning needs of it: layout 'row' (rows contiguous), 'col'
    (columns contiguous) or '' (neither: it must be copied), its leading dimension in elements (the
    stride between rows of a 'row' operand, between columns of a 'col' one), and the largest power
    of two up to 16 that divides its pointer and leading dimension in bytes."""

    layout: str
    ld: int
    align: int


def layout_of(shape, strides, itemsize: int, ptr: int) -> Layout:
    """The Layout of a 2-D array of `shape` with `strides` in bytes. A dimension of extent 1 may
    have any stride (CuPy and torch report various ones); a single row or column is dense."""
    rows, cols = shape
    s0, s1 = strides
    if cols <= 1 or s1 == itemsize:
        layout, span, lines, ld_bytes = "row", cols, rows, s0
    elif rows <= 1 or s0 == itemsize:
        layout, span, lines, ld_bytes = "col", rows, cols, s1
    else:
        layout, span, lines, ld_bytes = "", 0, 0, 0
    if lines <= 1:
        ld_bytes = span * itemsize
    if layout and (ld_bytes < span * itemsize or ld_bytes % itemsize):
        layout, ld_bytes = "", 0
    align = 16
    while align > 1 and (ptr % align or ld_bytes % align):
        align //= 2
    return Layout(layout, ld_bytes // itemsize, align)


def fits(info: Layout, layout: str, rows: int, cols: int, itemsize: int, strided: bool, align: int) -> bool:
    """Whether a kernel reading (writing) `layout` with `align`-byte accesses can use an operand of
    Layout `info` and shape rows x cols where it lies: layout_rule on its strides, and its pointer
    and leading dimension aligned to `align`."""
    if info.layout != layout or info.align < align:
        return False
    strides = (info.ld * itemsize, itemsize) if layout == "row" else (itemsize, info.ld * itemsize)
    return not layout_rule((rows, cols), strides, itemsize, layout, strided, align)
