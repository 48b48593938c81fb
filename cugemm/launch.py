"""Input validation and the kernel launch.

Validation is plain Python over array metadata (shape, dtype, strides, pointer): objects that expose
`__cuda_array_interface__` are described without touching CuPy or the device, so the checks run,
and are tested, on a machine without a GPU. The kernel gets raw device pointers; only operands that
speak DLPack alone are wrapped by CuPy first.
"""
from __future__ import annotations

import sys
from typing import NamedTuple

import numpy as np

from . import dtypes
from .registry import get_variant
from .variant import DeviceInfo, Variant


class Operand(NamedTuple):
    """What the launcher (and a variant's args_fn) knows of a matrix: its shape, element type
    (None: a dtype cugemm has no name for), strides in bytes, data pointer, and flags."""

    shape: tuple
    dtype: object        # cugemm.dtypes.DType or None
    typestr: object      # the dtype as the array reports it (a typestr or NumPy dtype: for messages)
    strides: tuple
    ptr: int
    readonly: bool
    c_contiguous: bool
    f_contiguous: bool


def _dense_strides(shape, itemsize, order) -> tuple:
    strides, step = [], itemsize
    for dim in (reversed(shape) if order == "C" else shape):
        strides.append(step)
        step *= dim
    return tuple(reversed(strides)) if order == "C" else tuple(strides)


def _contiguous(shape, strides, itemsize, order) -> bool:
    """Whether `strides` (bytes) lay `shape` out densely in `order` ('C' or 'F')."""
    expected = itemsize
    dims = list(zip(shape, strides))
    for dim, stride in (reversed(dims) if order == "C" else dims):
        if dim > 1 and stride != expected:
            return False
        expected *= dim
    return True


def describe(x, what: str, vname: str) -> Operand:
    """Metadata of a device array: a cupy.ndarray or anything with __cuda_array_interface__."""
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(x, cupy.ndarray):
        # _c_contiguous / _f_contiguous: CuPy's own flags, read without building a flags object
        d = x.dtype
        return Operand(x.shape, dtypes.from_numpy(d), d, x.strides, x.data.ptr, False,
                       x._c_contiguous, x._f_contiguous)
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        shape = tuple(cai["shape"])
        np_dtype = dtypes._np_dtype(cai["typestr"])
        ptr, readonly = cai["data"]
        strides = cai.get("strides") or _dense_strides(shape, np_dtype.itemsize, "C")
        strides = tuple(strides)
        return Operand(shape, dtypes.of_typestr(cai["typestr"], getattr(x, "dtype", None)), cai["typestr"],
                       strides, int(ptr or 0), bool(readonly),
                       _contiguous(shape, strides, np_dtype.itemsize, "C"),
                       _contiguous(shape, strides, np_dtype.itemsize, "F"))
    if isinstance(x, np.ndarray):
        raise TypeError(f"{vname}: {what} is a host numpy array; pass a GPU array (cupy.asarray(x))")
    raise TypeError(
        f"{vname}: {what} must be a GPU array (cupy.ndarray, or an object with "
        f"__cuda_array_interface__ or __dlpack__), got {type(x).__name__}")


def _dtype_name(op: Operand) -> str:
    if op.dtype is not None:
        return op.dtype.name
    d = np.dtype(op.typestr)
    if d.kind == "V":
        return (f"{op.typestr} (an unnamed {d.itemsize}-byte type: torch reports "
                "bfloat16 so through __cuda_array_interface__; pass the tensor itself or use "
                "cupy.from_dlpack, which keep bfloat16)")
    return d.name


def check_operands(v: Variant, A: Operand, B: Operand, O: Operand | None = None) -> tuple[int, int, int]:
    """Check described operands against variant `v`; return (M, N, K). Raises TypeError / ValueError
    naming the variant and the broken rule. Needs no GPU."""
    for what, op in (("A", A), ("B", B)):
        if op.dtype is not v.dt_in:
            raise TypeError(f"{v.name}: {what} has dtype {_dtype_name(op)}, the variant takes {v.dtype_in}")
        if len(op.shape) != 2:
            raise ValueError(f"{v.name}: {what} must be 2-D, got shape {op.shape}")
    (M, K), (K2, N) = A.shape, B.shape
    if K != K2:
        raise ValueError(f"{v.name}: inner dimensions differ: A is {M}x{K}, B is {K2}x{N}")
    ops = [("A", A, v.a_layout, v.align), ("B", B, v.b_layout, v.align)]
    if O is not None:
        if O.dtype is not v.dt_out:
            raise TypeError(f"{v.name}: out has dtype {_dtype_name(O)}, the variant writes {v.dtype_out}")
        if tuple(O.shape) != (M, N):
            raise ValueError(f"{v.name}: out has shape {tuple(O.shape)}, expected {(M, N)}")
        if O.readonly:
            raise ValueError(f"{v.name}: out is read-only")
        o_lo, o_hi = _extent(O, v.dt_out.itemsize)
        for what, op in (("A", A), ("B", B)):
            lo, hi = _extent(op, v.dt_in.itemsize)
            if M * N and hi > lo and o_lo < hi and lo < o_hi:
                raise ValueError(f"{v.name}: out overlaps {what}; the kernel would read what it overwrites")
        ops.append(("out", O, v.layout, v.c_align))
    if M and N and K:
        for what, op, layout, align in ops:
            rule = _layout_rule(v, op, layout, align, (v.dt_out if what == "out" else v.dt_in).itemsize)
            if rule:
                raise ValueError(f"{v.name}: {what} {rule}")
            if op.ptr % align:
                raise ValueError(f"{v.name}: {what} data pointer {op.ptr:#x} is not {align}-byte "
                                 f"aligned (rule: the kernel's vector loads need it); copy it to a "
                                 "fresh array or use an any-shape variant")
    v.check_shape(M, N, K)
    return M, N, K


def _extent(op: Operand, itemsize: int) -> tuple[int, int]:
    """[first, last) byte addresses a 2-D operand spans (strides may be any non-negative values)."""
    if not all(op.shape):
        return op.ptr, op.ptr
    return op.ptr, op.ptr + sum((d - 1) * abs(s) for d, s in zip(op.shape, op.strides)) + itemsize


def _layout_rule(v: Variant, op: Operand, layout: str, align: int, itemsize: int) -> str:
    """'' when `op` (2-D, strides in bytes) is laid out as the kernel reads it, else the broken rule.

    'row': elements of a row adjacent (stride[1] == itemsize), rows `ld` bytes apart; 'col': the
    same with rows and columns swapped. ld must be the dense one unless the variant is `strided`,
    which takes any ld of at least a row that is a multiple of `align` bytes."""
    rows, cols = op.shape
    if layout == "row":
        inner, outer, span, lines = op.strides[1], op.strides[0], cols, rows
        kind, fix = "row-major", "cupy.ascontiguousarray"
    else:
        inner, outer, span, lines = op.strides[0], op.strides[1], rows, cols
        kind, fix = "column-major", "cupy.asfortranarray"
    dense = span * itemsize
    if (span <= 1 or inner == itemsize) and (lines <= 1 or outer == dense):
        return ""
    if not v.strided:
        contig = "C-contiguous" if layout == "row" else "F-contiguous"
        return f"must be {contig} ({kind}, dense); make a copy first ({fix})"
    if span > 1 and inner != itemsize:
        return f"must be {kind} with adjacent elements ({'stride[1]' if layout == 'row' else 'stride[0]'} " \
               f"== {itemsize} bytes), got strides {op.strides}; make a copy first ({fix})"
    if outer < dense or outer % align:
        return (f"leading dimension of {outer} bytes breaks the rule: at least {dense} bytes (one "
                f"{'row' if layout == 'row' else 'column'}) and a multiple of {align}")
    return ""


def check_inputs(v: Variant, a, b, out=None) -> tuple[int, int, int]:
    """describe() + check_operands() for array-like operands; returns (M, N, K)."""
    return check_operands(v, describe(a, "A", v.name), describe(b, "B", v.name),
                          None if out is None else describe(out, "out", v.name))


_DLPACK_CUDA, _DLPACK_CUDA_MANAGED = 2, 13  # DLDeviceType codes


def _from_dlpack(x):
    """A CuPy view of an object that speaks only DLPack (no __cuda_array_interface__)."""
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__") and \
            x.__dlpack_device__()[0] in (_DLPACK_CUDA, _DLPACK_CUDA_MANAGED):
        import cupy

        return cupy.from_dlpack(x)
    return x  # describe() raises the TypeError


_device_cache: dict[int, DeviceInfo] = {}


def device_info(device_id: int) -> DeviceInfo:
    info = _device_cache.get(device_id)
    if info is None:
        import cupy

        rt = cupy.cuda.runtime
        attr = rt.deviceGetAttribute
        info = _device_cache[device_id] = DeviceInfo(
            int(cupy.cuda.Device(device_id).compute_capability),
            attr(rt.cudaDevAttrMultiProcessorCount, device_id),
            attr(rt.cudaDevAttrMaxSharedMemoryPerBlockOptin, device_id))
    return info


_gpu_ok = False


def _cuda_device() -> int:
    """The current CUDA device, or RuntimeError saying plainly that there is no usable GPU."""
    global _gpu_ok
    try:
        import cupy
    except ImportError:
        raise RuntimeError("cugemm needs CuPy to run kernels: pip install 'cugemm[cuda13]' "
                           "(or '[cuda12]' for a CUDA 12 driver)") from None
    if _gpu_ok:
        return cupy.cuda.runtime.getDevice()
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # no driver, a driver too old for this CuPy, ...
        raise RuntimeError(f"cugemm: no usable CUDA GPU ({str(e).strip() or type(e).__name__}). "
                           "Running kernels needs an NVIDIA GPU and driver; `python -m cugemm compile` "
                           "works without one.") from None
    if count == 0:
        raise RuntimeError("cugemm: no CUDA GPU found; running kernels needs one "
                           "(`python -m cugemm compile` works without)")
    _gpu_ok = True
    return cupy.cuda.runtime.getDevice()


def _cupy_view(x, op: Operand):
    """A CuPy array over the memory of a __cuda_array_interface__ object, with its real dtype
    (a torch bfloat16 tensor reports a 2-byte void)."""
    import cupy

    arr = cupy.asarray(x)
    if op.dtype is not None and arr.dtype != op.dtype.numpy:
        arr = arr.view(op.dtype.numpy)
    return arr


def run(name, a, b, out=None):
    """C = A @ B with variant `name`, on the current CuPy stream; returns a cupy.ndarray (`out`, or a
    CuPy view of it, if given).

    A is MxK, B is KxN, in the variant's layout (row-major; column-major for the sgemm_cm family)
    and input dtype. CuPy arrays and `__cuda_array_interface__` objects (e.g. torch tensors) are used
    in place; DLPack-only objects are wrapped by CuPy. Raises before launching when the inputs break
    one of the variant's rules (see check_operands); M, N or K of 0 need no launch.
    """
    v = get_variant(name)
    cupy = sys.modules.get("cupy")
    if cupy is None or type(a) is not cupy.ndarray:
        a = a if hasattr(a, "__cuda_array_interface__") else _from_dlpack(a)
    if cupy is None or type(b) is not cupy.ndarray:
        b = b if hasattr(b, "__cuda_array_interface__") else _from_dlpack(b)
    if out is not None and (cupy is None or type(out) is not cupy.ndarray):
        out = out if hasattr(out, "__cuda_array_interface__") else _from_dlpack(out)
    A, B = describe(a, "A", v.name), describe(b, "B", v.name)
    O = None if out is None else describe(out, "out", v.name)
    M, N, K = check_operands(v, A, B, O)
    dev = _cuda_device()
    import cupy

    if out is None:
        out = cupy.empty((M, N), dtype=v.dt_out.numpy, order="F" if v.layout == "col" else "C")
        O = Operand((M, N), v.dt_out, "", out.strides, out.data.ptr, False, v.layout == "row",
                    v.layout == "col")
    elif type(out) is not cupy.ndarray:
        out = _cupy_view(out, O)
    return launch(v, a, b, out, A, B, O, M, N, K, dev)


def launch(v: Variant, a, b, out, A: Operand, B: Operand, O: Operand, M: int, N: int, K: int,
           dev: int | None = None, pdl: bool = False):
    """Launch `v` on operands already checked (check_operands) and described (A, B, O); `out` a
    cupy.ndarray; `dev` the current device when the caller knows it. The first launch on a device
    checks the fit and loads the kernel. pdl=True (and v.pdl): with programmatic dependent launch
    (cugemm/pdl.py), for a kernel that follows cugemm.matmul's relayout in the stream."""
    import cupy

    if M == 0 or N == 0:
        return out
    if K == 0:  # an empty sum: zeros (through an integer view: CuPy may not fill bfloat16)
        out.view(cupy.uint16 if v.dt_out.itemsize == 2 else cupy.uint32)[...] = 0
        return out
    if dev is None:
        dev = cupy.cuda.runtime.getDevice()
    plan = v._launch.get(dev)
    if plan is None:  # first launch of this variant on this device: check the fit, load the kernel
        info = device_info(dev)
        v.check_device(info.cc, info.smem_optin)
        from . import jit

        plan = v._launch[dev] = (jit.get_function(v, dev), info, {})
    fn, info, grids = plan
    grid = grids.get((M, N, K))
    if grid is None:
        if len(grids) > 4096:  # a bounded memo of the shapes this variant ran on
            grids.clear()
        grid = grids[(M, N, K)] = v.grid(M, N, K, info)
    if pdl and v.pdl:
        from . import pdl as pdl_

        args = (np.uint64(A.ptr), np.uint64(B.ptr), np.uint64(O.ptr), np.int32(M), np.int32(N), np.int32(K))
        pdl_.launch(fn.kernel.ptr, grid, v.block, v.smem_dynamic, cupy.cuda.get_current_stream().ptr,
                    args + v.extra_args(A, B, O, M, N, K, raw=True))
        return out
    # CuPy arrays go as themselves (CuPy reads their pointers in C), others as raw addresses; a
    # strided variant gets raw addresses too (CuPy would pass a view's pointer the same way)
    args = (a if type(a) is cupy.ndarray else np.uint64(A.ptr),
            b if type(b) is cupy.ndarray else np.uint64(B.ptr),
            out, np.int32(M), np.int32(N), np.int32(K))
    if v.args_fn is not None:
        args += v.extra_args(A, B, O, M, N, K)
    fn(grid, v.block, args, shared_mem=v.smem_dynamic)
    return out
