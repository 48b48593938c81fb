"""TMA tensor maps (CUtensorMap) for the Hopper kernels: built on the host, cached, passed by value.

The Tensor Memory Accelerator copies boxes of a tensor between global and shared memory as
described by a 128-byte tensor map that the host encodes with the driver's cuTensorMapEncodeTiled
(through NVIDIA's cuda-bindings package, `cuda.bindings.driver`). A kernel takes it as a
`const __grid_constant__ TensorMap` parameter (kernels/lib/tma.cuh); the launcher passes
`TensorMap.arg`, a `cupy.cuda.function.CPointer` to the map's host bytes, which the driver copies
into the kernel's parameter space at launch.

    m = tensor_map_2d(ptr, "float16", rows=M, cols=K, row_stride=A.strides[0], box=(64, 128))
    kernel(grid, block, (..., m.arg))

Everything cugemm's kernels ask of a map is a 2-D row-major matrix (innermost dimension first in
the driver's terms: {cols, rows}) with a box of box[0] columns x box[1] rows, or a batch of such
matrices (a 3-D map {cols, rows, depth}, matrices `depth_stride` bytes apart, boxes one matrix deep:
`tensor_map_3d`, for the batched kernels). `check` enforces the driver's rules with a ValueError
that names the broken one, before anything is encoded or launched; the same rules the driver would
answer with a bare CUDA_ERROR_INVALID_VALUE.

Maps are cached per (pointer, shape, row stride, dtype, box, swizzle): in steady state (the same
arrays multiplied again and again) a launch costs one dictionary look-up per operand. The cache is
a bounded LRU (MAX_CACHED maps). A map holds nothing but these numbers, so a pointer that is freed
and reused by an array of the same shape gets a map that is still right.

dtypes: 'float16', 'bfloat16', 'float32', and 'tfloat32': float32 data for which the copy engine
rounds every element it loads to TF32 (round to nearest), what cuBLAS's TF32 GEMMs compute with;
the tensor cores alone would truncate; 'float8_e4m3fn' and 'float8_e5m2' (bytes to the copy engine).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import NamedTuple

MAX_CACHED = 1024

# cugemm dtype name -> (CUtensorMapDataType value, bytes per element)
DATA_TYPES = {
    "float16": (6, 2),    # CU_TENSOR_MAP_DATA_TYPE_FLOAT16
    "float32": (7, 4),    # CU_TENSOR_MAP_DATA_TYPE_FLOAT32
    "bfloat16": (9, 2),   # CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
    "tfloat32": (11, 4),  # CU_TENSOR_MAP_DATA_TYPE_TFLOAT32: loads round float32 to TF32
    "float8_e4m3fn": (0, 1),  # CU_TENSOR_MAP_DATA_TYPE_UINT8: the copy engine moves 8-bit floats as bytes
    "float8_e5m2": (0, 1),
}
# swizzle span in bytes -> CUtensorMapSwizzle value
SWIZZLES = {0: 0, 32: 1, 64: 2, 128: 3}
MAX_DIM = 2**32        # globalDim[i] <= 2^32
MAX_STRIDE = 2**40     # globalStrides[i] < 2^40
MAX_BOX = 256          # boxDim[i] <= 256


class Spec(NamedTuple):
    """What one tensor map describes (also its cache key)."""

    ptr: int
    dtype: str
    rows: int
    cols: int
    row_stride: int      # bytes from one row to the next
    box: tuple           # (box columns, box rows)
    swizzle: int         # 0, 32, 64 or 128 (bytes)
    depth: int = 0       # 0: a 2-D map; else a 3-D map of `depth` matrices (a batch; boxes 1 deep)
    depth_stride: int = 0  # bytes from one matrix of the batch to the next (3-D maps)


class TensorMap:
    """An encoded map. `arg` is the kernel argument; `tmap` the cuda.bindings CUtensorMap (kept
    alive here: `arg` points into it)."""

    __slots__ = ("spec", "tmap", "arg", "address")

    def __init__(self, spec: Spec, tmap, address: int):
        from cupy.cuda.function import CPointer

        self.spec, self.tmap, self.address = spec, tmap, address
        self.arg = CPointer(address)

    def __repr__(self) -> str:
        s = self.spec
        batch = f"{s.depth} x " if s.depth else ""
        return (f"TensorMap({s.dtype} {batch}{s.rows}x{s.cols} at {s.ptr:#x}, row stride {s.row_stride} B, "
                + (f"matrix stride {s.depth_stride} B, " if s.depth else "")
                + f"box {s.box[1]}x{s.box[0]}, swizzle {s.swizzle} B)")


def _dtype_name(dtype) -> str:
    name = getattr(dtype, "name", dtype)
    if name not in DATA_TYPES:
        raise ValueError(f"TMA: no tensor-map data type for {dtype!r}; known: {', '.join(DATA_TYPES)}")
    return name


def check(spec: Spec) -> None:
    """Raise ValueError naming the rule when TMA cannot describe `spec` (cuTensorMapEncodeTiled's
    requirements for a 2-D or (depth > 0) 3-D, non-interleaved tiled map)."""
    dtype = _dtype_name(spec.dtype)
    size = DATA_TYPES[dtype][1]
    what = f"TMA map of a {spec.rows}x{spec.cols} {dtype} matrix" + (f" batch of {spec.depth}" if spec.depth else "")
    if spec.depth:
        if not 1 <= spec.depth <= MAX_DIM:
            raise ValueError(f"{what}: {spec.depth} matrices; TMA takes 1 to 2^32")
        if spec.depth_stride % 16 or not 0 < spec.depth_stride < MAX_STRIDE:
            raise ValueError(f"{what}: the matrices are {spec.depth_stride} bytes apart; TMA takes a positive "
                             "multiple of 16 below 2^40")
    if not isinstance(spec.ptr, int) or spec.ptr <= 0:
        raise ValueError(f"{what}: the data pointer must be a device address, got {spec.ptr!r}")
    if spec.ptr % 16:
        raise ValueError(f"{what}: the data pointer {spec.ptr:#x} is not 16-byte aligned "
                         "(rule: TMA needs a 16-byte aligned global address)")
    for dim, n in (("rows", spec.rows), ("columns", spec.cols)):
        if not 1 <= n <= MAX_DIM:
            raise ValueError(f"{what}: {n} {dim}; TMA takes 1 to 2^32")
    if spec.row_stride % 16:
        raise ValueError(f"{what}: rows are {spec.row_stride} bytes apart, not a multiple of 16 "
                         f"(rule: TMA row strides are multiples of 16 bytes, i.e. the row length a "
                         f"multiple of {16 // size} elements); pad the rows")
    if spec.rows > 1 and spec.row_stride < spec.cols * size:
        raise ValueError(f"{what}: a row stride of {spec.row_stride} bytes is shorter than a row "
                         f"({spec.cols * size} bytes)")
    if not 0 < spec.row_stride < MAX_STRIDE:
        raise ValueError(f"{what}: row stride {spec.row_stride} bytes; TMA takes 16 to 2^40 - 16")
    if len(spec.box) != 2 or not all(1 <= b <= MAX_BOX for b in spec.box):
        raise ValueError(f"{what}: box {spec.box}: each box dimension must be 1 to {MAX_BOX}")
    if spec.box[0] * size % 16:
        raise ValueError(f"{what}: a box row of {spec.box[0]} elements is {spec.box[0] * size} bytes, "
                         "not a multiple of 16")
    if spec.swizzle not in SWIZZLES:
        raise ValueError(f"{what}: swizzle {spec.swizzle!r}; TMA swizzles 0, 32, 64 or 128 bytes")
    if spec.swizzle and spec.box[0] * size > spec.swizzle:
        raise ValueError(f"{what}: a box row of {spec.box[0] * size} bytes exceeds the {spec.swizzle}-byte "
                         "swizzle span")


_driver_mod = None


def driver():
    """cuda.bindings.driver, or RuntimeError saying how to install it."""
    global _driver_mod
    if _driver_mod is None:
        try:
            from cuda.bindings import driver as drv
        except ImportError:
            try:  # cuda-python before the cuda.bindings layout (12.x up to 12.5)
                from cuda import cuda as drv
            except ImportError:
                drv = None
        if drv is None:
            raise RuntimeError("cugemm's TMA kernels build tensor maps with NVIDIA's cuda-bindings: "
                               "pip install 'cuda-bindings>=13,<14' (CUDA 13) or "
                               "'cuda-bindings>=12.2,<13' (CUDA 12), or the cugemm[cuda13] extra")
        _driver_mod = drv
    return _driver_mod


def encode(spec: Spec) -> TensorMap:
    """cuTensorMapEncodeTiled for `spec` (checked first); no caching. Needs the CUDA driver."""
    check(spec)
    drv = driver()
    code, _ = DATA_TYPES[_dtype_name(spec.dtype)]
    u64, u32 = drv.cuuint64_t, drv.cuuint32_t
    dims, strides, box = [spec.cols, spec.rows], [spec.row_stride], [spec.box[0], spec.box[1]]
    if spec.depth:  # a batch of matrices: one more dimension, boxes one matrix deep
        dims, strides, box = dims + [spec.depth], strides + [spec.depth_stride], box + [1]
    err, tmap = drv.cuTensorMapEncodeTiled(
        drv.CUtensorMapDataType(code), len(dims), spec.ptr,
        [u64(d) for d in dims], [u64(s) for s in strides],
        [u32(b) for b in box], [u32(1)] * len(dims),
        drv.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        drv.CUtensorMapSwizzle(SWIZZLES[spec.swizzle]),
        drv.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        drv.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    if err != drv.CUresult.CUDA_SUCCESS:
        raise ValueError(f"cuTensorMapEncodeTiled refused {spec}: {err.name}")
    return TensorMap(spec, tmap, int(tmap.getPtr()))


_cache: OrderedDict = OrderedDict()
_lock = threading.Lock()


def tensor_map_2d(ptr: int, dtype, rows: int, cols: int, row_stride: int, box, swizzle: int = 128) -> TensorMap:
    """The (cached) tensor map of a row-major rows x cols matrix at device address `ptr`, rows
    `row_stride` bytes apart, copied in boxes of box[0] columns x box[1] rows. ValueError when TMA
    cannot describe it."""
    return _cached(Spec(ptr, getattr(dtype, "name", dtype), rows, cols, row_stride, tuple(box), swizzle))


def tensor_map_3d(ptr: int, dtype, depth: int, rows: int, cols: int, row_stride: int, depth_stride: int, box,
                  swizzle: int = 128) -> TensorMap:
    """The (cached) tensor map of a batch of `depth` row-major rows x cols matrices, `depth_stride`
    bytes apart (the batch the outermost dimension), in boxes of one matrix's box[0] columns x box[1]
    rows. ValueError when TMA cannot describe it."""
    return _cached(Spec(ptr, getattr(dtype, "name", dtype), rows, cols, row_stride, tuple(box), swizzle, depth,
                        depth_stride))


def _cached(key: Spec) -> TensorMap:
    m = _cache.get(key)
    if m is not None:
        try:
            _cache.move_to_end(key)
        except KeyError:  # evicted by another thread in between: still a valid map
            pass
        return m
    m = encode(key)
    with _lock:
        _cache[key] = m
        while len(_cache) > MAX_CACHED:
            _cache.popitem(last=False)
    return m


def clear_cache() -> None:
    with _lock:
        _cache.clear()


def cache_size() -> int:
    return len(_cache)
