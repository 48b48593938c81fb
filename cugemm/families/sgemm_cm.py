"""Column-major FP32 SGEMM ladder with leading dimensions (seed 001)."""
from __future__ import annotations

from ..variant import Variant

VARIANTS: tuple[Variant, ...] = ()
