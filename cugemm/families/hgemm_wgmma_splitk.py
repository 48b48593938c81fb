"""Hopper fp16 / bf16 split-K (kernels/hgemm_wgmma/07_splitk.cu): the wgmma rung for products whose
128 x BN tiles do not fill the GPU (LLM decode and prefill shapes: M = 128..1024 tokens against
4096 x 4096, 11008 x 4096, 4096 x 11008, 14336 x 4096 weights; small squares; deep K).

Registered in the hgemm_wgmma family (the ladder's rung 9, beside the persistent rungs of
cugemm/families/hgemm_wgmma.py): rung 5's warp-specialized block (a TMA producer warpgroup, two
wgmma consumer warpgroups, an mbarrier ring) walking a list of work units persistently: first
`dp_tiles` whole tiles (the full waves of a product with many tiles), then `splits` K-slices of
every remaining tile. A slice stores its fp32 partial to a workspace; the last slice of a tile to
finish (a per-slab atomic counter, which it resets) adds the others' partials in slice order and
stores C, so the result is the same whatever order the slices finish in.

The split (`plan`): with T tiles, kt = ceil(K / 64) K-tiles and P SMs, dp_tiles = (T // P) * P
whole tiles run data-parallel and the remaining T % P tiles (all T when T < P) are split into the S
slices that minimise a small cost model (`_cost`, microseconds): the waves of slices times the
K-tiles per slice, at least the operands' bytes over the HBM bandwidth, plus, for S > 1, the fixed
cost of storing a partial and the last slice's serial reduction of S - 1 fp32 tiles.
S is passed to the kernel at launch, with dp_tiles.

The `_bcol` forms (B_COL) read B column-major without a copy: B is the transposed view W.T of a
row-major N x K weight (the x @ W.T of a linear layer), b_layout 'col'. B's tensor map describes
that N x K memory (box {64 k, 64 n}; its 16-byte row-stride rule is K % 8 == 0, which multiple_of
already asks), the kernel's B tiles are K-major (07_splitk.cu). Same plan, workspace and grid.

Workspace: the partial slots (splits * 128 * BN floats per split tile) and the counters (two per
split tile, zero between launches: the kernel resets them), asked for by `workspace_need` and
provided by the launcher (cugemm/workspace.py: one buffer per stream, or one per call under
CUDA-graph capture).

Measured on an H100 SXM (132 SMs, 700 W, 2026-11-23, sweep() with forced S: us per launch, same-run %
of cupy.matmul fp16, L2 flushed where the operands fit). Splits pay where the tiles are few and K
deep, and cost a fixed 5-10 us otherwise (partial stores, fence, arrival, reduction), more than the
model first assumed; FIX_US / RED_GBS are fitted to these runs:
  128x4096x4096    BN=256: S=1 47.4 (49%), S=2 37.1, S=4 32.5 (71%), S=8 37.2;
                   BN=128: S=1 30.9 (75%), S=2 27.2 (85%), S=4 28.7
  512x4096x11008   BN=256: S=1 112.6 (55%), S=2 74.1 (92-96%); BN=128 S=1 (128 tiles) 67.1 (94.7%)
  1024x14336x4096  BN=256: S=1 196.7 (85%), tail of 52 tiles split 2 ways 185.5 (90%)
  256x11008x4096   BN=128: S=1 60.3 (66%), tail of 40 tiles split 3 ways 54.6 (76%); BN=256 S=1 52.3 (77%)
  1024x1024x1024   BN=128: S=1 13.8 (73%), S=2 15.9 (65%); BN=256 22.5-23.8 (46-48%) at any S
The last slice first loaded the other partials through registers (8 float4 per thread per L2 round
trip); bulk copies into the free ring (the current kernel) gained only 1-2 us at S = 4..8: the
reduction is not what the fixed cost is made of. Not reached: 100% of cupy.matmul on these shapes.
"""
from __future__ import annotations

import numpy as np

from .. import device, tma
from ..variant import Variant
from ..workspace import Need
from .hgemm_wgmma import BK, BM, CTYPES, FAMILY, SLACK, _cdiv, _maps_ab, cached_args, row_stride

# ---- the split heuristic -------------------------------------------------------------------------
MAX_SPLITS = 16
MIN_KT_PER_SLICE = 2
# Cost model (microseconds on an H100 SXM under load; calibrated by sweep() runs):
SM_TFLOPS = 5.0       # dense fp16 wgmma TFLOP/s of one SM (~660 / 132)
SM_GBS = 100.0        # operand bytes one SM's TMA copies stream per microsecond... in GB/s
HBM_GBS = 3000.0      # achievable HBM bandwidth, GB/s (H100 SXM; an H200 is above)
FIX_US = 6.0          # a split's fixed cost: partial stores, fence, arrival, the reduction's start
RED_GBS = 100.0       # bandwidth of the last slice's reduction (bulk copies from L2), GB/s

FORCE_SPLITS = None   # tuning hook: an int forces S for every split-able launch (see sweep())

_PLANS: dict = {}


def _cost(M: int, N: int, K: int, bn: int, sms: int, dp: int, tail: int, S: int) -> float:
    """Modelled time (us) of the product: dp whole tiles in full waves, then `tail` tiles split S ways.
    A K-tile costs the larger of its wgmmas and its copies on one SM; the whole product at least its
    operands' bytes over the HBM bandwidth; a split adds the partial store and the serial reduction
    of S - 1 fp32 tiles by the last slice."""
    kt = _cdiv(K, BK)
    kt_us = max(BM * bn * BK * 2 / (SM_TFLOPS * 1e6), (BM + bn) * BK * 2 / (SM_GBS * 1e3))
    t = (dp // sms) * kt * kt_us + _cdiv(tail * S, sms) * _cdiv(kt, S) * kt_us
    t = max(t, 2 * (M * K + K * N + M * N) / (HBM_GBS * 1e3))
    if S > 1:
        t += FIX_US + (S - 1) * BM * bn * 4 / (RED_GBS * 1e3)
    return t


def plan(M: int, N: int, K: int, bn: int, sms: int) -> tuple[int, int, int]:
    """(dp_tiles, splits, grid) for an M x N x K product in 128 x bn tiles on `sms` SMs."""
    key = (M, N, K, bn, sms, FORCE_SPLITS)
    p = _PLANS.get(key)
    if p is not None:
        return p
    T = _cdiv(M, BM) * _cdiv(N, bn)
    kt = _cdiv(K, BK)
    dp = T // sms * sms
    tail = T - dp
    best = 1
    if tail:
        # at most one wave of slices: a block's slice is its last unit (the kernel then reduces
        # through its free ring)
        top = max(1, min(MAX_SPLITS, kt // MIN_KT_PER_SLICE, sms // tail))
        if FORCE_SPLITS is not None:
            best = max(1, min(int(FORCE_SPLITS), kt, sms // tail))
        else:
            costs = {S: _cost(M, N, K, bn, sms, dp, tail, S) for S in range(1, top + 1)}
            best = min(costs, key=lambda S: (costs[S], S))
    if best == 1:
        dp = T
    units = dp + (T - dp) * best
    p = (dp, best, max(1, min(units, sms)))
    if len(_PLANS) > 4096:
        _PLANS.clear()
    _PLANS[key] = p
    return p


def _grid(v, M, N, K, dev):
    sms = (dev or device.get()).sms
    return (plan(M, N, K, v.tile[1], sms)[2], 1, 1)


# ---- workspace: partial slots and counters (cugemm/workspace.py holds them) -------------------------
def workspace_need(v, M, N, K, dev) -> Need:
    """The partial slots (splits * 128 * BN floats per split tile) and counters (two per split tile)
    a launch of `v` on `dev` uses."""
    bn = v.tile[1]
    dp, S, _ = plan(M, N, K, bn, dev.sms)
    split_tiles = _cdiv(M, BM) * _cdiv(N, bn) - dp if S > 1 else 0
    return Need(split_tiles * S * BM * bn, 2 * split_tiles)


def _maps_splitk(v, A, B, C, M, N, K):
    """Tensor maps of A (box {64 k, 128 rows}) and B: row-major (box {64 columns, 64 k}) as _maps_ab,
    or, for a 'col' B (the _bcol forms), the N x K memory of W in boxes {64 k, 64 n}; 128-byte swizzled."""
    if v.b_layout != "col":
        return _maps_ab(v, A, B, C, M, N, K)
    dt, size = v.dtype_in, v.dt_in.itemsize
    ma = tma.tensor_map_2d(A.ptr, dt, M, K, row_stride(A, K, size), (BK, v.tile[0]))
    mb = tma.tensor_map_2d(B.ptr, dt, N, K, row_stride(B, K, size, "col"), (BK, 64))
    return ma, mb


_map_args = cached_args(_maps_splitk)


def _args(v, A, B, C, M, N, K, raw=False, work=None, dev=None):
    """Tensor maps of A and B, the workspace's partials and counters, dp_tiles and splits."""
    dp, S, _ = plan(M, N, K, v.tile[1], dev.sms)
    return _map_args(v, A, B, C, M, N, K, raw=raw) + (np.uint64(work.partials), np.uint64(work.counters),
                                                       np.int32(dp), np.int32(S))


# ---- variants ------------------------------------------------------------------------------------
def splitk_smem_bytes(bn: int, stages: int) -> int:
    """Mirrors hgemm_wgmma_splitk_smem_bytes (07_splitk.cu): the ring and the alignment slack."""
    return stages * (BM + bn) * 128 + SLACK


def _splitk(name, *, BN, STAGES, GROUP=8, B_COL=False, dtype="float16", doc, **kw):
    return Variant(name=name, family=FAMILY, source="hgemm_wgmma/07_splitk.cu", template="hgemm_wgmma_splitk",
                   params=(("BN", BN), ("STAGES", STAGES), ("GROUP", GROUP), ("B_COL", B_COL),
                           ("T", CTYPES[dtype])),
                   tile=(BM, BN, BK), block=(384, 1, 1), multiple_of=(1, 8, 8),
                   b_layout="col" if B_COL else "row",
                   smem_dynamic=splitk_smem_bytes(BN, STAGES), grid_fn=_grid, args_fn=_args,
                   workspace_fn=workspace_need,
                   dtype_in=dtype, dtype_out=dtype, dtype_acc="float32", math="wgmma", align=16,
                   archs=("sm_90a",), seed="cugemm", doc=doc, **kw)


_S = "hgemm_wgmma_m64n{}k16_splitk_stage{}"

VARIANTS: tuple[Variant, ...] = (
    _splitk(_S.format(256, 4), BN=256, STAGES=4,
            doc="split-K: tiles that do not fill the SMs are cut into K-slices; fp32 partials reduced "
                "in slice order by the last slice to finish (per-slab atomic counter); 128x256 tiles"),
    _splitk(_S.format(128, 6), BN=128, STAGES=6,
            doc="split-K on 128x128 tiles (two m64n128k16 slabs): twice the tiles before splitting"),
    _splitk(_S.format(256, 4) + "_bf16", BN=256, STAGES=4, dtype="bfloat16", doc="split-K 128x256 in bf16"),
    _splitk(_S.format(128, 6) + "_bf16", BN=128, STAGES=6, dtype="bfloat16", doc="split-K 128x128 in bf16"),
    # B read column-major without a copy (x @ W.T: B is W.T of a row-major N x K weight)
    _splitk(_S.format(256, 4) + "_bcol", BN=256, STAGES=4, B_COL=True,
            doc="split-K 128x256 with B read column-major (x @ W.T of a linear layer: K-major B tiles), no copy"),
    _splitk(_S.format(128, 6) + "_bcol", BN=128, STAGES=6, B_COL=True,
            doc="split-K 128x128 with B read column-major (x @ W.T of a linear layer: K-major B tiles), no copy"),
    _splitk(_S.format(256, 4) + "_bcol_bf16", BN=256, STAGES=4, B_COL=True, dtype="bfloat16",
            doc="split-K 128x256 with B read column-major (x @ W.T), no copy, in bf16"),
    _splitk(_S.format(128, 6) + "_bcol_bf16", BN=128, STAGES=6, B_COL=True, dtype="bfloat16",
            doc="split-K 128x128 with B read column-major (x @ W.T), no copy, in bf16"),
)


# ---- tuning -----------------------------------------------------------------------------------------
def sweep(shapes, dtype="float16", splits=(1, 2, 3, 4, 6, 8), names=None, iters=30):
    """Time each variant at each forced split count against cupy.matmul (alternating repetitions);
    prints one line per (variant, shape, S) and the plan's own choice. Needs a GPU."""
    global FORCE_SPLITS
    import cupy

    from .. import launch
    from ..bench.timing import Timer
    from ..registry import get_variant

    timer = Timer(iters=iters)
    names = names or [v.name for v in VARIANTS if v.dtype_in == dtype]
    sms = device.get().sms
    for M, N, K in shapes:
        a = cupy.random.standard_normal((M, K), dtype=cupy.float32).astype(dtype)
        b = cupy.random.standard_normal((K, N), dtype=cupy.float32).astype(dtype)
        b_col = cupy.asfortranarray(b)  # the _bcol forms' B: W.T of a row-major N x K W
        c = cupy.empty((M, N), dtype=dtype)
        flop = 2.0 * M * N * K
        for name in names:
            v = get_variant(name)
            bv = b_col if v.b_layout == "col" else b
            FORCE_SPLITS = None
            chosen = plan(M, N, K, v.tile[1], sms)
            for S in (None,) + tuple(splits):
                FORCE_SPLITS = S
                for st in v._launch.values():  # the launcher's memo of grids per shape
                    st[2].clear()
                t, base = timer.measure_pair(lambda: launch.run(v, a, bv, out=c), lambda: cupy.matmul(a, bv))
                p = plan(M, N, K, v.tile[1], sms)
                print(f"{name} {M}x{N}x{K} S={'plan' if S is None else S} dp={p[0]} splits={p[1]} grid={p[2]}: "
                      f"{t['median'] * 1e3:.1f} us {flop / t['median'] / 1e9:.0f} TFLOP/s, cupy "
                      f"{base['median'] * 1e3:.1f} us, {base['median'] / t['median'] * 100:.1f}%", flush=True)
            FORCE_SPLITS = None
            for st in v._launch.values():
                st[2].clear()
            print(f"  plan chose {chosen}", flush=True)
