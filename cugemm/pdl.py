"""Programmatic dependent launch (PDL, sm_90): a kernel launch that may begin while the kernel before
it in the stream is still running.

cugemm.matmul's copy plans run two kernels back to back: the relayout of the operands
(kernels/util/relayout.cu) and the GEMM. Launched plainly, the GEMM's blocks are only scheduled once
the last relayout block has finished, and each then sets up (shared-memory carve-up, barriers, the
cluster's handshake, tensor-map prefetch) before its first load. Launched with the driver's
CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, a GEMM block starts on an SM as soon as the
relayout blocks there have left (relayout calls griddepcontrol.launch_dependents first thing), does
its set-up beside the relayout's tail, and waits in griddepcontrol.wait (kernels/lib/core.cuh,
grid_dependency_wait) until the relayout has completed and its writes are visible. Only kernels
that wait there before touching global memory may be launched this way: Variant.pdl says which.

CuPy's launch takes no launch attributes, so this calls the driver's cuLaunchKernelEx through ctypes
(libcuda, which any CUDA process has loaded), with the CUfunction CuPy loaded."""
import ctypes

import numpy as np

CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6


class LaunchAttribute(ctypes.Structure):
    """CUlaunchAttribute: an id, padding to 8 bytes, a 64-byte value union."""
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_ubyte * 64)]


class LaunchConfig(ctypes.Structure):
    """CUlaunchConfig (cuda.h)."""
    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
                ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(LaunchAttribute)), ("numAttrs", ctypes.c_uint)]


PDL_ATTRIBUTE = LaunchAttribute(CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
PDL_ATTRIBUTE.value[0] = 1  # programmaticStreamSerializationAllowed
_launch_ex = None


def driver_launch():
    """cuLaunchKernelEx from libcuda (loaded once), with its argument types declared."""
    global _launch_ex
    if _launch_ex is None:
        fn = ctypes.CDLL("libcuda.so.1").cuLaunchKernelEx
        fn.argtypes = [ctypes.POINTER(LaunchConfig), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        fn.restype = ctypes.c_int
        _launch_ex = fn
    return _launch_ex


def param(x):
    """A kernel argument as the ctypes object whose bytes the driver copies: an integer address
    (np.uint64, or a device pointer as int) as 8 bytes, np.int32 as 4; a TensorMap as its host bytes
    (its `address`, not copied here)."""
    if isinstance(x, np.int32):
        return ctypes.c_int32(int(x))
    if isinstance(x, (np.uint64, int)):
        return ctypes.c_uint64(int(x))
    address = getattr(x, "address", None)
    if address is not None:
        return address
    raise TypeError(f"cugemm.pdl: no PDL launch for a kernel argument of type {type(x).__name__}")


def launch(function_ptr: int, grid, block, shared_mem: int, stream_ptr: int, args) -> None:
    """cuLaunchKernelEx of the CUfunction `function_ptr` with PDL allowed; `args` as param() takes
    them. RuntimeError with the driver's error code when it refuses."""
    objs = [param(x) for x in args]
    ptrs = (ctypes.c_void_p * len(objs))(*[o if isinstance(o, int) else ctypes.addressof(o) for o in objs])
    cfg = LaunchConfig(*grid, *block, shared_mem, stream_ptr, ctypes.pointer(PDL_ATTRIBUTE), 1)
    err = driver_launch()(ctypes.byref(cfg), function_ptr, ptrs, None)
    if err:
        raise RuntimeError(f"cugemm.pdl: cuLaunchKernelEx failed with CUresult {err}")
