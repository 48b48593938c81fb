"""The one table of variants, in ladder order, and the look-ups over it.

The table is the concatenation below of each family's rows (cugemm/families/*.py, where the small
per-family constructors live). Nothing else lists names: the CLI, bench and tests all read it here.
"""
from __future__ import annotations

import difflib
import fnmatch

from . import arch as _arch
from . import dtypes
from .families import hgemm, hgemm_mma, hgemm_wgmma, hgemm_wmma, sgemm, sgemm_cm, sgemm_tf32
from .families import hgemm_wgmma_splitk
from .families import hgemm_skinny
from .families import fp8_wgmma
from .variant import Variant

_TABLE: tuple[Variant, ...] = (sgemm.VARIANTS + sgemm_cm.VARIANTS + sgemm_tf32.VARIANTS
                               + hgemm.VARIANTS + hgemm_wmma.VARIANTS + hgemm_mma.VARIANTS
                               + hgemm_wgmma.VARIANTS + hgemm_wgmma_splitk.VARIANTS
                               + hgemm_skinny.VARIANTS + fp8_wgmma.VARIANTS)


def build_index(table) -> dict[str, Variant]:
    """name or alias -> variant; RuntimeError when a name is registered twice."""
    index: dict[str, Variant] = {}
    for v in table:
        for n in (v.name,) + v.aliases:
            if n in index:
                raise RuntimeError(f"cugemm registry: name {n!r} is registered twice")
            index[n] = v
    return index


_BY_NAME = build_index(_TABLE)
FAMILIES: tuple[str, ...] = tuple(dict.fromkeys(v.family for v in _TABLE))  # in ladder order


def variants(pattern: str | None = None, *, family: str | None = None, dtype=None,
             math_dtype=None, any_shape: bool | None = None) -> list[Variant]:
    """Registered variants in ladder order, optionally filtered.

    pattern     shell-style glob(s) over names and aliases, comma-separated ('sgemm_t_8x8*,*edge')
    family      'sgemm', ... (FAMILIES); ValueError for a family cugemm does not have
    dtype       input element type: 'float16' or 'f16', numpy.float16, a cugemm.dtypes.DType
                (TypeError for a type cugemm does not have)
    math_dtype  what the multiplies see ('float32', 'tfloat32' or 'tf32', 'float16', 'bfloat16')
    any_shape   True: only variants without M/N/K multiple rules
    A filter naming nothing cugemm has raises, like dtype; a glob that matches no name gives [].
    """
    if family is not None and family not in FAMILIES:
        close = difflib.get_close_matches(str(family), FAMILIES, n=3, cutoff=0.5)
        hint = f" (closest: {', '.join(close)})" if close else ""
        raise ValueError(f"cugemm has no variant family {family!r}{hint}; families: {', '.join(FAMILIES)}")
    globs = [g.strip() for g in pattern.split(",")] if pattern else None
    want_in = dtypes.get(dtype).name if dtype is not None else None
    want_math = dtypes.get(math_dtype).name if math_dtype is not None else None
    out = []
    for v in _TABLE:
        if family is not None and v.family != family:
            continue
        if want_in is not None and v.dtype_in != want_in:
            continue
        if want_math is not None and v.math_dtype != want_math:
            continue
        if any_shape is not None and v.any_shape != any_shape:
            continue
        if globs and not any(fnmatch.fnmatchcase(n, g) for g in globs for n in (v.name,) + v.aliases):
            continue
        out.append(v)
    return out


def get_variant(name) -> Variant:
    """The variant registered under `name` or one of its aliases; KeyError with the closest names."""
    if isinstance(name, Variant):
        return name
    try:
        return _BY_NAME[name]
    except (KeyError, TypeError):
        close = difflib.get_close_matches(str(name), list(_BY_NAME), n=5, cutoff=0.5)
        hint = ("; closest: " + ", ".join(close)) if close else ""
        raise KeyError(f"no cugemm variant named {name!r}{hint} (cugemm.variants() lists them all)") from None


# ---- the chips the registered variants run on -----------------------------------------------------
def _runs_anywhere(cc: int) -> bool:
    return any(_arch.unfit_reason(v, cc) is None for v in variants())


def chips() -> list[str]:
    """The chips cugemm compiles for, oldest first: each chip of cugemm.arch.CHIPS that some registered variant
    runs on ('sm_80', ...). The arch-specific targets variants claim ('sm_90a') name their chip too
    (arch_specific())."""
    return [f"sm_{cc}" for cc in sorted(_arch.CHIPS) if _runs_anywhere(cc)]


def arch_specific() -> list[str]:
    """The arch-specific targets registered variants claim ('sm_90a')."""
    return sorted({str(_arch.parse(a)) for v in variants() for a in v.archs if _arch.parse(a).suffix},
                  key=lambda a: _arch.parse(a).cc)


def chip(arch, what: str = "arch") -> Arch:
    """The chip `arch` names (Arch(cc, '')), when cugemm compiles for it: a chip of chips(), or an
    arch-specific target a variant claims, which names its chip ('sm_90a' -> sm_90). ValueError
    otherwise, one line listing the chips. `what` names the value in the message ('arch', "this
    GPU's arch")."""
    known, specific = chips(), arch_specific()
    listing = "the chips cugemm compiles for are " + ", ".join(
        c + "".join(f" (or {t})" for t in specific if _arch.parse(t).cc == _arch.parse(c).cc) for c in known)
    try:
        a = _arch.parse(arch)
    except ValueError:
        raise ValueError(f"{what} {arch!r} is not an arch: write a chip as sm_89, sm89, 89 or 8.9; "
                         f"{listing}") from None
    if (str(a) in known or str(a) in specific) and f"sm_{a.cc}" in known:
        return _arch.Arch(a.cc, "")
    if a.suffix and f"sm_{a.cc}" in known:
        raise ValueError(f"{what} {arch!r}: no cugemm variant is built for {a}, an arch-specific target; "
                         f"name the chip (sm_{a.cc}); {listing}")
    if a.cc in _arch.CHIPS:
        lowest = min(v.min_arch for v in variants())
        if a.cc < lowest:
            raise ValueError(f"{what} {arch!r} ({_arch.CHIPS[a.cc][0]}) is below every cugemm variant (each needs "
                             f"compute capability >= {lowest // 10}.{lowest % 10}, sm_{lowest}); {listing}")
        raise ValueError(f"{what} {arch!r} ({_arch.CHIPS[a.cc][0]}) is a chip no cugemm variant runs on; {listing}")
    raise ValueError(f"{what} {arch!r} is not a chip cugemm knows; {listing}")
