"""Skinny fp16 / bf16 products (issue 13, item 5): M <= 64 against large N and K, the decode-time
shapes of an LLM (M tokens x a linear layer's N x K weight), where a GEMM is a stream of B.

One kernel template (kernels/hgemm_skinny/01_splitk.cu, hgemm_skinny_splitk): operands swapped so
the weight is the 16-row mma.sync operand (C^T = B^T A^T, an M of 1..8 pads to 8, not 16), split-K
over a grid of (N slabs) x (K-slices) so every SM streams its share of B through a deep cp.async
ring, and the K-slices' fp32 partials reduced in split order by the last block of each slab to
arrive (a per-slab counter that the kernel resets): the result does not depend on block timing.

Two B layouts, each a template argument: row-major B (K x N) and `_bcol`, B column-major (memory
holds N rows of K: `x @ W.T` for a row-major N x K weight W, read without a copy). Shape rule for
both: 1 <= M <= max_m (16 or 64, the m8 tiles the variant holds), N % 8 == 0, K % 8 == 0 (16-byte
rows of A and B), so multiple_of = (1, 8, 8); M above max_m is refused by check_shape (Variant.max_m).

The launch plan (`plan`): BN-column slabs times S K-slices, S picked from the SM count, the blocks
that fit on an SM (shared memory) and the workspace traffic: whole waves of blocks, no empty slice.
The 8-stage forms hold one block an SM: at N = 8192 their 128 slabs fill the GPU with S = 1, so
nothing is reduced (16x8192x8192 on an H100: 99-101% of cupy.matmul against 96-97% for the
4-stage forms with S = 2, same runs).
The fp32 workspace (S x slabs x M x BN floats) and the per-slab counters are asked for by
`workspace_need` and provided by the launcher (cugemm/workspace.py), passed through args_fn.

Names: {h,b}gemm_skinny_splitk_m<max_m>_n<BN>k<BK>_stage<STAGES>[_bcol]; the bgemm_ siblings are the
same kernels with T = __nv_bfloat16.
"""
from __future__ import annotations

import numpy as np

from .. import device
from ..arch import archs_for_smem
from ..variant import Variant
from ..workspace import Need

EDGE_MULTIPLE = (1, 8, 8)  # any M (up to max_m), N % 8 == 0, K % 8 == 0
THREADS = 128              # 4 warps side by side in n
MAX_SPLITS = 64
_TYPES = {"float16": "half", "bfloat16": "__nv_bfloat16"}


def splitk_smem_bytes(*, NF: int, MT: int, BK: int, STAGES: int) -> int:
    """Mirrors hgemm_skinny_splitk_smem_bytes (01_splitk.cu): STAGES ring stages of an 8 MT x BK A tile
    and a 64 NF x BK B tile (16-bit), or the fp32 partial tile (8 MT rows of 64 NF + 4) if larger."""
    bn, bm = 64 * NF, 8 * MT
    return max(STAGES * (bm * BK + bn * BK) * 2, bm * (bn + 4) * 4)


def blocks_per_sm(v, dev) -> int:
    """Blocks of `v` an SM holds: its shared memory (the opt-in limit plus the 1 KB reserved per
    block), at most 2 (the kernel's __launch_bounds__ minimum)."""
    per_sm = (dev.smem_optin + 1024) // (v.smem_dynamic + 1024)
    return max(1, min(2, per_sm))


_PLANS: dict = {}  # (variant name, M, N, K, device) -> (slabs, S): every launch of cugemm.run asks


def plan(v, M: int, N: int, K: int, dev) -> tuple[int, int]:
    """plan_of (below), remembered per (variant, shape, device)."""
    key = (v.name, M, N, K, dev)
    hit = _PLANS.get(key)
    if hit is None:
        if len(_PLANS) > 4096:
            _PLANS.clear()
        hit = _PLANS[key] = plan_of(v, M, N, K, dev)
    return hit


def plan_of(v, M: int, N: int, K: int, dev) -> tuple[int, int]:
    """(slabs, S): the grid, BN-column slabs times S K-slices of ceil(kt / S) K-tiles each (none
    empty). A skinny product is a stream of B, so the estimate is in K-tiles per SM: an SM runs
    ceil(blocks / SMs) blocks' worth of loads (the blocks resident on one SM share its bandwidth),
    each block its K-tiles plus fixed costs (the ring's first fill, about a K-tile; its fp32 partial,
    written to L2 and read back by the slab's last block, at half a tile's bytes per partial). Only
    grids that fill about every block slot (blocks >= 0.9 x SMs x blocks per SM: bytes in flight on
    every SM) are candidates when one exists."""
    bn, bk = v.tile[1], v.tile[2]
    slabs = -(-N // bn)
    kt = -(-K // bk)
    slots = dev.sms * blocks_per_sm(v, dev)
    tile_bytes = bn * bk * 2
    options = []
    for s in range(1, min(kt, MAX_SPLITS) + 1):
        per = -(-kt // s)
        if -(-kt // per) != s:  # a slice would be empty: the same as a smaller S
            continue
        blocks = slabs * s
        partial = (M * bn * 4 / tile_bytes) * (0.5 + 0.25 * s) if s > 1 else 0.0
        cost = -(-blocks // dev.sms) * (per + 1 + partial)
        options.append((blocks >= 0.9 * slots, cost, s))
    full = [o for o in options if o[0]] or [max(options, key=lambda o: o[2])]
    return slabs, min(full, key=lambda o: (o[1], o[2]))[2]


def _grid(v, M, N, K, dev):
    slabs, s = plan(v, M, N, K, dev or device.get())
    return slabs, s, 1


# ---- workspace: fp32 partials and per-slab counters (cugemm/workspace.py holds them) ---------------
def workspace_need(v, M, N, K, dev) -> Need:
    """S x slabs x M x BN partial floats and one counter per slab for a launch of `v` on `dev`."""
    slabs, s = plan(v, M, N, K, dev)
    return Need(s * slabs * M * v.tile[1], slabs)


def _args(v, A, B, C, M, N, K, raw=False, work=None, dev=None):
    """The workspace's partials and counters (the kernel's ws and counters arguments)."""
    return np.uint64(work.partials), np.uint64(work.counters)


def _skinny(*, MAXM, NF, BK, STAGES, bcol=False, dtype="float16", doc, **kw):
    MT = MAXM // 8
    bn = 64 * NF
    smem = splitk_smem_bytes(NF=NF, MT=MT, BK=BK, STAGES=STAGES)
    prefix = "hgemm_skinny_" if dtype == "float16" else "bgemm_skinny_"
    name = f"{prefix}splitk_m{MAXM}_n{bn}k{BK}_stage{STAGES}" + ("_bcol" if bcol else "")
    return Variant(
        name=name, family="hgemm_skinny", source="hgemm_skinny/01_splitk.cu", template="hgemm_skinny_splitk",
        params=(("NF", NF), ("MT", MT), ("BK", BK), ("STAGES", STAGES), ("BCOL", bcol), ("T", _TYPES[dtype])),
        tile=(MAXM, bn, BK), block=(THREADS, 1, 1), dtype_in=dtype, dtype_out=dtype, dtype_acc="float32",
        math="mma", b_layout="col" if bcol else "row", max_m=MAXM, multiple_of=EDGE_MULTIPLE, align=16,
        archs=archs_for_smem(smem), smem_dynamic=smem, seed="cugemm", grid_fn=_grid, args_fn=_args,
        workspace_fn=workspace_need, doc=doc + (" (B column-major: x @ W.T)" if bcol else ""), **kw)


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
