"""Split-K planning: how the kernels that cut K into slices size their grid, their workspace and
their extra arguments (the `splitk` and `skinny` rules of cugemm/rules.py).

Two kernels split K, each reducing its fp32 partials in slice order in the last slice to arrive
(per-tile or per-slab counters the kernel resets), with scratch memory from cugemm/workspace.py:

- the wgmma split-K rung (kernels/hgemm_wgmma/07_splitk.cu): whole 128 x BN tiles in full waves,
  the tail wave's tiles cut into S slices (`plan`, a cost model of copies, wgmmas and the reduction);
- the skinny kernels (kernels/hgemm_skinny/01_splitk.cu): BN-column slabs of B times S K-slices
  (`skinny_plan`, a model of the bytes each SM streams).
"""
from __future__ import annotations

import numpy as np

from . import device, tma_args
from .ints import cdiv
from .workspace import Need

# ---- the wgmma split-K rung ------------------------------------------------------------------------
BM, BK = 128, 64
MAX_SPLITS = 16
MIN_KT_PER_SLICE = 2
# Cost model (microseconds on an H100 SXM under load):
SM_TFLOPS = 5.0       # dense fp16 wgmma TFLOP/s of one SM (~660 / 132)
SM_GBS = 100.0        # operand bytes one SM's TMA copies stream, GB/s
HBM_GBS = 3000.0      # achievable HBM bandwidth, GB/s (H100 SXM; an H200 is above)
FIX_US = 6.0          # a split's fixed cost: partial stores, fence, arrival, the reduction's start
RED_GBS = 100.0       # bandwidth of the last slice's reduction (bulk copies from L2), GB/s

_PLANS: dict = {}


def cost(M: int, N: int, K: int, bn: int, sms: int, dp: int, tail: int, S: int) -> float:
    """Modelled time (us) of the product: dp whole tiles in full waves, then `tail` tiles split S ways.
    A K-tile costs the larger of its wgmmas and its copies on one SM; the whole product at least its
    operands' bytes over the HBM bandwidth; a split adds the partial store and the serial reduction
    of S - 1 fp32 tiles by the last slice."""
    kt = cdiv(K, BK)
    kt_us = max(BM * bn * BK * 2 / (SM_TFLOPS * 1e6), (BM + bn) * BK * 2 / (SM_GBS * 1e3))
    t = (dp // sms) * kt * kt_us + cdiv(tail * S, sms) * cdiv(kt, S) * kt_us
    t = max(t, 2 * (M * K + K * N + M * N) / (HBM_GBS * 1e3))
    if S > 1:
        t += FIX_US + (S - 1) * BM * bn * 4 / (RED_GBS * 1e3)
    return t


def plan(M: int, N: int, K: int, bn: int, sms: int) -> tuple[int, int, int]:
    """(dp_tiles, splits, grid) for an M x N x K product in 128 x bn tiles on `sms` SMs."""
    key = (M, N, K, bn, sms)
    p = _PLANS.get(key)
    if p is not None:
        return p
    T = cdiv(M, BM) * cdiv(N, bn)
    kt = cdiv(K, BK)
    dp = T // sms * sms
    tail = T - dp
    best = 1
    if tail:
        # at most one wave of slices: a block's slice is its last unit (the kernel then reduces
        # through its free ring)
        top = max(1, min(MAX_SPLITS, kt // MIN_KT_PER_SLICE, sms // tail))
        costs = {S: cost(M, N, K, bn, sms, dp, tail, S) for S in range(1, top + 1)}
        best = min(costs, key=lambda S: (costs[S], S))
    if best == 1:
        dp = T
    units = dp + (T - dp) * best
    p = (dp, best, max(1, min(units, sms)))
    if len(_PLANS) > 4096:
        _PLANS.clear()
    _PLANS[key] = p
    return p


def grid(v, M, N, K, dev):
    sms = (dev or device.get()).sms
    return (plan(M, N, K, v.tile[1], sms)[2], 1, 1)


def workspace_need(v, M, N, K, dev) -> Need:
    """The partial slots (splits * 128 * BN floats per split tile) and counters (two per split tile)
    a launch of `v` on `dev` uses."""
    bn = v.tile[1]
    dp, S, _ = plan(M, N, K, bn, dev.sms)
    split_tiles = cdiv(M, BM) * cdiv(N, bn) - dp if S > 1 else 0
    return Need(split_tiles * S * BM * bn, 2 * split_tiles)


def _needs(v, work, dev) -> None:
    if work is None or dev is None:
        raise ValueError(f"{v.name}: the kernel's arguments need its workspace (work=) and the device record "
                         "(dev=); cugemm.run and cugemm.matmul provide both")


def args(v, A, B, C, M, N, K, raw=False, work=None, dev=None):
    """Tensor maps of A and B, the workspace's partials and counters, dp_tiles and splits."""
    _needs(v, work, dev)
    dp, S, _ = plan(M, N, K, v.tile[1], dev.sms)
    return tma_args.ab_args(v, A, B, C, M, N, K, raw=raw) + (np.uint64(work.partials), np.uint64(work.counters),
                                                             np.int32(dp), np.int32(S))


# ---- the skinny kernels ----------------------------------------------------------------------------
SKINNY_MAX_SPLITS = 64
_SKINNY_PLANS: dict = {}  # (variant name, M, N, K, device) -> (slabs, S): every launch of cugemm.run asks


def blocks_per_sm(v, dev) -> int:
    """Blocks of `v` an SM holds: its shared memory (the opt-in limit plus the 1 KB reserved per
    block), at most 2 (the kernel's __launch_bounds__ minimum)."""
    per_sm = (dev.smem_optin + 1024) // (v.smem_dynamic + 1024)
    return max(1, min(2, per_sm))


def skinny_plan(v, M: int, N: int, K: int, dev) -> tuple[int, int]:
    """skinny_plan_of (below), remembered per (variant, shape, device)."""
    key = (v.name, M, N, K, dev)
    hit = _SKINNY_PLANS.get(key)
    if hit is None:
        if len(_SKINNY_PLANS) > 4096:
            _SKINNY_PLANS.clear()
        hit = _SKINNY_PLANS[key] = skinny_plan_of(v, M, N, K, dev)
    return hit


def skinny_plan_of(v, M: int, N: int, K: int, dev) -> tuple[int, int]:
    """(slabs, S): the grid, BN-column slabs times S K-slices of ceil(kt / S) K-tiles each (none
    empty). A skinny product is a stream of B, so the estimate is in K-tiles per SM: an SM runs
    ceil(blocks / SMs) blocks' worth of loads (the blocks resident on one SM share its bandwidth),
    each block its K-tiles plus fixed costs (the ring's first fill, about a K-tile; its fp32 partial,
    written to L2 and read back by the slab's last block, at half a tile's bytes per partial). Only
    grids that fill about every block slot (blocks >= 0.9 x SMs x blocks per SM: bytes in flight on
    every SM) are candidates when one exists."""
    bn, bk = v.tile[1], v.tile[2]
    slabs = cdiv(N, bn)
    kt = cdiv(K, bk)
    slots = dev.sms * blocks_per_sm(v, dev)
    tile_bytes = bn * bk * 2
    options = []
    for s in range(1, min(kt, SKINNY_MAX_SPLITS) + 1):
        per = cdiv(kt, s)
        if cdiv(kt, per) != s:  # a slice would be empty: the same as a smaller S
            continue
        blocks = slabs * s
        partial = (M * bn * 4 / tile_bytes) * (0.5 + 0.25 * s) if s > 1 else 0.0
        c = cdiv(blocks, dev.sms) * (per + 1 + partial)
        options.append((blocks >= 0.9 * slots, c, s))
    full = [o for o in options if o[0]] or [max(options, key=lambda o: o[2])]
    return slabs, min(full, key=lambda o: (o[1], o[2]))[2]


def skinny_grid(v, M, N, K, dev):
    slabs, s = skinny_plan(v, M, N, K, dev or device.get())
    return slabs, s, 1


def skinny_workspace_need(v, M, N, K, dev) -> Need:
    """S x slabs x M x BN partial floats and one counter per slab for a launch of `v` on `dev`."""
    slabs, s = skinny_plan(v, M, N, K, dev)
    return Need(s * slabs * M * v.tile[1], slabs)


def skinny_args(v, A, B, C, M, N, K, raw=False, work=None, dev=None):
    """The workspace's partials and counters (the kernel's ws and counters arguments)."""
    _needs(v, work, dev)
    return np.uint64(work.partials), np.uint64(work.counters)
