"""The one table of variants, in ladder order, and the look-ups over it.

The table is the concatenation below of each family's rows (cugemm/families/*.py, where the small
per-family constructors live). Nothing else lists names: the CLI, bench and tests all read it here.
"""
from __future__ import annotations

import difflib
import fnmatch

from . import dtypes
from .families import hgemm, hgemm_mma, hgemm_wgmma, hgemm_wmma, sgemm, sgemm_cm, sgemm_tf32
from .families import hgemm_wgmma_splitk
from .families import hgemm_skinny
from .variant import Variant

_TABLE: tuple[Variant, ...] = (sgemm.VARIANTS + sgemm_cm.VARIANTS + sgemm_tf32.VARIANTS
                               + hgemm.VARIANTS + hgemm_wmma.VARIANTS + hgemm_mma.VARIANTS
                               + hgemm_wgmma.VARIANTS + hgemm_wgmma_splitk.VARIANTS
                               + hgemm_skinny.VARIANTS)


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
