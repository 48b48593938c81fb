"""Grids of the kernels that size or remap theirs (the grid rules of cugemm/rules.py), and the block
swizzle argument that goes with the TF32 ladder's remapped grid.

A grid function takes (variant, M, N, K, device record) and returns (x, y, z); the variant's cluster
shape is applied by Variant.grid (whole clusters).
"""
from __future__ import annotations

import numpy as np

from . import device
from .ints import cdiv

_GRIDS: dict = {}


def persistent_grid(v, M, N, K, dev):
    """One block per SM (whole clusters), or fewer when there are fewer tiles; clusters run along M,
    or along N for the kernels with a CLUSTER_N parameter and the 64-row rung with ALONG_M false."""
    sms = (dev or device.get()).sms
    key = (v.name, v.tile, v.cluster, M, N, sms)
    g = _GRIDS.get(key)
    if g is None:
        c = v.cluster[0]
        g = (max(c, min(_cluster_tiles(v, M, N), sms // c) * c), 1, 1)
        if len(_GRIDS) > 4096:
            _GRIDS.clear()
        _GRIDS[key] = g
    return g


def batched_persistent_grid(v, batches: int, M: int, N: int, dev) -> tuple:
    """persistent_grid for the batched forms: one block per SM, or fewer when the batches' tiles
    (batches x the cluster tiles of one M x N product) are fewer; whole clusters."""
    c = v.cluster[0]
    clusters = batches * _cluster_tiles(v, M, N)
    return (max(c, min(clusters, dev.sms // c) * c), 1, 1)


def _cluster_tiles(v, M: int, N: int) -> int:
    """The cluster tiles of one M x N product: clusters along M, or along N for the kernels with a
    CLUSTER_N parameter and the 64-row rung with ALONG_M false."""
    c = v.cluster[0]
    tm, tn = cdiv(M, v.tile[0]), cdiv(N, v.tile[1])
    along_n = "CLUSTER_N" in v.param_dict or v.param_dict.get("ALONG_M") is False
    return cdiv(tn, c) * tm if along_n else cdiv(tm, c) * tn


def batched_grid(v, batches: int, M: int, N: int, dev) -> tuple:
    """The grid of a batched form for `batches` products of M x N: the persistent forms' (one block
    per SM or fewer, batched_persistent_grid), else the 2-D tile grid with the products in z (the
    dense forms; at most GRID_Z_MAX deep: a larger batch takes one launch per GRID_Z_MAX products,
    cugemm.batched.BatchedReady)."""
    if v.grid_rule == "persistent":
        return batched_persistent_grid(v, batches, M, N, dev)
    return (cdiv(N, v.tile[1]), cdiv(M, v.tile[0]), min(batches, GRID_Z_MAX))


GRID_Z_MAX = 65535  # CUDA's limit on gridDim.z: the products of one launch of a dense batched form


def batch_args(v, A, B, C, M: int, N: int, K: int, raw: bool = False) -> tuple:
    """The batch arguments of a dense batched form (the mma.sync one: after a, b, c, M, N, K):
    A's (div, mod, matrix stride in elements), B's, then C's matrix stride and z0 = 0 (the launch's
    first product; BatchedReady's later launches of a batch past GRID_Z_MAX change it), from the
    operand records (tma_args.batch_of: 3-D or 5-D records as cugemm.batched makes them; a 2-D record
    is one matrix: (1, 1, 0))."""
    from .tma_args import batch_of

    out = []
    for op in (A, B):
        n, step, div = batch_of(op)
        out += [np.int32(div), np.int32(n), np.int64(step // op.dtype.itemsize)]
    step_c = batch_of(C)[1]
    return (*out, np.int64(step_c // C.dtype.itemsize), np.int32(0))


def dynamic_walk_need(v, M: int, N: int, K: int, dev):
    """The workspace of a persistent kernel that takes its tiles from a counter (the batched forms
    without clusters, 04_persistent.cu): two zeroed uint32 counters, which its last block resets."""
    from .workspace import Need

    return Need(0, 2)


def swizzle_stride(v, N: int) -> int:
    """The block-swizzle stride for an N-column C: N/4 rounded down to a multiple of 256, or the whole
    width (one band, no swizzle) when that is under 256. Always a multiple of BN."""
    bn = v.tile[1]
    stride = (N // 4) // 256 * 256
    if stride < 256 or stride % bn:
        stride = cdiv(N, bn) * bn
    return stride


def swizzle_grid(v, M: int, N: int, K: int, dev) -> tuple:
    """Bands of swizzle_stride columns stacked in z."""
    bm, bn = v.tile[0], v.tile[1]
    stride = swizzle_stride(v, N)
    return (stride // bn, cdiv(M, bm), cdiv(N, stride))


def swizzle_args(v, A, B, C, M: int, N: int, K: int, raw: bool = False) -> tuple:
    """The kernel's swizzle_stride argument."""
    return (np.int32(swizzle_stride(v, N)),)


def no_swizzle_args(v, A, B, C, M: int, N: int, K: int, raw: bool = False) -> tuple:
    """The swizzle_stride argument of a kernel compiled without SWIZZLE (ignored there)."""
    return (np.int32(0),)
