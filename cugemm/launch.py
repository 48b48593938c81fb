"""Input validation and the kernel launch.

Validation is plain Python over operand records (cugemm.operand: shape, dtype, strides, pointer):
objects that expose `__cuda_array_interface__` are described without touching CuPy or the device,
so the checks run, and are tested, on a machine without a GPU. The kernel gets raw device pointers;
only operands that speak DLPack alone are wrapped by CuPy first. This is cugemm.run's path (one
named variant); cugemm.matmul plans and replays its launches in cugemm.serve.
"""
from __future__ import annotations

import sys
import numpy as np

from . import device as _device
from . import workspace
from .operand import Operand, describe, dtype_name, extent, layout_rule, overlaps
from .registry import get_variant
from .variant import Variant


def check_operands(v: Variant, A: Operand, B: Operand, O: Operand | None = None) -> tuple[int, int, int]:
    """Check described operands against variant `v`; return (M, N, K). Raises TypeError / ValueError
    naming the variant and the broken rule. Needs no GPU."""
    for what, op, dt in (("A", A, v.dt_in), ("B", B, v.dt_b)):
        if op.dtype is not dt:
            raise TypeError(f"{v.name}: {what} has dtype {dtype_name(op)}, the variant takes {dt.name}")
        if len(op.shape) != 2:
            raise ValueError(f"{v.name}: {what} must be 2-D, got shape {op.shape}")
    (M, K), (K2, N) = A.shape, B.shape
    if K != K2:
        raise ValueError(f"{v.name}: inner dimensions differ: A is {M}x{K}, B is {K2}x{N}")
    ops = [("A", A, v.a_layout, v.align), ("B", B, v.b_layout, v.align)]
    if O is not None:
        if O.dtype is not v.dt_out:
            raise TypeError(f"{v.name}: out has dtype {dtype_name(O)}, the variant writes {v.dtype_out}")
        if tuple(O.shape) != (M, N):
            raise ValueError(f"{v.name}: out has shape {tuple(O.shape)}, expected {(M, N)}")
        if O.readonly:
            raise ValueError(f"{v.name}: out is read-only")
        o_ext = extent(O.shape, O.strides, O.ptr, v.dt_out.itemsize)
        for what, op in (("A", A), ("B", B)):
            if M * N and overlaps(o_ext, extent(op.shape, op.strides, op.ptr, v.dt_in.itemsize)):
                raise ValueError(f"{v.name}: out overlaps {what}; the kernel would read what it overwrites")
        ops.append(("out", O, v.layout, v.c_align))
    if M and N and K:
        for what, op, layout, align in ops:
            rule = layout_rule(op.shape, op.strides, (v.dt_out if what == "out" else v.dt_in).itemsize, layout,
                               v.strided, align)
            if rule:
                raise ValueError(f"{v.name}: {what} {rule}")
            if op.ptr % align:
                raise ValueError(f"{v.name}: {what} data pointer {op.ptr:#x} is not {align}-byte "
                                 f"aligned (rule: the kernel's vector loads need it); copy it to a "
                                 "fresh array or use an any-shape variant")
    v.check_dims(M, N, K)  # the leading dimensions: layout_rule above
    return M, N, K


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
    dev = _device.current()
    import cupy

    if out is None:
        out = cupy.empty((M, N), dtype=v.dt_out.numpy, order="F" if v.layout == "col" else "C")
        O = Operand((M, N), v.dt_out, "", out.strides, out.data.ptr, False, v.layout == "row",
                    v.layout == "col")
    elif type(out) is not cupy.ndarray:
        out = _cupy_view(out, O)
    return launch(v, a, b, out, A, B, O, M, N, K, dev)


def loaded(v: Variant, dev: int) -> tuple:
    """(CuPy kernel function, Device record, grid memo) of `v` on device `dev`: the first call on a
    device checks the fit and loads (compiling if needed) the kernel."""
    state = v._launch.get(dev)
    if state is None:
        info = _device.get(dev)
        v.check_device(info.cc, info.smem_optin)
        from . import jit

        state = v._launch[dev] = (jit.get_function(v, dev), info, {})
    return state


def grid_of(v: Variant, M: int, N: int, K: int, state: tuple) -> tuple:
    """v's grid for an M x N x K launch (memoised in the variant's per-device state)."""
    _, info, grids = state
    grid = grids.get((M, N, K))
    if grid is None:
        if len(grids) > 4096:  # a bounded memo of the shapes this variant ran on
            grids.clear()
        grid = grids[(M, N, K)] = v.grid(M, N, K, info)
    return grid


def launch(v: Variant, a, b, out, A: Operand, B: Operand, O: Operand, M: int, N: int, K: int,
           dev: int | None = None):
    """Launch `v` on operands already checked (check_operands) and described (A, B, O), on the
    current CuPy stream; `out` a cupy.ndarray; `dev` the current device when the caller knows it. A
    variant with a workspace gets the one held for this stream (cugemm/workspace.py)."""
    import cupy

    if M == 0 or N == 0:
        return out
    if K == 0:  # an empty sum: zeros (through an integer view: CuPy may not fill bfloat16)
        out.view(cupy.uint16 if v.dt_out.itemsize == 2 else cupy.uint32)[...] = 0
        return out
    if dev is None:
        dev = cupy.cuda.runtime.getDevice()
    state = loaded(v, dev)
    fn, info, _ = state
    grid = grid_of(v, M, N, K, state)
    work = None
    if v.workspace_fn is not None:
        work = workspace.held("cupy", dev, cupy.cuda.get_current_stream().ptr,
                              v.workspace_fn(v, M, N, K, info), workspace.cupy_alloc)
    # CuPy arrays go as themselves (CuPy reads their pointers in C), others as raw addresses; a
    # strided variant gets raw addresses too (CuPy would pass a view's pointer the same way)
    args = (a if type(a) is cupy.ndarray else np.uint64(A.ptr),
            b if type(b) is cupy.ndarray else np.uint64(B.ptr),
            out, np.int32(M), np.int32(N), np.int32(K))
    if v.args_fn is not None:
        args += v.extra_args(A, B, O, M, N, K, work=work, dev=info)
    fn(grid, v.block, args, shared_mem=v.smem_dynamic)
    return out
