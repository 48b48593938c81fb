"""Input validation and the kernel launch.

Validation is plain Python over array metadata (shape, dtype, strides, pointer), so it runs, and is
tested, on a machine without a GPU: objects that expose `__cuda_array_interface__` are described
without touching the device.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .registry import get_variant
from .variant import Variant


class _Operand(NamedTuple):
    shape: tuple
    dtype: np.dtype
    c_contiguous: bool
    f_contiguous: bool
    ptr: int
    readonly: bool


def _contiguous(shape, strides, itemsize, order) -> bool:
    """Whether `strides` (bytes; None = C order) lay `shape` out densely in `order` ('C' or 'F')."""
    if strides is None:
        strides = []
        step = itemsize
        for dim in reversed(shape):
            strides.insert(0, step)
            step *= dim
    dims = list(zip(shape, strides))
    expected = itemsize
    for dim, stride in (reversed(dims) if order == "C" else dims):
        if dim > 1 and stride != expected:
            return False
        expected *= dim
    return True


def _describe(x, what: str, vname: str) -> _Operand:
    """Metadata of a device array: a cupy.ndarray or anything with __cuda_array_interface__."""
    import sys

    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(x, cupy.ndarray):
        flags = x.flags
        return _Operand(x.shape, x.dtype, flags.c_contiguous, flags.f_contiguous, x.data.ptr, False)
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        shape = tuple(cai["shape"])
        dtype = np.dtype(cai["typestr"])
        ptr, readonly = cai["data"]
        strides = cai.get("strides")
        return _Operand(shape, dtype, _contiguous(shape, strides, dtype.itemsize, "C"),
                        _contiguous(shape, strides, dtype.itemsize, "F"), int(ptr or 0), bool(readonly))
    if isinstance(x, np.ndarray):
        raise TypeError(f"{vname}: {what} is a host numpy array; pass a GPU array (cupy.asarray(x))")
    raise TypeError(
        f"{vname}: {what} must be a GPU array (cupy.ndarray, or an object with "
        f"__cuda_array_interface__ or __dlpack__), got {type(x).__name__}")


def check_inputs(v: Variant, a, b, out=None) -> tuple[int, int, int]:
    """Check A, B (and out) against variant `v`; return (M, N, K). Raises TypeError / ValueError
    naming the variant and the broken rule. Needs no GPU."""
    A = _describe(a, "A", v.name)
    B = _describe(b, "B", v.name)
    for what, op in (("A", A), ("B", B)):
        if op.dtype != v._np_in:
            raise TypeError(f"{v.name}: {what} has dtype {op.dtype}, the variant takes {v.dtype_in}")
        if len(op.shape) != 2:
            raise ValueError(f"{v.name}: {what} must be 2-D, got shape {op.shape}")
    (M, K), (K2, N) = A.shape, B.shape
    if K != K2:
        raise ValueError(f"{v.name}: inner dimensions differ: A is {M}x{K}, B is {K2}x{N}")
    ops = [("A", A), ("B", B)]
    if out is not None:
        O = _describe(out, "out", v.name)
        if O.dtype != v._np_out:
            raise TypeError(f"{v.name}: out has dtype {O.dtype}, the variant writes {v.dtype_out}")
        if O.shape != (M, N):
            raise ValueError(f"{v.name}: out has shape {O.shape}, expected {(M, N)}")
        if O.readonly:
            raise ValueError(f"{v.name}: out is read-only")
        end = O.ptr + M * N * O.dtype.itemsize
        for what, op in (("A", A), ("B", B)):
            size = op.shape[0] * op.shape[1] * op.dtype.itemsize
            if M * N and size and O.ptr < op.ptr + size and op.ptr < end:
                raise ValueError(f"{v.name}: out overlaps {what}; the kernel would read what it overwrites")
        ops.append(("out", O))
    if M and N and K:
        for what, op in ops:
            if v.layout == "row" and not op.c_contiguous:
                raise ValueError(f"{v.name}: {what} must be C-contiguous (row-major); "
                                 "make a contiguous copy first (cupy.ascontiguousarray)")
            if v.layout == "col" and not op.f_contiguous:
                raise ValueError(f"{v.name}: {what} must be F-contiguous (column-major): this variant "
                                 "takes column-major matrices (cupy.asfortranarray)")
            if op.ptr % v.align:
                raise ValueError(f"{v.name}: {what} data pointer {op.ptr:#x} is not {v.align}-byte "
                                 f"aligned (rule: the kernel's vector loads need it); copy it to a "
                                 "fresh array or use an any-shape variant")
    v.check_shape(M, N, K)
    return M, N, K


_DLPACK_CUDA, _DLPACK_CUDA_MANAGED = 2, 13  # DLDeviceType codes


def _as_cupy(x):
    """A cupy view of `x` without a copy (cupy arrays, __cuda_array_interface__, DLPack)."""
    import cupy

    if isinstance(x, (cupy.ndarray, np.ndarray)):
        return x  # host arrays: check_inputs raises the TypeError
    if hasattr(x, "__cuda_array_interface__"):
        return cupy.asarray(x)
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        if x.__dlpack_device__()[0] in (_DLPACK_CUDA, _DLPACK_CUDA_MANAGED):
            return cupy.from_dlpack(x)
    return x  # check_inputs raises the TypeError


_device_cache: dict[int, tuple[int, int]] = {}  # device id -> (compute capability, opt-in smem bytes)


def run(name, a, b, out=None):
    """C = A @ B with variant `name`, on the current CuPy stream; returns a cupy.ndarray (`out` if given).

    A is MxK, B is KxN, both row-major and of the variant's input dtype. Raises before launching
    when the inputs break one of the variant's rules (see check_inputs); M, N or K of 0 need no launch.
    """
    import cupy

    from . import jit

    v = get_variant(name)
    if type(a) is not cupy.ndarray:
        a = _as_cupy(a)
    if type(b) is not cupy.ndarray:
        b = _as_cupy(b)
    if out is not None and type(out) is not cupy.ndarray:
        out = _as_cupy(out)
    M, N, K = check_inputs(v, a, b, out)
    if out is None:
        out = cupy.empty((M, N), dtype=v._np_out, order="F" if v.layout == "col" else "C")
    if M == 0 or N == 0:
        return out
    if K == 0:
        out.fill(0)
        return out
    dev = cupy.cuda.runtime.getDevice()
    info = _device_cache.get(dev)
    if info is None:
        rt = cupy.cuda.runtime
        info = _device_cache[dev] = (int(cupy.cuda.Device(dev).compute_capability),
                                     rt.deviceGetAttribute(rt.cudaDevAttrMaxSharedMemoryPerBlockOptin, dev))
    v.check_arch(info[0])
    v.check_smem(info[1])
    fn = jit.get_function(v, dev)
    args = (a, b, out, np.int32(M), np.int32(N), np.int32(K))
    if v.args_fn is not None:
        args += v.extra_args(M, N, K)
    fn(v.grid(M, N), v.block, args, shared_mem=v.smem_dynamic)
    return out
