"""FP16 and BF16 tensor-core GEMM through inline PTX mma.sync.m16n8k16 (fp32 accumulate unless named
_f16acc): the rung above WMMA.

kernels/hgemm_mma/01..07, one kernel template per file, all templated on the element type T (half or
__nv_bfloat16): fragments as the PTX ISA lays them out (lib/mma.cuh), loaded with ldmatrix (.trans
for the row-major B), copied with cp.async (rungs 4-11) or TMA (rungs 12-13, sm_90a), swizzled by
XOR. The ladder, what each rung measured and what was tried and dropped: docs/hgemm_mma.md.

Names: hgemm_mma_m16n8k16_<block/warp tile>[_stageS][_swizzle][_bswizzle][_rbuf][_epi][_f16acc][_edge]:
mmaAxB = A x B warps, warpCxD[xE] = C x D mma tiles of 16x8 per warp and E k steps of 16 per K-tile;
`_swizzle` is the shared-memory XOR swizzle, `_bswizzle` the block (grid) swizzle in bands of 8 tile
rows (`_bswizzle16`: 16; no `_bswizzle`: launch order). The bf16 siblings are the same kernels with
T = __nv_bfloat16 (bf16 in and out, fp32 accumulate), named with the prefix bgemm_mma_ instead of
hgemm_mma_. `_ws` (rung 12, sm_90a only): the TMA producer / mma.sync consumer kernel, which always
has the 128-byte TMA swizzle, bands of 8 tile rows, double-buffered fragments and the shared-memory
epilogue (warp-private copy-out); `_persistent` (rung 13, sm_90a only): rung 12's block, persistent,
with the TMA-store epilogue, any aligned shape; `_cluster2`: clusters of 2 blocks with B multicast.
Aliases: hgemm_mma_fast / bgemm_mma_fast, the top rung (mma2x4_warp4x8x4_stage4_persistent:
128x256x64, any M, N, K with N, K % 8 == 0, sm_90a; on sm_80 use the rung 11 _edge names).
"""
from __future__ import annotations

from ..dtypes import get as _dtype
from ..variant import Candidate, Variant, dense_batched

PAD = 8  # halves of padding per shared row in rungs 2-4 (conflict-free fragment reads)
EDGE_MULTIPLE = (1, 8, 8)  # rows of A (K) and B (N) start 16-byte aligned: any M, N % 8, K % 8
# cugemm.matmul's ratings of the any-shape rungs (cugemm/select.py; H100 TFLOP/s), after the wgmma rows
WS_EDGE = Candidate(450.0, "tiles", 14)
EDGE_128x256 = Candidate(390.0, "tiles", 15)
EDGE_128x128 = Candidate(380.0, "tiles", 16)


def _record(name, *, source, template, params, tile, threads, dtype="float16", f16acc=False,
            edge=False, doc, **kw):
    return Variant(
        name=name, family="hgemm_mma", source=source, template=template,
        params=params + (("T", _dtype(dtype).ctype),), tile=tile, block=(threads, 1, 1),
        dtype_in=dtype, dtype_out=dtype, dtype_acc="float16" if f16acc else "float32", math="mma",
        multiple_of=EDGE_MULTIPLE if edge else tile, align=16, seed="cugemm", doc=doc, **kw)


def _naive(name, *, doc, **kw):
    return _record(name, source="hgemm_mma/01_naive.cu", template="hgemm_mma_naive", params=(),
                   tile=(16, 8, 16), threads=32, doc=doc, **kw)


def _tiles(WARPS_M, WARPS_N, FRAGS_M, FRAGS_N):
    return 16 * FRAGS_M * WARPS_M, 8 * FRAGS_N * WARPS_N


def _smem_tiled(name, template, source, *, WARPS_M=2, WARPS_N=4, FRAGS_M=4, FRAGS_N=4, doc, **kw):
    bm, bn = _tiles(WARPS_M, WARPS_N, FRAGS_M, FRAGS_N)
    return _record(name, source=source, template=template,
                   params=(("WARPS_M", WARPS_M), ("WARPS_N", WARPS_N), ("FRAGS_M", FRAGS_M),
                           ("FRAGS_N", FRAGS_N), ("PAD", PAD)),
                   tile=(bm, bn, 16), threads=32 * WARPS_M * WARPS_N, doc=doc, **kw)


def _stages(name, *, WARPS_M=2, WARPS_N=4, FRAGS_M=4, FRAGS_N=4, BK=32, STAGES, doc, **kw):
    bm, bn = _tiles(WARPS_M, WARPS_N, FRAGS_M, FRAGS_N)
    return _record(name, source="hgemm_mma/04_stages.cu", template="hgemm_mma_stages",
                   params=(("WARPS_M", WARPS_M), ("WARPS_N", WARPS_N), ("FRAGS_M", FRAGS_M),
                           ("FRAGS_N", FRAGS_N), ("BK", BK), ("STAGES", STAGES), ("PAD", PAD)),
                   tile=(bm, bn, BK), threads=32 * WARPS_M * WARPS_N, doc=doc, **kw)


def _swizzle(name, *, WARPS_M=2, WARPS_N=4, FRAGS_M=4, FRAGS_N=4, BK=32, STAGES=3, GROUP=0, RBUF=False,
             EPI=False, EDGE=False, F16ACC=False, dtype="float16", doc, **kw):
    bm, bn = _tiles(WARPS_M, WARPS_N, FRAGS_M, FRAGS_N)
    # EPI (rung 8, the shared-memory epilogue) is the kernel's EPI_SMEM: its EPI is the fused epilogue
    # (lib/epilogue.cuh; None here, cugemm.epilogue appends ("EPI", "epilogue::Fused<...>")), whose
    # seven arguments every launch passes (args rule epilogue_defaults)
    return _record(name, source="hgemm_mma/05_swizzle.cu", template="hgemm_mma_swizzle",
                   params=(("WARPS_M", WARPS_M), ("WARPS_N", WARPS_N), ("FRAGS_M", FRAGS_M),
                           ("FRAGS_N", FRAGS_N), ("BK", BK), ("STAGES", STAGES), ("GROUP", GROUP),
                           ("RBUF", RBUF), ("EPI_SMEM", EPI), ("EDGE", EDGE), ("F16ACC", F16ACC)),
                   tile=(bm, bn, BK), threads=32 * WARPS_M * WARPS_N, dtype=dtype, f16acc=F16ACC,
                   edge=EDGE, args_rule="epilogue_defaults", doc=doc, **kw)


def _swizzle_batched(v: Variant, order: int) -> Variant:
    """The batched form of the _edge rung `v` (08_swizzle_batched.cu, hgemm_mma_swizzle_batched): a batch of
    products in one launch on the GPUs without wgmma (cugemm.batched), the products in grid z. Rated
    as `v`, preference `order` (candidates of batched problems only)."""
    return dense_batched(v, source="hgemm_mma/08_swizzle_batched.cu", template="hgemm_mma_swizzle_batched",
                         order=order)


def _ws(name, *, WARPS_M=2, WARPS_N=4, FRAGS_M=4, FRAGS_N=8, STAGES=4, GROUP=8, EDGE=False,
        dtype="float16", doc, **kw):
    bm, bn = _tiles(WARPS_M, WARPS_N, FRAGS_M, FRAGS_N)
    return _record(name, source="hgemm_mma/06_ws.cu", template="hgemm_mma_ws",
                   params=(("WARPS_M", WARPS_M), ("WARPS_N", WARPS_N), ("FRAGS_M", FRAGS_M),
                           ("FRAGS_N", FRAGS_N), ("STAGES", STAGES), ("GROUP", GROUP), ("EDGE", EDGE)),
                   tile=(bm, bn, 64), threads=32 * WARPS_M * WARPS_N + 128, dtype=dtype, edge=EDGE,
                   archs=("sm_90a",), doc=doc, args_rule="tma_ab", **kw)


def _persistent(name, *, WARPS_M=2, WARPS_N=4, STAGES=3, GROUP=8, CLUSTER_M=1, F16ACC=False, dtype="float16",
                doc, **kw):
    bm, bn = _tiles(WARPS_M, WARPS_N, 4, 8)
    return _record(name, source="hgemm_mma/07_persistent.cu", template="hgemm_mma_persistent",
                   params=(("WARPS_M", WARPS_M), ("WARPS_N", WARPS_N), ("STAGES", STAGES), ("GROUP", GROUP),
                           ("CLUSTER_M", CLUSTER_M), ("F16ACC", F16ACC)),
                   tile=(bm, bn, 64), threads=32 * WARPS_M * WARPS_N + 128, dtype=dtype, f16acc=F16ACC,
                   edge=True, archs=("sm_90a",), cluster=(CLUSTER_M, 1, 1), grid_rule="persistent",
                   args_rule="tma_abc16", doc=doc, **kw)


_H = "hgemm_mma_m16n8k16_"
_B = "bgemm_mma_m16n8k16_"
_M24 = _H + "mma2x4_warp4x4"              # 128x128 block of 64x32 warp tiles
_S3 = _M24 + "x2_stage3"
_TOP = dict(GROUP=8, RBUF=True, EPI=True)  # rungs 6-8, on in every rung above them
_SUFFIX = "_swizzle_bswizzle_rbuf_epi"
# rung 9: 64x64 warp tiles (4x8 mma tiles)
_W128x256x64 = dict(WARPS_M=2, WARPS_N=4, FRAGS_M=4, FRAGS_N=8, BK=64)
_W128x256x32 = dict(WARPS_M=2, WARPS_N=4, FRAGS_M=4, FRAGS_N=8, BK=32)
_W128x128x64 = dict(WARPS_M=2, WARPS_N=2, FRAGS_M=4, FRAGS_N=8, BK=64)
_W128x128x32 = dict(WARPS_M=2, WARPS_N=2, FRAGS_M=4, FRAGS_N=8, BK=32)
_W256x128x64 = dict(WARPS_M=4, WARPS_N=2, FRAGS_M=4, FRAGS_N=8, BK=64)
_BIG = "mma2x4_warp4x8x4_stage3" + _SUFFIX  # the 128x256x64 3-stage rung
_BIG0 = "mma2x4_warp4x8x4_stage3_swizzle_rbuf_epi"  # the same without block swizzle (GROUP 0)
_BIG16 = "mma2x4_warp4x8x4_stage3_swizzle_bswizzle16_rbuf_epi"  # bands of 16 tile rows

VARIANTS: tuple[Variant, ...] = (
    _naive(_H + "naive", doc="one warp per 16x8 C tile, one m16n8k16 per k step, operands from global"),
    _smem_tiled(_M24, "hgemm_mma_warp_tile", "hgemm_mma/02_warp_tile.cu",
                doc="2x4 warps of 4x4 mma tiles share a 128x128x16 shared-memory tile"),
    _smem_tiled(_M24 + "_ldmatrix", "hgemm_mma_ldmatrix", "hgemm_mma/03_ldmatrix.cu",
                doc="fragments by ldmatrix.x4 (A) and ldmatrix.x4.trans (row-major B)"),
    _stages(_M24 + "x2_stage2", STAGES=2,
            doc="cp.async double buffer in dynamic shared memory, 128x128x32"),
    _stages(_S3, STAGES=3, doc="a 3-stage cp.async ring, 128x128x32"),
    _stages(_M24 + "x2_stage4", STAGES=4, doc="a 4-stage cp.async ring, 128x128x32"),
    _swizzle(_S3 + "_swizzle", STAGES=3,
             doc="XOR-swizzled shared tiles instead of padded rows"),
    _swizzle(_S3 + "_swizzle_bswizzle", STAGES=3, GROUP=8,
             doc="block swizzle: blocks walk C in bands of 8 tile rows (L2 reuse)"),
    _swizzle(_S3 + "_swizzle_bswizzle_rbuf", STAGES=3, GROUP=8, RBUF=True,
             doc="fragments double-buffered in registers: k step kk+1 loads under kk's MMAs"),
    _swizzle(_S3 + _SUFFIX, STAGES=3, **_TOP,
             doc="epilogue through swizzled shared memory (stmatrix on sm_90), 16-byte stores"),
    # ---- rung 9: 64x64 warp tiles ----------------------------------------------------------------
    _swizzle(_H + "mma2x4_warp4x8x2_stage4" + _SUFFIX, **_W128x256x32, STAGES=4, **_TOP,
             doc="64x64 warp tiles: 128x256x32 blocks of 8 warps, 4 stages"),
    _swizzle(_H + _BIG, **_W128x256x64, STAGES=3, **_TOP,
             doc="64x64 warp tiles: 128x256x64 blocks of 8 warps, 3 stages"),
    _swizzle(_H + "mma2x4_warp4x8x4_stage4" + _SUFFIX, **_W128x256x64, STAGES=4, **_TOP,
             doc="128x256x64, 4 stages (192 KB of shared memory: sm_90)"),
    _swizzle(_H + "mma2x2_warp4x8x4_stage3" + _SUFFIX, **_W128x128x64, STAGES=3, **_TOP,
             doc="64x64 warp tiles: 128x128x64 blocks of 4 warps, 2 blocks per SM"),
    _swizzle(_H + "mma2x2_warp4x8x2_stage4" + _SUFFIX, **_W128x128x32, STAGES=4, **_TOP,
             doc="64x64 warp tiles: 128x128x32 blocks of 4 warps, 4 stages, 2 blocks per SM"),
    _swizzle(_H + "mma4x2_warp4x8x4_stage3" + _SUFFIX, **_W256x128x64, STAGES=3, **_TOP,
             doc="64x64 warp tiles: 256x128x64 blocks of 8 warps, 3 stages"),
    _swizzle(_H + _BIG0, **_W128x256x64, STAGES=3, RBUF=True, EPI=True,
             doc="the 128x256x64 rung with blocks in launch (row-major) order: no block swizzle"),
    _swizzle(_H + _BIG16, **_W128x256x64, STAGES=3, GROUP=16, RBUF=True, EPI=True,
             doc="the 128x256x64 rung with bands of 16 tile rows"),
    # ---- rung 10: fp16 accumulation ----------------------------------------------------------------
    _swizzle(_H + _BIG + "_f16acc", **_W128x256x64, STAGES=3, **_TOP, F16ACC=True,
             doc="the 128x256x64 rung accumulating in fp16: half the accumulator registers"),
    # ---- rung 11: any M, N, K (16-byte-aligned rows) -------------------------------------------
    _swizzle(_H + _BIG + "_edge", **_W128x256x64, STAGES=3, **_TOP, EDGE=True, matmul=EDGE_128x256,
             doc="any M, N, K with N, K % 8 == 0: zero-filling cp.async at the tails, bounded stores"),
    # ---- rung 12: warp specialisation, a TMA producer and 8 mma.sync consumer warps (sm_90a) -------
    _ws(_H + "mma2x4_warp4x8x4_stage3_ws", STAGES=3,
        doc="a TMA producer warpgroup and 8 mma.sync consumer warps on FULL/EMPTY mbarriers, 3 stages"),
    _ws(_H + "mma2x4_warp4x8x4_stage4_ws", STAGES=4,
        doc="a TMA producer warpgroup and 8 mma.sync consumer warps on FULL/EMPTY mbarriers, 4 stages"),
    _ws(_H + "mma4x2_warp4x8x4_stage4_ws", WARPS_M=4, WARPS_N=2, STAGES=4,
        doc="the warp-specialised TMA rung with 256x128x64 blocks (4 x 2 consumer warps)"),
    _ws(_H + "mma2x4_warp4x8x4_stage4_ws_edge", STAGES=4, EDGE=True, matmul=WS_EDGE,
        doc="any M, N, K with N, K % 8 == 0: TMA zero-fills the tails, bounded stores"),
    # the any-shape form of the 128x128x64 rung: 96 KB of shared memory, so it is the any-shape
    # rung of the chips with ~100 KB per block (sm_86, sm_89; cugemm.matmul's fallback there)
    _swizzle(_H + "mma2x2_warp4x8x4_stage3" + _SUFFIX + "_edge", **_W128x128x64, STAGES=3, **_TOP, EDGE=True,
             matmul=EDGE_128x128,
             doc="128x128x64, any M, N, K with N, K % 8 == 0 (fits sm_86/sm_89 shared memory)"),
    # ---- bf16 siblings of the top rungs ------------------------------------------------------------
    _swizzle(_B + "mma2x2_warp4x8x4_stage3" + _SUFFIX + "_edge", **_W128x128x64, STAGES=3, **_TOP, EDGE=True,
             matmul=EDGE_128x128,
             dtype="bfloat16", doc="bf16, 128x128x64, any M, N, K with N, K % 8 == 0 (fits sm_86/sm_89)"),
    _swizzle(_B + _BIG, **_W128x256x64, STAGES=3, **_TOP, dtype="bfloat16",
             doc="bf16 in and out (mma ...bf16), fp32 accumulate: the 128x256x64 rung"),
    _swizzle(_B + _BIG + "_edge", **_W128x256x64, STAGES=3, **_TOP, EDGE=True, dtype="bfloat16",
             matmul=EDGE_128x256,
             doc="bf16, any M, N, K with N, K % 8 == 0"),
    _ws(_B + "mma2x4_warp4x8x4_stage4_ws", STAGES=4, dtype="bfloat16",
        doc="bf16 in and out, fp32 accumulate: the warp-specialised TMA rung"),
    _ws(_B + "mma2x4_warp4x8x4_stage4_ws_edge", STAGES=4, EDGE=True, dtype="bfloat16", matmul=WS_EDGE,
        doc="bf16, the warp-specialised TMA rung, any M, N, K with N, K % 8 == 0"),
    # ---- rung 13: persistent blocks, TMA-store epilogue per warp (sm_90a) ---------------------------
    _persistent(_H + "mma2x4_warp4x8x4_stage3_persistent",
                doc="persistent blocks (one per SM), the ring runs on across tiles, each warp stores its "
                    "64x64 block by TMA while it starts the next tile; any M, N, K with N, K % 8 == 0"),
    _persistent(_H + "mma2x4_warp4x8x4_stage4_persistent", STAGES=4, aliases=("hgemm_mma_fast",),
                doc="the persistent rung with a 4-stage ring"),
    _persistent(_H + "mma2x4_warp4x8x4_stage4_persistent_f16acc", STAGES=4, F16ACC=True,
                doc="the persistent rung accumulating in fp16 (rung 10's idea): half the accumulator registers"),
    _persistent(_H + "mma4x2_warp4x8x4_stage4_persistent", WARPS_M=4, WARPS_N=2, STAGES=4,
                doc="the persistent rung with 256x128x64 tiles and a 4-stage ring"),
    _persistent(_H + "mma2x4_warp4x8x4_stage3_persistent_cluster2", CLUSTER_M=2,
                doc="the persistent rung in clusters of 2 tiles stacked in M, B multicast to both"),
    _persistent(_H + "mma4x2_warp4x8x4_stage3_persistent", WARPS_M=4, WARPS_N=2,
                doc="the persistent rung with 256x128x64 tiles (4 x 2 consumer warps)"),
    _persistent(_B + "mma2x4_warp4x8x4_stage3_persistent", dtype="bfloat16",
                doc="bf16, persistent blocks with the per-warp TMA-store epilogue, any aligned shape"),
    _persistent(_B + "mma2x4_warp4x8x4_stage4_persistent", STAGES=4, dtype="bfloat16", aliases=("bgemm_mma_fast",),
                doc="bf16, the persistent rung with a 4-stage ring"),
)


# The batched forms of the _edge rungs (128x256 and 128x128 tiles, fp16 and bf16): cugemm.batched's
# batch in one launch where there is no wgmma (sm_80, sm_86, sm_89, Blackwell), orders 200, 201, ...
BATCHED_ORDER = 200
VARIANTS += tuple(_swizzle_batched(v, BATCHED_ORDER + i) for i, v in enumerate(
    [v for v in VARIANTS if v.template == "hgemm_mma_swizzle" and v.param_dict["EDGE"] and v.matmul is not None]))
