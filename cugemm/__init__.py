"""cugemm: a JIT-compiled zoo of CUDA GEMM kernels, each a named variant you can run and time.

    import cupy, cugemm
    a = cupy.random.randn(4096, 1024, dtype=cupy.float32)
    b = cupy.random.randn(1024, 4096, dtype=cupy.float32)
    c = cugemm.run("sgemm_t_8x8_sliced_k16_f32x4_bcf_dbuf", a, b)

Public API: run, variants, get_variant, compile, Variant, CompileError, CompileReport.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from .jit import CompileError, CompileReport
from .launch import run
from .registry import get_variant, variants
from .variant import Variant

__all__ = ["run", "variants", "get_variant", "compile", "Variant", "CompileError", "CompileReport"]
__version__ = "0.1.0"


def default_arch() -> str:
    """The current GPU's arch ('sm_90') when a GPU is present, else 'sm_90'."""
    from . import toolkit

    return f"sm_{toolkit.device_cc()}" if toolkit.have_gpu() else "sm_90"


def compile(names=None, arch: str | None = None, *, workers: int = 2) -> list[CompileReport]:
    """Compile variants offline through NVRTC (no GPU needed) and return their ptxas reports.

    names  None (every variant), a glob string ('sgemm_t_8x8*'), or a list of names
    arch   'sm_80', 'sm_90', 'sm_90a', ...; None: the current GPU's arch, or sm_90 without a GPU.
           The arch names a chip: each variant compiles for the target it claims on that chip (an
           sm_90a-only wgmma variant uses sm_90a under 'sm_90'); a variant with no claim on the chip
           (e.g. a Hopper-only variant under 'sm_80') raises ValueError.
    Raises CompileError (variant name + NVRTC log) on the first failure.
    """
    from . import jit, toolkit

    if names is None or isinstance(names, str):
        chosen = variants(names)
        if isinstance(names, str) and not chosen:
            raise KeyError(f"no cugemm variant matches {names!r}")
    else:
        chosen = [get_variant(n) for n in names]
    target = arch or default_arch()
    number, suffix = toolkit.parse_arch(target)

    def arch_for(v):
        # the arch names a chip: each variant compiles for its own claim on it (sm_90 -> sm_90a
        # for wgmma variants, sm_90a -> sm_90 for the portable ones)
        if target in v.archs:
            return target
        for claim in v.archs:
            if toolkit.parse_arch(claim)[0] == number:
                return claim
        raise ValueError(f"{v.name} claims {', '.join(v.archs)}, not {target}")

    jobs = [(v, arch_for(v)) for v in chosen]
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(lambda job: jit.compile_offline(*job), jobs))
