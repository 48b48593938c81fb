"""FP16 and BF16 tensor-core GEMM through inline PTX mma.sync.m16n8k16 (fp32 accumulate unless named
_f16acc): the rung above WMMA (issue 11).

kernels/hgemm_mma/01..07, one kernel template per file, all templated on the element type T (half or
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
 12 _ws (06_ws.cu, sm_90a)  warp specialisation: one TMA producer thread (a
                           producer warpgroup, 40 registers) fills a STAGES-deep
                           ring on FULL/EMPTY mbarriers, 8 consumer warps (232
                           registers) of 64x64 tiles run ldmatrix + mma.sync and
                           never meet at a block barrier; 128x256x64, bands of 8
                           tile rows, any aligned shape for free (TMA zero-fills)
                           stage4_ws / _edge (4096^3):             454.6 / 449.9   (63.2 / 63.4%)
                           (8192^3: 459.3 / 422.7, 64.2 / 64.2%)
 13 _persistent            persistent blocks (one per SM, the ring runs on across
    (07_persistent.cu,     tiles: the producer fills tile i + 1 while the warps
     sm_90a)               finish tile i) and an epilogue per warp by TMA stores
                           from two 16-row staging boxes, overlapping the next
                           tile; any aligned shape (TMA zero-fills and clips)
                           stage4_persistent                     461  / 461   (72 / 65%)
                           (8192^3: 448, 65%); _f16acc 488 / 468 (75 / 67%);
                           _cluster2 (B multicast): 433 / 424 (68 / 61%), a loss

Measured on an NVIDIA H100 80GB HBM3 (132 SMs), 2026-11-23, `python bench.py --dtype f16 --variants
'hgemm_mma*' --m 4096 --n 4096 --k 1024 4096` (cupy.matmul 643 / 756 TFLOP/s) and `--shapes
8192x8192x8192,4095x4104x1016` (cupy.matmul 681 / 496); bf16 (`--dtype bf16`, cupy.matmul 654 /
784): bgemm_mma_fast 396 / 487 (61 / 62%). Between two runs of the same variant the figures moved by up
to 5%. A later session on the same kind of H100 (four processes, 4096x4096x1024 / 4096^3 / 8192^3) got
389-393 / 445-489 / 430-455 for the 128x256x64 rung (61 / 58-64 / 60-66%) and 395-398 / 420-483 /
431-447 for _edge: at 4096^3 _edge ran 1.4%, 3.4%, 9.2% and 13.1% under the tile-multiple rung in
four processes (at the other two shapes within 2.4% of it or ahead), bf16 _edge 9.4% under its own
rung.

Rung 12 (2026-11-23, NVIDIA H100 80GB HBM3, one process, `python bench.py --dtype f16 --variants
'hgemm_mma_m16n8k16_mma2x4_warp4x8x4_stage3_swizzle_bswizzle_rbuf_epi*,hgemm_mma_m16n8k16_mma*_ws*'
--shapes 4096x4096x1024,4096x4096x4096,8192x8192x8192`; TFLOP/s (% of cupy.matmul, the bench's
alternating-pair ratio); the 4096x4096x1024 table of that run was lost (the device was withdrawn
before a second run), so rung 12 has no figure at that shape):
                                        4096^3 (cupy 756.0)   8192^3 (cupy 666.5)
  128x256x64 stage3 (rung 9)            479.6 (63.0%)         404.9 (56.5%)
  ..._f16acc (rung 10)                  452.7 (62.6%)         457.8 (63.0%)
  ..._edge (rung 11)                    405.7 (56.5%)         384.9 (56.3%)
  mma2x4_warp4x8x4_stage3_ws            461.7 (63.8%)         459.6 (64.3%)
  mma2x4_warp4x8x4_stage4_ws            454.6 (63.2%)         459.3 (64.2%)
  mma4x2_warp4x8x4_stage4_ws (256x128)  449.6 (63.3%)         451.5 (64.3%)
  mma2x4_warp4x8x4_stage4_ws_edge       449.9 (63.4%)         422.7 (64.2%)
So taking the copies and the per-K-tile barrier off the consumer warps did NOT lift the
tile-multiple rung at 4096^3 (63-64% either way, inside the run-to-run spread); it lifted 8192^3 by
8 points (56.5 -> 64.2%) and the any-shape rung by 7-8 points at both (_edge 56.5 / 56.3% ->
63.4 / 64.2%, now level with the tile-multiple rungs: the any-shape rung costs nothing). 3 vs 4
stages, 128x256 vs 256x128 blocks: no difference. The issue's 65% at 4096^3 / 8192^3 and 70% at
4096x4096x1024 are still not met. Per K-tile a 128x256x64 block reads 48 KB (TMA, L2 -> shared)
and its warps read 128 KB of ldmatrix from shared memory: at the probes' 640 TFLOP/s that is 7.5
TB/s from L2 for 132 SMs, the next suspect (not profiled: no ncu run was made). Rung 13
(then written as clusters of 2 with B multicast, 32 KB per K-tile per block, now rung 13's
_cluster2) was to test that. bf16 rung 12: passed the GPU tests, not timed.
A later run of the final code (same H100, same day, `bench.py --dtype f16|bf16 --shapes
4096x4096x1024,4096x4096x4096,8192x8192x8192`, TFLOP/s and % of cupy.matmul):
  fp16 rung 9 (stage3)                  383.9 (60.1%)   478.4 (61.7%)   423.9 (57.0%)
  fp16 stage4_ws                        412.1 (63.9%)   478.1 (64.7%)   462.9 (64.1%)
  fp16 stage4_ws_edge (hgemm_mma_fast)  422.2 (66.9%)   445.2 (63.7%)   445.4 (64.3%)
  bf16 stage4_ws                        414.8 (63.1%)   507.6 (65.3%)   468.0 (64.0%)
  bf16 stage4_ws_edge (bgemm_mma_fast)  422.5 (64.7%)   466.0 (63.7%)   456.6 (63.7%)
That puts the best fp16 rung at 66.9 / 64.7 / 64.3%, still short of the issue's 70 / 65 / 65%. bf16 is
within 5% of fp16, and the any-shape rung is within 2 points of the tile-multiple one.

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

Rung 13 (2026-11-23, NVIDIA H100 80GB HBM3, one process, `bash scripts/device_check.sh mma`:
`bench.py --dtype f16|bf16 --shapes 4096x4096x1024,4096x4096x4096,8192x8192x8192`, TFLOP/s and the
bench's % of cupy.matmul; results/mma_f16.json, results/mma_bf16.json; cupy.matmul fp16 639.5 /
745.8 / 747.3, bf16 654.3 / 773.6 / 757.7):
                                        4096x4096x1024   4096^3          8192^3
  fp16 128x256x64 stage3 (rung 9)       387.6 (60.6%)    443.1 (59.7%)   400.1 (57.1%)
  fp16 stage4_ws (rung 12)              413.9 (64.2%)    449.4 (63.5%)   453.6 (64.2%)
  fp16 stage4_ws_edge (rung 12)         427.7 (67.5%)    454.2 (64.0%)   456.9 (64.5%)
  fp16 stage3_persistent                465.6 (72.4%)    462.6 (65.0%)   452.1 (64.5%)
  fp16 stage4_persistent (_fast)        461.2 (71.7%)    460.9 (65.2%)   447.7 (65.0%)
  fp16 stage4_persistent_f16acc         487.8 (75.3%)    467.5 (67.3%)   449.8 (67.2%)
  fp16 mma4x2 stage4_persistent         467.0 (73.4%)    453.2 (65.1%)   434.9 (64.8%)
  fp16 stage3_persistent_cluster2       433.3 (68.0%)    424.4 (61.3%)   433.8 (60.6%)
  bf16 stage4_ws_edge (rung 12)         418.0 (64.4%)    459.8 (63.5%)   475.0 (64.5%)
  bf16 stage4_persistent (_fast)        468.1 (72.4%)    467.1 (64.8%)   410.7 (64.3%)
In three other runs of the same day the fp16 persistent rungs measured 71.3-72.7% / 64.5-65.9% /
64.5-65.0%: at 4096^3 and 8192^3 they sit on the issue's 65% line, within the runs' spread.
Persistence and the overlapped epilogue lift K = 1024 by 5-8 points (16 K-tiles per tile: the
per-tile launch, fill and block-wide epilogue of rung 12 were about a tenth of a tile's time) and
4096^3 / 8192^3 by about one. Clusters of 2 with B multicast (a third less L2 traffic per block)
lose 3-4 points: the L2 is not what limits this rung. What does: Nsight Compute on stage4_persistent
at 8192^3 (one launch, 2.40 ms, SM clock 1.43 GHz) puts the tensor pipe
(sm__pipe_tensor_op_hmma_cycles_active) at 92.2% of its peak over the active cycles, "the Shared
pipeline (FP64 + tensor) over-utilized, 89.0%", L2 at 57% of its throughput (6.1 TB/s), DRAM at
20%. The mma.sync pipe itself is the cap: at the clock the 700 W limit leaves under a sustained
GEMM, 100% of it is about 500 TFLOP/s, 66-70% of what cuBLAS's wgmma kernels reach in the same run,
so 65% at 4096^3 and 8192^3 is within 5% of all that mma.sync can do on this GPU.

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

from .. import tma
from ..arch import archs_for_smem
from ..variant import Variant
from . import hgemm_wgmma

PAD = 8  # halves of padding per shared row in rungs 2-4 (conflict-free fragment reads)
EDGE_MULTIPLE = (1, 8, 8)  # rows of A (K) and B (N) start 16-byte aligned: any M, N % 8, K % 8
_TYPES = {"float16": "half", "bfloat16": "__nv_bfloat16"}


def _record(name, *, source, template, params, tile, threads, dtype="float16", f16acc=False,
            smem=0, edge=False, archs=None, doc, **kw):
    return Variant(
        name=name, family="hgemm_mma", source=source, template=template,
        params=params + (("T", _TYPES[dtype]),), tile=tile, block=(threads, 1, 1),
        dtype_in=dtype, dtype_out=dtype, dtype_acc="float16" if f16acc else "float32", math="mma",
        multiple_of=EDGE_MULTIPLE if edge else tile, align=16, archs=archs or archs_for_smem(smem),
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


WS_SLACK = 1024  # rung 12: the TMA ring is 1024-byte aligned by hand (128-byte swizzle atoms)


def ws_smem_bytes(*, WARPS_M, WARPS_N, FRAGS_M, FRAGS_N, STAGES) -> int:
    """Dynamic shared memory of hgemm_mma_ws (mirrors hgemm_mma_ws_smem_bytes, 06_ws.cu): STAGES
    A [BM][64] and B [64][BN] tiles of 16-bit elements and the alignment slack."""
    bm, bn = _tiles(WARPS_M, WARPS_N, FRAGS_M, FRAGS_N)
    return STAGES * (bm + bn) * 128 + WS_SLACK


# ---- rungs 12 and 13's kernel arguments: tensor maps, cached per launch signature (hgemm_wgmma) ----
def _maps_ab(v, A, B, C, M, N, K):
    """Rung 12: A in boxes {64 k, BM rows}, B in boxes {64 columns, 64 k}, 128-byte swizzled."""
    size = v.dt_in.itemsize
    ma = tma.tensor_map_2d(A.ptr, v.dtype_in, M, K, hgemm_wgmma.row_stride(A, K, size), (64, v.tile[0]))
    mb = tma.tensor_map_2d(B.ptr, v.dtype_in, K, N, hgemm_wgmma.row_stride(B, N, size), (64, 64))
    return ma, mb


def _maps_abc(v, A, B, C, M, N, K):
    """Rung 13: rung 12's maps and C in boxes {64 columns, 16 rows} (a staging box)."""
    mc = tma.tensor_map_2d(C.ptr, v.dtype_out, M, N, hgemm_wgmma.row_stride(C, N, v.dt_out.itemsize), (64, 16))
    return _maps_ab(v, A, B, C, M, N, K) + (mc,)


def _ws(name, *, WARPS_M=2, WARPS_N=4, FRAGS_M=4, FRAGS_N=8, STAGES=4, GROUP=8, EDGE=False,
        dtype="float16", doc, **kw):
    bm, bn = _tiles(WARPS_M, WARPS_N, FRAGS_M, FRAGS_N)
    smem = ws_smem_bytes(WARPS_M=WARPS_M, WARPS_N=WARPS_N, FRAGS_M=FRAGS_M, FRAGS_N=FRAGS_N, STAGES=STAGES)
    v = _record(name, source="hgemm_mma/06_ws.cu", template="hgemm_mma_ws",
                params=(("WARPS_M", WARPS_M), ("WARPS_N", WARPS_N), ("FRAGS_M", FRAGS_M),
                        ("FRAGS_N", FRAGS_N), ("STAGES", STAGES), ("GROUP", GROUP), ("EDGE", EDGE)),
                tile=(bm, bn, 64), threads=32 * WARPS_M * WARPS_N + 128, dtype=dtype, smem=smem, edge=EDGE,
                archs=("sm_90a",), doc=doc, args_fn=hgemm_wgmma.cached_args(_maps_ab), **kw)
    return v


def persistent_smem_bytes(*, WARPS_M, WARPS_N, STAGES) -> int:
    """Dynamic shared memory of hgemm_mma_persistent (mirrors hgemm_mma_persistent_smem_bytes,
    07_persistent.cu): the ring, two 2 KB staging boxes per consumer warp and the alignment slack."""
    bm, bn = _tiles(WARPS_M, WARPS_N, 4, 8)
    return STAGES * (bm + bn) * 128 + WARPS_M * WARPS_N * 2 * 16 * 128 + WS_SLACK


def _persistent(name, *, WARPS_M=2, WARPS_N=4, STAGES=3, GROUP=8, CLUSTER_M=1, F16ACC=False, dtype="float16",
                doc, **kw):
    bm, bn = _tiles(WARPS_M, WARPS_N, 4, 8)
    smem = persistent_smem_bytes(WARPS_M=WARPS_M, WARPS_N=WARPS_N, STAGES=STAGES)
    return _record(name, source="hgemm_mma/07_persistent.cu", template="hgemm_mma_persistent",
                   params=(("WARPS_M", WARPS_M), ("WARPS_N", WARPS_N), ("STAGES", STAGES), ("GROUP", GROUP),
                           ("CLUSTER_M", CLUSTER_M), ("F16ACC", F16ACC)),
                   tile=(bm, bn, 64), threads=32 * WARPS_M * WARPS_N + 128, dtype=dtype, f16acc=F16ACC, smem=smem,
                   edge=True,
                   archs=("sm_90a",), cluster=(CLUSTER_M, 1, 1), grid_fn=hgemm_wgmma.persistent_grid,
                   args_fn=hgemm_wgmma.cached_args(_maps_abc), doc=doc, **kw)


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
    _swizzle(_H + _BIG + "_edge", **_W128x256x64, STAGES=3, **_TOP, EDGE=True,
             doc="any M, N, K with N, K % 8 == 0: zero-filling cp.async at the tails, bounded stores"),
    # ---- rung 12: warp specialisation, a TMA producer and 8 mma.sync consumer warps (sm_90a) -------
    _ws(_H + "mma2x4_warp4x8x4_stage3_ws", STAGES=3,
        doc="a TMA producer warpgroup and 8 mma.sync consumer warps on FULL/EMPTY mbarriers, 3 stages"),
    _ws(_H + "mma2x4_warp4x8x4_stage4_ws", STAGES=4,
        doc="a TMA producer warpgroup and 8 mma.sync consumer warps on FULL/EMPTY mbarriers, 4 stages"),
    _ws(_H + "mma4x2_warp4x8x4_stage4_ws", WARPS_M=4, WARPS_N=2, STAGES=4,
        doc="the warp-specialised TMA rung with 256x128x64 blocks (4 x 2 consumer warps)"),
    _ws(_H + "mma2x4_warp4x8x4_stage4_ws_edge", STAGES=4, EDGE=True,
        doc="any M, N, K with N, K % 8 == 0: TMA zero-fills the tails, bounded stores"),
    # the any-shape form of the 128x128x64 rung: 96 KB of shared memory, so it is the any-shape
    # rung of the chips with ~100 KB per block (sm_86, sm_89; cugemm.matmul's fallback there)
    _swizzle(_H + "mma2x2_warp4x8x4_stage3" + _SUFFIX + "_edge", **_W128x128x64, STAGES=3, **_TOP, EDGE=True,
             doc="128x128x64, any M, N, K with N, K % 8 == 0 (fits sm_86/sm_89 shared memory)"),
    # ---- bf16 siblings of the top rungs ------------------------------------------------------------
    _swizzle(_B + "mma2x2_warp4x8x4_stage3" + _SUFFIX + "_edge", **_W128x128x64, STAGES=3, **_TOP, EDGE=True,
             dtype="bfloat16", doc="bf16, 128x128x64, any M, N, K with N, K % 8 == 0 (fits sm_86/sm_89)"),
    _swizzle(_B + _BIG, **_W128x256x64, STAGES=3, **_TOP, dtype="bfloat16",
             doc="bf16 in and out (mma ...bf16), fp32 accumulate: the 128x256x64 rung"),
    _swizzle(_B + _BIG + "_edge", **_W128x256x64, STAGES=3, **_TOP, EDGE=True, dtype="bfloat16",
             doc="bf16, any M, N, K with N, K % 8 == 0"),
    _ws(_B + "mma2x4_warp4x8x4_stage4_ws", STAGES=4, dtype="bfloat16",
        doc="bf16 in and out, fp32 accumulate: the warp-specialised TMA rung"),
    _ws(_B + "mma2x4_warp4x8x4_stage4_ws_edge", STAGES=4, EDGE=True, dtype="bfloat16",
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

