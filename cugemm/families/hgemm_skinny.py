"""Skinny fp16 / bf16 products: M <= 64 against large N and K, the decode-time shapes of an LLM
(M tokens x a linear layer's N x K weight), where a GEMM is a stream of B.

One kernel template (kernels/hgemm_skinny/01_splitk.cu): operands swapped so the weight is the
16-row mma.sync operand (C^T = B^T A^T), split-K over a grid of (N slabs) x (K-slices) so every SM
streams its share of B through a deep cp.async ring, the slices' fp32 partials reduced in slice
order by the last block of each slab to arrive (per-slab counters the kernel resets). Row-major B,
or `_bcol` (B = W.T of a row-major N x K weight, read without a copy). Shape rule: 1 <= M <= max_m
(16, 32 or 64), N % 8 == 0, K % 8 == 0. The launch plan and workspace: cugemm/splitk.py
(skinny_plan); what each form measured: docs/hgemm_skinny.md.

Names: {h,b}gemm_skinny_splitk_m<max_m>_n<BN>k<BK>_stage<STAGES>[_bcol]; the bgemm_ siblings are the
same kernels with T = __nv_bfloat16.
"""
from __future__ import annotations

from ..dtypes import get as _dtype
from ..variant import Candidate, Variant

EDGE_MULTIPLE = (1, 8, 8)  # any M (up to max_m), N % 8 == 0, K % 8 == 0
THREADS = 128              # 4 warps side by side in n
RATE = Candidate(2400.0, "bw", 0)  # cugemm.matmul's rating: streams B at ~2.4 TB/s (H100, bf16 16x8192x8192)


def _skinny(*, MAXM, NF, BK, STAGES, bcol=False, dtype="float16", doc, **kw):
    MT = MAXM // 8
    bn = 64 * NF
    prefix = "hgemm_skinny_" if dtype == "float16" else "bgemm_skinny_"
    name = f"{prefix}splitk_m{MAXM}_n{bn}k{BK}_stage{STAGES}" + ("_bcol" if bcol else "")
    return Variant(
        name=name, family="hgemm_skinny", source="hgemm_skinny/01_splitk.cu", template="hgemm_skinny_splitk",
        params=(("NF", NF), ("MT", MT), ("BK", BK), ("STAGES", STAGES), ("BCOL", bcol), ("T", _dtype(dtype).ctype)),
        tile=(MAXM, bn, BK), block=(THREADS, 1, 1), dtype_in=dtype, dtype_out=dtype, dtype_acc="float32",
        math="mma", b_layout="col" if bcol else "row", max_m=MAXM, multiple_of=EDGE_MULTIPLE, align=16,
        seed="cugemm", grid_rule="skinny", args_rule="skinny", workspace_rule="skinny", matmul=RATE,
        doc=doc + (" (B column-major: x @ W.T)" if bcol else ""), **kw)


_CONFIGS = (
    dict(MAXM=16, NF=1, BK=128, STAGES=4,
         doc="skinny M <= 16: 64-column slabs, split-K, 4-stage ring of 64x128 B tiles, last-arriver reduce"),
    dict(MAXM=16, NF=2, BK=64, STAGES=6,
         doc="skinny M <= 16: 128-column slabs, split-K, 6-stage ring of 128x64 B tiles"),
    dict(MAXM=16, NF=1, BK=128, STAGES=8,
         doc="skinny M <= 16: 64-column slabs, an 8-stage ring (one block per SM, 112 KB of B in flight): "
             "128 slabs at N = 8192 fill the SMs without split-K, so no partials and no reduction tail"),
    dict(MAXM=16, NF=2, BK=64, STAGES=8,
         doc="skinny M <= 16: 128-column slabs, 8-stage ring of 128x64 B tiles, one block per SM"),
    dict(MAXM=32, NF=1, BK=128, STAGES=8,
         doc="skinny M <= 32: 64-column slabs, 8-stage ring, one block per SM"),
    dict(MAXM=32, NF=1, BK=128, STAGES=4,
         doc="skinny M <= 32: 64-column slabs, split-K, 4-stage ring of 64x128 B tiles"),
    dict(MAXM=64, NF=1, BK=64, STAGES=4,
         doc="skinny M <= 64: 64-column slabs, split-K, 4-stage ring of 64x64 B tiles"),
    dict(MAXM=64, NF=1, BK=64, STAGES=8,
         doc="skinny M <= 64: 64-column slabs, 8-stage ring of 64x64 B tiles, one block per SM"),
    dict(MAXM=64, NF=2, BK=64, STAGES=4,
         doc="skinny M <= 64: 128-column slabs (A re-read half as often), split-K, 4 stages of 128x64"),
)
_BF16 = ((16, 1, 128, 4), (16, 1, 128, 8), (64, 2, 64, 4))  # (MAXM, NF, BK, STAGES) of the bf16 siblings

VARIANTS: tuple[Variant, ...] = tuple(
    _skinny(**cfg, bcol=bcol) for cfg in _CONFIGS for bcol in (False, True)
) + tuple(
    _skinny(**cfg, bcol=bcol, dtype="bfloat16")
    for cfg in _CONFIGS if (cfg["MAXM"], cfg["NF"], cfg["BK"], cfg["STAGES"]) in _BF16 for bcol in (False, True)
)
