"""FP32 CUDA-core SGEMM: the notes' ladder (seeds 000 and 003) and the warp-tiled rung above it.

Each constructor turns the few numbers that define a rung (tile sizes, padding, thread tile) into a
full Variant: template arguments in the kernel's parameter order, block shape, shape rules.
"""
from __future__ import annotations

from ..variant import Candidate, Variant, dense_batched

F32 = dict(dtype_in="float32", dtype_out="float32", dtype_acc="float32", math="ffma")


def _sgemm_naive(name, *, BM, BN, doc, **kw):
    return Variant(
        name=name, family="sgemm", source="sgemm/01_naive.cu", template="sgemm_naive_f32",
        params=(("BM", BM), ("BN", BN)), tile=(BM, BN, 1), block=(BN, BM, 1),
        seed="000", doc=doc, **F32, **kw)


def _sgemm_sliced_k(name, *, BM, BN, BK, doc, **kw):
    return Variant(
        name=name, family="sgemm", source="sgemm/02_sliced_k.cu", template="sgemm_sliced_k_f32",
        params=(("BM", BM), ("BN", BN), ("BK", BK)), tile=(BM, BN, BK), block=(BN, BM, 1),
        seed="000", doc=doc, **F32, **kw)


# The thread-tile rungs (03..06): each thread computes a TMxTN block of C from float4 tile loads.
_THREAD_TILE_SOURCES = {
    "sgemm_t_8x8_sliced_k_f32x4": "sgemm/03_t8x8_sliced_k_f32x4.cu",
    "sgemm_t_8x8_sliced_k_f32x4_bcf": "sgemm/04_t8x8_sliced_k_f32x4_bcf.cu",
    "sgemm_t_8x8_sliced_k_f32x4_bcf_dbuf": "sgemm/05_t8x8_sliced_k_f32x4_bcf_dbuf.cu",
    "sgemm_t_8x8_sliced_k_f32x4_bcf_dbuf_async": "sgemm/06_t8x8_sliced_k_f32x4_bcf_dbuf_async.cu",
}


def _sgemm_thread_tile(name, template, *, BM, BN, BK, TM, TN, PAD=None, doc, seed="000", **kw):
    params = (("BM", BM), ("BN", BN), ("BK", BK), ("TM", TM), ("TN", TN))
    if PAD is not None:
        params += (("PAD", PAD),)
    return Variant(
        name=name, family="sgemm", source=_THREAD_TILE_SOURCES[template], template=template,
        params=params, tile=(BM, BN, BK), block=(BN // TN, BM // TM, 1),
        multiple_of=(BM, BN, BK), align=16, seed=seed, doc=doc, **F32, **kw)


def _sgemm_warp_tile(name, *, BM, BN, BK, WARPS_M, WARPS_N, TM, TN, EDGE, doc, **kw):
    return Variant(
        name=name, family="sgemm", source="sgemm/07_warp_tile.cu", template="sgemm_warp_tile_dbuf",
        params=(("BM", BM), ("BN", BN), ("BK", BK), ("WARPS_M", WARPS_M), ("WARPS_N", WARPS_N),
                ("TM", TM), ("TN", TN), ("EDGE", EDGE)),
        tile=(BM, BN, BK), block=(32 * WARPS_M * WARPS_N, 1, 1),
        multiple_of=(1, 1, 1) if EDGE else (BM, BN, BK), align=4 if EDGE else 16,
        seed="cugemm", doc=doc, **F32, **kw)


_T8 = "sgemm_t_8x8_sliced_k_f32x4"
_BCF = _T8 + "_bcf"
_DBUF = _BCF + "_dbuf"
_ASYNC = _DBUF + "_async"

VARIANTS: tuple[Variant, ...] = (
    # ---- FP32 CUDA-core ladder (seeds 000 and 003) -------------------------------------------
    _sgemm_naive("sgemm_naive_f32", BM=16, BN=16,
                 doc="one thread per C element, operands straight from global memory; any shape"),
    _sgemm_sliced_k("sgemm_sliced_k_f32", matmul=Candidate(5.0, "tiles", 8), BM=32, BN=32, BK=32,
                    doc="A and B tiles staged in shared memory, K walked slice by slice; any shape"),
    _sgemm_thread_tile("sgemm_t_8x8_sliced_k_f32x4", _T8, BM=128, BN=128, BK=8, TM=8, TN=8,
                       doc="8x8 C elements per thread (register tiling), float4 global loads"),
    _sgemm_thread_tile("sgemm_t_8x8_sliced_k_f32x4_bcf", _BCF, BM=128, BN=128, BK=8, TM=8, TN=8, PAD=0,
                       doc="A transposed in smem and thread tile split in halves: conflict-free float4 reads"),
    _sgemm_thread_tile("sgemm_t_8x8_sliced_k_f32x4_bcf_offset", _BCF, BM=128, BN=128, BK=8, TM=8, TN=8,
                       PAD=4, doc="bcf with smem rows padded by 4 floats"),
    _sgemm_thread_tile("sgemm_t_8x8_sliced_k_f32x4_bcf_dbuf", _DBUF, BM=128, BN=128, BK=8, TM=8, TN=8,
                       PAD=0, doc="bcf plus double-buffered smem: one barrier per K slice"),
    _sgemm_thread_tile("sgemm_t_8x8_sliced_k_f32x4_bcf_dbuf_offset", _DBUF, BM=128, BN=128, BK=8, TM=8,
                       TN=8, PAD=4, doc="dbuf with smem rows padded by 4 floats"),
    _sgemm_thread_tile("sgemm_t_8x4_sliced_k16_f32x4_bcf_dbuf", _DBUF, BM=128, BN=64, BK=16, TM=8, TN=4,
                       matmul=Candidate(42.0, "tiles", 5),
                       PAD=0, doc="dbuf, K slice 16, 8x4 thread tile"),
    _sgemm_thread_tile("sgemm_t_8x8_sliced_k16_f32x4_bcf_dbuf", _DBUF, BM=128, BN=128, BK=16, TM=8, TN=8,
                       PAD=0, doc="dbuf, K slice 16, 8x8 thread tile"),
    _sgemm_thread_tile("sgemm_t_8x16_sliced_k16_f32x4_bcf_dbuf", _DBUF, BM=128, BN=128, BK=16, TM=8,
                       TN=16, PAD=0, doc="dbuf, K slice 16, 8x16 thread tile (128 threads)"),
    _sgemm_thread_tile("sgemm_t_8x4_sliced_k16_f32x4_bcf_dbuf_async", _ASYNC, BM=128, BN=64, BK=16, TM=8,
                       matmul=Candidate(42.0, "tiles", 6),
                       TN=4, PAD=0, seed="003", doc="k16 t8x4 dbuf with cp.async global->smem copies"),
    _sgemm_thread_tile("sgemm_t_8x8_sliced_k16_f32x4_bcf_dbuf_async", _ASYNC, BM=128, BN=128, BK=16, TM=8,
                       TN=8, PAD=0, seed="003", doc="k16 t8x8 dbuf with cp.async global->smem copies"),
    _sgemm_thread_tile("sgemm_t_8x16_sliced_k16_f32x4_bcf_dbuf_async", _ASYNC, BM=128, BN=128, BK=16,
                       TM=8, TN=16, PAD=0, seed="003",
                       doc="k16 t8x16 dbuf with cp.async global->smem copies"),
    # ---- above the notes: warp tiling (cugemm) ------------------------------------------------
    _sgemm_warp_tile("sgemm_t_8x8_warp2x4_sliced_k8_f32x4_dbuf", BM=128, BN=128, BK=8, WARPS_M=2,
                     WARPS_N=4, TM=8, TN=8, EDGE=False,
                     doc="warp tiles of 64x32, register-double-buffered fragments, 2 blocks/SM"),
    _sgemm_warp_tile("sgemm_t_8x8_warp2x4_sliced_k16_f32x4_dbuf", BM=128, BN=128, BK=16, WARPS_M=2,
                     matmul=Candidate(47.0, "tiles", 4),
                     WARPS_N=4, TM=8, TN=8, EDGE=False,
                     doc="warp tiling with a K slice of 16: half the barriers"),
    _sgemm_warp_tile("sgemm_t_8x16_warp2x4_sliced_k8_f32x4_dbuf", BM=128, BN=256, BK=8, WARPS_M=2,
                     matmul=Candidate(50.0, "tiles", 3),
                     WARPS_N=4, TM=8, TN=16, EDGE=False, aliases=("sgemm_warp_tile",),
                     doc="warp tiling, 128x256 block, 8x16 per thread, 1 block/SM"),
    _sgemm_warp_tile("sgemm_t_16x8_warp4x2_sliced_k8_f32x4_dbuf", BM=256, BN=128, BK=8, WARPS_M=4,
                     WARPS_N=2, TM=16, TN=8, EDGE=False,
                     doc="warp tiling, 256x128 block, 16x8 per thread, 1 block/SM"),
    _sgemm_warp_tile("sgemm_t_8x8_warp2x4_sliced_k8_f32_dbuf_edge", BM=128, BN=128, BK=8, WARPS_M=2,
                     WARPS_N=4, TM=8, TN=8, EDGE=True,
                     doc="warp tiling for any M, N, K: guarded scalar loads and stores at the edges"),
    _sgemm_warp_tile("sgemm_t_8x8_warp2x4_sliced_k16_f32_dbuf_edge", BM=128, BN=128, BK=16, WARPS_M=2,
                     matmul=Candidate(40.0, "tiles", 7),
                     WARPS_N=4, TM=8, TN=8, EDGE=True, aliases=("sgemm_any_shape",),
                     doc="any-shape warp tiling with a K slice of 16"),
)

# The batched form of the any-shape warp-tile rung (08_warp_tile_batched.cu: products in grid z, any
# window of the batch per operand): cugemm.batched's float32 batch in one launch (exact FP32), rated
# as that rung, preference order 300 (a candidate of batched problems; of 2-D ones after its twin).
BATCHED_ORDER = 300
VARIANTS += tuple(
    dense_batched(v, source="sgemm/08_warp_tile_batched.cu", template="sgemm_warp_tile_dbuf_batched",
                  order=BATCHED_ORDER + i,
                  spills="sm_80 with CUDA 12.9's ptxas: 44 bytes (13.5: none); the three per-product operand "
                         "pointers take registers the 2-D kernel reads from the parameter bank, at the 128 of two "
                         "blocks per SM (08_warp_tile_batched.cu)")
    for i, v in enumerate(v for v in VARIANTS if v.template == "sgemm_warp_tile_dbuf" and v.param_dict["EDGE"]
                          and v.matmul is not None))
