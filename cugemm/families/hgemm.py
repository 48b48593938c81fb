"""FP16 CUDA-core HGEMM (half2 arithmetic, fp16 accumulate): seeds 002 and 004, and the warp-tiled
rung above them.

fp16 in, fp16 out, fp16 accumulate, as in the notes: every product and every running sum is rounded
to fp16 (__hfma / __hfma2), so these variants are less accurate than cupy.matmul, which accumulates
in fp32 (cugemm.accuracy keys the tolerance on the accumulate dtype).

Each constructor turns the few numbers that define a rung (tile sizes, thread tile, vector width,
padding) into a full Variant: template arguments in the kernel's parameter order, block shape, shape
rules and the alignment its widest global vector access needs.
"""
from __future__ import annotations

from ..variant import Candidate, Variant

F16 = dict(dtype_in="float16", dtype_out="float16", dtype_acc="float16", math="hfma2")


def _hgemm_naive(name, *, BM, BN, doc, **kw):
    # scalar accesses only: 2-byte (one half) alignment
    return Variant(
        name=name, family="hgemm", source="hgemm/01_naive.cu", template="hgemm_naive_f16",
        params=(("BM", BM), ("BN", BN)), tile=(BM, BN, 1), block=(BN, BM, 1),
        align=2, seed="002", doc=doc, **F16, **kw)


def _hgemm_sliced_k(name, *, BM, BN, BK, doc, **kw):
    return Variant(
        name=name, family="hgemm", source="hgemm/02_sliced_k.cu", template="hgemm_sliced_k_f16",
        params=(("BM", BM), ("BN", BN), ("BK", BK)), tile=(BM, BN, BK), block=(BN, BM, 1),
        align=2, seed="002", doc=doc, **F16, **kw)


def _global_vector_halves(BM, BN, BK, threads):
    """The global vector widths (halves) of rungs 4 and 5, derived as the kernels derive them
    (LD_A, LD_B): 8 when the tile gives each thread at least 8 halves of a row, else 4."""
    ld_a = 8 if BM * BK // threads >= 8 and BK % 8 == 0 else 4
    ld_b = 8 if BK * BN // threads >= 8 else 4
    return ld_a, ld_b


def _hgemm_t8x8(name, *, BM, BN, BK, TM, TN, PACK, doc, **kw):
    # rung 3: 8-byte tile copies; each thread's TN halves of B and of C are one vector
    return Variant(
        name=name, family="hgemm", source="hgemm/03_t8x8_sliced_k_f16x4.cu",
        template="hgemm_t_8x8_sliced_k_f16x4",
        params=(("BM", BM), ("BN", BN), ("BK", BK), ("TM", TM), ("TN", TN), ("PACK", PACK)),
        tile=(BM, BN, BK), block=(BN // TN, BM // TM, 1), multiple_of=(BM, BN, BK),
        align=max(8, 2 * min(TN, 8)), seed="002", doc=doc, **F16, **kw)


_BCF_SOURCES = {
    "hgemm_t_8x8_sliced_k_f16x4_bcf": "hgemm/04_t8x8_sliced_k_f16x4_bcf.cu",
    "hgemm_t_8x8_sliced_k_f16x8_pack_bcf_dbuf": "hgemm/05_t8x8_sliced_k_f16x8_pack_bcf_dbuf.cu",
}


def _hgemm_bcf(name, template, *, BM, BN, BK, TM, TN, VEC, PAD, PACK=None, doc, **kw):
    # rungs 4 (PACK given) and 5 (always packed): A transposed in smem, VEC-half fragments
    params = (("BM", BM), ("BN", BN), ("BK", BK), ("TM", TM), ("TN", TN), ("VEC", VEC))
    if PACK is not None:
        params += (("PACK", PACK),)
    params += (("PAD", PAD),)
    threads = (BM // TM) * (BN // TN)
    widest = max(VEC, *_global_vector_halves(BM, BN, BK, threads))
    return Variant(
        name=name, family="hgemm", source=_BCF_SOURCES[template], template=template,
        params=params, tile=(BM, BN, BK), block=(BN // TN, BM // TM, 1), multiple_of=(BM, BN, BK),
        align=2 * widest, seed="002", doc=doc, **F16, **kw)


_DBUF_SOURCES = {
    "hgemm_t_8x8_sliced_k16_f16x8_pack_dbuf": "hgemm/06_t8x8_sliced_k16_f16x8_pack_dbuf.cu",
    "hgemm_t_8x8_sliced_k16_f16x8_pack_dbuf_async":
        "hgemm/07_t8x8_sliced_k16_f16x8_pack_dbuf_async.cu",
}


def _hgemm_dbuf(name, template, *, BM, BN, BK, TM, TN, PAD, doc, seed="002", **kw):
    # rungs 6 and 7: A row-major in smem, every tile copy and C store a 16-byte vector
    return Variant(
        name=name, family="hgemm", source=_DBUF_SOURCES[template], template=template,
        params=(("BM", BM), ("BN", BN), ("BK", BK), ("TM", TM), ("TN", TN), ("PAD", PAD)),
        tile=(BM, BN, BK), block=(BN // TN, BM // TM, 1), multiple_of=(BM, BN, BK), align=16,
        seed=seed, doc=doc, **F16, **kw)


def _hgemm_warp_tile(name, *, BM, BN, BK, WARPS_M, WARPS_N, TM, TN, DUP_A=False, doc, **kw):
    return Variant(
        name=name, family="hgemm", source="hgemm/08_warp_tile.cu",
        template="hgemm_warp_tile_f16x8_pack_dbuf",
        params=(("BM", BM), ("BN", BN), ("BK", BK), ("WARPS_M", WARPS_M), ("WARPS_N", WARPS_N),
                ("TM", TM), ("TN", TN), ("DUP_A", DUP_A)),
        tile=(BM, BN, BK), block=(32 * WARPS_M * WARPS_N, 1, 1), multiple_of=(BM, BN, BK),
        align=16, seed="cugemm", doc=doc, **F16, **kw)


_T8 = "hgemm_t_8x8_sliced_k_f16x4_bcf"
_BDBUF = "hgemm_t_8x8_sliced_k_f16x8_pack_bcf_dbuf"
_DBUF = "hgemm_t_8x8_sliced_k16_f16x8_pack_dbuf"
_ASYNC = _DBUF + "_async"

VARIANTS: tuple[Variant, ...] = (
    # ---- FP16 CUDA-core ladder (seeds 002 and 004) -------------------------------------------
    _hgemm_naive("hgemm_naive_f16", BM=16, BN=16,
                 doc="one thread per C element, scalar __hfma from global memory; any shape"),
    _hgemm_sliced_k("hgemm_sliced_k_f16", matmul=Candidate(8.0, "tiles", 17), BM=32, BN=32, BK=32,
                    doc="A and B tiles staged in shared memory, K walked slice by slice; any shape"),
    _hgemm_t8x8("hgemm_t_8x8_sliced_k_f16x4", BM=128, BN=128, BK=8, TM=8, TN=8, PACK=False,
                doc="8x8 C elements per thread, 4-half vector loads, scalar __hfma (unpack)"),
    _hgemm_t8x8("hgemm_t_8x8_sliced_k_f16x4_pack", BM=128, BN=128, BK=8, TM=8, TN=8, PACK=True,
                doc="8x8 per thread, __hfma2 on half2 pairs: two multiply-adds per instruction"),
    _hgemm_bcf("hgemm_t_8x8_sliced_k_f16x4_bcf", _T8, BM=128, BN=128, BK=8, TM=8, TN=8, VEC=4,
               PACK=False, PAD=0,
               doc="A transposed in smem, thread tile split in 4-half chunks: conflict-free reads"),
    _hgemm_bcf("hgemm_t_8x8_sliced_k_f16x4_pack_bcf", _T8, BM=128, BN=128, BK=8, TM=8, TN=8, VEC=4,
               PACK=True, PAD=0, doc="bcf with __hfma2 on half2 pairs"),
    _hgemm_bcf("hgemm_t_8x8_sliced_k_f16x4_pack_bcf_offset", _T8, BM=128, BN=128, BK=8, TM=8, TN=8,
               VEC=4, PACK=True, PAD=4, doc="pack_bcf with smem rows padded by 4 halves"),
    _hgemm_bcf("hgemm_t_4x4_sliced_k_f16x4_pack_bcf", _T8, BM=64, BN=64, BK=16, TM=4, TN=4, VEC=4,
               PACK=True, PAD=0, doc="pack_bcf with a 4x4 thread tile, 64x64x16 block tile"),
    _hgemm_bcf("hgemm_t_4x4_sliced_k_f16x4_pack_bcf_offset", _T8, BM=64, BN=64, BK=16, TM=4, TN=4,
               VEC=4, PACK=True, PAD=4, doc="t4x4 pack_bcf with smem rows padded by 4 halves"),
    _hgemm_bcf("hgemm_t_8x8_sliced_k_f16x8_pack_bcf", _T8, BM=128, BN=128, BK=8, TM=8, TN=8, VEC=8,
               PACK=True, PAD=0, doc="pack_bcf reading each 8-half fragment as one 16-byte vector"),
    _hgemm_bcf("hgemm_t_8x8_sliced_k_f16x8_pack_bcf_offset", _T8, BM=128, BN=128, BK=8, TM=8, TN=8,
               VEC=8, PACK=True, PAD=8, doc="f16x8 pack_bcf with smem rows padded by 8 halves"),
    _hgemm_bcf("hgemm_t_8x8_sliced_k_f16x8_pack_bcf_dbuf", _BDBUF, BM=128, BN=128, BK=8, TM=8, TN=8,
               VEC=8, PAD=0, doc="f16x8 pack_bcf plus double-buffered smem: one barrier per slice"),
    _hgemm_dbuf("hgemm_t_8x8_sliced_k16_f16x8_pack_dbuf", _DBUF, BM=128, BN=128, BK=16, TM=8, TN=8,
                PAD=0, doc="K slice 16, A row-major in smem (16-byte copies), double-buffered"),
    _hgemm_dbuf("hgemm_t_8x8_sliced_k16_f16x8_pack_dbuf_offset", _DBUF, BM=128, BN=128, BK=16, TM=8,
                TN=8, PAD=8, doc="k16 dbuf with smem rows padded by 8 halves"),
    _hgemm_dbuf("hgemm_t_8x8_sliced_k16_f16x8_pack_dbuf_async", _ASYNC, BM=128, BN=128, BK=16, TM=8,
                TN=8, PAD=0, doc="k16 dbuf with cp.async 16-byte global->smem copies"),
    _hgemm_dbuf("hgemm_t_8x8_sliced_k32_f16x8_pack_dbuf", _DBUF, BM=128, BN=128, BK=32, TM=8, TN=8,
                PAD=0, seed="004", doc="dbuf with a K slice of 32"),
    _hgemm_dbuf("hgemm_t_8x8_sliced_k32_f16x8_pack_dbuf_async", _ASYNC, BM=128, BN=128, BK=32, TM=8,
                TN=8, PAD=0, seed="004", doc="k32 dbuf with cp.async copies"),
    _hgemm_dbuf("hgemm_t_16x8_sliced_k32_f16x8_pack_dbuf", _DBUF, BM=256, BN=128, BK=32, TM=16, TN=8,
                PAD=0, seed="004", doc="k32 dbuf, 16x8 thread tile, 256x128 block tile (48 KiB smem)"),
    _hgemm_dbuf("hgemm_t_16x8_sliced_k32_f16x8_pack_dbuf_async", _ASYNC, BM=256, BN=128, BK=32, TM=16,
                TN=8, PAD=0, seed="004", doc="t16x8 k32 dbuf with cp.async copies"),
    # ---- above the notes: warp tiling (cugemm) ------------------------------------------------
    _hgemm_warp_tile("hgemm_t_8x8_warp2x4_sliced_k16_f16x8_pack_dbuf", BM=128, BN=128, BK=16,
                     WARPS_M=2, WARPS_N=4, TM=8, TN=8,
                     doc="warp tiles of 64x32, register-double-buffered half2 fragments, 2 blocks/SM"),
    _hgemm_warp_tile("hgemm_t_8x16_warp2x4_sliced_k16_f16x8_pack_dbuf", BM=128, BN=256, BK=16,
                     WARPS_M=2, WARPS_N=4, TM=8, TN=16,
                     doc="warp tiling, 128x256 block, 8x16 halves per thread, 2 blocks/SM"),
    _hgemm_warp_tile("hgemm_t_16x16_warp2x4_sliced_k16_f16x8_pack_dbuf", BM=256, BN=256, BK=16,
                     WARPS_M=2, WARPS_N=4, TM=16, TN=16,
                     doc="warp tiling, 256x256 block, 16x16 halves per thread, 1 block/SM"),
    _hgemm_warp_tile("hgemm_t_8x8_warp2x4_sliced_k16_f16x8_pack_dbuf_dup_a", BM=128, BN=128, BK=16,
                     WARPS_M=2, WARPS_N=4, TM=8, TN=8, DUP_A=True,
                     doc="8x8 warp tiling with A stored as (a, a) pairs: HFMA2 without operand "
                         "selectors, which ptxas splits between the FMA and MMA pipes"),
    _hgemm_warp_tile("hgemm_t_8x16_warp2x4_sliced_k16_f16x8_pack_dbuf_dup_a", BM=128, BN=256, BK=16,
                     WARPS_M=2, WARPS_N=4, TM=8, TN=16, DUP_A=True,
                     doc="8x16 warp tiling with A stored as (a, a) pairs, 1 block/SM"),
    _hgemm_warp_tile("hgemm_t_16x16_warp2x4_sliced_k16_f16x8_pack_dbuf_dup_a", BM=256, BN=256, BK=16,
                     WARPS_M=2, WARPS_N=4, TM=16, TN=16, DUP_A=True, aliases=("hgemm_warp_tile",),
                     doc="16x16 warp tiling with A stored as (a, a) pairs, 1 block/SM: 84 TFLOP/s "
                         "at 4096^3 on an H200"),
)
