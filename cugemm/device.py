"""The GPU record: what planning, grids and launches ask of a device, read from the device itself.

    dev = cugemm.device.get()        # the current device's record (cached per device id)
    dev.cc, dev.sms, dev.smem_optin, dev.name

One record serves everyone: cugemm.select ranks plans with it, a variant's grid function sizes a
persistent grid from `sms`, the launcher checks the fit against `cc` and `smem_optin`, and the tuning
tables are keyed by `name`. Nothing is assumed of a GPU that was not read from it (no default SM
count): code that has no device in hand asks `get()`. Tests build records by hand
(`Device(90, 132, 232448, "NVIDIA H100 80GB HBM3")`).
"""
from __future__ import annotations

from typing import NamedTuple


class Device(NamedTuple):
    """Compute capability (e.g. 90), multiprocessor count, opt-in shared memory per block (bytes) and
    the device's name ('' when built by hand without one)."""

    cc: int
    sms: int
    smem_optin: int
    name: str = ""


_CACHE: dict[int, Device] = {}
_gpu_ok = False


def current() -> int:
    """The current CUDA device's id (CuPy's notion, which cugemm's launches use), or RuntimeError with
    the one message for a machine that cannot run kernels (cugemm.toolkit.gpu_problem: no CuPy, no
    NVIDIA GPU/driver, a driver too old). Every entry point that needs a GPU asks here: matmul, run,
    explain, tune, the bench and the CLI."""
    global _gpu_ok
    if not _gpu_ok:
        from . import toolkit

        problem = toolkit.gpu_problem()
        if problem:
            raise RuntimeError(f"cugemm: {problem}")
        _gpu_ok = True
    import cupy

    return cupy.cuda.runtime.getDevice()


def forget_gpu_check() -> None:
    """Make the next current() check the GPU again (toolkit.gpu_problem) instead of trusting an
    earlier answer (tests; a process whose GPUs changed)."""
    global _gpu_ok
    _gpu_ok = False


def get(device_id: int | None = None) -> Device:
    """The record of device `device_id` (default: the current one), read once and cached."""
    if device_id is None:
        device_id = current()
    dev = _CACHE.get(device_id)
    if dev is None:
        import cupy

        rt = cupy.cuda.runtime
        attr = rt.deviceGetAttribute
        name = rt.getDeviceProperties(device_id)["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
        dev = _CACHE[device_id] = Device(int(cupy.cuda.Device(device_id).compute_capability),
                                         attr(rt.cudaDevAttrMultiProcessorCount, device_id),
                                         attr(rt.cudaDevAttrMaxSharedMemoryPerBlockOptin, device_id), name)
    return dev
