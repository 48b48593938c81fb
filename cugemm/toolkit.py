"""Finding the CUDA pieces the JIT needs: the CUDA headers kernels include, the disassembler, the GPU.

Headers: a kernel source names what it needs in its `#include <...>` lines; some of those pull in
more (`mma.h` -> `crt/mma.h`, `cooperative_groups.h` -> `nv/target`). Each header is looked for in
these places, in order: CUGEMM_CUDA_INCLUDE, $CUDA_PATH/include, $CUDA_HOME/include, CuPy's CUDA
path, /usr/local/cuda/include, then the include folders of NVIDIA's pip wheels (nvidia/cu13/include
for CUDA 13; nvidia/<component>/include, one per wheel, for CUDA 12; CCCL's own folder). One folder
that holds every header is preferred; otherwise each header comes from the first folder that has it
and every such folder is passed to NVRTC.

Settings (all optional):
  CUGEMM_CUDA_INCLUDE   a directory (or several, separated by ':') searched first
  CUGEMM_CUDA_SEARCH=pip  search the pip wheels only (not CUDA_PATH, CUDA_HOME, CuPy's path or
                        /usr/local/cuda): proves that an extra alone is enough (CI uses it)
"""
from __future__ import annotations

import functools
import glob
import os
import shutil
import sys
from pathlib import Path
from typing import NamedTuple

# headers that a header needs in turn (not visible in the kernel source)
IMPLIED_HEADERS = {
    "mma.h": ("crt/mma.h",),
    "cooperative_groups.h": ("nv/target",),
    "cuda_fp16.h": ("cuda_fp16.hpp",),
    "cuda_bf16.h": ("cuda_bf16.hpp",),
}


def have_gpu() -> bool:
    """True when CuPy is importable and at least one CUDA device answers (gpu_problem() is None)."""
    return gpu_problem() is None


# What every entry point that needs a GPU says when there is none (device.current raises it;
# matmul, run, explain, tune and bench all go through that function).
NEEDS_GPU = ("running kernels (matmul, run, explain, tune, bench) needs an NVIDIA GPU and its driver; "
             "`python -m cugemm compile` works without one")
NEEDS_CUPY = ("running kernels needs CuPy: pip install 'cugemm[cuda13]' (or '[cuda12]' for a CUDA 12 "
              "driver)")
_CUDA_ERROR_NO_DEVICE, _CUDA_ERROR_STUB_LIBRARY, _CUDA_ERROR_INSUFFICIENT_DRIVER = 100, 34, 35


class DriverProbe(NamedTuple):
    """What the NVIDIA driver library itself says, read through ctypes (no CUDA runtime involved).

    library  the file that loaded ('libcuda.so.1'), '' when none did
    init     cuInit(0)'s CUresult (0: success; 100: no device; 34: CUDA's stub library)
    version  cuDriverGetVersion: the newest CUDA the driver supports (12040 for 12.4), 0 unknown
    devices  cuDeviceGetCount after a successful cuInit, else 0
    error    cuInit's error name when it failed ('CUDA_ERROR_NO_DEVICE'), else ''"""

    library: str = ""
    init: int = -1
    version: int = 0
    devices: int = 0
    error: str = ""


def _driver_library_names() -> tuple:
    return ("nvcuda.dll",) if sys.platform == "win32" else ("libcuda.so.1",)


def probe_driver() -> DriverProbe:
    """Load the NVIDIA driver library (never CUDA's stub: only libcuda.so.1, which the driver
    installs) and ask it for its version and devices."""
    import ctypes

    for name in _driver_library_names():
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        try:
            version, count = ctypes.c_int(0), ctypes.c_int(0)
            if lib.cuDriverGetVersion(ctypes.byref(version)) != 0:
                version = ctypes.c_int(0)
            init = int(lib.cuInit(0))
            if init == 0 and lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
                count = ctypes.c_int(0)
            error = ""
            if init != 0:
                text = ctypes.c_char_p()
                if lib.cuGetErrorName(init, ctypes.byref(text)) == 0 and text.value:
                    error = text.value.decode(errors="replace")
            return DriverProbe(name, init, int(version.value), int(count.value), error)
        except (AttributeError, OSError):  # not a CUDA driver after all
            return DriverProbe(name, -1, 0, 0, f"{name} has no CUDA driver entry points")
    return DriverProbe()


def _cuda_version(v: int) -> str:
    return f"{v // 1000}.{v % 1000 // 10}"


def no_gpu_message(driver: DriverProbe, runtime_version: int = 0, error_status: int | None = None,
                   error_text: str = "") -> str:
    """The one message for a machine where CuPy finds no usable GPU, from what the driver library
    says (`driver`) and what CuPy's CUDA runtime said (its version, the error's status and text):
    no driver at all or no device is "no CUDA GPU found" and never a version complaint; a driver
    that is there but older than the runtime is named as such, with both versions."""
    if not driver.library:
        return (f"no CUDA GPU found: no NVIDIA GPU/driver on this machine ({'/'.join(_driver_library_names())} "
                f"is not installed); {NEEDS_GPU}")
    if driver.init == _CUDA_ERROR_STUB_LIBRARY:
        return (f"no CUDA GPU found: no NVIDIA driver on this machine ({driver.library} is CUDA's stub "
                f"library, not a driver); {NEEDS_GPU}")
    if driver.init == _CUDA_ERROR_NO_DEVICE or (driver.init == 0 and driver.devices == 0):
        hidden = os.environ.get("CUDA_VISIBLE_DEVICES")
        why = f" (CUDA_VISIBLE_DEVICES={hidden!r} may hide them)" if hidden is not None else ""
        return f"no CUDA GPU found: the NVIDIA driver is installed but sees no GPU{why}; {NEEDS_GPU}"
    if driver.init != 0:  # the driver is there and fails on its own: its own words
        what = driver.error or f"error {driver.init}"
        return f"no usable CUDA GPU: the NVIDIA driver did not start (cuInit: {what}); {NEEDS_GPU}"
    if driver.version and runtime_version and driver.version < runtime_version and \
            (error_status == _CUDA_ERROR_INSUFFICIENT_DRIVER or driver.version // 1000 < runtime_version // 1000):
        major = driver.version // 1000
        other = (f", or install the CuPy of the driver's CUDA (pip install 'cugemm[cuda{major}]')"
                 if major in (12, 13) and major != runtime_version // 1000 else "")
        return (f"the NVIDIA driver is too old for this CuPy: it supports CUDA {_cuda_version(driver.version)}, "
                f"CuPy's runtime is CUDA {_cuda_version(runtime_version)}; upgrade the driver{other}")
    detail = f" (CuPy: {error_text.strip()})" if error_text.strip() else ""
    return f"no usable CUDA GPU{detail}; {NEEDS_GPU}"


_GPU_PROBLEM: list = []  # the cached answer of probe_gpu(), once asked


def probe_gpu(cupy) -> str | None:
    """None when `cupy` (the module, or a stand-in with its cuda.runtime) sees a device; otherwise
    the one-line reason (no_gpu_message). Not cached: gpu_problem() caches it."""
    try:
        if cupy.cuda.runtime.getDeviceCount() > 0:
            return None
        status, text = None, ""
    except Exception as e:  # no driver, no device, a driver too old for this CuPy, ...
        status, text = getattr(e, "status", None), str(e)
    try:
        runtime = int(cupy.cuda.runtime.runtimeGetVersion())
    except Exception:
        runtime = 0
    return no_gpu_message(probe_driver(), runtime, status, text)


def gpu_problem() -> str | None:
    """None when a CUDA GPU is usable through CuPy; otherwise the one-line reason (no CuPy, no
    driver, no device, a driver too old), the same for every entry point. The driver is asked once
    per process (the answer is cached); CuPy's presence each time (it costs nothing)."""
    try:
        import cupy
    except ImportError:
        return NEEDS_CUPY
    if not _GPU_PROBLEM:
        _GPU_PROBLEM.append(probe_gpu(cupy))
    return _GPU_PROBLEM[0]


def forget_gpu_problem() -> None:
    """Ask the driver again on the next gpu_problem() (tests; a process whose GPUs changed)."""
    _GPU_PROBLEM.clear()


@functools.lru_cache(maxsize=None)
def nvrtc_archs() -> tuple:
    """The compute capabilities this CuPy's NVRTC compiles for (e.g. (75, 80, ..., 121)); () when
    it cannot say (an older CuPy)."""
    from cupy.cuda import nvrtc

    try:
        return tuple(int(a) for a in nvrtc.getSupportedArchs())
    except Exception:
        return ()


def nvrtc_version() -> str:
    from cupy.cuda import nvrtc

    try:
        major, minor = nvrtc.getVersion()
        return f"{major}.{minor}"
    except Exception:
        return "?"


@functools.lru_cache(maxsize=None)
def nvrtc_major() -> int:
    """The major version of CuPy's NVRTC (12, 13, ...); 0 when it cannot say."""
    version = nvrtc_version()
    return int(version.split(".")[0]) if version != "?" else 0


def device_cc() -> int:
    """Compute capability of the current CuPy device as an int (90 for an H100)."""
    import cupy
    return int(cupy.cuda.Device().compute_capability)


def _site_dirs() -> list[str]:
    dirs = list(sys.path)
    try:
        import site
        dirs += site.getsitepackages() + [site.getusersitepackages()]
    except Exception:
        pass
    return [d for d in dict.fromkeys(dirs) if d and os.path.isdir(d)]


def _pip_include_dirs() -> list[Path]:
    """Include folders of NVIDIA's pip wheels: nvidia/cu13/include (CUDA 13), nvidia/<component>/include
    (CUDA 12), and CCCL's nested folder (nvidia/.../include/cccl) where the CCCL wheel puts nv/target."""
    out = []
    for site in _site_dirs():
        for pattern in ("nvidia/*/include", "nvidia/*/include/cccl"):
            out += [Path(p) for p in sorted(glob.glob(os.path.join(site, pattern)))]
    return out


def candidate_include_dirs() -> list[tuple[str, Path]]:
    """Places that may hold the CUDA headers, in search order, each with where it came from."""
    out: list[tuple[str, Path]] = []
    env = os.environ.get("CUGEMM_CUDA_INCLUDE")
    if env:
        out += [("CUGEMM_CUDA_INCLUDE", Path(p)) for p in env.split(os.pathsep) if p]
    if os.environ.get("CUGEMM_CUDA_SEARCH", "") != "pip":
        for var in ("CUDA_PATH", "CUDA_HOME"):
            if os.environ.get(var):
                out.append((var, Path(os.environ[var]) / "include"))
        try:
            import cupy
            p = cupy.cuda.get_cuda_path()
            if p:
                out.append(("cupy.cuda.get_cuda_path()", Path(p) / "include"))
        except Exception:
            pass
        out.append(("/usr/local/cuda", Path("/usr/local/cuda/include")))
        out.append(("/usr/local/cuda", Path("/usr/local/cuda/include/cccl")))
    out += [("pip nvidia wheel", p) for p in _pip_include_dirs()]
    seen, uniq = set(), []
    for origin, path in out:
        if path not in seen and path.is_dir():
            seen.add(path)
            uniq.append((origin, path))
    return uniq


def with_implied(headers) -> tuple[str, ...]:
    """`headers` and every header they pull in (IMPLIED_HEADERS), in a stable order."""
    out: list[str] = []
    todo = list(headers)
    while todo:
        h = todo.pop(0)
        if h not in out:
            out.append(h)
            todo += IMPLIED_HEADERS.get(h, ())
    return tuple(out)


@functools.lru_cache(maxsize=None)
def find_cuda_includes(required: tuple[str, ...]) -> tuple[str, ...]:
    """The include directories that together hold every header in `required` and those they imply.

    () when nothing is required. Raises FileNotFoundError naming every place searched, the missing
    headers and how to fix it."""
    needed = with_implied(required)
    if not needed:
        return ()
    places = candidate_include_dirs()
    for _, path in places:  # one folder with everything: no mixing of installations
        if all((path / h).exists() for h in needed):
            return (str(path),)
    chosen, missing = [], []
    for h in needed:
        hit = next((str(p) for _, p in places if (p / h).exists()), None)
        if hit is None:
            missing.append(h)
        elif hit not in chosen:
            chosen.append(hit)
    if missing:
        searched = "\n  ".join(f"{p} ({origin})" for origin, p in places) or "(no CUDA include folder found)"
        raise FileNotFoundError(
            f"cugemm: no CUDA include directory has {', '.join(missing)} (needed by the kernel). "
            f"Searched:\n  {searched}\nInstall a CUDA toolkit, or the wheels of cugemm's extra for your "
            "CUDA (pip install 'cugemm[cuda13]' or 'cugemm[cuda12]'), or point CUGEMM_CUDA_INCLUDE at "
            "a directory that has them.")
    return tuple(chosen)


def find_tool(name: str) -> str | None:
    """A CUDA command-line tool (cuobjdump, nvdisasm): on PATH, in the toolkit, or in a pip wheel."""
    hit = shutil.which(name)
    if hit:
        return hit
    roots = [os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda"]
    for root in filter(None, roots):
        p = Path(root) / "bin" / name
        if p.is_file():
            return str(p)
    for site in _site_dirs():
        for p in sorted(glob.glob(os.path.join(site, "nvidia", "*", "bin", name))):
            return p
    return None
