"""FP16 CUDA-core HGEMM (half2 arithmetic, fp16 accumulate): seeds 002 and 004."""
from __future__ import annotations

from ..variant import Variant

VARIANTS: tuple[Variant, ...] = ()
