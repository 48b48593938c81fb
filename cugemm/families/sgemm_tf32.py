"""TF32 tensor-core SGEMM: float32 in and out, TF32 multiplies, fp32 accumulate (seed 003).

Three kernel templates, one per algorithm:
  kernels/sgemm_tf32/01_wmma_m16n16k8_stages.cu  sgemm_wmma_tf32_stages (math "wmma"): the notes'
      WMMA kernel, a multistage cp.async pipeline whose warp layout, fragments per warp, K-tile
      depth, stages, padding, fragment-load form, dynamic shared memory and block swizzle are
      template arguments. The inputs are rounded to TF32 on the fragments inside the kernel
      (wmma::__float_to_tf32 after the load; the notes run a separate conversion kernel first),
      or, with ROUND off (`_trunc`), handed to the tensor cores as float32 bits, which truncate
      them (rel. error ~8e-4 instead of ~3e-4, inside the 2e-3 tolerance).
  kernels/sgemm_tf32/02_mma_m16n8k8_stages.cu    sgemm_mma_tf32_stages (math "mma"): the same
      pipeline issuing PTX mma.sync.m16n8k8 itself (and the same ROUND). ptxas lowers every TF32
      wmma m16n16k8 MMA to four HMMA.1684 (m16n8k4), whose issue rate caps any WMMA TF32 GEMM on
      an H200 at 226-236 TFLOP/s, 57-63% of cuBLAS TF32, even with no loads at all
      (scripts/tc_peak.py); the GEMMs reach 125 (rounded) and 146 (`_trunc`). mma.sync m16n8k8
      is one HMMA.1688 per 16x8x8 (ceiling 265-314).
  kernels/sgemm_tf32/03_wgmma_m64nNk8_rs.cu     sgemm_wgmma_tf32_rs (math "wgmma", sm_90a only):
      Hopper wgmma m64nNk8 computing C^T = B^T A^T per warpgroup, so that the shared-memory
      operand is A row-major (K-major, as wgmma .tf32 requires; 128-byte swizzle) and B comes
      through registers ("rs"). Names: sgemm_wgmma_m64n{BM}k8_rs_wg{WGS}_stage{STAGES}; A is
      rounded to TF32 in shared memory (A_ROUND 1), `_ldg` through registers (A_ROUND 2), `_trunc`
      not at all (A_ROUND 0: the tensor cores truncate it; rel. error 4.7e-4 instead of 2.9e-4,
      inside the 2e-3 tolerance).

  kernels/sgemm_tf32/04_wgmma_m64n256k8_ws.cu   sgemm_wgmma_tf32_ws (math "wgmma", sm_90a only):
      03's MMAs (m64n256k8, 256x128x32 block) in two consumer warpgroups, fed by a third, producer
      warpgroup (warp specialization, named barriers, setmaxnreg) that copies both tiles with
      cp.async and rounds A in place behind the copies, off the tensor cores' critical path.
      Names: sgemm_wgmma_m64n256k8_rs_ws_stage{STAGES}, `_trunc` for ROUND off.

Names: the notes' kernel sgemm_wmma_m16n16k8_mma4x2_warp2x4_stages (4x2 warps, 2x4 fragments of
16x16 each, K-tile 8), one variant per configuration the notes benchmark: `_stage2` / `_stage3`
(K_STAGE), `_dsmem` (the _stages_dsmem kernel: dynamic shared memory), `_swizzle` (block swizzle on).
The notes' own name `sgemm_wmma_m16n16k8_mma4x2_warp2x4_stages` is an alias of `_stage2`, the
template's default K_STAGE. Above the notes, in the same style: `warpAxBxC` = A x B fragments per
warp and C k steps of 8 per K-tile (BK = 8 * C, the notes' `warp4x4x2` spelling of a deeper K-tile),
`_stage4`, `_offset` for padded shared rows (A rows + 4 floats, B rows + 8: conflict-free fragment
loads; the notes' rungs keep their padding of 0), `_generic` for the one WMMA rung above the notes
that loads fragments through wmma::load_matrix_sync's generic address (the others use the same
wmma.load with the .shared state space: SHARED_LD), `_trunc` for ROUND off (the tensor cores
truncate float32 to TF32), and `sgemm_mma_m16n8k8_*` for the mma.sync rungs (FRAGS_N counts 16x8
tiles there, so a 64x64 warp tile is `warp4x8`).
Aliases: `sgemm_tf32_fast` (fastest of the family), `sgemm_tf32_wmma_fast` (fastest WMMA rung);
both are `_trunc` variants.

Block swizzle rule (the notes' default, from their benchmark driver): swizzle_stride = N / 4 rounded
down to a multiple of 256 (1024 for N = 4096, 2048 for N = 8192); when that is under 256 there is
one band (stride = N rounded up to BN: no swizzle). The blocks walk C in bands of swizzle_stride
columns, each band row by row (kernels/lib/raster.cuh, block_tile_column_bands): the grid is
(stride / BN, M / BM, ceil(N / stride)), which CUDA starts in that order; blocks past column N (the
last band may be narrower) return at once. The stride goes to the kernel as a 7th int argument
(args_fn); variants without swizzle pass 0, which the kernel ignores.

Measured on an H200 (CuPy 14.2, CUDA 13, 2026-11-22 03:59 UTC, results/tf32.json), 4096^3 /
4096x4096x1024, cupy.matmul TF32 401.9 / 321.0 TFLOP/s in the same run: notes' rungs 60-67 / 58-65,
WMMA 64x64-warp rungs 118-125 / 116-122 (generic loads 88), `_trunc` 146 / 139; mma.sync rungs
159-180 / 155-168, `_trunc` 199 / 197; wgmma (03) rounded 141-202, `_trunc` 262-319 / 250-284;
warp-specialized (04) rounded 255 / 239 (63% / 75%), `_trunc` 340 / 304 (85% / 95%;
sgemm_tf32_fast). Relative error 2.9e-4 when both operands are rounded (as cuBLAS), 4.7e-4 with A
truncated (wgmma `_trunc`), 7.8e-4 with both truncated (WMMA / mma.sync `_trunc`).
"""
from __future__ import annotations

import numpy as np

from ..arch import archs_for_smem
from ..variant import Variant

TF32 = dict(dtype_in="float32", dtype_out="float32", dtype_acc="float32", math="wmma",
            math_dtype="tfloat32")
SOURCE = "sgemm_tf32/01_wmma_m16n16k8_stages.cu"
TEMPLATE = "sgemm_wmma_tf32_stages"


def swizzle_stride(v: Variant, N: int) -> int:
    """The notes' block-swizzle stride for an N-column C: N/4 rounded down to a multiple of 256, or
    the whole width (one band, no swizzle) when that is under 256. Always a multiple of BN."""
    bn = v.tile[1]
    stride = (N // 4) // 256 * 256
    if stride < 256 or stride % bn:
        stride = -(-N // bn) * bn
    return stride


def _swizzle_grid(v: Variant, M: int, N: int, K: int, dev) -> tuple:
    bm, bn = v.tile[0], v.tile[1]
    stride = swizzle_stride(v, N)
    return (stride // bn, -(-M // bm), -(-N // stride))


def _swizzle_args(v: Variant, A, B, C, M: int, N: int, K: int, raw: bool = False) -> tuple:
    return (np.int32(swizzle_stride(v, N)),)


def _no_swizzle_args(v: Variant, A, B, C, M: int, N: int, K: int, raw: bool = False) -> tuple:
    return (np.int32(0),)  # the kernel's swizzle_stride argument, ignored without SWIZZLE


def _wmma_tf32(name, *, WARPS_M, WARPS_N, FRAGS_M, FRAGS_N, BK=8, STAGES, A_PAD=0, B_PAD=0,
               SHARED_LD=False, DSMEM=False, SWIZZLE=False, ROUND=True, doc, **kw):
    BM, BN = 16 * FRAGS_M * WARPS_M, 16 * FRAGS_N * WARPS_N
    smem = STAGES * (BM * (BK + A_PAD) + BK * (BN + B_PAD)) * 4
    if not DSMEM and smem > 48 * 1024:
        raise ValueError(f"{name}: {smem} B of static shared memory is over 48 KB; use DSMEM")
    return Variant(
        name=name, family="sgemm_tf32", source=SOURCE, template=TEMPLATE,
        params=(("WARPS_M", WARPS_M), ("WARPS_N", WARPS_N), ("FRAGS_M", FRAGS_M),
                ("FRAGS_N", FRAGS_N), ("BK", BK), ("STAGES", STAGES), ("A_PAD", A_PAD),
                ("B_PAD", B_PAD), ("SHARED_LD", SHARED_LD), ("DSMEM", DSMEM), ("SWIZZLE", SWIZZLE),
                ("ROUND", ROUND)),
        tile=(BM, BN, BK), block=(32 * WARPS_M * WARPS_N, 1, 1),
        multiple_of=(BM, BN, BK), align=16, archs=archs_for_smem(smem if DSMEM else 0),
        smem_dynamic=smem if DSMEM else 0, seed="003", doc=doc,
        grid_fn=_swizzle_grid if SWIZZLE else None,
        args_fn=_swizzle_args if SWIZZLE else _no_swizzle_args, **TF32, **kw)


MMA_SOURCE = "sgemm_tf32/02_mma_m16n8k8_stages.cu"
MMA_TEMPLATE = "sgemm_mma_tf32_stages"


def _mma_tf32(name, *, WARPS_M, WARPS_N, FRAGS_M, FRAGS_N, BK, STAGES, A_PAD=4, B_PAD=8,
              SWIZZLE=False, ROUND=True, doc, **kw):
    """The mma.sync m16n8k8 rung: FRAGS_M x FRAGS_N tiles of 16 x 8 per warp, always dynamic smem."""
    BM, BN = 16 * FRAGS_M * WARPS_M, 8 * FRAGS_N * WARPS_N
    smem = STAGES * (BM * (BK + A_PAD) + BK * (BN + B_PAD)) * 4
    return Variant(
        name=name, family="sgemm_tf32", source=MMA_SOURCE, template=MMA_TEMPLATE,
        params=(("WARPS_M", WARPS_M), ("WARPS_N", WARPS_N), ("FRAGS_M", FRAGS_M),
                ("FRAGS_N", FRAGS_N), ("BK", BK), ("STAGES", STAGES), ("A_PAD", A_PAD),
                ("B_PAD", B_PAD), ("SWIZZLE", SWIZZLE), ("ROUND", ROUND)),
        tile=(BM, BN, BK), block=(32 * WARPS_M * WARPS_N, 1, 1),
        multiple_of=(BM, BN, BK), align=16, archs=archs_for_smem(smem), smem_dynamic=smem,
        seed="003", doc=doc, grid_fn=_swizzle_grid if SWIZZLE else None,
        args_fn=_swizzle_args if SWIZZLE else _no_swizzle_args,
        **dict(TF32, math="mma"), **kw)


WGMMA_SOURCE = "sgemm_tf32/03_wgmma_m64nNk8_rs.cu"
WGMMA_TEMPLATE = "sgemm_wgmma_tf32_rs"


def _wgmma_smem(BM, BN, STAGES):
    """Dynamic shared memory of the wgmma rungs (BK = 32): the ring of A tiles (BM x 32) and B tiles
    (32 x BN + 8 padding), plus 1024 bytes of slack to align the base to the swizzle atom."""
    return STAGES * (BM * 32 + 32 * (BN + 8)) * 4 + 1024


def _wgmma_tf32(name, *, BM, WGS, STAGES, A_ROUND, doc, **kw):
    """The Hopper wgmma rung (sm_90a only): C^T = B^T A^T per warpgroup, wgmma m64n{BM}k8 with the
    B slice from registers and the A tile from 128-byte-swizzled shared memory; BK fixed at 32."""
    BK, BN = 32, 64 * WGS
    smem = _wgmma_smem(BM, BN, STAGES)
    return Variant(
        name=name, family="sgemm_tf32", source=WGMMA_SOURCE, template=WGMMA_TEMPLATE,
        params=(("BM", BM), ("WGS", WGS), ("STAGES", STAGES), ("A_ROUND", A_ROUND)),
        tile=(BM, BN, BK), block=(128 * WGS, 1, 1), multiple_of=(BM, BN, BK), align=16,
        archs=("sm_90a",), smem_dynamic=smem, seed="003", doc=doc,
        **dict(TF32, math="wgmma"), **kw)


WS_SOURCE = "sgemm_tf32/04_wgmma_m64n256k8_ws.cu"
WS_TEMPLATE = "sgemm_wgmma_tf32_ws"


def _wgmma_ws_tf32(name, *, STAGES, ROUND, doc, **kw):
    """The warp-specialized Hopper rung (sm_90a only): 03's MMAs in two consumer warpgroups, a
    third warpgroup copying both tiles (cp.async) and rounding A in place behind them (ROUND)."""
    BM, BN, BK = 256, 128, 32
    smem = _wgmma_smem(BM, BN, STAGES)
    return Variant(
        name=name, family="sgemm_tf32", source=WS_SOURCE, template=WS_TEMPLATE,
        params=(("STAGES", STAGES), ("ROUND", ROUND)),
        tile=(BM, BN, BK), block=(384, 1, 1), multiple_of=(BM, BN, BK), align=16,
        archs=("sm_90a",), smem_dynamic=smem, seed="003", doc=doc,
        **dict(TF32, math="wgmma"), **kw)


# The notes' configuration: 4x2 warps of 2x4 fragments (32x64 per warp), 128x128 block, K-tile 8,
# no padding.
_NOTES = dict(WARPS_M=4, WARPS_N=2, FRAGS_M=2, FRAGS_N=4, BK=8)
_N = "sgemm_wmma_m16n16k8_mma4x2_warp2x4"
# Above the notes: 64x64 warp tiles (4x4 fragments), padded rows, dynamic shared memory.
_PAD = dict(A_PAD=4, B_PAD=8)
_FAST = dict(A_PAD=4, B_PAD=8, SHARED_LD=True)
_W128x256 = dict(WARPS_M=2, WARPS_N=4, FRAGS_M=4, FRAGS_N=4, **_FAST)
_W256x128 = dict(WARPS_M=4, WARPS_N=2, FRAGS_M=4, FRAGS_N=4, **_FAST)
_W128x128 = dict(WARPS_M=2, WARPS_N=2, FRAGS_M=4, FRAGS_N=4, **_FAST)

VARIANTS: tuple[Variant, ...] = (
    # ---- the notes' ladder (seed 003) --------------------------------------------------------
    _wmma_tf32(f"{_N}_stage2", **_NOTES, STAGES=2, aliases=(f"{_N}_stages",),
               doc="TF32 wmma m16n16k8, 128x128x8 block, 2-stage cp.async pipeline (double buffer)"),
    _wmma_tf32(f"{_N}_stage3", **_NOTES, STAGES=3,
               doc="the same with a 3-stage cp.async pipeline"),
    _wmma_tf32(f"{_N}_stage2_dsmem", **_NOTES, STAGES=2, DSMEM=True,
               doc="stage2 with the ring in dynamic shared memory"),
    _wmma_tf32(f"{_N}_stage3_dsmem", **_NOTES, STAGES=3, DSMEM=True,
               doc="stage3 with the ring in dynamic shared memory"),
    _wmma_tf32(f"{_N}_stage2_swizzle", **_NOTES, STAGES=2, SWIZZLE=True,
               doc="stage2 with block swizzle: bands of N/4 columns for L2 reuse"),
    _wmma_tf32(f"{_N}_stage3_swizzle", **_NOTES, STAGES=3, SWIZZLE=True,
               doc="stage3 with block swizzle"),
    _wmma_tf32(f"{_N}_stage2_dsmem_swizzle", **_NOTES, STAGES=2, DSMEM=True, SWIZZLE=True,
               doc="stage2, dynamic shared memory and block swizzle"),
    _wmma_tf32(f"{_N}_stage3_dsmem_swizzle", **_NOTES, STAGES=3, DSMEM=True, SWIZZLE=True,
               doc="stage3, dynamic shared memory and block swizzle"),
    _wmma_tf32(f"{_N}_stage3_offset", **_NOTES, STAGES=3, **_PAD,
               doc="stage3 with padded shared rows (A +4, B +8 floats): conflict-free fragment loads"),
    # ---- above the notes: 64x64 warp tiles, deeper K-tiles, more stages ----------------------
    _wmma_tf32("sgemm_wmma_m16n16k8_mma2x2_warp4x4x2_stage4_offset_dsmem", **_W128x128, BK=16,
               STAGES=4, DSMEM=True,
               doc="128x128x16 block of 2x2 warps of 64x64, 4 stages (74 KB): 2 blocks per SM"),
    _wmma_tf32("sgemm_wmma_m16n16k8_mma2x2_warp4x4x4_stage3_offset_dsmem", **_W128x128, BK=32,
               STAGES=3, DSMEM=True,
               doc="128x128x32 block of 2x2 warps of 64x64, 3 stages (105 KB): 2 blocks per SM"),
    _wmma_tf32("sgemm_wmma_m16n16k8_mma2x4_warp4x4x2_stage4_offset_dsmem", **_W128x256, BK=16,
               STAGES=4, DSMEM=True,
               doc="128x256x16 block of 2x4 warps of 64x64, 4 stages (106 KB)"),
    _wmma_tf32("sgemm_wmma_m16n16k8_mma2x4_warp4x4x2_stage4_offset_dsmem_generic",
               **dict(_W128x256, SHARED_LD=False), BK=16, STAGES=4, DSMEM=True,
               doc="the same through wmma::load_matrix_sync (generic addresses: 64-bit LD, not LDS)"),
    _wmma_tf32("sgemm_wmma_m16n16k8_mma2x4_warp4x4x4_stage3_offset_dsmem", **_W128x256, BK=32,
               STAGES=3, DSMEM=True,
               doc="128x256x32 block of 2x4 warps of 64x64, 3 stages (153 KB)"),
    _wmma_tf32("sgemm_wmma_m16n16k8_mma2x4_warp4x4x4_stage4_offset_dsmem", **_W128x256, BK=32,
               STAGES=4, DSMEM=True,
               doc="128x256x32 block of 2x4 warps of 64x64, 4 stages (204 KB)"),
    _wmma_tf32("sgemm_wmma_m16n16k8_mma4x2_warp4x4x4_stage3_offset_dsmem", **_W256x128, BK=32,
               STAGES=3, DSMEM=True,
               doc="256x128x32 block of 4x2 warps of 64x64, 3 stages (159 KB)"),
    _wmma_tf32("sgemm_wmma_m16n16k8_mma2x4_warp4x4x4_stage3_offset_dsmem_swizzle", **_W128x256,
               BK=32, STAGES=3, DSMEM=True, SWIZZLE=True,
               doc="128x256x32, 3 stages, with block swizzle"),
    _wmma_tf32("sgemm_wmma_m16n16k8_mma2x4_warp4x4x4_stage3_offset_dsmem_trunc", **_W128x256,
               BK=32, STAGES=3, DSMEM=True, ROUND=False, aliases=("sgemm_tf32_wmma_fast",),
               doc="128x256x32, 3 stages, fragments not rounded: the tensor cores truncate them "
                   "to TF32 (rel. error ~8e-4 vs ~3e-4)"),
    # ---- above WMMA: mma.sync m16n8k8 (HMMA.1688; wmma's tf32 m16n16k8 is four HMMA.1684) -------
    _mma_tf32("sgemm_mma_m16n8k8_mma2x2_warp4x8x4_stage3_offset_dsmem", WARPS_M=2, WARPS_N=2,
              FRAGS_M=4, FRAGS_N=8, BK=32, STAGES=3,
              doc="mma.sync tf32, 128x128x32 block of 2x2 warps of 64x64, 3 stages: 2 blocks per SM"),
    _mma_tf32("sgemm_mma_m16n8k8_mma2x4_warp4x8x2_stage4_offset_dsmem", WARPS_M=2, WARPS_N=4,
              FRAGS_M=4, FRAGS_N=8, BK=16, STAGES=4,
              doc="mma.sync tf32, 128x256x16 block of 2x4 warps of 64x64, 4 stages"),
    _mma_tf32("sgemm_mma_m16n8k8_mma2x4_warp4x8x4_stage3_offset_dsmem", WARPS_M=2, WARPS_N=4,
              FRAGS_M=4, FRAGS_N=8, BK=32, STAGES=3,
              doc="mma.sync tf32, 128x256x32 block of 2x4 warps of 64x64, 3 stages"),
    _mma_tf32("sgemm_mma_m16n8k8_mma2x4_warp4x8x4_stage4_offset_dsmem", WARPS_M=2, WARPS_N=4,
              FRAGS_M=4, FRAGS_N=8, BK=32, STAGES=4,
              doc="mma.sync tf32, 128x256x32, 4 stages (204 KB)"),
    _mma_tf32("sgemm_mma_m16n8k8_mma4x2_warp4x8x4_stage3_offset_dsmem", WARPS_M=4, WARPS_N=2,
              FRAGS_M=4, FRAGS_N=8, BK=32, STAGES=3,
              doc="mma.sync tf32, 256x128x32 block of 4x2 warps of 64x64, 3 stages"),
    _mma_tf32("sgemm_mma_m16n8k8_mma2x4_warp4x8x4_stage3_offset_dsmem_swizzle", WARPS_M=2,
              WARPS_N=4, FRAGS_M=4, FRAGS_N=8, BK=32, STAGES=3, SWIZZLE=True,
              doc="mma.sync tf32, 128x256x32, 3 stages, block swizzle"),
    _mma_tf32("sgemm_mma_m16n8k8_mma2x4_warp4x8x4_stage3_offset_dsmem_trunc", WARPS_M=2,
              WARPS_N=4, FRAGS_M=4, FRAGS_N=8, BK=32, STAGES=3, ROUND=False,
              doc="mma.sync tf32, 128x256x32, 3 stages, fragments not rounded: the tensor cores "
                  "truncate them to TF32 (rel. error ~8e-4 vs ~3e-4)"),
    # ---- above mma.sync: Hopper wgmma (sm_90a), roles swapped (see 03_wgmma_m64nNk8_rs.cu) -------
    _wgmma_tf32("sgemm_wgmma_m64n256k8_rs_wg2_stage4", BM=256, WGS=2, STAGES=4, A_ROUND=1,
                doc="wgmma tf32 m64n256k8, 256x128x32 block of 2 warpgroups, 4 stages (197 KB), "
                    "A rounded in place in shared memory (both operands cvt.rna)"),
    _wgmma_tf32("sgemm_wgmma_m64n256k8_rs_wg2_stage4_trunc", BM=256, WGS=2, STAGES=4,
                A_ROUND=0,
                doc="the same with A left as float32 bits in shared memory: the tensor cores "
                    "truncate it to TF32 (rel. error 4.7e-4 vs 2.9e-4)"),
    _wgmma_tf32("sgemm_wgmma_m64n256k8_rs_wg2_stage4_ldg", BM=256, WGS=2, STAGES=4, A_ROUND=2,
                doc="A rounded on its way in: 16-byte loads to registers one K-tile ahead, "
                    "cvt.rna, 16-byte stores to the swizzled tile (slower than in place)"),
    _wgmma_tf32("sgemm_wgmma_m64n128k8_rs_wg2_stage3", BM=128, WGS=2, STAGES=3, A_ROUND=1,
                doc="wgmma tf32 m64n128k8, 128x128x32 block of 2 warpgroups, 3 stages (100 KB): "
                    "2 blocks per SM"),
    _wgmma_tf32("sgemm_wgmma_m64n128k8_rs_wg2_stage3_trunc", BM=128, WGS=2, STAGES=3,
                A_ROUND=0, doc="stage3 with A truncated by the tensor cores (no rounding pass)"),
    _wgmma_tf32("sgemm_wgmma_m64n128k8_rs_wg2_stage6", BM=128, WGS=2, STAGES=6, A_ROUND=1,
                doc="wgmma tf32 m64n128k8, 128x128x32 block of 2 warpgroups, 6 stages (199 KB)"),
    # ---- above: a warp-specialized producer (see 04_wgmma_m64n256k8_ws.cu) ---------------------
    _wgmma_ws_tf32("sgemm_wgmma_m64n256k8_rs_ws_stage4", STAGES=4, ROUND=True,
                   doc="wgmma tf32 m64n256k8, 256x128x32 block: 2 consumer warpgroups and a producer "
                       "warpgroup that copies (cp.async) and rounds A in place off the critical "
                       "path, 4 stages (195 KB); both operands cvt.rna, as cuBLAS"),
    _wgmma_ws_tf32("sgemm_wgmma_m64n256k8_rs_ws_stage4_trunc", STAGES=4, ROUND=False,
                   aliases=("sgemm_tf32_fast",),
                   doc="the same with A truncated by the tensor cores (no rounding pass): the "
                       "fastest of the family"),
)
