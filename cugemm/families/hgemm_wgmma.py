"""Hopper fp16 / bf16 GEMM through wgmma, TMA, mbarriers and warp specialisation (sm_90a), issue 12.

A ladder above the mma.sync / WMMA kernels (kernels/hgemm_wgmma/), each rung one idea, fp16 in
and out with fp32 accumulation:

  1 cpasync      wgmma m64nNk16 with both operands in 128-byte-swizzled shared memory, filled by
                 cp.async; 128x128x64 tile of two warpgroups                  (01_cpasync.cu)
  2 tma          TMA copies completing on FULL mbarriers (expect-tx), EMPTY mbarriers for stage
                 reuse, several stages deep                                    (02_tma.cu)
  3 ws           a producer warpgroup (one thread issues TMA) and a consumer warpgroup, setmaxnreg
                 40 / 232; 128x128 tile                                        (03_ws.cu)
  4 ws wg2       two consumer warpgroups and a 128x256 tile (wgmma m64n256k16) (03_ws.cu)
  5 persistent   one block per SM walking tiles in grouped (L2-friendly) order; the pipeline runs
                 on across tiles                                               (04_persistent.cu)
  6 cluster2     clusters of two blocks along M; each copies half of the shared B tile with TMA
                 multicast                                                     (04_persistent.cu)
  7 tma_store    the epilogue through swizzled shared memory and TMA stores that overlap the next
                 tile's mainloop                                               (04_persistent.cu)
  8 bt           operand roles swapped (C^T = B^T A^T, cuBLAS's orientation for row-major data):
                 the wide wgmma operand is the K-major A tile; stmatrix.trans epilogue
                                                                               (06_persistent_bt.cu)
  9 splitk       K-slices with fp32 partials for tiles that do not fill the GPU
                                              (07_splitk.cu, cugemm/families/hgemm_wgmma_splitk.py)
 10 small_m      64-row tiles as narrow as 64x32, 6-16 stages deep, one consumer warpgroup and a
                 producer warp, clusters sharing A or B: few-row products fill the GPU with whole-K
                 tiles instead of split-K (B in 32-column 64-byte-swizzled panels where the tile
                 width is not a multiple of 64)                                 (08_small_m.cu)

bf16 siblings (`_bf16`) of the top rungs, and a TF32 sibling of the top structure for float32
inputs (`hgemm_wgmma_tf32_*`, 05_tf32.cu) whose tensor maps make the copy engine round A and B to
TF32 (round to nearest, as cuBLAS), at no cost in instructions or shared-memory passes.

Issue 13's forms of rung 7 (04_persistent.cu), in fp16 and bf16, for what cugemm.matmul hands it:
`_acol`, `_bcol`, `_acol_bcol` read A and/or B column-major without a copy (a.T, the x @ W.T of a
linear layer: a_layout / b_layout 'col'); `_anyc_stage3[...]` writes a C that TMA cannot store (a
2-byte aligned pointer or row stride, c_align=2: each consumer stages its whole slab, the producer
warpgroup's three idle warps store it, 3 stages to make room) in all four operand forms. Rung 7 and
all these are `strided`: any M, K (and N: ANY_C; the TMA-store forms N % 8 == 0, a TMA store
writing the 16-byte piece that holds a row's last column whole) and leading dimensions, as long as
A's and B's (and, but for ANY_C, C's) are multiples of 16 bytes; the forms also narrow the wgmmas of a right-edge tile to its
live panels (NARROW_EDGE). Sanitizers (H100, 2026-11-23, scripts/sanitize_all.py over every new form):
memcheck 0 errors; racecheck reports hazards in the `_anyc` forms only, between the consumers' writes
of a staging slab and the storing warps' reads of it. Those two sides hand the slab over through named
barriers in producer/consumer form (bar.arrive on one side, bar.sync on the other). Nobody has yet
shown whether racecheck models that ordering. Every GPU test of these forms passed on NaN-poisoned
outputs. Until the hazards are explained, treat `_anyc` as unproven under racecheck.
Measured on an H100 SXM (2026-11-23, scripts/bench_wgmma_forms.py: each
form on operands in its own layout, alternating with cupy.matmul on the same views; TFLOP/s and
same-run %), 4096^3 / 4096x4096x1024:
  fp16 tma_store  row 754 (99.5%) / 637 (99.0%)   acol 763 (100.5%) / 637 (99.7%)
                  bcol 750 (99.3%) / 635 (100.1%)  acol_bcol 754 (99.4%) / 640 (100.1%)
  fp16 anyc       row 725 (95.4%) / 576 (91.2%)   acol 728 (96.1%) / 575 (90.5%)
                  bcol 715 (94.3%) / 566 (90.0%)   acol_bcol 713 (93.7%) / 563 (88.4%)
  bf16 at 4096x4096x1024: tma_store 639-653 (97.6-101.1%), anyc 573-595 (87.5-90.4%).
  4095x4097x1023 (A, B in 16-byte-padded workspaces, C the dense 4095 x 4097 array, written in
  place), against cupy.matmul on the dense unpadded operands (142 TFLOP/s): anyc fp16 480-493
  TFLOP/s (337-346%), bf16 492-499 (347-353%). NARROW_EDGE is worth +10% there (TMA-store forms at
  4095x4104x1023: 507 TFLOP/s without it, 556-562 with it). Where ANY_C's 9-10% at K = 1024 go:
  3 stages instead of 4 cost 2.6% (rung 7 with STAGES = 3: 620 against 635 TFLOP/s), the stores by
  the three producer warps the rest (an earlier version of store_staged_slab, one load and store
  per 128 bytes, ran at 421 TFLOP/s, 66%).
The 128x128 forms of rung 7 (`hgemm_wgmma_m64n128k16_persistent_cluster2_tma_store_stage6`, and
`_anyc_stage6`; fp16 and bf16; two m64n128k16 slabs, 6 stages beside the staging boxes or slabs; no
NARROW_EDGE, whose edge widths are a 256-wide tile's) are for shapes whose 128x256 tiles leave most of
a last round of 132 SMs idle. H100, 2026-11-23, `bench.py --dtype f16 --shapes ...`, % of cupy.matmul
(128x128 tma_store against the best 128x256 rung or split-K): 1024^3 76.5 (70.4 split-K), 3072^3
83.8 (76.1), 512x4096x4096 91.1 (89.3), 512x11008x4096 98.3 (78.7), 512x4096x11008 98.8 (95.4),
1024x14336x4096 103.1 (96.5); where 128x256 tiles fill their rounds they stay ahead (2048x11008x4096
96.4 against 89.1, 4096x11008x4096 103.1 against 101.9). cugemm.matmul picks them from the shipped
table (re-tuned for 14 shapes). At 4095x4097x1023 on aligned copies of A and B (20 back-to-back
launches): anyc 128x256 66.8 us with the dense C (ld 4097), 63.2 us with C's rows 16-byte aligned;
anyc 128x128 68.9 / 64.9 us; cupy.matmul 236 us. Sanitizers over the four: memcheck 0 errors;
racecheck 12 hazards, all in the two `_anyc` ones and of the same kind as above (staging slab
writes / storing-warp reads), none in the TMA-store ones.

The 128x192 forms (`hgemm_wgmma_m64n192k16_persistent_cluster2_tma_store_stage4`, and `_bf16`; two
m64n192k16 slabs, 4 stages beside the staging boxes) are for shapes that 128x256 and 128x128 tiles
both quantise badly: 3072^3 is 2.2 rounds of 132 SMs in 128x256 tiles, 4.4 in 128x128 and 2.9 in
128x192. H100, 2026-11-23 (bench.py, same-run % of cupy.matmul): 3072^3 fp16 705.6 TFLOP/s (99.4%;
128x128 82.2%, 128x256 75.6%); `python -m cugemm tune`: 99.4% fp16, 99.0% bf16, shipped for the
3072^3 buckets. Sanitizers: memcheck 0 errors, racecheck no hazard in them.
The 128x64, 128x128 and 128x192 TMA-store forms also come as `_bcol` (fp16 and bf16; `_tile_forms`): B read
column-major without a copy, for x @ W.T at the mid sizes whose 128x256 tiles underfill the SMs; no NARROW_EDGE
(BN = 256 only). Compiled (sm_90a, 168 registers, no spills), not yet run or measured on a GPU.
Rung 10's forms (64-row tiles, 08_small_m.cu) also come as `_bcol` (fp16 and bf16, `_SMALL_M_FORMS`), for x @ W.T
at M = 64..512 tokens against large weights: K-major 128-byte-swizzled B panels of 64 (or, for BN = 32, 96, 32) n
rows, boxes {64 k, panel rows} of W's N x K memory; clusters along M multicast half of every panel's n rows from each
block, clusters along N share A as before. Compiled (sm_90a, the row-major forms' registers, no spills), not yet run
or measured on a GPU.
The NARROW_EDGE forms walk their tiles edge-last and serpentine (04_persistent.cu, lib/raster.cuh):
the narrow last column's tiles fill the last, partial round; cugemm.matmul at 4095x4097x1023 went
from 283% to 298-300% of cupy.matmul fp16, 289% to 305% bf16.

Rungs 1 to 4 need M, N, K multiples of their tile; the persistent rungs take any M and N, K
multiples of 8 (16-byte rows; TF32: multiples of 4), the copy engine zero-filling what lies past the
edges and the stores bounded; rung 7 and its forms any M and K (ANY_C: any N) with 16-byte
leading dimensions. The TMA rungs get their tensor maps from cugemm/tma.py (cached per
pointer, shape and strides; a shape TMA cannot describe is refused with a ValueError before launch),
and remember a launch's maps per (operands, shape) here.

Measured on an H100 SXM (132 SMs, 2026-11-23, bench.py; TFLOP/s and same-run % of cupy.matmul at
4096x4096x1024 / 4096^3 / 8192^3; cupy.matmul fp16: 640 / 746 / 673):
  1 cpasync             356 (56%)   482 (65%)   406 (60%)
  2 tma                 381 (60%)   513 (69%)   441 (66%)
  3 ws                  416 (65%)   524 (70%)   394 (59%)
  4 ws wg2              416 (65%)   635 (85%)   386 (57%)
  5 persistent          424 (66%)   623 (84%)   521 (77%)
  6 cluster2            454 (71%)   667 (89%)   631 (94%)
  7 tma_store           642 (100%)  684 (92%)   651 (97%)   hgemm_wgmma_fast
  8 bt (cluster2)       640 (100%)  682 (91%)   670 (100%)
    bt, no cluster      652 (102%)  685 (92%)   648 (96%)
  bf16 rung 7           655 (100%)  765 (98%)   695 (100%)  hgemm_wgmma_fast_bf16
  TF32 cluster2         397 (100%) at 4096^3, 348 (97%) at 8192^3, rel. error 2.9e-4 (= cuBLAS)
Two earlier runs put rung 7 at 90-91% and the no-cluster rung 8 at 92-94.5% at 4096^3; clusters of 4
(387 TFLOP/s at 4096^3), bands of 4 or 16 tile rows and stmatrix-written staging boxes measured
no better than the registered rungs.

What limits the top rungs (H100 SXM, 700 W, 2026-11-23): power, not the schedule. cuBLAS's kernel
for 4096^3 fp16 (cupy.matmul) is nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA: 132 persistent blocks
of 384 threads, clusters of 2, 4 stages, two cooperating consumer warpgroups on 128 x 256 tiles of
the row-major C, i.e. rung 7's structure. Nsight Compute, one launch each at 4096^3, clocks left
alone: cuBLAS 179 us at 1.58 GHz, 284.8k cycles, tensor pipe busy 94.6% of active cycles, DRAM
reads 150 MB, L2 hit 75%; rung 7 185 us at 1.55 GHz, 289.3k cycles (+1.6%), tensor pipe 94.0%,
DRAM reads 149 MB, L2 hit 77%, 1.32 GB of L2 traffic against cuBLAS's 1.05 GB; rung 8 without
clusters 187 us at 1.52 GHz, 1.61 GB of L2 traffic. Launched back to back for a second, every one
of them runs at the 700 W software power cap (nvidia-smi clocks_event_reasons 0x4) at 1.3-1.45 GHz
instead of 1.98, and sustained throughput is what the watts buy: at 4096^3 cuBLAS 647-651 TFLOP/s,
rung 7 642-646, rung 8 without clusters 632 (its extra L2 traffic costs ~60 MHz); bf16 cuBLAS 675,
rung 7 670; at 8192^3 rung 7 658-662 against cuBLAS 649-650; at 4096x4096x1024 rung 7 560-561
against cuBLAS 572-575. bench.py times each variant in a short burst (~55 launches) whose clock
depends on what ran just before, so its same-run ratios for these kernels move by 5-10% between
runs and with the variant's place in the list (rung 7 at 4096^3: 98.8-99.1% measured second in a
short list, 90.3% measured after rungs 1-6 in the same kind of run).
Tried and not registered (same sessions, sustained TFLOP/s at 4096^3 fp16 unless noted): a ping-pong
schedule (CUTLASS KernelTmaWarpSpecializedPingpong: each consumer its own 64 x 256 or 128 x 128
tile, mainloops in turns so that one consumer's epilogue overlaps the other's wgmmas): 563-576
TFLOP/s for 64 x 256 (bench 82-84% at 4096^3, 70-81% at 8192^3), 128 x 128 bench 91-94% at 4096^3:
half-size tiles copy 25-67% more bytes per flop, the tensor pipe ran 75% busy with the L2 79% busy;
consumers staggered by one K-tile (each epilogue overlapping the other consumer's wgmmas), the slab
of C staged two or four boxes per barrier pair (3 stages with 4 boxes): 642-646 TFLOP/s, within 0.5%
of rung 7 at every shape (the epilogue's idle cycles are cheap in watts, so removing them buys no
clock at the cap); a grid of 128 blocks instead of 132 at 4096^3 (every block 4 whole tiles): 643-650;
raster bands of 4 or 16: 636-637.
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

from .. import device, tma
from ..variant import Variant

FAMILY = "hgemm_wgmma"
BM, BK = 128, 64
STAGING_BYTES = 2 * 2 * 64 * 128  # rung 7: two 64 x 64 staging boxes of C per consumer warpgroup
SLACK = 1024                      # dynamic shared memory alignment slack (1024-byte swizzle atoms)
CTYPES = {"float16": "half", "bfloat16": "__nv_bfloat16"}


def ring_smem_bytes(bm: int, bn: int, stages: int) -> int:
    """A ring of STAGES (A bm x 64, B 64 x bn) 16-bit tiles plus the alignment slack: rungs 1-4."""
    return stages * (bm + bn) * 128 + SLACK


def persistent_smem_bytes(bn: int, stages: int, tma_store: bool, any_c: bool = False) -> int:
    """Mirrors hgemm_wgmma_persistent_smem_bytes (04_persistent.cu): the ring, and the staging boxes
    of the TMA-store epilogue (or ANY_C's two whole staged slabs, 64 x bn each)."""
    return (stages * (BM + bn) * 128 + (STAGING_BYTES if tma_store else 0) + (2 * 64 * bn * 2 if any_c else 0)
            + SLACK)


def persistent_bt_smem_bytes(stages: int) -> int:
    """Mirrors hgemm_wgmma_persistent_bt_smem_bytes (06_persistent_bt.cu): 256x64 A and 64x128 B
    tiles per stage, the staging boxes."""
    return stages * (256 + 128) * 128 + STAGING_BYTES + SLACK


def tf32_smem_bytes(stages: int) -> int:
    """Mirrors hgemm_wgmma_tf32_smem_bytes (05_tf32.cu): 256x32 A and 32x128 B float tiles."""
    return stages * (256 * 128 + 4 * 32 * 128) + SLACK


# ---- kernel arguments and grids ------------------------------------------------------------------
_ARGS: OrderedDict = OrderedDict()
MAX_ARGS_CACHED = 256


def cached_args(maps_fn):
    """An args_fn that remembers the tensor maps of each (variant, operands, shape): one dictionary
    look-up per launch in steady state. The entries hold the TensorMap objects themselves, so the
    host bytes each CPointer argument points at stay alive while the entry does. raw=True: the
    TensorMaps themselves (cugemm/pdl.py passes their host bytes by address)."""

    def args_fn(v, A, B, C, M, N, K, raw=False):
        key = (v.name, A.ptr, B.ptr, C.ptr, M, N, K, A.strides, B.strides, C.strides)
        hit = _ARGS.get(key)
        if hit is None:
            maps = maps_fn(v, A, B, C, M, N, K)  # TensorMaps (and plain scalars, passed as they are)
            hit = _ARGS[key] = (maps, tuple(getattr(m, "arg", m) for m in maps))
            while len(_ARGS) > MAX_ARGS_CACHED:
                _ARGS.popitem(last=False)
        return hit[1] if not raw else hit[0]

    args_fn.maps_fn = maps_fn
    return args_fn


def clear_args_cache() -> None:
    """Forget the tensor maps cached_args remembers (tests that fake the encoder use it)."""
    _ARGS.clear()


def row_stride(op, cols: int, itemsize: int, layout: str = "row") -> int:
    """Bytes between the rows of `op` as it lies in memory: strides[0] for a 'row' operand,
    strides[1] for a 'col' one (whose memory rows are its columns). A matrix of one memory row may
    report any stride: use the dense one, rounded up to the 16 bytes TMA asks even of a stride it
    never uses."""
    axis = 0 if layout == "row" else 1
    return int(op.strides[axis]) if op.shape[axis] > 1 else -(-cols * itemsize // 16) * 16


def _maps_ab(v, A, B, C, M, N, K):
    """Tensor maps of A (box {64 k, BM rows}) and B (box {64 columns, 64 k}), 128-byte swizzled."""
    dt = v.dtype_in
    size = v.dt_in.itemsize
    ma = tma.tensor_map_2d(A.ptr, dt, M, K, row_stride(A, K, size), (BK, v.tile[0]))
    mb = tma.tensor_map_2d(B.ptr, dt, K, N, row_stride(B, N, size), (64, BK))
    return ma, mb


def maps_persistent(v, A, B, C, M, N, K):
    """Rungs 5-7 and their forms: A (box {64 k, 128 rows}; 'col': box {64 m, 64 k} of the K x M
    memory), B (box {64 columns, 64 k}; 'col': box {64 k, 64 n} of the N x K memory), then C (box
    {64, 64}, what a consumer's staging box holds) or, for ANY_C, C's row stride in elements."""
    dt, size = v.dtype_in, v.dt_in.itemsize
    if v.a_layout == "col":
        ma = tma.tensor_map_2d(A.ptr, dt, K, M, row_stride(A, M, size, "col"), (64, BK))
    else:
        ma = tma.tensor_map_2d(A.ptr, dt, M, K, row_stride(A, K, size), (BK, v.tile[0]))
    if v.b_layout == "col":
        mb = tma.tensor_map_2d(B.ptr, dt, N, K, row_stride(B, K, size, "col"), (BK, 64))
    else:
        mb = tma.tensor_map_2d(B.ptr, dt, K, N, row_stride(B, N, size), (64, BK))
    osize = v.dt_out.itemsize
    if v.param_dict.get("ANY_C"):
        return ma, mb, np.int32(row_stride(C, N, osize) // osize if M > 1 else N)
    return ma, mb, tma.tensor_map_2d(C.ptr, v.dtype_out, M, N, row_stride(C, N, osize), (64, 64))


def _maps_bt(v, A, B, C, M, N, K):
    """Rung 8: A in boxes {64 k, 256 / CLUSTER_N rows} (a cluster's blocks copy one part each), B and
    C in boxes {64, 64}."""
    dt, size = v.dtype_in, v.dt_in.itemsize
    ma = tma.tensor_map_2d(A.ptr, dt, M, K, row_stride(A, K, size), (BK, 256 // v.cluster[0]))
    mb = tma.tensor_map_2d(B.ptr, dt, K, N, row_stride(B, N, size), (64, BK))
    mc = tma.tensor_map_2d(C.ptr, v.dtype_out, M, N, row_stride(C, N, v.dt_out.itemsize), (64, 64))
    return ma, mb, mc


def _maps_tf32(v, A, B, C, M, N, K):
    """TF32: float32 A (box {32 k, 256 / CLUSTER_N rows}) and B (box {32 columns, 32 k}) loaded as
    TFLOAT32 (the copy engine rounds to TF32), 128-byte swizzled."""
    cn = v.cluster[0]
    ma = tma.tensor_map_2d(A.ptr, "tfloat32", M, K, row_stride(A, K, 4), (32, 256 // cn))
    mb = tma.tensor_map_2d(B.ptr, "tfloat32", K, N, row_stride(B, N, 4), (32, 32))
    return ma, mb


def _maps_small_m(v, A, B, C, M, N, K):
    """Rung 10 (08_small_m.cu): A in boxes {64 k, 64 rows} (M rounded up to 8 rows when M < 64, as
    the kernel's a_rows; 32 rows with clusters along N, whose blocks copy one part each), 128-byte
    swizzled; B in panels of 64 columns (128-byte swizzle) or, where the tile width is not a multiple
    of 64, 32 columns (64-byte swizzle), boxes of 64 k rows (32 with clusters along M). B_COL (the
    _bcol forms, b_layout 'col': B is W.T of an N x K weight): B's map describes W's N x K memory,
    K-major panels of the same 64 or 32 n rows, boxes {64 k, panel n rows} (half the rows with
    clusters along M, whose blocks copy one part each), 128-byte swizzled whatever the panel."""
    dt, size = v.dtype_in, v.dt_in.itemsize
    p = v.param_dict
    shared = p["CLUSTER"]  # blocks sharing the multicast operand
    a_rows = min(64, -(-M // 8) * 8) if p["ALONG_M"] or shared == 1 else 64 // shared
    b_rows = BK // shared if p["ALONG_M"] else BK
    panel = 64 if p["BN"] % 64 == 0 else 32
    ma = tma.tensor_map_2d(A.ptr, dt, M, K, row_stride(A, K, size), (BK, a_rows))
    if p.get("B_COL"):
        n_rows = panel // shared if p["ALONG_M"] else panel
        mb = tma.tensor_map_2d(B.ptr, dt, N, K, row_stride(B, K, size, "col"), (BK, n_rows), swizzle=128)
    else:
        mb = tma.tensor_map_2d(B.ptr, dt, K, N, row_stride(B, N, size), (panel, b_rows), swizzle=2 * panel)
    return ma, mb


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


_GRIDS: dict = {}


def persistent_grid(v, M, N, K, dev):
    """One block per SM (whole clusters), or fewer when there are fewer tiles; clusters run along M
    (rungs 5-7) or along N (rung 8, the TF32 sibling: the kernels with a CLUSTER_N parameter; rung 10
    with ALONG_M false)."""
    sms = (dev or device.get()).sms
    key = (v.name, M, N, sms)
    g = _GRIDS.get(key)
    if g is None:
        c = v.cluster[0]
        tm, tn = _cdiv(M, v.tile[0]), _cdiv(N, v.tile[1])
        along_n = "CLUSTER_N" in v.param_dict or v.param_dict.get("ALONG_M") is False
        clusters = _cdiv(tn, c) * tm if along_n else _cdiv(tm, c) * tn
        g = (max(c, min(clusters, sms // c) * c), 1, 1)
        if len(_GRIDS) > 4096:
            _GRIDS.clear()
        _GRIDS[key] = g
    return g


# ---- constructors ----------------------------------------------------------------------------------
def _common(name, dtype, doc, **kw):
    return dict(name=name, family=FAMILY, dtype_in=dtype, dtype_out=dtype, dtype_acc="float32",
                math="wgmma", align=16, archs=("sm_90a",), seed="cugemm", doc=doc, **kw)


def _cpasync(name, *, BN, STAGES, dtype="float16", doc, **kw):
    return Variant(source="hgemm_wgmma/01_cpasync.cu", template="hgemm_wgmma_cpasync",
                   params=(("BN", BN), ("STAGES", STAGES), ("T", CTYPES[dtype])),
                   tile=(BM, BN, BK), block=(256, 1, 1), multiple_of=(BM, BN, BK),
                   smem_dynamic=ring_smem_bytes(BM, BN, STAGES), **_common(name, dtype, doc, **kw))


def _tma(name, *, BN, STAGES, dtype="float16", doc, **kw):
    return Variant(source="hgemm_wgmma/02_tma.cu", template="hgemm_wgmma_tma",
                   params=(("BN", BN), ("STAGES", STAGES), ("T", CTYPES[dtype])),
                   tile=(BM, BN, BK), block=(256, 1, 1), multiple_of=(BM, BN, BK),
                   smem_dynamic=ring_smem_bytes(BM, BN, STAGES), args_fn=cached_args(_maps_ab),
                   **_common(name, dtype, doc, **kw))


def _ws(name, *, BN, CONSUMERS, STAGES, dtype="float16", doc, **kw):
    return Variant(source="hgemm_wgmma/03_ws.cu", template="hgemm_wgmma_ws",
                   params=(("BM", BM), ("BN", BN), ("CONSUMERS", CONSUMERS), ("STAGES", STAGES),
                           ("T", CTYPES[dtype])),
                   tile=(BM, BN, BK), block=(128 * (CONSUMERS + 1), 1, 1), multiple_of=(BM, BN, BK),
                   smem_dynamic=ring_smem_bytes(BM, BN, STAGES), args_fn=cached_args(_maps_ab),
                   **_common(name, dtype, doc, **kw))


def _persistent(name, *, BN=256, STAGES=4, GROUP=8, CLUSTER_M=1, TMA_STORE=False, ANY_C=False, A_COL=False,
                B_COL=False, NARROW_EDGE=False, dtype="float16", doc, **kw):
    """04_persistent.cu. With strided=True (the top rung and its forms) any M and K, and any N for
    ANY_C: the tensor maps carry the true shape and leading dimensions, TMA zero-fills past them;
    only the leading dimensions must be multiples of 16 bytes (TMA's rule; ANY_C's C: of 2). The
    TMA-store forms keep N % 8 == 0: a TMA store writes the 16-byte piece of a row that holds the
    last column whole (measured on an H100: a 1 x 1 C got 7 more elements), so C's rows must end on
    16 bytes; ANY_C's bounded stores take any N."""
    if kw.get("strided"):
        kw.setdefault("multiple_of", (1, 1, 1) if ANY_C else (1, 8, 1))
    if ANY_C:
        kw.setdefault("c_align", 2)
    return Variant(source="hgemm_wgmma/04_persistent.cu", template="hgemm_wgmma_persistent",
                   params=(("BN", BN), ("STAGES", STAGES), ("GROUP", GROUP), ("CLUSTER_M", CLUSTER_M),
                           ("TMA_STORE", TMA_STORE), ("ANY_C", ANY_C), ("A_COL", A_COL), ("B_COL", B_COL),
                           ("NARROW_EDGE", NARROW_EDGE), ("T", CTYPES[dtype])),
                   tile=(BM, BN, BK), block=(384, 1, 1), a_layout="col" if A_COL else "row",
                   b_layout="col" if B_COL else "row",
                   smem_dynamic=persistent_smem_bytes(BN, STAGES, TMA_STORE, ANY_C), cluster=(CLUSTER_M, 1, 1),
                   grid_fn=persistent_grid, args_fn=cached_args(maps_persistent), pdl=True,
                   **_common(name, dtype, doc, **{"multiple_of": (1, 8, 8), **kw}))


def _tile_forms(bn: int, stages: int, doc: str) -> tuple:
    """Rung 7 (clusters of 2, TMA-store epilogue, strided) with 128 x bn tiles, in fp16 and bf16, then
    its `_bcol` form (B read column-major: x @ W.T) in both. No NARROW_EDGE: its edge widths are a
    256-wide tile's (04_persistent.cu asserts BN = 256)."""
    docs = {("", ""): doc, ("", "_bf16"): f"rung 7 with 128x{bn} tiles in bf16",
            ("_bcol", ""): f"rung 7 with 128x{bn} tiles and {_FORM_DOC['_bcol']}, no copy",
            ("_bcol", "_bf16"): f"rung 7 with 128x{bn} tiles and {_FORM_DOC['_bcol']}, no copy, in bf16"}
    return tuple(
        _persistent(f"hgemm_wgmma_m64n{bn}k16_persistent_cluster2_tma_store_stage{stages}{col}{bf}", BN=bn,
                    STAGES=stages, CLUSTER_M=2, TMA_STORE=True, B_COL=col == "_bcol", strided=True, dtype=dtype,
                    doc=docs[col, bf])
        for col in ("", "_bcol") for dtype, bf in (("float16", ""), ("bfloat16", "_bf16")))


# The operand forms of the top rung (A_COL, B_COL) and its any-C sibling, in both 16-bit types.
_FORMS = (("", False, False), ("_acol", True, False), ("_bcol", False, True), ("_acol_bcol", True, True))
_FORM_DOC = {"_acol": "A read column-major (a.T of a row-major K x M: M-major A tiles, transposed wgmma A)",
             "_bcol": "B read column-major (the x @ W.T of a linear layer: K-major B tiles)",
             "_acol_bcol": "A and B read column-major (C^T's operands as stored: a.T @ W.T)"}


def _top_forms(dtype: str) -> tuple:
    """Rung 7's transposed-operand forms, and the ANY_C sibling in all four operand forms."""
    bf = "_bf16" if dtype == "bfloat16" else ""
    out = []
    for suffix, a_col, b_col in _FORMS:
        if suffix:
            out.append(_persistent(
                _P + "_cluster2_tma_store_stage4" + suffix + bf, CLUSTER_M=2, TMA_STORE=True, A_COL=a_col,
                B_COL=b_col, NARROW_EDGE=True, dtype=dtype, strided=True,
                aliases=("hgemm_wgmma_fast" + suffix + bf,),
                doc=f"rung 7 with {_FORM_DOC[suffix]}, no copy; any M, N, K and leading dimensions; an edge "
                    "tile of 1-3 live panels issues n64-n192 wgmmas"))
        out.append(_persistent(
            _P + "_cluster2_anyc_stage3" + suffix + bf, STAGES=3, CLUSTER_M=2, ANY_C=True, A_COL=a_col,
            B_COL=b_col, NARROW_EDGE=True, dtype=dtype, strided=True,
            aliases=("hgemm_wgmma_fast_anyc" + suffix + bf,),
            doc="rung 7's structure for a C TMA cannot store (2-byte aligned pointer or row stride): each "
                "consumer stages its whole slab, the producer warpgroup's 3 idle warps write it with "
                "bounded 4/2-byte stores during the next mainloop; 3 stages" +
                (f"; {_FORM_DOC[suffix]}" if suffix else "")))
    return tuple(out)


def small_m_smem_bytes(bn: int, stages: int) -> int:
    """Mirrors hgemm_wgmma_small_m_smem_bytes (08_small_m.cu): a ring of 64 x 64 A and 64 x bn B tiles."""
    return stages * (64 + bn) * 128 + SLACK


_CLUSTER_DOC = {"_cluster2m": ", clusters of 2 along M sharing B", "_cluster2n": ", clusters of 2 along N sharing A"}


def _small_m(bn: int, stages: int, cluster: int, along_m: bool, doc: str, b_col: bool = False) -> tuple:
    """Rung 10 (08_small_m.cu), 64 x bn tiles, in fp16 and bf16; clusters of `cluster` blocks along M
    (`_cluster2m`, sharing B) or along N (`_cluster2n`, sharing A). b_col: the `_bcol` form (B_COL,
    b_layout 'col': B read column-major, the x @ W.T of a linear layer, no copy)."""
    c = f"_cluster{cluster}{'m' if along_m else 'n'}" if cluster > 1 else ""
    col = "_bcol" if b_col else ""
    bf_doc = f"rung 10 with 64x{bn} tiles{_CLUSTER_DOC.get(c, '')}{' and ' + _FORM_DOC['_bcol'] if b_col else ''}"
    return tuple(
        Variant(source="hgemm_wgmma/08_small_m.cu", template="hgemm_wgmma_small_m",
                params=(("BN", bn), ("STAGES", stages), ("GROUP", 8), ("CLUSTER", cluster), ("ALONG_M", along_m),
                        ("B_COL", b_col), ("T", CTYPES[dtype])),
                tile=(64, bn, BK), block=(160, 1, 1), multiple_of=(1, 8, 8), b_layout="col" if b_col else "row",
                smem_dynamic=small_m_smem_bytes(bn, stages), cluster=(cluster, 1, 1),
                grid_fn=persistent_grid, args_fn=cached_args(_maps_small_m),
                **_common(f"hgemm_wgmma_m64n{bn}k16_small_m{c}_stage{stages}{col}{bf}", dtype,
                          doc if not bf else f"{bf_doc} in bf16"))
        for dtype, bf in (("float16", ""), ("bfloat16", "_bf16")))


# Rung 10's forms: (BN, STAGES, CLUSTER, ALONG_M, doc), each registered row-major and as `_bcol`.
_SMALL_M_FORMS = (
    (32, 16, 1, True,
     "64-row tiles for products with few rows: 64x32 tiles (wgmma m64n32k16, B in 64-byte-swizzled "
     "32-column panels), one consumer warpgroup and a producer warp, 16 stages, persistent, no "
     "split-K (M=64 against a 4096-wide weight: 128 tiles); A boxes of M rows when M < 64"),
    (64, 12, 2, True, "rung 10 with 64x64 tiles, 12 stages, clusters of 2 along M sharing B"),
    (96, 10, 1, True, "rung 10 with 64x96 tiles (three 32-column panels), 10 stages (N = 11008: 115 tiles)"),
    (128, 8, 2, True, "rung 10 with 64x128 tiles, 8 stages, clusters of 2 along M sharing B"),
    (128, 8, 2, False, "rung 10 with 64x128 tiles, 8 stages, clusters of 2 along N sharing A"),
    (192, 6, 2, True, "rung 10 with 64x192 tiles, 6 stages, clusters of 2 along M sharing B"),
)


def _small_m_bcol_doc(bn: int, cluster: int, along_m: bool) -> str:
    """The doc line of a rung-10 `_bcol` form."""
    side = ("" if cluster == 1 else ", clusters of 2 along M sharing B (each block multicasts half of every "
            "panel's n rows)" if along_m else ", clusters of 2 along N sharing A")
    return (f"rung 10 with 64x{bn} tiles{side} and {_FORM_DOC['_bcol']}: 128-byte-swizzled K-major panels "
            f"of {64 if bn % 64 == 0 else 32} n rows, no copy (x @ W.T for mid-size activations)")


def _persistent_bt(name, *, STAGES=4, GROUP=8, CLUSTER_N=1, dtype="float16", doc, **kw):
    return Variant(source="hgemm_wgmma/06_persistent_bt.cu", template="hgemm_wgmma_persistent_bt",
                   params=(("STAGES", STAGES), ("GROUP", GROUP), ("CLUSTER_N", CLUSTER_N), ("T", CTYPES[dtype])),
                   tile=(256, 128, BK), block=(384, 1, 1), multiple_of=(1, 8, 8),
                   smem_dynamic=persistent_bt_smem_bytes(STAGES), cluster=(CLUSTER_N, 1, 1),
                   grid_fn=persistent_grid, args_fn=cached_args(_maps_bt), **_common(name, dtype, doc, **kw))


def _tf32(name, *, STAGES=4, GROUP=8, CLUSTER_N=1, doc, **kw):
    return Variant(source="hgemm_wgmma/05_tf32.cu", template="hgemm_wgmma_tf32",
                   params=(("STAGES", STAGES), ("GROUP", GROUP), ("CLUSTER_N", CLUSTER_N)),
                   tile=(256, 128, 32), block=(384, 1, 1), multiple_of=(1, 4, 4),
                   smem_dynamic=tf32_smem_bytes(STAGES), cluster=(CLUSTER_N, 1, 1),
                   grid_fn=persistent_grid, args_fn=cached_args(_maps_tf32),
                   **_common(name, "float32", doc, math_dtype="tfloat32", **kw))


_P = "hgemm_wgmma_m64n256k16_persistent"
_BT = "hgemm_wgmma_m64n256k16_bt_persistent"

VARIANTS: tuple[Variant, ...] = (
    # ---- the ladder (fp16) ---------------------------------------------------------------------
    _cpasync("hgemm_wgmma_m64n128k16_cpasync_stage4", BN=128, STAGES=4,
             doc="wgmma m64n128k16, both operands in 128B-swizzled shared memory filled by cp.async; "
                 "128x128x64 tile of 2 warpgroups, 4 stages"),
    _tma("hgemm_wgmma_m64n128k16_tma_stage4", BN=128, STAGES=4,
         doc="TMA copies completing on FULL mbarriers (expect-tx), EMPTY mbarriers for stage reuse, "
             "one K-tile of wgmmas in flight; 4 stages"),
    _ws("hgemm_wgmma_m64n128k16_ws_stage6", BN=128, CONSUMERS=1, STAGES=6,
        doc="warp specialisation: a producer warpgroup (one thread issues TMA) and one consumer "
            "warpgroup (two m64n128k16 slabs), setmaxnreg 40/232; 128x128 tile, 6 stages"),
    _ws("hgemm_wgmma_m64n256k16_ws_wg2_stage4", BN=256, CONSUMERS=2, STAGES=4,
        doc="two consumer warpgroups of 64x256 (wgmma m64n256k16): a 128x256x64 tile, 4 stages"),
    _persistent(_P + "_stage4", doc="persistent: one block per SM walking 128x256 tiles in grouped "
                                    "order (bands of 8 tile rows); the pipeline runs on across tiles"),
    _persistent(_P + "_cluster2_stage4", CLUSTER_M=2,
                doc="clusters of 2 blocks along M: each copies half of the shared B tile with TMA "
                    "multicast"),
    _persistent(_P + "_cluster2_tma_store_stage4", CLUSTER_M=2, TMA_STORE=True, strided=True,
                aliases=("hgemm_wgmma_fast",),
                doc="epilogue through swizzled shared memory and TMA stores (bounded) that overlap "
                    "the next tile's mainloop"),
    _persistent_bt(_BT + "_cluster2_stage4", CLUSTER_N=2,
                   doc="operand roles swapped (C^T = B^T A^T): the 256-row A tile is the wide, K-major "
                       "wgmma operand, B^T the narrow N-major one; 256x128 tiles, clusters of 2 along "
                       "N share A; stmatrix.trans epilogue"),
    # ---- siblings of the top rungs without clusters -----------------------------------------------
    _persistent(_P + "_tma_store_stage4", TMA_STORE=True,
                doc="rung 7 without clusters: persistent, TMA-store epilogue"),
    _persistent_bt(_BT + "_stage4",
                   doc="rung 8 without clusters (each block copies its whole A tile)"),
    # ---- bf16 siblings of the top rungs ---------------------------------------------------------
    _persistent(_P + "_stage4_bf16", dtype="bfloat16", doc="rung 5 (persistent) in bf16"),
    _persistent(_P + "_cluster2_stage4_bf16", CLUSTER_M=2, dtype="bfloat16",
                doc="rung 6 (clusters of 2, B multicast) in bf16"),
    _persistent(_P + "_cluster2_tma_store_stage4_bf16", CLUSTER_M=2, TMA_STORE=True, dtype="bfloat16",
                strided=True, aliases=("hgemm_wgmma_fast_bf16",), doc="rung 7 (TMA-store epilogue) in bf16"),
    _persistent_bt(_BT + "_cluster2_stage4_bf16", CLUSTER_N=2, dtype="bfloat16",
                   doc="rung 8 (operand roles swapped) in bf16"),
    _persistent_bt(_BT + "_stage4_bf16", dtype="bfloat16", doc="rung 8 without clusters, in bf16"),
    # ---- rung 7 with 128x128 tiles: twice the tiles, for the shapes 128x256 tiles quantise badly
    # (3072^3: 288 tiles are 2.2 rounds of 132 SMs, 576 are 4.4); 6 stages fit beside the boxes
    *_tile_forms(128, 6, "rung 7 with 128x128 tiles (two m64n128k16 slabs), 6 stages: finer tiles for shapes "
                         "whose 128x256 tiles leave most of a last round idle"),
    # ---- rung 7 with 128x64 tiles: 1024^3 is 64 tiles of 128x128 on 132 SMs, 128 of these
    *_tile_forms(64, 8, "rung 7 with 128x64 tiles (two m64n64k16 slabs; block 0 of a cluster multicasts the one "
                        "B panel), 8 stages: small squares whose 128x128 tiles leave half the SMs idle"),
    # ---- rung 7 with 128x192 tiles: 3072^3 is 2.2 rounds of 128x256 tiles, 4.4 of 128x128, 2.9 of these
    *_tile_forms(192, 4, "rung 7 with 128x192 tiles (two m64n192k16 slabs; each block of a cluster multicasts "
                         "its panels of 3), 4 stages: for shapes that 128x256 and 128x128 tiles both quantise badly"),
    _persistent("hgemm_wgmma_m64n128k16_persistent_cluster2_anyc_stage6", BN=128, STAGES=6, CLUSTER_M=2,
                ANY_C=True, strided=True,
                doc="the any-C sibling with 128x128 tiles: 6 stages beside the 32 KB of slabs, and an N one "
                    "past a multiple of 256 (4097) costs a 128-wide tile column, not a 256-wide one"),
    _persistent("hgemm_wgmma_m64n128k16_persistent_cluster2_anyc_stage6_bf16", BN=128, STAGES=6, CLUSTER_M=2,
                ANY_C=True, strided=True, dtype="bfloat16", doc="the any-C sibling with 128x128 tiles in bf16"),
    # ---- rung 7 for every layout and shape: transposed operands (no copy), any C (issue 13) ----------
    *_top_forms("float16"),
    *_top_forms("bfloat16"),
    # ---- rung 10: 64-row tiles as narrow as 32 columns, 6-16 stages, for products with few rows ------
    # (_SMALL_M_FORMS; each form's _bcol sibling, B read column-major for x @ W.T, right after it)
    *(v for bn, stages, cluster, along_m, doc in _SMALL_M_FORMS
      for b_col in (False, True)
      for v in _small_m(bn, stages, cluster, along_m,
                        _small_m_bcol_doc(bn, cluster, along_m) if b_col else doc, b_col=b_col)),
    # ---- the TF32 sibling of the top structure (float32 in and out) --------------------------------
    _tf32("hgemm_wgmma_tf32_m64n256k8_persistent_stage4",
          doc="float32 GEMM with TF32 wgmma m64n256k8 (C^T = B^T A^T, B^T from registers), persistent "
              "and warp-specialized; TMA maps of type TFLOAT32 round both operands as cuBLAS does"),
    _tf32("hgemm_wgmma_tf32_m64n256k8_persistent_cluster2_stage4", CLUSTER_N=2,
          aliases=("hgemm_wgmma_tf32_fast",),
          doc="the TF32 sibling with clusters of 2 along N sharing the A tile (TMA multicast)"),
)
