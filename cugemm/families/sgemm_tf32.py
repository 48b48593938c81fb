"""TF32 tensor-core SGEMM: float32 in and out, TF32 multiplies, fp32 accumulate (seed 003).

Four kernel templates, one per algorithm (kernels/sgemm_tf32/): 01 the notes' WMMA m16n16k8
multistage pipeline; 02 the same pipeline issuing PTX mma.sync.m16n8k8; 03 Hopper wgmma m64nNk8
computing C^T = B^T A^T with B from registers (sm_90a); 04 its warp-specialized form with two
consumer warpgroups (sm_90a). Inputs are rounded to TF32 as cuBLAS does (round to nearest), or,
in the `_trunc` siblings, handed to the tensor cores as float32 bits, which truncate them
(rel. error ~8e-4 instead of ~3e-4, inside the 2e-3 tolerance). Names follow the notes
(`_offset` padded rows, `_dsmem` dynamic shared memory, `_swizzle` block swizzle). What each rung
measured and why the WMMA rungs are capped: docs/sgemm_tf32.md.
"""
from __future__ import annotations

from ..variant import Candidate, Variant

TF32 = dict(dtype_in="float32", dtype_out="float32", dtype_acc="float32", math="wmma",
            math_dtype="tfloat32")
SOURCE = "sgemm_tf32/01_wmma_m16n16k8_stages.cu"
TEMPLATE = "sgemm_wmma_tf32_stages"


def _wmma_tf32(name, *, WARPS_M, WARPS_N, FRAGS_M, FRAGS_N, BK=8, STAGES, A_PAD=0, B_PAD=0,
               SHARED_LD=False, DSMEM=False, SWIZZLE=False, ROUND=True, doc, **kw):
    BM, BN = 16 * FRAGS_M * WARPS_M, 16 * FRAGS_N * WARPS_N
    return Variant(
        name=name, family="sgemm_tf32", source=SOURCE, template=TEMPLATE,
        params=(("WARPS_M", WARPS_M), ("WARPS_N", WARPS_N), ("FRAGS_M", FRAGS_M),
                ("FRAGS_N", FRAGS_N), ("BK", BK), ("STAGES", STAGES), ("A_PAD", A_PAD),
                ("B_PAD", B_PAD), ("SHARED_LD", SHARED_LD), ("DSMEM", DSMEM), ("SWIZZLE", SWIZZLE),
                ("ROUND", ROUND)),
        tile=(BM, BN, BK), block=(32 * WARPS_M * WARPS_N, 1, 1),
        multiple_of=(BM, BN, BK), align=16, seed="003", doc=doc,
        grid_rule="swizzle" if SWIZZLE else "", args_rule="swizzle" if SWIZZLE else "no_swizzle", **TF32, **kw)


MMA_SOURCE = "sgemm_tf32/02_mma_m16n8k8_stages.cu"
MMA_TEMPLATE = "sgemm_mma_tf32_stages"


def _mma_tf32(name, *, WARPS_M, WARPS_N, FRAGS_M, FRAGS_N, BK, STAGES, A_PAD=4, B_PAD=8,
              SWIZZLE=False, ROUND=True, doc, **kw):
    """The mma.sync m16n8k8 rung: FRAGS_M x FRAGS_N tiles of 16 x 8 per warp, always dynamic smem."""
    BM, BN = 16 * FRAGS_M * WARPS_M, 8 * FRAGS_N * WARPS_N
    return Variant(
        name=name, family="sgemm_tf32", source=MMA_SOURCE, template=MMA_TEMPLATE,
        params=(("WARPS_M", WARPS_M), ("WARPS_N", WARPS_N), ("FRAGS_M", FRAGS_M),
                ("FRAGS_N", FRAGS_N), ("BK", BK), ("STAGES", STAGES), ("A_PAD", A_PAD),
                ("B_PAD", B_PAD), ("SWIZZLE", SWIZZLE), ("ROUND", ROUND)),
        tile=(BM, BN, BK), block=(32 * WARPS_M * WARPS_N, 1, 1),
        multiple_of=(BM, BN, BK), align=16, seed="003", doc=doc,
        grid_rule="swizzle" if SWIZZLE else "", args_rule="swizzle" if SWIZZLE else "no_swizzle",
        **dict(TF32, math="mma"), **kw)


WGMMA_SOURCE = "sgemm_tf32/03_wgmma_m64nNk8_rs.cu"
WGMMA_TEMPLATE = "sgemm_wgmma_tf32_rs"


def _wgmma_tf32(name, *, BM, WGS, STAGES, A_ROUND, doc, **kw):
    """The Hopper wgmma rung (sm_90a only): C^T = B^T A^T per warpgroup, wgmma m64n{BM}k8 with the
    B slice from registers and the A tile from 128-byte-swizzled shared memory; BK fixed at 32."""
    BK, BN = 32, 64 * WGS
    return Variant(
        name=name, family="sgemm_tf32", source=WGMMA_SOURCE, template=WGMMA_TEMPLATE,
        params=(("BM", BM), ("WGS", WGS), ("STAGES", STAGES), ("A_ROUND", A_ROUND)),
        tile=(BM, BN, BK), block=(128 * WGS, 1, 1), multiple_of=(BM, BN, BK), align=16,
        archs=("sm_90a",), seed="003", doc=doc,
        **dict(TF32, math="wgmma"), **kw)


WS_SOURCE = "sgemm_tf32/04_wgmma_m64n256k8_ws.cu"
WS_TEMPLATE = "sgemm_wgmma_tf32_ws"


def _wgmma_ws_tf32(name, *, STAGES, ROUND, doc, **kw):
    """The warp-specialized Hopper rung (sm_90a only): 03's MMAs in two consumer warpgroups, a
    third warpgroup copying both tiles (cp.async) and rounding A in place behind them (ROUND)."""
    BM, BN, BK = 256, 128, 32
    return Variant(
        name=name, family="sgemm_tf32", source=WS_SOURCE, template=WS_TEMPLATE,
        params=(("STAGES", STAGES), ("ROUND", ROUND)),
        tile=(BM, BN, BK), block=(384, 1, 1), multiple_of=(BM, BN, BK), align=16,
        archs=("sm_90a",), seed="003", doc=doc,
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
    _mma_tf32("sgemm_mma_m16n8k8_mma2x4_warp4x8x4_stage3_offset_dsmem_swizzle",
              matmul=Candidate(150.0, "tiles", 2),
              WARPS_M=2,
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
