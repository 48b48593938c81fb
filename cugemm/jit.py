"""One JIT path: kernel source text + compile options + arch + name expressions.

On a GPU the inputs go through `cupy.RawModule(code, options, name_expressions)`, which keeps
CuPy's disk cache (keyed on the source string and options, so the project's headers are pasted into
the source first). With no GPU the same inputs go through NVRTC directly (`cupy.cuda.nvrtc` needs
no device) and give a cubin, its PTX and the ptxas report: registers, shared memory, stack frame and
spill bytes. This module knows kernels and variants, not the registry: callers resolve names.

Public pieces: `source(variant)`, `compile_offline(variant, arch)`, `get_function(variant)`,
`compile_source(code_or_path, name_expressions, arch)` and `load_source(...)` for standalone
sources (scripts/tc_peak.py), `disassemble(cubin)`.

Settings:
  CUGEMM_CUDA_INCLUDE  directory searched first for CUDA headers (see toolkit.py)
  CUGEMM_LINEINFO=1    compile with -lineinfo (for profilers)
  CUGEMM_DEBUG=1       print each kernel's options and source to stderr before compiling
  CUGEMM_VERBOSE=1     print one line per compile or load (variant, arch, seconds)
"""
from __future__ import annotations

import os
import re
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import arch as _arch
from . import toolkit
from .variant import Variant

_HERE = Path(__file__).resolve().parent
# Installed wheel: cugemm/kernels (package data). Source tree or editable install: ../kernels.
KERNEL_DIR = next((p for p in (_HERE / "kernels", _HERE.parent / "kernels") if (p / "lib" / "core.cuh").is_file()),
                  _HERE / "kernels")

# CuPy adds these to every NVRTC compile (RawModule without jitify); the offline path adds them too
# so both paths build the same code. -ftz=true flushes fp32 denormals to zero.
_CUPY_IMPLICIT = ("-ftz=true", "--device-as-default-execution-space")
_BASE_OPTIONS = ("-std=c++17",)
_INCLUDE_RE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"[ \t]*$', re.M)
_SYSTEM_INCLUDE_RE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*<([^>]+)>', re.M)


class CompileError(RuntimeError):
    """A kernel failed to compile; carries the variant (or source) name, the arch and the NVRTC log."""

    def __init__(self, variant: str, arch: str, log: str):
        self.variant, self.arch, self.log = variant, arch, log
        super().__init__(f"cugemm: compiling {variant} for {arch} failed:\n{log}")


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


# ---- source assembly ----------------------------------------------------------------------------
_source_cache: dict[tuple, str] = {}


def inline_includes(path: Path, seen: set | None = None) -> str:
    """The file's text with every `#include "..."` of a project header replaced by that header
    (each header once: they are #pragma once)."""
    seen = set() if seen is None else seen
    path = path.resolve()
    if path in seen:
        return ""
    seen.add(path)
    text = path.read_text()

    def sub(m):
        target = (path.parent / m.group(1)).resolve()
        if not target.is_file():
            raise FileNotFoundError(f"cugemm: {path} includes {m.group(1)!r}, not found at {target}")
        return f"// ---- begin {target.name} ----\n{inline_includes(target, seen)}\n// ---- end {target.name} ----"

    return _INCLUDE_RE.sub(sub, text)


def cuda_headers(text: str) -> tuple[str, ...]:
    """The CUDA headers a (project-inlined) source includes: its `#include <...>` lines."""
    return tuple(dict.fromkeys(_SYSTEM_INCLUDE_RE.findall(text)))


def kernel_path(variant: Variant) -> Path:
    return KERNEL_DIR / variant.source


def file_source(path: Path) -> str:
    if not path.is_file():
        raise FileNotFoundError(f"cugemm: kernel source not found: {path}")
    deps = [path] + sorted(KERNEL_DIR.rglob("*.cuh"))
    key = (str(path),) + tuple(p.stat().st_mtime_ns for p in deps)
    text = _source_cache.get(key)
    if text is None:
        text = _source_cache[key] = inline_includes(path)
    return text


def source(variant: Variant) -> str:
    """The complete source string compiled for `variant` (project headers inlined)."""
    return file_source(kernel_path(variant))


def options(text: str, arch: str | None = None) -> tuple:
    """Compile options for a source: -I for the CUDA headers it includes, -lineinfo on request, and
    `arch` for offline compiles (on a GPU CuPy appends the device's own -arch unless an
    arch-specific target such as sm_90a is given)."""
    opts = list(_BASE_OPTIONS)
    opts += [f"-I{d}" for d in toolkit.find_cuda_includes(cuda_headers(text))]
    if _env_flag("CUGEMM_LINEINFO"):
        opts.append("-lineinfo")
    if arch is not None:
        opts.append(f"-arch={arch}")
    return tuple(opts)


# ---- offline compile (no GPU needed) ------------------------------------------------------------
@dataclass(frozen=True)
class CompileReport:
    """ptxas's report on one compiled kernel (name: the variant, or the name expression of a
    standalone source), with the cubin. smem_declared: what the kernel file declares as its dynamic
    shared memory (`<template>_smem_bytes<params>`), None when it declares none."""

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
    smem_declared: int | None = None
    cubin: bytes = field(default=b"", repr=False, compare=False)

    @property
    def spill_bytes(self) -> int:
        return self.spill_stores + self.spill_loads

    def as_dict(self) -> dict:
        d = asdict(self)
        d.pop("cubin")
        d["spill_bytes"] = self.spill_bytes
        return d


def _ptxas_int(pattern: str, log: str) -> int:
    m = re.search(pattern, log)
    return int(m.group(1)) if m else 0


def _function_report(log: str, lowered: str) -> str:
    """The lines of a (multi-kernel) ptxas log that describe function `lowered`."""
    lines, take = [], False
    for line in log.splitlines():
        if "Compiling entry function" in line or "Function properties for" in line:
            take = lowered in line
        if take:
            lines.append(line)
    return "\n".join(lines) or log


def _padded_cubin(cubin: bytes) -> bytes:
    """The cubin padded to the size its ELF headers describe: CuPy's nvrtc.getCUBIN drops the last
    byte, which leaves a file cuobjdump and nvdisasm reject (the driver does not mind)."""
    if len(cubin) < 64 or cubin[:4] != b"\x7fELF":
        return cubin
    phoff, shoff = struct.unpack_from("<QQ", cubin, 32)
    _, _, phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHHHH", cubin, 52)
    size = max(phoff + phentsize * phnum, shoff + shentsize * shnum)
    return cubin + b"\0" * max(0, size - len(cubin))


@dataclass
class Program:
    """What NVRTC made of one source: its log, cubin, PTX and the lowered (mangled) names."""

    log: str
    cubin: bytes
    ptx: str
    lowered: dict
    seconds: float


def compile_program(text: str, name_expressions, arch: str, extra_options=(), what: str = "source") -> Program:
    """Compile `text` through NVRTC for `arch` (no GPU needed) with the options the GPU path uses,
    instantiating `name_expressions`. Raises CompileError with the NVRTC log."""
    from cupy.cuda import nvrtc

    target = _arch.parse(arch)
    supported = toolkit.nvrtc_archs()
    if supported and target.cc not in supported:  # NVRTC's own message: "invalid value for -arch"
        raise CompileError(what, arch, f"this CuPy's NVRTC (CUDA {toolkit.nvrtc_version()}) does not compile "
                           f"for {arch}; it compiles for {', '.join(f'sm_{c}' for c in supported)}")
    opts = options(text, arch) + _CUPY_IMPLICIT + ("-Xptxas=-v",) + tuple(extra_options)
    if _env_flag("CUGEMM_DEBUG"):
        print(f"cugemm: {what} {list(name_expressions)} options {opts}\n{text}", file=sys.stderr)
    t0 = time.perf_counter()
    prog = nvrtc.createProgram(text, f"{what}.cu", [], [])
    try:
        for expr in name_expressions:
            nvrtc.addNameExpression(prog, expr)
        try:
            nvrtc.compileProgram(prog, list(opts))
        except nvrtc.NVRTCError:
            raise CompileError(what, arch, nvrtc.getProgramLog(prog)) from None
        log = nvrtc.getProgramLog(prog)
        cubin = _padded_cubin(nvrtc.getCUBIN(prog))
        ptx = nvrtc.getPTX(prog)
        lowered = {e: nvrtc.getLoweredName(prog, e) for e in name_expressions}
    finally:
        nvrtc.destroyProgram(prog)
    ptx = ptx.decode() if isinstance(ptx, bytes) else ptx
    return Program(log, cubin, ptx.rstrip("\0"), lowered, time.perf_counter() - t0)


def _report(name: str, arch: str, prog: Program, expr: str, smem_dynamic: int = 0,
            smem_declared: int | None = None) -> CompileReport:
    lowered = prog.lowered[expr]
    log = _function_report(prog.log, lowered)
    report = CompileReport(
        name=name, arch=arch,
        registers=_ptxas_int(r"Used (\d+) registers", log),
        smem_static=_ptxas_int(r"(\d+) bytes smem", log),
        smem_dynamic=smem_dynamic,
        stack_frame=_ptxas_int(r"(\d+) bytes stack frame", log),
        spill_stores=_ptxas_int(r"(\d+) bytes spill stores", log),
        spill_loads=_ptxas_int(r"(\d+) bytes spill loads", log),
        seconds=prog.seconds, cubin_bytes=len(prog.cubin), lowered_name=lowered, log=log,
        smem_declared=smem_declared, cubin=prog.cubin)
    if report.registers == 0:
        raise CompileError(name, arch, "no ptxas resource report in the NVRTC log:\n" + prog.log)
    return report


_report_cache: dict[tuple, CompileReport] = {}
_report_lock = threading.Lock()


def smem_symbol(variant: Variant) -> str:
    """The kernel file's declaration of its dynamic shared memory, as a name expression."""
    return "&" + variant.template_expression(f"{variant.template}_smem_bytes")


def _declared_value(ptx: str, lowered: str) -> int | None:
    """The value of a declared `.u32` in the PTX (a zero is declared without an initializer); None
    when the PTX does not hold it."""
    m = re.search(r"\.u32 " + re.escape(lowered) + r"(?: = (\d+))?;", ptx)
    return (int(m.group(1)) if m.group(1) else 0) if m else None


def compile_offline(variant: Variant, arch: str) -> CompileReport:
    """Compile `variant` through NVRTC for `arch` (e.g. 'sm_90') with no GPU; return the ptxas
    report (and, when the kernel file declares `<template>_smem_bytes`, its value)."""
    _arch.parse(arch)
    text = source(variant)
    exprs = [variant.name_expression]
    declares = f"{variant.template}_smem_bytes" in text
    if declares:
        exprs.append(smem_symbol(variant))
    key = (variant.name, variant.name_expression, arch, text, _BASE_OPTIONS)  # set_defines changes the build
    with _report_lock:
        if key in _report_cache:
            return _report_cache[key]
    prog = compile_program(text, exprs, arch, what=variant.name)
    declared = _declared_value(prog.ptx, prog.lowered[exprs[1]]) if declares else None
    report = _report(variant.name, arch, prog, variant.name_expression, variant.smem_dynamic, declared)
    if _env_flag("CUGEMM_VERBOSE"):
        print(f"cugemm: compiled {variant.name} for {arch} in {report.seconds:.2f} s: {report.registers} "
              f"registers, {report.smem_static} B smem, {report.spill_bytes} B spills", file=sys.stderr)
    with _report_lock:
        _report_cache[key] = report
    return report


def compile_source(code_or_path, name_expressions, arch: str, extra_options=()) -> list[CompileReport]:
    """Compile a standalone CUDA source (its text, or a path whose project includes are inlined)
    offline for `arch`; one report per name expression (kernels only)."""
    text = inline_includes(Path(code_or_path)) if isinstance(code_or_path, Path) else code_or_path
    prog = compile_program(text, list(name_expressions), arch, extra_options)
    return [_report(expr, arch, prog, expr) for expr in name_expressions]


def disassemble(cubin: bytes) -> str:
    """The SASS of a cubin (cuobjdump -sass, which runs nvdisasm). RuntimeError when they are not
    installed (the toolkit's, or the wheels of the test extra)."""
    tool, helper = toolkit.find_tool("cuobjdump"), toolkit.find_tool("nvdisasm")
    if tool is None or helper is None:
        raise RuntimeError("cuobjdump and nvdisasm are needed: install a CUDA toolkit, or "
                           "`pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm` (cugemm's test extra)")
    env = {**os.environ, "PATH": os.path.dirname(helper) + os.pathsep + os.environ.get("PATH", "")}
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(_padded_cubin(cubin))
    try:
        r = subprocess.run([tool, "-sass", f.name], capture_output=True, text=True, env=env)
    finally:
        os.unlink(f.name)
    if r.returncode != 0:
        raise RuntimeError(f"cuobjdump failed: {r.stderr.strip()}")
    return r.stdout


# ---- GPU compile and load (CuPy RawModule) ------------------------------------------------------
_functions: dict[tuple, object] = {}
_load_lock = threading.Lock()


def set_defines(defines) -> None:
    """Compile every later kernel load with -D<d> for each d in `defines` (e.g. 'CUGEMM_PDL=0'),
    forgetting the loaded kernels and each variant's launch state: the probes that build the kernels
    both ways in one process use it. set_defines(()) restores the defaults."""
    global _BASE_OPTIONS
    from . import registry

    _BASE_OPTIONS = ("-std=c++17",) + tuple(f"-D{d}" for d in defines)
    with _load_lock:
        _functions.clear()
    for v in registry.variants():
        v._launch.clear()


def _gpu_arch_option(v: Variant, cc: int) -> str | None:
    """An explicit -arch when the variant's target on this chip is arch-specific (sm_90a); else None
    and CuPy picks the device's own."""
    target = _arch.compile_target(v, cc)
    return target if _arch.parse(target).suffix else None


def load_source(text: str, name_expressions, options_=(), arch: str | None = None, what: str = "source"):
    """Compile (or fetch from CuPy's cache) and load a source on the current device: a dict
    name expression -> cupy RawKernel function."""
    import cupy

    opts = options(text, arch) + tuple(options_)
    if _env_flag("CUGEMM_DEBUG"):
        print(f"cugemm: {what} {list(name_expressions)} options {opts}\n{text}", file=sys.stderr)
    try:
        mod = cupy.RawModule(code=text, options=opts, name_expressions=list(name_expressions))
        return {e: mod.get_function(e) for e in name_expressions}
    except cupy.cuda.compiler.CompileException as e:
        raise CompileError(what, arch or "this GPU", str(e)) from None


def get_function(variant: Variant, device_id: int | None = None):
    """The loaded kernel for `variant` on the current (or given) device, compiled on first use."""
    import cupy

    if device_id is None:
        device_id = cupy.cuda.runtime.getDevice()
    key = (variant.name, variant.name_expression, device_id)
    fn = _functions.get(key)
    if fn is not None:
        return fn
    with _load_lock:
        fn = _functions.get(key)
        if fn is not None:
            return fn
        with cupy.cuda.Device(device_id) as dev:
            cc = int(dev.compute_capability)
            t0 = time.perf_counter()
            fn = load_source(source(variant), [variant.name_expression], arch=_gpu_arch_option(variant, cc),
                             what=variant.name)[variant.name_expression]
            if variant.smem_dynamic > _arch.DEFAULT_SMEM:  # more than a block gets without opting in
                fn.max_dynamic_shared_size_bytes = variant.smem_dynamic
            if _env_flag("CUGEMM_VERBOSE"):
                print(f"cugemm: loaded {variant.name} for sm_{cc} in {time.perf_counter() - t0:.2f} s",
                      file=sys.stderr)
        _functions[key] = fn
    return fn
