"""FP16 and BF16 tensor-core GEMM through inline PTX mma.sync.m16n8k16 (fp32 accumulate unless named
_f16acc): the rung above WMMA (issue 11).

kernels/hgemm_mma/01..05, one kernel template per file, all templated on the element type T (half or
__nv_bfloat16): no WMMA API; the fragments are the PTX ISA's (lib/mma.cuh), loaded with ldmatrix
(.trans for the row-major B), copied with cp.async, swizzled by XOR. The ladder, one idea per rung,
with its measured TFLOP/s at 4096x4096x1024 / 4096^3 (% of cupy.matmul in the same run):

  1 naive                  one warp per 16x8 C tile, one m16n8k16 per k step,
                           operands from global                                  19.9 /  20.5 ( 3 /  3%)
  2 mma2x4_warp4x4         2x4 warps of 4x4 mma tiles (64x32 per warp): a
                           128x128x16 shared tile (padded rows), fragments by
                           ordinary shared loads                                 164  / 178   (26 / 24%)
  3 _ldmatrix              ldmatrix.x4 for A, ldmatrix.x4.trans for B            189  / 209   (29 / 28%)
  4 x2_stageS              a STAGES-deep cp.async ring (2..5) in dynamic shared
                           memory, BK = 32 (warpCxDx2: two k steps of 16);
                           stage2 / 3 / 4                   242 / 288, 257 / 289, 258 / 281   (40 / 38%)
  5 _swizzle               XOR-swizzled shared tiles instead of padding (stage3)  297  / 335   (46 / 44%)
  6 _bswizzle              block swizzle: the grid walks C in bands of 8 tile
                           rows (L2 reuse); a loss at this rung and size         265  / 293   (41 / 39%)
  7 _rbuf                  fragments double-buffered in registers                294  / 343   (46 / 45%)
  8 _epi                   epilogue through shared memory (stmatrix on sm_90),
                           16-byte stores to C                                   320  / 353   (50 / 47%)
  9 warp4x8                64x64 warp tiles: 128x256 (mma2x4), 128x128 (mma2x2,
                           2 blocks/SM), 256x128 (mma4x2) blocks, BK 32 or 64
                           (x2 / x4); mma2x4_warp4x8x4_stage3                    390  / 448   (61 / 59%)
                           (8192^3: 450, 66%; bands of 8 tile rows there: +7%
                           over launch order, _swizzle_rbuf_epi)
 10 _f16acc                fp16 accumulation (dtype_acc float16)                 418  / 481   (65 / 64%)
                           (8192^3: 481, 71%)
 11 _edge                  any M, N, K with 16-byte-aligned rows (N % 8 == 0,
                           K % 8 == 0): zero-filling cp.async on the tiles that
                           cross an edge, bounded 16-byte stores                 392  / 428   (61 / 57%)
                           (8192^3: 444, 65%; 4095x4104x1016: 232, 47%)

Measured on an NVIDIA H100 80GB HBM3 (132 SMs), 2026-11-23, `python bench.py --dtype f16 --variants
'hgemm_mma*' --m 4096 --n 4096 --k 1024 4096` (cupy.matmul 643 / 756 TFLOP/s) and `--shapes
8192x8192x8192,4095x4104x1016` (cupy.matmul 681 / 496); bf16 (`--dtype bf16`, cupy.matmul 654 /
784): bgemm_mma_fast 396 / 487 (61 / 62%). Between two runs of the same variant the figures moved by up
to 5%. A later session on the same kind of H100 (four processes, 4096x4096x1024 / 4096^3 / 8192^3) got
389-393 / 445-489 / 430-455 for the 128x256x64 rung (61 / 58-64 / 60-66%) and 395-398 / 420-483 /
431-447 for _edge: at 4096^3 _edge ran 1.4%, 3.4%, 9.2% and 13.1% under the tile-multiple rung in
four processes (at the other two shapes within 2.4% of it or ahead), bf16 _edge 9.4% under its own
rung.

Instruction ceiling (`python scripts/tc_peak.py --dtype f16`, H100, 2026-11-23, one run, beside
cupy.matmul fp16 at 4096^3 = 774.9 TFLOP/s in the same process): mma.sync m16n8k16 issued back to
back from registers runs 630-651 TFLOP/s at 8 resident warps per SM (what the 64x64 rungs hold) and
655 at best (84.5% of cuBLAS), with fp32 accumulation as with fp16 (609-637 at 8 warps, 656 at best)
and bf16 (645); the 64x64 warp tile's k loop fed by its ldmatrix loads from shared memory (no global
memory, no barrier) still runs 639 at 8 warps per SM (64x32 and 32x64 warp tiles: 605-616). So
neither fp32 accumulation nor the fragment traffic caps the rungs: the 128x256x64 rung ran 489 at
4096^3 in that process, 75% of the 8-warp ceiling; what the probes do not have is the global->shared
copies, the barrier per K-tile and the tile prologue and epilogue (not profiled). From 4096^3 to
4096x4096x1024 (L2 flushed) cuBLAS itself drops 16% and the rung 12-20%: about the same share of
cuBLAS at both shapes.

Tried after issue 11 and not registered (TFLOP/s at 4096x4096x1024 / 4096^3 / 8192^3 with % of
cupy.matmul; the 128x256x64 rung ran 393 / 484 / 455 in the same runs):
  16 warps per SM, 64x32 warp tiles (64 fp32 accumulators; _rbuf spills at the 128-register cap, so
    without it): 128x256x64 of 2x8 warps 336 / 340 / 323 (52 / 44 / 43%), 256x128x64 of 4x4 warps
    333 / 354 / 368, 128x256x32 stage4 328 / 357 / 368: 15-30% slower.
  128x256x32 with 5 stages: 399 / 481 / 456 (62 / 62 / 61%), level with 4 stages (396 / 484 / 444).
  Persistent blocks (one per SM, the tiles b, b + 132, ... of the grouped walk), one cp.async ring
    running on across tile boundaries, a warp-private epilogue through a 16 x 64 shared buffer per
    warp (no block barrier): with the copy side's tile-switch test in every K-tile 394 / 426 / 410
    (copies issued after the k step's MMAs: 406 / 431 / 429; 128x128x64, 2 blocks per SM: 403 / 439
    / 352); with a branch-free main loop (the switch once per tile), in one process with the rung
    (389 / 487 / 442) and _edge (396 / 442 / 447): 391 / 407 / 423 and _edge 395 / 418 / 428. No
    gain at K = 1024 (the tile prologue and epilogue are not what costs there), 4-17% slower above.

Names: hgemm_mma_m16n8k16_<block/warp tile>[_stageS][_swizzle][_bswizzle][_rbuf][_epi][_f16acc][_edge]:
mmaAxB = A x B warps, warpCxD[xE] = C x D mma tiles of 16x8 per warp and E k steps of 16 per K-tile;
`_swizzle` is the shared-memory XOR swizzle, `_bswizzle` the block (grid) swizzle in bands of 8 tile
rows (`_bswizzle16`: 16; no `_bswizzle`: launch order). The bf16 siblings are the same kernels with
T = __nv_bfloat16 (bf16 in and out, fp32 accumulate), named with the prefix bgemm_mma_ instead of
hgemm_mma_. Aliases: hgemm_mma_fast / bgemm_mma_fast, the top rung (128x256x64, any aligned shape).
"""
from __future__ import annotations

from ..arch import archs_for_smem
from ..variant import Variant

PAD = 8  # halves of padding per shared row in rungs 2-4 (conflict-free fragment reads)
EDGE_MULTIPLE = (1, 8, 8)  # rows of A (K) and B (N) start 16-byte aligned: any M, N % 8, K % 8
_TYPES = {"float16": "half", "bfloat16": "__nv_bfloat16"}


def _record(name, *, source, template, params, tile, threads, dtype="float16", f16acc=False,
            smem=0, edge=False, doc, **kw):
    return Variant(
        name=name, family="hgemm_mma", source=source, template=template,
        params=params + (("T", _TYPES[dtype]),), tile=tile, block=(threads, 1, 1),
        dtype_in=dtype, dtype_out=dtype, dtype_acc="float16" if f16acc else "float32", math="mma",
        multiple_of=EDGE_MULTIPLE if edge else tile, align=16, archs=archs_for_smem(smem),
        smem_dynamic=smem, seed="cugemm", doc=doc, **kw)


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


def stages_smem_bytes(*, WARPS_M, WARPS_N, FRAGS_M, FRAGS_N, BK, STAGES, PAD) -> int:
    """Dynamic shared memory of hgemm_mma_stages (mirrors hgemm_mma_stages_smem_bytes, 04_stages.cu):
    STAGES padded A and B tiles of 16-bit elements."""
    bm, bn = _tiles(WARPS_M, WARPS_N, FRAGS_M, FRAGS_N)
    return STAGES * (bm * (BK + PAD) + BK * (bn + PAD)) * 2


def _stages(name, *, WARPS_M=2, WARPS_N=4, FRAGS_M=4, FRAGS_N=4, BK=32, STAGES, doc, **kw):
    bm, bn = _tiles(WARPS_M, WARPS_N, FRAGS_M, FRAGS_N)
    smem = stages_smem_bytes(WARPS_M=WARPS_M, WARPS_N=WARPS_N, FRAGS_M=FRAGS_M, FRAGS_N=FRAGS_N, BK=BK,
                             STAGES=STAGES, PAD=PAD)
    return _record(name, source="hgemm_mma/04_stages.cu", template="hgemm_mma_stages",
                   params=(("WARPS_M", WARPS_M), ("WARPS_N", WARPS_N), ("FRAGS_M", FRAGS_M),
                           ("FRAGS_N", FRAGS_N), ("BK", BK), ("STAGES", STAGES), ("PAD", PAD)),
                   tile=(bm, bn, BK), threads=32 * WARPS_M * WARPS_N, smem=smem, doc=doc, **kw)


def swizzle_smem_bytes(*, WARPS_M, WARPS_N, FRAGS_M, FRAGS_N, BK, STAGES, EPI) -> int:
    """Dynamic shared memory of hgemm_mma_swizzle (mirrors hgemm_mma_swizzle_smem_bytes,
    05_swizzle.cu): the ring of STAGES unpadded A and B tiles, or the C tile of the shared-memory
    epilogue (EPI) if larger; 16-bit elements."""
    bm, bn = _tiles(WARPS_M, WARPS_N, FRAGS_M, FRAGS_N)
    return max(STAGES * (bm * BK + BK * bn) * 2, bm * bn * 2 if EPI else 0)


def _swizzle(name, *, WARPS_M=2, WARPS_N=4, FRAGS_M=4, FRAGS_N=4, BK=32, STAGES=3, GROUP=0, RBUF=False,
             EPI=False, EDGE=False, F16ACC=False, dtype="float16", doc, **kw):
    bm, bn = _tiles(WARPS_M, WARPS_N, FRAGS_M, FRAGS_N)
    smem = swizzle_smem_bytes(WARPS_M=WARPS_M, WARPS_N=WARPS_N, FRAGS_M=FRAGS_M, FRAGS_N=FRAGS_N, BK=BK,
                              STAGES=STAGES, EPI=EPI)
    return _record(name, source="hgemm_mma/05_swizzle.cu", template="hgemm_mma_swizzle",
                   params=(("WARPS_M", WARPS_M), ("WARPS_N", WARPS_N), ("FRAGS_M", FRAGS_M),
                           ("FRAGS_N", FRAGS_N), ("BK", BK), ("STAGES", STAGES), ("GROUP", GROUP),
                           ("RBUF", RBUF), ("EPI", EPI), ("EDGE", EDGE), ("F16ACC", F16ACC)),
                   tile=(bm, bn, BK), threads=32 * WARPS_M * WARPS_N, dtype=dtype, f16acc=F16ACC,
                   smem=smem, edge=EDGE, doc=doc, **kw)


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
    _swizzle(_H + _BIG + "_edge", **_W128x256x64, STAGES=3, **_TOP, EDGE=True, aliases=("hgemm_mma_fast",),
             doc="any M, N, K with N, K % 8 == 0: zero-filling cp.async at the tails, bounded stores"),
    # ---- bf16 siblings of the top rungs ------------------------------------------------------------
    _swizzle(_B + _BIG, **_W128x256x64, STAGES=3, **_TOP, dtype="bfloat16",
             doc="bf16 in and out (mma ...bf16), fp32 accumulate: the 128x256x64 rung"),
    _swizzle(_B + _BIG + "_edge", **_W128x256x64, STAGES=3, **_TOP, EDGE=True, dtype="bfloat16",
             aliases=("bgemm_mma_fast",), doc="bf16, any M, N, K with N, K % 8 == 0"),
)
