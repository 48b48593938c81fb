"""Operands and outputs for checking and timing kernels: one place for the bench, the GPU tests and
the sanitizer script.

Inputs are fresh random normal values (never zeros or ones alone: they hide unwritten outputs and
wrong indexing), rounded to the variant's input type; outputs start poisoned with NaN, so an
element a kernel never writes fails the check. bfloat16 arrays are ml_dtypes.bfloat16 CuPy arrays,
made and read through their bits, so nothing here needs CuPy's own bfloat16 arithmetic.
"""
from __future__ import annotations

from . import dtypes

# NaN bit patterns of the 16-bit types
_NAN16 = {"float16": 0x7E00, "bfloat16": 0x7FC0}


def cast(x32, dtype):
    """A float32 CuPy array rounded to `dtype` (round to nearest even; bfloat16 by its bits)."""
    import cupy

    dt = dtypes.get(dtype)
    if dt.storage != "bfloat16":
        return x32.astype(dt.numpy)
    u = cupy.ascontiguousarray(x32, dtype=cupy.float32).view(cupy.uint32)
    bits = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(cupy.uint16)
    return bits.view(dt.numpy)


def to_float64(x):
    """A CuPy array of any cugemm element type, exactly, in float64."""
    import cupy

    if x.dtype.name == "bfloat16":
        bits = cupy.ascontiguousarray(x).view(cupy.uint16).astype(cupy.uint32) << 16
        return bits.view(cupy.float32).astype(cupy.float64).reshape(x.shape)
    return x.astype(cupy.float64)


def random_operands(dtype, M: int, N: int, K: int, layout: str = "row"):
    """(A, B): fresh random normal MxK and KxN CuPy arrays of `dtype` in `layout` ('row' or 'col')."""
    import cupy

    a = cast(cupy.random.standard_normal((M, K), dtype=cupy.float32), dtype)
    b = cast(cupy.random.standard_normal((K, N), dtype=cupy.float32), dtype)
    if layout == "col":
        a, b = cupy.asfortranarray(a), cupy.asfortranarray(b)
    return a, b


def poisoned(shape, dtype, layout: str = "row"):
    """A CuPy array of `shape` and `dtype` filled with NaN (row- or column-major)."""
    import cupy

    dt = dtypes.get(dtype)
    order = "F" if layout == "col" else "C"
    if dt.itemsize == 2:
        bits = cupy.full(shape, _NAN16[dt.storage], dtype=cupy.uint16, order=order)
        return bits.view(dt.numpy)
    return cupy.full(shape, cupy.nan, dtype=dt.numpy, order=order)
