"""Hopper FP8 GEMM through wgmma (sm_90a): C = (A * B) scaled, 8-bit A and B, fp32 accumulation.

The FP8 ladder (kernels/fp8_wgmma/), on top of the fp16 ladder's structure (TMA ring, producer
warpgroup, two consumers, persistent grouped walk, clusters sharing B, TMA-store epilogue): rung 1
`_tensor_fastacc` (a scale per operand, applied in the epilogue; all of K summed in the tensor
cores), rung 2 `_row_fastacc` (a scale per row of A and per column of B, read in the epilogue), rung 3
(02_promoted.cu) the partial sums promoted into fp32 registers every 128 k, with per-tensor
(`_tensor`), per-row (`_row`) or block scales (`_block`: a scale per 1 x 128 block of A and per 128 x
128 block of B, applied at the promotion). Rungs 1-2 are cugemm.scaled_matmul's use_fast_accum=True
(torch._scaled_mm's name for the same trade: faster, a larger error growing with K); rung 3 its
default. A is M x K row-major and
B is read as the N x K memory of W (B = W.T): 8-bit wgmma takes K-major operands only, and this is
the layout torch._scaled_mm asks for; cugemm.scaled_matmul copies other layouts.

Every rung is registered as a declared product: the tile configurations below x the operand types
(e4m3 x e4m3, e4m3 x e5m2, e5m2 x e4m3: `_e4m3e5m2` ...; e5m2 x e5m2 is left out, as cuBLASLt leaves
it) x the output type (bf16, `_f16`, `_f32`). Name: fp8_wgmma_m64n<BN>k32[_bm64][_cluster2]_stage<S>_<rung>
[_<A><B>][_<out>]. `cugemm.run` runs any of them with unit scales (the plain product of the 8-bit
values); cugemm.scaled_matmul passes the scales. Shapes: any M and N, K % 16 == 0 and 16-byte
leading dimensions of A and B (TMA's rules; scaled_matmul pads the rest); C of any row stride (TMA
stores where its rows are 16-byte aligned, else the consumers' own). The story: docs/fp8_wgmma.md.
"""
from __future__ import annotations

from ..variant import Variant

FAMILY = "fp8_wgmma"
TYPES = (("float8_e4m3fn", "float8_e4m3fn"), ("float8_e4m3fn", "float8_e5m2"), ("float8_e5m2", "float8_e4m3fn"))
OUTS = ("bfloat16", "float16", "float32")
_SHORT = {"float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2", "bfloat16": "", "float16": "_f16", "float32": "_f32"}
_CTYPE = {"float8_e4m3fn": "cugemm_wgmma::fp8_e4m3", "float8_e5m2": "cugemm_wgmma::fp8_e5m2",
          "bfloat16": "__nv_bfloat16", "float16": "half", "float32": "float"}
# (BM, BN, STAGES, CLUSTER_M, PIPE) of each rung, largest first. Rungs 1-2: 128 x 256 (n256 wgmmas:
# the least shared-memory traffic per product) where its tiles make at least a round of the SMs, else
# 128 x 128 (cugemm.scaled.choose). Rung 3 holds two (PIPE > 1: three) sets of accumulators, so at
# most 128 x 192 (n192, the partial drained every K-tile while the other consumer's wgmmas run), then
# 128 x 128 and 64 x 128 (one consumer, for products of few rows), both with PIPE = 4: trips of four
# K-tiles pipelined inside (02_promoted.cu). PIPE (the rung's template parameter) is not part of the name.
FAST_TILES = ((128, 256, 4, 2, 1), (128, 128, 6, 1, 1))
PROMOTED_TILES = ((128, 192, 4, 2, 1), (128, 128, 6, 2, 4), (64, 128, 8, 2, 4))
# Rung 3's TFLOP/s per tile shape where its tiles fill whole rounds of the SMs (H100, per-tensor
# scales, 4096^3 and 8192^3 with the last round's idle share taken out; docs/fp8_wgmma.md):
# scaled.choose takes the tile of the least rounds x tile work / rate.
PROMOTED_RATES = {(128, 192): 1260.0, (128, 128): 1230.0, (64, 128): 950.0}
RUNG_DOC = {
    "tensor_fastacc": "rung 1: per-tensor scales (scale_a[0] * scale_b[0]) in the epilogue, K summed in the tensor cores",
    "row_fastacc": "rung 2: a scale per row of A and per column of B, read in the epilogue, K summed in the tensor cores",
    "tensor": "rung 3: partial sums promoted into fp32 every 128 k, per-tensor scales in the epilogue",
    "row": "rung 3: partial sums promoted into fp32 every 128 k, per-row / per-column scales in the epilogue",
    "block": "rung 3: partial sums promoted into fp32 every 128 k with their 1 x 128 / 128 x 128 block scales",
}
SCALE = {"tensor": 0, "row": 1, "block": 2}  # 02_promoted.cu's SCALE of each scaling mode


def variant_name(rung, bm, bn, stages, cluster, pipe, ta, tb, out) -> str:
    """The registered name of a rung's tile configuration in these types."""
    types = "" if (ta, tb) == TYPES[0] else f"_{_SHORT[ta]}{_SHORT[tb]}"
    return (f"fp8_wgmma_m64n{bn}k32{'_bm64' if bm == 64 else ''}{'_cluster2' if cluster == 2 else ''}"
            f"_stage{stages}_{rung}{types}{_SHORT[out]}")


def _variant(rung, bm, bn, stages, cluster, pipe, ta, tb, out) -> Variant:
    fast = rung.endswith("_fastacc")
    params = (("BM", bm), ("BN", bn), ("STAGES", stages), ("GROUP", 8), ("CLUSTER_M", cluster))
    params += (("ROW", rung == "row_fastacc"),) if fast else (("SCALE", SCALE[rung]), ("PIPE", pipe))
    params += (("TA", _CTYPE[ta]), ("TB", _CTYPE[tb]), ("TC", _CTYPE[out]))
    return Variant(
        name=variant_name(rung, bm, bn, stages, cluster, pipe, ta, tb, out), family=FAMILY,
        source="fp8_wgmma/01_scaled.cu" if fast else "fp8_wgmma/02_promoted.cu",
        template="fp8_wgmma_scaled" if fast else "fp8_wgmma_promoted", params=params,
        tile=(bm, bn, 128), block=(128 + 2 * bm, 1, 1), dtype_in=ta, dtype_b=tb if tb != ta else "", dtype_out=out,
        dtype_acc="float32", math="wgmma", b_layout="col", strided=True, align=16,
        multiple_of=(1, 1, 16), c_align=2 if out != "float32" else 4, archs=("sm_90a",), cluster=(cluster, 1, 1),
        seed="cugemm", grid_rule="persistent", args_rule="fp8_scaled" if fast else "fp8_promoted",
        doc=f"{RUNG_DOC[rung]}; {bm}x{bn} tiles, {stages} stages{f', trips of {pipe} K-tiles pipelined inside' if pipe > 1 else ''}"
            f"{', clusters of 2 along M sharing B' if cluster == 2 else ''}; {_SHORT[ta]} x {_SHORT[tb]} -> {out}")


VARIANTS: tuple[Variant, ...] = tuple(
    _variant(rung, *tile, ta, tb, out)
    for rung, tiles in (("tensor_fastacc", FAST_TILES), ("row_fastacc", FAST_TILES), ("tensor", PROMOTED_TILES),
                        ("row", PROMOTED_TILES), ("block", PROMOTED_TILES))
    for tile in tiles for ta, tb in TYPES for out in OUTS)
