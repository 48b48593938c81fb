"""Finding the CUDA pieces the JIT needs: NVRTC (through CuPy), the CUDA headers, arch strings.

Settings (all optional):
  CUGEMM_CUDA_INCLUDE   a directory to search first for the CUDA headers the kernels include.
"""
from __future__ import annotations

import functools
import glob
import os
import re
import sys
from pathlib import Path

_ARCH_RE = re.compile(r"^sm_(\d+)(a?)$")


def parse_arch(arch: str | int) -> tuple[int, str]:
    """'sm_90a' -> (90, 'a'); 'sm_80' -> (80, ''); 90 or '90' -> (90, '')."""
    if isinstance(arch, int) or (isinstance(arch, str) and arch.isdigit()):
        return int(arch), ""
    m = _ARCH_RE.match(str(arch))
    if not m:
        raise ValueError(f"arch must look like 'sm_80', 'sm_90' or 'sm_90a', got {arch!r}")
    return int(m.group(1)), m.group(2)


def arch_string(cc: int, suffix: str = "") -> str:
    return f"sm_{cc}{suffix}"


def have_gpu() -> bool:
    """True when CuPy is importable and at least one CUDA device answers."""
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def device_cc() -> int:
    """Compute capability of the current CuPy device as an int (90 for an H100)."""
    import cupy
    return int(cupy.cuda.Device().compute_capability)


def _candidate_include_dirs() -> list[tuple[str, Path]]:
    """Places that may hold the CUDA headers, in search order, each with where it came from."""
    out: list[tuple[str, Path]] = []
    env = os.environ.get("CUGEMM_CUDA_INCLUDE")
    if env:
        out.append(("CUGEMM_CUDA_INCLUDE", Path(env)))
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
    # pip wheels: nvidia/cu13/include (CUDA 13 layout), nvidia/<component>/include (CUDA 12 layout)
    for site in sys.path:
        for inc in sorted(glob.glob(os.path.join(site, "nvidia", "*", "include"))):
            out.append(("pip nvidia wheel", Path(inc)))
    seen, uniq = set(), []
    for origin, path in out:
        if path not in seen:
            seen.add(path)
            uniq.append((origin, path))
    return uniq


@functools.lru_cache(maxsize=None)
def find_cuda_include(required: tuple[str, ...]) -> str | None:
    """The first directory that holds every header in `required` (e.g. ('crt/mma.h',)).

    Returns None when nothing is required (NVRTC's built-in headers suffice). Raises
    FileNotFoundError naming every place searched and how to fix it when no directory has them all.
    """
    if not required:
        return None
    searched = []
    for origin, path in _candidate_include_dirs():
        searched.append(f"{path} ({origin})")
        if all((path / h).is_file() for h in required):
            return str(path)
    raise FileNotFoundError(
        "cugemm: no CUDA include directory has " + ", ".join(required) + ". Searched:\n  "
        + "\n  ".join(searched)
        + "\nInstall the CUDA toolkit headers (or the pip wheels of the cuda12/cuda13 extra) "
        "or point CUGEMM_CUDA_INCLUDE at a directory that has them."
    )
