"""One JIT path: kernel source text + compile options + arch + name expression.

On a GPU the inputs go through `cupy.RawModule(code, options, name_expressions)`, which keeps
CuPy's disk cache (keyed on the source string, so the project's headers are pasted into it first).
With no GPU the same inputs go through NVRTC directly (`cupy.cuda.nvrtc` needs no device) and give
a cubin plus the ptxas report: registers, shared memory, stack frame and spill bytes.

Settings:
  CUGEMM_CUDA_INCLUDE  directory searched first for CUDA headers (see toolkit.py)
  CUGEMM_LINEINFO=1    compile with -lineinfo (for profilers)
  CUGEMM_DEBUG=1       print each kernel's options and source to stderr before compiling
  CUGEMM_VERBOSE=1     print one line per compile (variant, arch, seconds)
"""
from __future__ import annotations

import os
import re
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from . import toolkit
from .registry import get_variant
from .variant import Variant

_HERE = Path(__file__).resolve().parent
# Installed wheel: cugemm/kernels (package data). Source tree or editable install: ../kernels.
KERNEL_DIR = next((p for p in (_HERE / "kernels", _HERE.parent / "kernels") if (p / "common.cuh").is_file()),
                  _HERE / "kernels")

# CuPy adds these to every NVRTC compile (RawModule without jitify); the offline path adds them too
# so both paths build the same code. -ftz=true flushes fp32 denormals to zero.
_CUPY_IMPLICIT = ("-ftz=true", "--device-as-default-execution-space")
_BASE_OPTIONS = ("-std=c++17",)
_INCLUDE_RE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"[ \t]*$', re.M)


class CompileError(RuntimeError):
    """A kernel failed to compile; carries the variant name, the arch and the NVRTC log."""

    def __init__(self, variant: str, arch: str, log: str):
        self.variant, self.arch, self.log = variant, arch, log
        super().__init__(f"cugemm: compiling {variant} for {arch} failed:\n{log}")


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


# ---- source assembly ----------------------------------------------------------------------------
_source_cache: dict[tuple, str] = {}


def _inline(path: Path, seen: set) -> str:
    """The file's text with every `#include "..."` of a project header replaced by that header."""
    path = path.resolve()
    if path in seen:  # headers are #pragma once
        return ""
    seen.add(path)
    text = path.read_text()

    def sub(m):
        target = (path.parent / m.group(1)).resolve()
        if not target.is_file():
            raise FileNotFoundError(f"cugemm: {path} includes {m.group(1)!r}, not found at {target}")
        return f"// ---- begin {target.name} ----\n{_inline(target, seen)}\n// ---- end {target.name} ----"

    return _INCLUDE_RE.sub(sub, text)


def kernel_path(variant: Variant) -> Path:
    return KERNEL_DIR / variant.source


def source(variant: Variant | str) -> str:
    """The complete source string compiled for `variant` (project headers inlined)."""
    v = get_variant(variant)
    path = kernel_path(v)
    if not path.is_file():
        raise FileNotFoundError(f"cugemm: kernel source of {v.name} not found: {path}")
    deps = [path] + sorted(KERNEL_DIR.rglob("*.cuh"))
    key = (str(path),) + tuple(p.stat().st_mtime_ns for p in deps)
    text = _source_cache.get(key)
    if text is None:
        text = _inline(path, set())
        _source_cache[key] = text
    return text


def options(variant: Variant, arch: str | None = None) -> tuple:
    """Compile options. `arch` is given for offline compiles; on a GPU CuPy appends the device's
    own -arch unless the variant needs an arch-specific target such as sm_90a."""
    opts = list(_BASE_OPTIONS)
    inc = toolkit.find_cuda_include(tuple(variant.headers))
    if inc:
        opts.append(f"-I{inc}")
    if _env_flag("CUGEMM_LINEINFO"):
        opts.append("-lineinfo")
    if arch is not None:
        opts.append(f"-arch={arch}")
    return tuple(opts)


# ---- offline compile (no GPU needed) ------------------------------------------------------------
@dataclass(frozen=True)
class CompileReport:
    name: str
    arch: str
    registers: int
    smem_static: int
    smem_dynamic: int
    stack_frame: int
    spill_stores: int
    spill_loads: int
    seconds: float
    cubin_bytes: int
    lowered_name: str
    log: str

    @property
    def spill_bytes(self) -> int:
        return self.spill_stores + self.spill_loads

    def as_dict(self) -> dict:
        d = asdict(self)
        d["spill_bytes"] = self.spill_bytes
        return d


_report_cache: dict[tuple, CompileReport] = {}
_report_lock = threading.Lock()


def _ptxas_int(pattern: str, log: str) -> int:
    m = re.search(pattern, log)
    return int(m.group(1)) if m else 0


def compile_offline(variant: Variant | str, arch: str) -> CompileReport:
    """Compile through NVRTC for `arch` (e.g. 'sm_90') with no GPU; return the ptxas report."""
    from cupy.cuda import nvrtc

    v = get_variant(variant)
    toolkit.parse_arch(arch)
    src = source(v)
    opts = options(v, arch) + _CUPY_IMPLICIT + ("-Xptxas=-v",)
    key = (v.name, arch, src, opts)
    with _report_lock:
        if key in _report_cache:
            return _report_cache[key]
    if _env_flag("CUGEMM_DEBUG"):
        print(f"cugemm: {v.name} {v.name_expression} options {opts}\n{src}", file=sys.stderr)
    t0 = time.perf_counter()
    prog = nvrtc.createProgram(src, f"{v.name}.cu", [], [])
    try:
        nvrtc.addNameExpression(prog, v.name_expression)
        try:
            nvrtc.compileProgram(prog, list(opts))
        except nvrtc.NVRTCError:
            raise CompileError(v.name, arch, nvrtc.getProgramLog(prog)) from None
        log = nvrtc.getProgramLog(prog)
        cubin = nvrtc.getCUBIN(prog)
        lowered = nvrtc.getLoweredName(prog, v.name_expression)
    finally:
        nvrtc.destroyProgram(prog)
    seconds = time.perf_counter() - t0
    report = CompileReport(
        name=v.name, arch=arch,
        registers=_ptxas_int(r"Used (\d+) registers", log),
        smem_static=_ptxas_int(r"(\d+) bytes smem", log),
        smem_dynamic=v.smem_dynamic,
        stack_frame=_ptxas_int(r"(\d+) bytes stack frame", log),
        spill_stores=_ptxas_int(r"(\d+) bytes spill stores", log),
        spill_loads=_ptxas_int(r"(\d+) bytes spill loads", log),
        seconds=seconds, cubin_bytes=len(cubin), lowered_name=lowered, log=log)
    if report.registers == 0:
        raise CompileError(v.name, arch, "no ptxas resource report in the NVRTC log:\n" + log)
    if _env_flag("CUGEMM_VERBOSE"):
        print(f"cugemm: compiled {v.name} for {arch} in {seconds:.2f} s: {report.registers} registers, "
              f"{report.smem_static} B smem, {report.spill_bytes} B spills", file=sys.stderr)
    with _report_lock:
        _report_cache[key] = report
    return report


# ---- GPU compile and load (CuPy RawModule) ------------------------------------------------------
_functions: dict[tuple, object] = {}
_load_lock = threading.Lock()


def _gpu_arch_option(v: Variant, cc: int) -> str | None:
    """An explicit -arch for variants that claim only arch-specific targets (sm_90a); else None and
    CuPy picks the device's own."""
    for arch in v.archs:
        number, suffix = toolkit.parse_arch(arch)
        if suffix and number == cc:
            return arch
    return None


def get_function(variant: Variant | str, device_id: int | None = None):
    """The loaded kernel for `variant` on the current (or given) device, compiled on first use."""
    import cupy

    v = get_variant(variant)
    if device_id is None:
        device_id = cupy.cuda.runtime.getDevice()
    key = (v.name, device_id)
    fn = _functions.get(key)
    if fn is not None:
        return fn
    with _load_lock:
        fn = _functions.get(key)
        if fn is not None:
            return fn
        with cupy.cuda.Device(device_id) as dev:
            cc = int(dev.compute_capability)
            arch = _gpu_arch_option(v, cc)
            src, opts = source(v), options(v, arch)
            if _env_flag("CUGEMM_DEBUG"):
                print(f"cugemm: {v.name} {v.name_expression} options {opts}\n{src}", file=sys.stderr)
            t0 = time.perf_counter()
            try:
                mod = cupy.RawModule(code=src, options=opts, name_expressions=[v.name_expression])
                fn = mod.get_function(v.name_expression)
            except cupy.cuda.compiler.CompileException as e:
                raise CompileError(v.name, arch or f"sm_{cc}", str(e)) from None
            if v.smem_dynamic > 48 * 1024:
                fn.max_dynamic_shared_size_bytes = v.smem_dynamic
            if _env_flag("CUGEMM_VERBOSE"):
                print(f"cugemm: loaded {v.name} for sm_{cc} in {time.perf_counter() - t0:.2f} s",
                      file=sys.stderr)
        _functions[key] = fn
    return fn
