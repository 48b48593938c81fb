"""Operands and outputs for checking and timing kernels: one place for the bench, the GPU tests and
the sanitizer script.

Inputs are fresh random normal values (never zeros or ones alone: they hide unwritten outputs and
wrong indexing), rounded to the variant's input type; outputs start poisoned with NaN, so an
element a kernel never writes fails the check. bfloat16 arrays are ml_dtypes.bfloat16 CuPy arrays,
made and read through their bits, so nothing here needs CuPy's own bfloat16 arithmetic.
"""
from __future__ import annotations

import re

import numpy as np

from . import dtypes
from .grouped import group_rows as grouped_rows  # the rows each group owns, as the kernel clamps them

# NaN bit patterns of the 16-bit types
_NAN16 = {"float16": 0x7E00, "bfloat16": 0x7FC0}


def gmma_group_ends(sass: str) -> tuple[int, int]:
    """(the GMMAs that end a wgmma group, all GMMAs) of a SASS listing. ptxas serialises every wgmma
    of a kernel (a wait after each; "C7514", which NVRTC's log does not show) when it cannot prove
    that no ordinary instruction touches the accumulators of one in flight; each GMMA then ends its
    own group (gsb0). The kernels issue at least two wgmmas a group, so at most half may end one."""
    gmma = [line for line in sass.splitlines() if re.search(r"\b[HQI]GMMA\.", line)]
    return sum("gsb0" in line for line in gmma), len(gmma)


def cast(x32, dtype):
    """A float32 CuPy array rounded to `dtype` (round to nearest even; bfloat16 by its bits; 8-bit
    floats by cugemm.quantize.cast_fp8, saturating)."""
    import cupy

    dt = dtypes.get(dtype)
    if dt.fp8:
        from .quantize import cast_fp8

        return cast_fp8(x32, dt.name)
    if dt.storage != "bfloat16":
        return x32.astype(dt.numpy)
    u = cupy.ascontiguousarray(x32, dtype=cupy.float32).view(cupy.uint32)
    bits = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(cupy.uint16)
    return bits.view(dt.numpy)


def to_float64(x):
    """A CuPy array of any cugemm element type, exactly, in float64."""
    import cupy

    if x.dtype.itemsize == 1:  # an 8-bit float: its codes through the table of its 256 values
        from .quantize import to_float64 as fp8_to_float64

        return fp8_to_float64(x)
    if x.dtype.name == "bfloat16":
        bits = cupy.ascontiguousarray(x).view(cupy.uint16).astype(cupy.uint32) << 16
        return bits.view(cupy.float32).astype(cupy.float64).reshape(x.shape)
    return x.astype(cupy.float64)


def random_operands(dtype, M: int, N: int, K: int, layout: str = "row", dtype_b=None):
    """(A, B): fresh random normal MxK and KxN CuPy arrays of `dtype` (B: `dtype_b`, if given) in
    `layout` ('row' or 'col')."""
    import cupy

    a = cast(cupy.random.standard_normal((M, K), dtype=cupy.float32), dtype)
    b = cast(cupy.random.standard_normal((K, N), dtype=cupy.float32), dtype_b or dtype)
    if layout == "col":
        a, b = fortran(a), fortran(b)
    return a, b


def fortran(x):
    """x column-major (8-bit floats, which CuPy cannot copy, through their bytes)."""
    import cupy

    if x.itemsize == 1:
        return cupy.asfortranarray(x.view(cupy.uint8)).view(x.dtype)
    return cupy.asfortranarray(x)


def variant_operands(v, M: int, N: int, K: int):
    """(A, B) as random_operands, each laid out as variant `v` reads it (v.a_layout, v.b_layout): a
    'col' operand is column-major, the transposed view of a row-major array (x.T, W.T)."""
    a, b = random_operands(v.dtype_in, M, N, K, dtype_b=v.dt_b.name)
    a = fortran(a) if v.a_layout == "col" else a
    b = fortran(b) if v.b_layout == "col" else b
    if v.strided:  # leading dimensions rounded up to the alignment, plus one more step: ld > span
        a, b = padded(a, v.a_layout, v.align), padded(b, v.b_layout, v.align)
    return a, b


def padded(x, layout: str, align: int):
    """The same values in a buffer whose leading dimension is the span rounded up to `align` bytes
    and one more `align` step, returned as the view (x.shape) a strided kernel reads."""
    import cupy

    step = max(1, align // x.itemsize)
    rows, cols = x.shape
    span, lines = (cols, rows) if layout == "row" else (rows, cols)
    ld = -(-span // step) * step + step
    iv = {1: cupy.uint8, 2: cupy.uint16}.get(x.itemsize, cupy.uint32)
    buf = cupy.empty((lines, ld), dtype=iv).view(x.dtype)  # 8-bit floats: CuPy allocates no such type itself
    view = buf[:, :span] if layout == "row" else buf[:, :span].T
    view.view(iv)[...] = x.view(iv)
    return view


def poisoned(shape, dtype, layout: str = "row"):
    """A CuPy array of `shape` and `dtype` filled with NaN (row- or column-major)."""
    import cupy

    dt = dtypes.get(dtype)
    order = "F" if layout == "col" else "C"
    if dt.itemsize == 2:
        bits = cupy.full(shape, _NAN16[dt.storage], dtype=cupy.uint16, order=order)
        return bits.view(dt.numpy)
    return cupy.full(shape, cupy.nan, dtype=dt.numpy, order=order)


def run_guarded(v, a, b, guard: int = 64):
    """cugemm.run(v, a, b) into a NaN-poisoned C that sits between two NaN guard zones (C in the
    variant's layout); returns (C, whether both guard zones are intact), synchronised."""
    import cupy

    from .launch import run

    M, N = a.shape[0], b.shape[1]
    buf = poisoned((M * N + 2 * guard,), v.dtype_out)
    before = buf.view(cupy.uint8).copy()
    flat = buf[guard:guard + M * N]
    out = flat.reshape(N, M).T if v.layout == "col" else flat.reshape(M, N)
    got = run(v, a, b, out=out)
    assert got is out
    cupy.cuda.get_current_stream().synchronize()
    g = guard * v.dt_out.itemsize
    raw = buf.view(cupy.uint8)
    return out, bool((raw[:g] == before[:g]).all()) and bool((raw[-g:] == before[-g:]).all())


def grouped_case(dtype, sizes, N: int, K: int, b_layout: str = "row", masked_m: int = 0, rows: int | None = None,
                 ends=None):
    """A grouped product's CuPy operands: (A, B, ends, float64 reference of the written rows, mask of
    the rows written). Groups of `sizes` rows; A (sum(sizes) or `rows`, K) with offsets (contiguous),
    or (G, masked_m, K) with counts (masked_m > 0); B (G, K, N), row-major or (b_layout 'col') the
    transposed view of a (G, N, K) array; `ends`: int32 values to pass instead of the sizes' (the
    reference follows cugemm.grouped.group_rows' clamping). B is scaled by 1 / sqrt(K)."""
    import cupy

    G = len(sizes)
    if ends is None:
        ends = [min(int(s), masked_m) for s in sizes] if masked_m else list(np.cumsum(sizes))
    total = G * masked_m if masked_m else (rows if rows is not None else int(sum(sizes)))
    a32 = cupy.random.standard_normal((total, K), dtype=cupy.float32)
    a = cast(a32, dtype)
    if b_layout == "col":
        b = cast(cupy.random.standard_normal((G, N, K), dtype=cupy.float32) / np.sqrt(K), dtype).transpose(0, 2, 1)
    else:
        b = cast(cupy.random.standard_normal((G, K, N), dtype=cupy.float32) / np.sqrt(K), dtype)
    a64, b64 = to_float64(a), to_float64(b)
    ref = cupy.full((total, N), cupy.nan, dtype=cupy.float64)
    written = cupy.zeros(total, dtype=bool)
    for g, (r0, r1) in enumerate(grouped_rows(ends, total, masked_m)):
        if r1 > r0:
            ref[r0:r1] = a64[r0:r1] @ b64[g]
            written[r0:r1] = True
    if masked_m:
        a = a.reshape(G, masked_m, K)
    return a, b, cupy.asarray(np.asarray(ends, dtype=np.int32)), ref, written
