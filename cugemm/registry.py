"""The one table of variants, in ladder order, and the look-ups over it.

The table is the concatenation below of each family's rows (cugemm/families/*.py, where the small
per-family constructors live). Nothing else lists names: the CLI, bench and tests all read it here.
"""
from __future__ import annotations

import difflib
import fnmatch

from .families import hgemm, hgemm_wmma, sgemm, sgemm_cm, sgemm_tf32
from .variant import Variant

_TABLE: tuple[Variant, ...] = (sgemm.VARIANTS + sgemm_cm.VARIANTS + sgemm_tf32.VARIANTS
                               + hgemm.VARIANTS + hgemm_wmma.VARIANTS)

_BY_NAME: dict[str, Variant] = {}
for _v in _TABLE:
    for _n in (_v.name,) + _v.aliases:
        if _n in _BY_NAME:
            raise RuntimeError(f"cugemm registry: name {_n!r} is registered twice")
        _BY_NAME[_n] = _v


def variants(pattern: str | None = None, *, family: str | None = None, dtype: str | None = None,
             math_dtype: str | None = None, any_shape: bool | None = None) -> list[Variant]:
    """Registered variants in ladder order, optionally filtered.

    pattern   shell-style glob(s) over names and aliases, comma-separated ('sgemm_t_8x8*,*edge')
    family    'sgemm', ...
    dtype     input dtype name ('float32', 'float16')
    math_dtype  what the multiplies see ('float32', 'float16', 'tfloat32')
    any_shape True: only variants without M/N/K multiple rules
    """
    globs = [g.strip() for g in pattern.split(",")] if pattern else None
    out = []
    for v in _TABLE:
        if family is not None and v.family != family:
            continue
        if dtype is not None and v.dtype_in != dtype:
            continue
        if math_dtype is not None and v.math_dtype != math_dtype:
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
