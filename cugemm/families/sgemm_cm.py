"""Column-major FP32 SGEMM ladder (seed 001): A, B and C in Fortran order.

A is MxK with leading dimension M, B is KxN with leading dimension K, C is MxN with leading
dimension M; `cugemm.run` takes F-contiguous operands for these variants and returns an F-ordered C.
The kernels use cooperative groups: <cooperative_groups.h> and the <nv/target> it includes (the
kernels define _CG_LIMIT_INCLUDED_DEPENDENCIES, so libcu++'s <cuda/std/...> is not needed).

Each constructor turns the few numbers that define a rung (tile sizes, thread tile) into a full
Variant: template arguments in the kernel's parameter order, block shape, shape rules.
"""
from __future__ import annotations

from ..variant import Variant

F32_CM = dict(dtype_in="float32", dtype_out="float32", dtype_acc="float32", math="ffma",
              layout="col", seed="001")


def _warp_tile32(name, source, template, *, TILE, WARPS, any_shape, doc):
    """Rungs 1-2: a TILE x TILE tile (TILE = 32, the warp width), WARPS warps, scalar accesses."""
    return Variant(
        name=name, family="sgemm_cm", source=source, template=template,
        params=(("TILE", TILE), ("WARPS", WARPS)), tile=(TILE, TILE, TILE), block=(32 * WARPS, 1, 1),
        multiple_of=(1, 1, 1) if any_shape else (TILE, TILE, TILE), align=4, doc=doc, **F32_CM)


def _thread_tile(name, *, TILE, TM, TN, doc):
    """Rung 3: TM x TN C elements per thread in a TILE x TILE tile, scalar accesses."""
    return Variant(
        name=name, family="sgemm_cm", source="sgemm_cm/03_thread_tile.cu",
        template="sgemm_cm_thread_tile", params=(("TILE", TILE), ("TM", TM), ("TN", TN)),
        tile=(TILE, TILE, TILE), block=((TILE // TM) * (TILE // TN), 1, 1),
        multiple_of=(TILE, TILE, TILE), align=4, doc=doc, **F32_CM)


def _block_tile(name, source, template, *, BM, BN, BK, TM, TN, doc):
    """Rungs 4-7: a BM x BN x BK block tile, TM x TN per thread, float4 accesses to A and C."""
    return Variant(
        name=name, family="sgemm_cm", source=source, template=template,
        params=(("BM", BM), ("BN", BN), ("BK", BK), ("TM", TM), ("TN", TN)),
        tile=(BM, BN, BK), block=((BM // TM) * (BN // TN), 1, 1),
        multiple_of=(BM, BN, BK), align=16, doc=doc, **F32_CM)


VARIANTS: tuple[Variant, ...] = (
    _warp_tile32("sgemm_cm_naive", "sgemm_cm/01_naive.cu", "sgemm_cm_naive", TILE=32, WARPS=8,
                 any_shape=True,
                 doc="32x32 C tile accumulated in smem, k dot products by warp shuffles; any shape"),
    _warp_tile32("sgemm_cm_shared", "sgemm_cm/02_shared.cu", "sgemm_cm_shared", TILE=32, WARPS=8,
                 any_shape=False, doc="the C tile in registers (4 per thread), no shuffles"),
    _thread_tile("sgemm_cm_thread_tile", TILE=32, TM=2, TN=2,
                 doc="2x2 C elements per thread, write-back staged through smem for coalescing"),
    _block_tile("sgemm_cm_64", "sgemm_cm/04_64.cu", "sgemm_cm_64", BM=64, BN=64, BK=64, TM=4, TN=4,
                doc="64x64 tile, K slice 64, 4x4 per thread, float4 C stores"),
    _block_tile("sgemm_cm_64_opt", "sgemm_cm/05_64_opt.cu", "sgemm_cm_64_opt", BM=64, BN=64, BK=64,
                TM=4, TN=4, doc="float4 A loads, B transposed in smem, k-outer register outer products"),
    _block_tile("sgemm_cm_128", "sgemm_cm/06_128.cu", "sgemm_cm_128", BM=128, BN=128, BK=8, TM=4,
                TN=16, doc="128x128x8 tile, 4x16 per thread (lanes along m): coalesced float4 stores"),
    _block_tile("sgemm_cm_128_pipeline", "sgemm_cm/07_128_pipeline.cu", "sgemm_cm_128_pipeline",
                BM=128, BN=128, BK=8, TM=4, TN=16,
                doc="register-staged smem double buffer, double-buffered fragments, 2 blocks/SM"),
)
