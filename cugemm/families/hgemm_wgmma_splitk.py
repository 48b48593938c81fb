"""Hopper rung 9: split-K (kernels/hgemm_wgmma/07_splitk.cu), fp16 and bf16, row-major or `_bcol` B.

Whole 128 x BN tiles run in full waves; the tiles of the last, partial wave are cut into S K-slices
whose fp32 partials the last slice to arrive reduces in slice order (per-tile counters the kernel
resets), so the result does not depend on timing. The planner (S, the grid, the workspace) is
cugemm/splitk.py; what the rung measured: docs/hgemm_wgmma.md.
"""
from __future__ import annotations

from ..dtypes import get as _dtype
from ..variant import Candidate, Variant

FAMILY = "hgemm_wgmma"
BM, BK = 128, 64
# cugemm.matmul's ratings (cugemm/select.py): the 128-wide tiles ahead of the 256-wide ones where
# split-K pays (63-79% against 47-67% of cupy.matmul on the H100)
RATE = {128: Candidate(560.0, "splitk", 2), 256: Candidate(560.0, "splitk", 3)}


def _splitk(name, *, BN, STAGES, GROUP=8, B_COL=False, dtype="float16", doc, **kw):
    return Variant(name=name, family=FAMILY, source="hgemm_wgmma/07_splitk.cu", template="hgemm_wgmma_splitk",
                   params=(("BN", BN), ("STAGES", STAGES), ("GROUP", GROUP), ("B_COL", B_COL),
                           ("T", _dtype(dtype).ctype)),
                   tile=(BM, BN, BK), block=(384, 1, 1), multiple_of=(1, 8, 8),
                   b_layout="col" if B_COL else "row", grid_rule="splitk", args_rule="splitk",
                   workspace_rule="splitk", matmul=RATE[BN],
                   dtype_in=dtype, dtype_out=dtype, dtype_acc="float32", math="wgmma", align=16,
                   archs=("sm_90a",), seed="cugemm", doc=doc, **kw)


_S = "hgemm_wgmma_m64n{}k16_splitk_stage{}"

VARIANTS: tuple[Variant, ...] = (
    _splitk(_S.format(256, 4), BN=256, STAGES=4,
            doc="split-K: tiles that do not fill the SMs are cut into K-slices; fp32 partials reduced "
                "in slice order by the last slice to finish (per-slab atomic counter); 128x256 tiles"),
    _splitk(_S.format(128, 6), BN=128, STAGES=6,
            doc="split-K on 128x128 tiles (two m64n128k16 slabs): twice the tiles before splitting"),
    _splitk(_S.format(256, 4) + "_bf16", BN=256, STAGES=4, dtype="bfloat16", doc="split-K 128x256 in bf16"),
    _splitk(_S.format(128, 6) + "_bf16", BN=128, STAGES=6, dtype="bfloat16", doc="split-K 128x128 in bf16"),
    # B read column-major without a copy (x @ W.T: B is W.T of a row-major N x K weight)
    _splitk(_S.format(256, 4) + "_bcol", BN=256, STAGES=4, B_COL=True,
            doc="split-K 128x256 with B read column-major (x @ W.T of a linear layer: K-major B tiles), no copy"),
    _splitk(_S.format(128, 6) + "_bcol", BN=128, STAGES=6, B_COL=True,
            doc="split-K 128x128 with B read column-major (x @ W.T of a linear layer: K-major B tiles), no copy"),
    _splitk(_S.format(256, 4) + "_bcol_bf16", BN=256, STAGES=4, B_COL=True, dtype="bfloat16",
            doc="split-K 128x256 with B read column-major (x @ W.T), no copy, in bf16"),
    _splitk(_S.format(128, 6) + "_bcol_bf16", BN=128, STAGES=6, B_COL=True, dtype="bfloat16",
            doc="split-K 128x128 with B read column-major (x @ W.T), no copy, in bf16"),
)
