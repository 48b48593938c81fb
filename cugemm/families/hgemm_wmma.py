"""FP16 tensor-core HGEMM through the WMMA API (fp32 accumulate unless named _f16acc): seed 002."""
from __future__ import annotations

from ..variant import Variant

VARIANTS: tuple[Variant, ...] = ()
