"""Kernel arguments of the TMA kernels: their tensor maps, built from the operands and cached per
launch signature (the argument rules `tma_*` of cugemm/rules.py).

Each `maps_*` function returns the TensorMaps (cugemm/tma.py) a kernel takes after (a, b, c, M, N,
K), in its parameter order; `cached_args(maps_fn)` makes the args_fn the launcher calls, which
remembers the maps of each (variant, operands, shape): one dictionary look-up per launch in steady
state. A 'col' operand's map describes its memory as stored (the K x M memory of a.T, the N x K
memory of W for B = W.T).
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

from . import tma

BK = 64  # the K extent of every 16-bit TMA kernel's box (one 128-byte swizzle row)
_ARGS: OrderedDict = OrderedDict()
MAX_ARGS_CACHED = 256


def cached_args(maps_fn):
    """An args_fn that remembers the tensor maps of each (variant, operands, shape). The entries
    hold the TensorMap objects themselves, so the host bytes each CPointer argument points at stay
    alive while the entry does. raw=True: the TensorMaps themselves (a raw driver launch passes
    their host bytes by address)."""

    def args_fn(v, A, B, C, M, N, K, raw=False):
        key = (v.name, A.ptr, B.ptr, C.ptr, M, N, K, A.shape, B.shape, C.shape, A.strides, B.strides, C.strides)
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
    """Bytes between the rows of `op` as it lies in memory: the stride of its rows for a 'row'
    operand, of its columns for a 'col' one (whose memory rows are its columns); the last two
    dimensions of a batch (batch, rows, cols). A matrix of one memory row may report any stride: use
    the dense one, rounded up to the 16 bytes TMA asks even of a stride it never uses."""
    axis = -2 if layout == "row" else -1
    return int(op.strides[axis]) if op.shape[axis] > 1 else -(-cols * itemsize // 16) * 16


def batch_of(op) -> tuple:
    """(matrices, bytes from one to the next, div) of an operand record: product z of the launch
    reads its matrix (z // div) % matrices. A 3-D record (batch, rows, cols) with more than one
    matrix at distinct addresses is a batch (div 1); a 5-D record (outer, batch, inner, rows, cols)
    whose outer and inner dimensions have stride 0 (a batch broadcast along the products' outer and
    inner batch dimensions: cugemm.batched) one read by `inner` products in a row; anything else
    (2-D, one matrix, a batch stride of 0: broadcast) is (1, 0, 1)."""
    if len(op.shape) == 5 and op.shape[1] > 1 and op.strides[1] != 0:
        return int(op.shape[1]), int(op.strides[1]), int(op.shape[2])
    if len(op.shape) == 3 and op.shape[0] > 1 and op.strides[0] != 0:
        return int(op.shape[0]), int(op.strides[0]), 1
    return 1, 0, 1


def _map(op, dtype, rows: int, cols: int, stride: int, box, batched: bool, swizzle: int = 128):
    """The map of `op`'s rows x cols memory: 2-D, or (batched) 3-D over its matrices (batch_of),
    one matrix deep when it has one (a broadcast operand: the kernel names batch 0 for it)."""
    if not batched:
        return tma.tensor_map_2d(op.ptr, dtype, rows, cols, stride, box, swizzle)
    depth, step, _ = batch_of(op)
    return tma.tensor_map_3d(op.ptr, dtype, depth, rows, cols, stride, step or -(-rows * stride // 16) * 16, box,
                             swizzle)


def map_a(v, A, M, K, box_rows: int, batched: bool = False):
    """A (M x K, row-major) in boxes {64 k, box_rows rows}, 128-byte swizzled."""
    return _map(A, v.dtype_in, M, K, row_stride(A, K, v.dt_in.itemsize), (BK, box_rows), batched)


def map_b(v, B, K, N, box_n: int = 64, batched: bool = False):
    """B in boxes of 64 k: row-major (K x N memory, boxes {box_n columns, 64 k}) or, for a 'col' B
    (W.T of an N x K weight), W's N x K memory in boxes {64 k, box_n n}; 128-byte swizzled."""
    dt, size = v.dtype_in, v.dt_in.itemsize
    if v.b_layout == "col":
        return _map(B, dt, N, K, row_stride(B, K, size, "col"), (BK, box_n), batched)
    return _map(B, dt, K, N, row_stride(B, N, size), (box_n, BK), batched)


def map_c(v, C, M, N, box, batched: bool = False):
    """C (M x N, row-major) in boxes `box` (columns, rows), 128-byte swizzled."""
    return _map(C, v.dtype_out, M, N, row_stride(C, N, v.dt_out.itemsize), box, batched)


def maps_ab(v, A, B, C, M, N, K):
    """A in boxes {64 k, BM rows}, B in boxes {64, 64} (either layout): the wgmma rungs 2-4, the
    split-K rung and the mma.sync TMA rung."""
    return map_a(v, A, M, K, v.tile[0]), map_b(v, B, K, N)


def maps_abc16(v, A, B, C, M, N, K):
    """maps_ab and C in boxes {64 columns, 16 rows} (the mma.sync persistent rung's staging box)."""
    return maps_ab(v, A, B, C, M, N, K) + (map_c(v, C, M, N, (64, 16)),)


def maps_persistent(v, A, B, C, M, N, K):
    """The wgmma persistent rungs and their forms: A (box {64 k, 128 rows}; 'col': box {64 m, 64 k}
    of the K x M memory), B (map_b; the fitted widths: {64 k, BN / CLUSTER_M n}), then C (box {64,
    64}, what a consumer's staging box holds) or, for ANY_C without TMA_STORE, C's row stride in
    elements; then the batch: (products, A's div and mod, B's div and mod), all 1 but for the
    BATCHED form, whose maps are 3-D over the operand records' batches (batch_of: C's count is the launch's; product z
    reads A's matrix z // div % mod, B's likewise). The GROUPED forms (cugemm.grouped): A and C 2-D
    (the groups' rows stacked), B 3-D over the groups (batch_of(B): one matrix per group, or one
    for a 2-D B: a launch of one group), the batch (groups, 1, 1, 1, groups)."""
    size = v.dt_in.itemsize
    batched = bool(v.param_dict.get("BATCHED"))
    grouped = bool(v.param_dict.get("GROUPS"))
    maps_3d = batched and not grouped  # A's and C's maps
    if v.a_layout == "col":
        ma = _map(A, v.dtype_in, K, M, row_stride(A, M, size, "col"), (64, BK), maps_3d)
    else:
        ma = map_a(v, A, M, K, v.tile[0], maps_3d)
    bn = v.param_dict["BN"]
    # a fitted width (BN not a multiple of 64, 'col' B): each block of a cluster copies BN / CLUSTER_M n rows
    mb = map_b(v, B, K, N, bn // v.cluster[0] if bn % 64 else 64, batched)
    batch = (np.int32(1),) * 5
    if grouped:
        batch = _group_batch(B)
    elif batched:
        count, _, c_div = batch_of(C)
        if c_div != 1:
            raise ValueError(f"{v.name}: C must hold one matrix per product")
        batch = (np.int32(count), *_windows(v, A, B, count))
    if v.param_dict.get("ANY_C") and not v.param_dict.get("TMA_STORE"):  # the STAGED form: a map
        osize = v.dt_out.itemsize
        return ma, mb, np.int32(row_stride(C, N, osize) // osize if M > 1 else N), *batch
    return ma, mb, map_c(v, C, M, N, (64, 64), maps_3d), *batch


def _windows(v, A, B, count: int) -> tuple:
    """(A's div, A's mod, B's div, B's mod) of a batched launch of `count` products: product z reads
    A's matrix z // div % mod (batch_of), B's likewise; ValueError when an operand's matrices do not
    tile the products."""
    out = []
    for what, op in (("A", A), ("B", B)):
        n, _, div = batch_of(op)
        if count % (n * div):
            raise ValueError(f"{v.name}: {what} holds {n} matrices, each for {div} products in a row, and C "
                             f"{count} (one per product); the first must divide the second")
        out += [np.int32(div), np.int32(n)]
    return tuple(out)


def _group_batch(B) -> tuple:
    """A GROUPED form's batch arguments (groups, 1, 1, 1, groups): one matrix of B per group (or one
    for a 2-D B: a launch of one group), A's rows stacked (no window)."""
    groups = np.int32(batch_of(B)[0])
    return groups, np.int32(1), np.int32(1), np.int32(1), groups


def maps_bt(v, A, B, C, M, N, K):
    """The swapped-roles rung: A in boxes {64 k, 256 / CLUSTER_N rows} (a cluster's blocks copy one
    part each), B and C in boxes {64, 64}."""
    return map_a(v, A, M, K, 256 // v.cluster[0]), map_b(v, B, K, N), map_c(v, C, M, N, (64, 64))


def maps_tf32(v, A, B, C, M, N, K):
    """TF32: float32 A (box {32 k, BM / CLUSTER_N rows}) and B (box {32 columns, 32 k}; a 'col' B:
    W's N x K memory in boxes {32 k, 128 n}) loaded as TFLOAT32 (the copy engine rounds to TF32),
    128-byte swizzled; then the batch (products, A's div
    and mod, B's div and mod, C's matrix stride in floats): (1, 1, 1, 1, 1, 0) but for the BATCHED
    form, whose maps of A and B are 3-D over the records' batches (batch_of, as maps_persistent),
    and the GROUPED one (A 2-D over all rows, B 3-D over the groups: (groups, 1, 1, 1, groups, 0))."""
    cn = v.cluster[0]
    batched = bool(v.param_dict.get("BATCHED"))
    grouped = bool(v.param_dict.get("GROUPS"))
    ma = _map(A, "tfloat32", M, K, row_stride(A, K, 4), (32, v.tile[0] // cn), batched and not grouped)
    if v.b_layout == "col":  # W's N x K memory, one box of the tile's 128 n rows
        mb = _map(B, "tfloat32", N, K, row_stride(B, K, 4, "col"), (32, 128), batched)
    else:
        mb = _map(B, "tfloat32", K, N, row_stride(B, N, 4), (32, 32), batched)
    if not batched:
        return ma, mb, *(np.int32(1),) * 5, np.int64(0)
    if grouped:
        return ma, mb, *_group_batch(B), np.int64(0)
    count, c_step, _ = batch_of(C)
    return ma, mb, np.int32(count), *_windows(v, A, B, count), np.int64(c_step // 4)


_tf32_maps = cached_args(maps_tf32)


def tf32_args(v, A, B, C, M, N, K, raw=False, groups=(0, 0)):
    """The TF32 rung's arguments: maps_tf32's (cached), then `groups`: the GROUPED forms' (address of
    the groups' ends, masked_m) (cugemm.grouped; (0, 0): one group of all M rows)."""
    return _tf32_maps(v, A, B, C, M, N, K, raw=raw) + (np.uint64(groups[0]), np.int32(groups[1]))


def maps_small_m(v, A, B, C, M, N, K):
    """The 64-row rung (then the seven epilogue arguments, epilogue_args()): A in boxes {64 k, 64 rows} (M rounded up to 8 rows when M < 64; 32 rows with
    clusters along N, whose blocks copy one part each), 128-byte swizzled; B in panels of 64 columns
    (128-byte swizzle) or, where the tile width is not a multiple of 64, 32 columns (64-byte
    swizzle), boxes of 64 k rows (32 with clusters along M). A 'col' B: W's N x K memory, one K-major
    panel of BN n rows, one box {64 k, BN n} (half the rows with clusters along M), 128-byte swizzled."""
    dt, size = v.dtype_in, v.dt_in.itemsize
    p = v.param_dict
    shared = p["CLUSTER"]  # blocks sharing the multicast operand
    a_rows = min(64, -(-M // 8) * 8) if p["ALONG_M"] or shared == 1 else 64 // shared
    ma = map_a(v, A, M, K, a_rows)
    if v.b_layout == "col":  # one K-major panel of BN n rows: a box of the tile, or of a block's piece
        n_rows = p["BN"] // shared if p["ALONG_M"] else p["BN"]
        mb = tma.tensor_map_2d(B.ptr, dt, N, K, row_stride(B, K, size, "col"), (BK, n_rows), swizzle=128)
    else:
        panel = 64 if p["BN"] % 64 == 0 else 32
        b_rows = BK // shared if p["ALONG_M"] else BK
        mb = tma.tensor_map_2d(B.ptr, dt, K, N, row_stride(B, N, size), (panel, b_rows), swizzle=2 * panel)
    return ma, mb, *_NO_EPILOGUE  # the fused epilogue's arguments (epilogue_args): none


ab_args = cached_args(maps_ab)  # the args_fn of maps_ab, one cache for every kernel that takes those maps
_persistent_maps = cached_args(maps_persistent)


def epilogue_args(bias=0, src=0, aux=0, alpha=1.0, beta=0.0, ld_src=0, ld_aux=0) -> tuple:
    """The seven epilogue arguments that end a persistent launch (kernels/lib/epilogue.cuh, Args):
    addresses of the bias, the source S and the auxiliary output, alpha, beta and the row strides
    (elements) of S and AUX. The defaults are what a launch without a fused epilogue passes."""
    return (np.uint64(bias), np.uint64(src), np.uint64(aux), np.float32(alpha), np.float32(beta),
            np.int32(ld_src), np.int32(ld_aux))


_NO_EPILOGUE = epilogue_args()
EPILOGUE_ARGS = len(_NO_EPILOGUE)  # a persistent launch's last arguments (cugemm.epilogue replaces them)


def persistent_args(v, A, B, C, M, N, K, raw=False, work=None, dev=None, groups=(0, 0)):
    """The persistent rungs' arguments: maps_persistent's (cached), then the address of the dynamic
    walk's two counters (the batched forms without clusters: work.counters, cugemm.workspace; 0 for
    every other form, whose walk is static), then `groups`: the GROUPED forms' (address of the
    groups' ends, masked_m) (cugemm.grouped; (0, 0): one group of all M rows, as cugemm.run runs one),
    then the fused epilogue's arguments with no epilogue (epilogue_args(): a fused launch replaces
    them, serve.Ready)."""
    return _persistent_maps(v, A, B, C, M, N, K, raw=raw) + (
        np.uint64(work.counters if work is not None else 0), np.uint64(groups[0]), np.int32(groups[1])) + _NO_EPILOGUE


# ---- the FP8 rungs (kernels/fp8_wgmma/) ----------------------------------------------------------
FP8_BK = 128  # k values (bytes) of an FP8 K-tile: one 128-byte swizzle row


def maps_fp8(v, A, B, C, M, N, K):
    """The FP8 rungs: A (M x K, row-major) in boxes {128 k, BM rows}, B's N x K memory (B = W.T,
    K-major) in boxes {128 k, BN / CLUSTER_M n} (each block of a cluster copies one piece), C in
    boxes of 64 rows x 128 bytes (64 columns of a 16-bit type, 32 of float), all 128-byte swizzled;
    then ldc: 0, or for a C whose rows TMA cannot store (a row stride or pointer not 16-byte aligned)
    its row stride in elements, the consumers writing it themselves (A's map stands in for C's)."""
    bm, bn = v.tile[:2]
    osize = v.dt_out.itemsize
    ma = tma.tensor_map_2d(A.ptr, v.dtype_in, M, K, row_stride(A, K, 1), (FP8_BK, bm))
    mb = tma.tensor_map_2d(B.ptr, v.dt_b.name, N, K, row_stride(B, K, 1, "col"), (FP8_BK, bn // v.cluster[0]))
    ld = row_stride(C, N, osize) if M > 1 else N * osize
    if ld % 16 or C.ptr % 16:
        return ma, mb, ma, np.int32(ld // osize)
    return ma, mb, tma.tensor_map_2d(C.ptr, v.dtype_out, M, N, ld, (128 // osize, 64)), np.int32(0)


_fp8_maps = cached_args(maps_fp8)
_NULL = np.uint64(0)


def fp8_scaled_args(v, A, B, C, M, N, K, raw=False, scales=(0, 0, 0)):
    """Rungs 1-2 (01_scaled.cu): maps_fp8's (cached), then the addresses of scale_a, scale_b and the
    bias (0: a scale of 1, no bias: what cugemm.run passes; cugemm.scaled_matmul passes its own)."""
    return _fp8_maps(v, A, B, C, M, N, K, raw=raw) + tuple(np.uint64(x) for x in scales)


def fp8_promoted_args(v, A, B, C, M, N, K, raw=False, scales=(0, 0, 0, 0, 0, 0, 0)):
    """Rung 3 (02_promoted.cu): maps_fp8's, then scale_a's address and (block scales) its strides in
    elements along M and along K's blocks, scale_b's address and its strides along K's blocks and N's
    blocks, and the bias's address (zeros: scales of 1, no bias)."""
    sa, sa_m, sa_k, sb, sb_k, sb_n, bias = scales
    return _fp8_maps(v, A, B, C, M, N, K, raw=raw) + (
        np.uint64(sa), np.int32(sa_m), np.int32(sa_k), np.uint64(sb), np.int32(sb_k), np.int32(sb_n), np.uint64(bias))
