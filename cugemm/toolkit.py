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

# headers that a header needs in turn (not visible in the kernel source)
IMPLIED_HEADERS = {
    "mma.h": ("crt/mma.h",),
    "cooperative_groups.h": ("nv/target",),
    "cuda_fp16.h": ("cuda_fp16.hpp",),
    "cuda_bf16.h": ("cuda_bf16.hpp",),
}


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
