"""FP16 tensor-core HGEMM through the WMMA API (fp32 accumulate unless named _f16acc): seed 002.

The notes' WMMA ladder (kernels/hgemm_wmma/01..05) and, above it, a multi-stage cp.async pipeline
with 64x64 warp tiles (06). One kernel template per algorithm; the WMMA shape, the warp grid
(mmaAxB: A x B warps per block), the fragments per warp (warpCxD, and a third xE = E K steps of
16 per staged tile), the pipeline depth and the shared-row padding are template arguments, so
siblings share a template. Block tile: BM = WMMA_M*C*A, BN = WMMA_N*D*B, BK = 16*E.

Names follow the notes; `_offset` = shared rows padded by 8 halves (conflict-free ldmatrix),
`_f16acc` = fp16 accumulation as in the notes (dtype_acc float16), `_stageS` = S pipeline stages,
`_swizzle` = block swizzle for L2 reuse.

What each rung measured: docs/hgemm_wmma.md.
"""
from __future__ import annotations

from ..variant import Variant

PAD_OFFSET = 8  # halves: makes the A and B shared row strides odd multiples of 16 bytes


def _common(name, *, f16acc, seed, doc, **kw):
    return dict(name=name, family="hgemm_wmma", dtype_in="float16", dtype_out="float16",
                dtype_acc="float16" if f16acc else "float32", math="wmma", align=16, seed=seed, doc=doc, **kw)


def _naive(name, *, WM=16, WN=16, WK=16, f16acc=False, doc, **kw):
    return Variant(
        source="hgemm_wmma/01_naive.cu", template="hgemm_wmma_naive",
        params=(("WMMA_M", WM), ("WMMA_N", WN), ("WMMA_K", WK), ("F16ACC", f16acc)),
        tile=(WM, WN, WK), block=(32, 1, 1), multiple_of=(WM, WN, WK),
        **_common(name, f16acc=f16acc, seed="002", doc=doc, **kw))


def _tiles(WM, WN, WK, WARPS_M, WARPS_N, WTM, WTN, WTK):
    return WM * WTM * WARPS_M, WN * WTN * WARPS_N, WK * WTK


def _smem_staged(name, *, WM=16, WN=16, WK=16, WARPS_M, WARPS_N, WTM, WTN, f16acc=False, doc, **kw):
    bm, bn, bk = _tiles(WM, WN, WK, WARPS_M, WARPS_N, WTM, WTN, 1)
    return Variant(
        source="hgemm_wmma/02_smem.cu", template="hgemm_wmma_smem",
        params=(("WMMA_M", WM), ("WMMA_N", WN), ("WMMA_K", WK), ("WARPS_M", WARPS_M),
                ("WARPS_N", WARPS_N), ("WARP_TILE_M", WTM), ("WARP_TILE_N", WTN), ("F16ACC", f16acc)),
        tile=(bm, bn, bk), block=(32 * WARPS_M * WARPS_N, 1, 1), multiple_of=(bm, bn, bk),
        **_common(name, f16acc=f16acc, seed="002", doc=doc, **kw))


# Rungs 3 and 4 share one parameter list: WMMA shape, warps, fragments per warp, K steps, padding.
_PIPE_SOURCES = {
    "hgemm_wmma_async": "hgemm_wmma/03_async.cu",
    "hgemm_wmma_dbuf_async": "hgemm_wmma/04_dbuf_async.cu",
}


def _pipelined(name, template, *, WM=16, WN=16, WK=16, WARPS_M, WARPS_N, WTM, WTN, WTK=1, PAD,
               f16acc=False, doc, **kw):
    bm, bn, bk = _tiles(WM, WN, WK, WARPS_M, WARPS_N, WTM, WTN, WTK)
    return Variant(
        source=_PIPE_SOURCES[template], template=template,
        params=(("WMMA_M", WM), ("WMMA_N", WN), ("WMMA_K", WK), ("WARPS_M", WARPS_M),
                ("WARPS_N", WARPS_N), ("WARP_TILE_M", WTM), ("WARP_TILE_N", WTN),
                ("WARP_TILE_K", WTK), ("PAD", PAD), ("F16ACC", f16acc)),
        tile=(bm, bn, bk), block=(32 * WARPS_M * WARPS_N, 1, 1), multiple_of=(bm, bn, bk),
        **_common(name, f16acc=f16acc, seed="002", doc=doc, **kw))


def _rbuf(name, *, WM=16, WN=16, WK=16, WARPS_M=4, WARPS_N=2, WTM=2, WTN=4, WTK=2, STAGES, PAD,
          f16acc=False, doc, **kw):
    bm, bn, bk = _tiles(WM, WN, WK, WARPS_M, WARPS_N, WTM, WTN, WTK)
    return Variant(
        source="hgemm_wmma/05_rbuf_async.cu", template="hgemm_wmma_rbuf_async",
        params=(("WMMA_M", WM), ("WMMA_N", WN), ("WMMA_K", WK), ("WARPS_M", WARPS_M),
                ("WARPS_N", WARPS_N), ("WARP_TILE_M", WTM), ("WARP_TILE_N", WTN),
                ("WARP_TILE_K", WTK), ("STAGES", STAGES), ("PAD", PAD), ("F16ACC", f16acc)),
        tile=(bm, bn, bk), block=(32 * WARPS_M * WARPS_N, 1, 1), multiple_of=(bm, bn, bk),
        **_common(name, f16acc=f16acc, seed="002", doc=doc, **kw))


def _stages(name, *, WM=16, WN=16, WK=16, WARPS_M, WARPS_N, WTM, WTN, WTK, STAGES, PAD=PAD_OFFSET,
            SWIZZLE=0, f16acc=False, doc, **kw):
    bm, bn, bk = _tiles(WM, WN, WK, WARPS_M, WARPS_N, WTM, WTN, WTK)
    return Variant(
        source="hgemm_wmma/06_stages.cu", template="hgemm_wmma_stages",
        params=(("WMMA_M", WM), ("WMMA_N", WN), ("WMMA_K", WK), ("WARPS_M", WARPS_M),
                ("WARPS_N", WARPS_N), ("WARP_TILE_M", WTM), ("WARP_TILE_N", WTN),
                ("WARP_TILE_K", WTK), ("STAGES", STAGES), ("PAD", PAD), ("SWIZZLE", SWIZZLE),
                ("F16ACC", f16acc)),
        tile=(bm, bn, bk), block=(32 * WARPS_M * WARPS_N, 1, 1), multiple_of=(bm, bn, bk),
        **_common(name, f16acc=f16acc, seed="cugemm", doc=doc, **kw))


_W = "hgemm_wmma_m16n16k16_"
_M42 = _W + "mma4x2_warp2x4"
_ASYNC, _DBUF = "hgemm_wmma_async", "hgemm_wmma_dbuf_async"
_M42_TILE = dict(WARPS_M=4, WARPS_N=2, WTM=2, WTN=4)  # 8 warps of 32x64: a 128x128 block tile

VARIANTS: tuple[Variant, ...] = (
    # ---- the notes' WMMA ladder (seed 002) ------------------------------------------------------
    _naive(_W + "naive", doc="one warp per 16x16 C tile, fragments straight from global memory"),
    _naive(_W + "naive_f16acc", f16acc=True, doc="naive, accumulating in fp16 as the notes do"),
    _smem_staged(_W + "mma4x2", WARPS_M=4, WARPS_N=2, WTM=1, WTN=1,
                 doc="8 warps share a 64x32x16 block tile staged in shared memory"),
    _smem_staged(_M42, **_M42_TILE,
                 doc="warp tiles of 2x4 fragments (32x64): a 128x128x16 block tile"),
    _pipelined(_M42 + "_async", _ASYNC, **_M42_TILE, PAD=0,
               doc="cp.async global->shared copies, one buffer"),
    _pipelined(_M42 + "_async_offset", _ASYNC, **_M42_TILE, PAD=PAD_OFFSET,
               doc="async with shared rows padded by 8 halves: conflict-free ldmatrix"),
    _pipelined(_M42 + "_dbuf_async", _DBUF, **_M42_TILE, PAD=0,
               aliases=("hgemm_wmma_mma4x2_warp2x4_dbuf",),
               doc="double-buffered shared memory filled by cp.async, one barrier per K tile"),
    _pipelined(_M42 + "_dbuf_async_offset", _DBUF, **_M42_TILE, PAD=PAD_OFFSET,
               doc="dbuf_async with padded shared rows"),
    _pipelined(_M42 + "_dbuf_async_offset_f16acc", _DBUF, **_M42_TILE, PAD=PAD_OFFSET, f16acc=True,
               doc="dbuf_async_offset accumulating in fp16 as the notes do"),
    _pipelined(_W + "mma4x4_warp2x2x2_dbuf_async", _DBUF, WARPS_M=4, WARPS_N=4, WTM=2, WTN=2, WTK=2,
               PAD=0, doc="16 warps of 2x2 fragments, 2 K steps per tile: 128x128x32"),
    _pipelined(_W + "mma4x4_warp2x2x2_dbuf_async_offset", _DBUF, WARPS_M=4, WARPS_N=4, WTM=2, WTN=2,
               WTK=2, PAD=PAD_OFFSET, doc="mma4x4_warp2x2x2_dbuf_async with padded shared rows"),
    _pipelined("hgemm_wmma_m32n8k16_mma2x4_warp2x4_dbuf_async", _DBUF, WM=32, WN=8, WARPS_M=2,
               WARPS_N=4, WTM=2, WTN=4, PAD=0, doc="m32n8k16 fragments, 8 warps of 64x32: 128x128x16"),
    _pipelined("hgemm_wmma_m32n8k16_mma2x4_warp2x4_dbuf_async_offset", _DBUF, WM=32, WN=8, WARPS_M=2,
               WARPS_N=4, WTM=2, WTN=4, PAD=PAD_OFFSET,
               doc="m32n8k16 dbuf_async with padded shared rows"),
    _rbuf(_W + "mma4x2_warp2x4x2_rbuf_async", STAGES=1, PAD=0,
          doc="fragments of the next K step loaded under the current MMAs; one buffer, BK=32"),
    _rbuf(_W + "mma4x2_warp2x4x2_rbuf_async_offset", STAGES=1, PAD=PAD_OFFSET,
          doc="rbuf_async with padded shared rows"),
    _rbuf(_W + "mma4x2_warp2x4x2_rbuf_async_dbuf", STAGES=2, PAD=0,
          doc="rbuf_async with two shared buffers: the fragment prefetch crosses K tiles"),
    _rbuf(_W + "mma4x2_warp2x4x2_rbuf_async_dbuf_offset", STAGES=2, PAD=PAD_OFFSET,
          doc="rbuf_async_dbuf with padded shared rows"),
    # ---- above the notes: multi-stage pipeline, 64x64 warp tiles (cugemm) -----------------------
    _stages(_W + "mma4x2_warp2x4x2_stage3", **_M42_TILE, WTK=2, STAGES=3,
            doc="the notes' 128x128 tile with a 3-stage cp.async pipeline in dynamic shared memory"),
    _stages(_W + "mma2x2_warp4x4x2_stage3", WARPS_M=2, WARPS_N=2, WTM=4, WTN=4, WTK=2, STAGES=3,
            doc="4 warps of 64x64 (4x4 fragments): 128x128x32, 3 stages, 2 blocks/SM"),
    _stages(_W + "mma2x2_warp4x4x2_stage4", WARPS_M=2, WARPS_N=2, WTM=4, WTN=4, WTK=2, STAGES=4,
            doc="128x128x32 with 64x64 warp tiles, 4 stages"),
    _stages(_W + "mma2x4_warp4x4x2_stage3", WARPS_M=2, WARPS_N=4, WTM=4, WTN=4, WTK=2, STAGES=3,
            doc="8 warps of 64x64: 128x256x32, 3 stages"),
    _stages(_W + "mma2x4_warp4x4x2_stage4", WARPS_M=2, WARPS_N=4, WTM=4, WTN=4, WTK=2, STAGES=4,
            doc="128x256x32 with 64x64 warp tiles, 4 stages"),
    _stages(_W + "mma2x4_warp4x4x4_stage3", WARPS_M=2, WARPS_N=4, WTM=4, WTN=4, WTK=4, STAGES=3,
            aliases=("hgemm_wmma_fast",),
            doc="128x256x64: 4 K steps per barrier, 3 stages (153 KB of shared memory)"),
    _stages(_W + "mma2x4_warp4x4x4_stage3_f16acc", WARPS_M=2, WARPS_N=4, WTM=4, WTN=4, WTK=4,
            STAGES=3, f16acc=True, doc="the 128x256x64 stage3 kernel accumulating in fp16 (as the "
            "notes do): half the accumulator registers"),
    _stages(_W + "mma2x4_warp4x4x4_stage3_swizzle", WARPS_M=2, WARPS_N=4, WTM=4, WTN=4, WTK=4,
            STAGES=3, SWIZZLE=8, doc="the 128x256x64 stage3 kernel, blocks walked in groups of 8 "
            "block rows (L2 reuse on large matrices)"),
    _stages(_W + "mma2x4_warp4x4x4_stage4", WARPS_M=2, WARPS_N=4, WTM=4, WTN=4, WTK=4, STAGES=4,
            doc="128x256x64, 4 stages (204 KB of shared memory)"),
    _stages(_W + "mma2x2_warp4x4x4_stage3", WARPS_M=2, WARPS_N=2, WTM=4, WTN=4, WTK=4, STAGES=3,
            doc="128x128x64, 4 warps of 64x64, 3 stages"),
    _stages(_W + "mma4x2_warp4x4x2_stage3", WARPS_M=4, WARPS_N=2, WTM=4, WTN=4, WTK=2, STAGES=3,
            doc="8 warps of 64x64: 256x128x32, 3 stages"),
)
