"""TF32 tensor-core SGEMM through the WMMA API: float32 in and out, TF32 multiplies, fp32 accumulate (seed 003)."""
from __future__ import annotations

from ..variant import Variant

VARIANTS: tuple[Variant, ...] = ()
