"""The element types cugemm knows, as its own names: float32, tfloat32, float16, bfloat16, and the
8-bit floats float8_e4m3fn and float8_e5m2 (the FP8 family's operands, cugemm.scaled_matmul).

NumPy has no bfloat16 or 8-bit floats; CuPy (14+) represents them with `ml_dtypes.bfloat16`,
`ml_dtypes.float8_e4m3fn` and `ml_dtypes.float8_e5m2`. cugemm's registry,
validation, tolerances and the bench use the records below, so that a bf16 variant is declared,
listed, compiled and checked without ml_dtypes installed; only allocating or creating a bf16 CuPy
array needs it (`DType.numpy`).

    get("f16") is get("float16") is get(numpy.float16) is FLOAT16
    of_typestr("<f2") is FLOAT16          # from __cuda_array_interface__
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DType:
    """One element type. name: the canonical name; short: the CLI spelling; itemsize: bytes of one
    stored element; storage: the name of the array dtype that holds it (tfloat32 is stored as
    float32: it is a math mode of the tensor cores, not a storage type); ctype: the C++ type a
    kernel template is instantiated with for it."""

    name: str
    short: str
    itemsize: int
    storage: str
    ctype: str

    @property
    def numpy(self) -> np.dtype:
        """The NumPy/CuPy dtype of arrays of this type (bfloat16: ml_dtypes.bfloat16)."""
        if self.storage in _ML_DTYPES:
            try:
                import ml_dtypes
            except ImportError:
                raise TypeError(f"{self.storage} arrays need the ml_dtypes package (pip install ml_dtypes), "
                                f"which CuPy uses to represent {self.storage}") from None
            return np.dtype(getattr(ml_dtypes, self.storage))
        return np.dtype(self.storage)

    @property
    def fp8(self) -> bool:
        """An 8-bit float (float8_e4m3fn, float8_e5m2): the FP8 family's operand types."""
        return self.itemsize == 1

    def __str__(self) -> str:
        return self.name


FLOAT32 = DType("float32", "f32", 4, "float32", "float")
TFLOAT32 = DType("tfloat32", "tf32", 4, "float32", "float")
FLOAT16 = DType("float16", "f16", 2, "float16", "half")
BFLOAT16 = DType("bfloat16", "bf16", 2, "bfloat16", "__nv_bfloat16")
# 8-bit floats (OCP FP8): e4m3 without infinities (max 448) and e5m2 (max 57344), torch's
# float8_e4m3fn / float8_e5m2; kernels see 1-byte tags (kernels/lib/wgmma.cuh)
FLOAT8_E4M3 = DType("float8_e4m3fn", "e4m3", 1, "float8_e4m3fn", "cugemm_wgmma::fp8_e4m3")
FLOAT8_E5M2 = DType("float8_e5m2", "e5m2", 1, "float8_e5m2", "cugemm_wgmma::fp8_e5m2")
ALL = (FLOAT32, TFLOAT32, FLOAT16, BFLOAT16, FLOAT8_E4M3, FLOAT8_E5M2)
FP8_MAX = {"float8_e4m3fn": 448.0, "float8_e5m2": 57344.0}  # the largest finite values
_ML_DTYPES = ("bfloat16", "float8_e4m3fn", "float8_e5m2")  # storage types NumPy lacks (ml_dtypes has them)
_BY_NAME = {s: d for d in ALL for s in (d.name, d.short)}


def get(x) -> DType:
    """The DType for a name ('float16', 'f16'), a DType, or a NumPy/CuPy dtype or type
    (numpy.float16, ml_dtypes.bfloat16). Raises TypeError for anything else."""
    if isinstance(x, DType):
        return x
    if isinstance(x, str) and x in _BY_NAME:
        return _BY_NAME[x]
    try:
        d = np.dtype(x)
    except TypeError:
        d = None
    found = from_numpy(d) if d is not None else None
    if found is None:
        known = ", ".join(f"{d.name} ({d.short})" for d in ALL)
        raise TypeError(f"cugemm has no element type {x!r}; known: {known}")
    return found


_FROM_NUMPY: dict = {}  # np.dtype -> DType or None; run() asks this for every operand


def from_numpy(d: np.dtype) -> DType | None:
    """The DType of a NumPy/CuPy array dtype, or None (float64, int32, ..., unnamed voids)."""
    try:
        return _FROM_NUMPY[d]
    except KeyError:
        pass
    if d.name == "bfloat16":  # ml_dtypes.bfloat16
        found = BFLOAT16
    elif d.name == "float8_e4m3fn":  # ml_dtypes' 8-bit floats
        found = FLOAT8_E4M3
    elif d.name == "float8_e5m2":
        found = FLOAT8_E5M2
    elif d == np.float32:
        found = FLOAT32
    elif d == np.float16:
        found = FLOAT16
    else:
        found = None
    _FROM_NUMPY[d] = found
    return found


_TYPESTRS: dict = {}


def _np_dtype(typestr: str) -> np.dtype:
    d = _TYPESTRS.get(typestr)
    if d is None:
        d = _TYPESTRS[typestr] = np.dtype(typestr)
    return d


def of_typestr(typestr: str, hint=None) -> DType | None:
    """The DType of a __cuda_array_interface__ typestr ('<f4', '<f2'). A 2-byte void ('<V2',
    '|V2') is what torch reports for bfloat16, but the typestr alone cannot say so: `hint` (the
    object's own `dtype` attribute, e.g. torch.bfloat16) settles it; without one it is None. A
    1-byte void is an 8-bit float the same way (the hint's name ends in float8_e4m3fn or float8_e5m2)."""
    d = _np_dtype(typestr)
    if d.kind == "V" and d.itemsize == 2:
        return BFLOAT16 if hint is not None and str(hint).endswith("bfloat16") else None
    if d.kind == "V" and d.itemsize == 1:
        name = str(getattr(hint, "name", hint) or "")
        return next((t for t in (FLOAT8_E4M3, FLOAT8_E5M2) if name.endswith(t.name)), None)
    return from_numpy(d)


_FROM_TORCH = {"torch.float32": FLOAT32, "torch.float16": FLOAT16, "torch.bfloat16": BFLOAT16,
               "torch.float8_e4m3fn": FLOAT8_E4M3, "torch.float8_e5m2": FLOAT8_E5M2}


def from_torch(d) -> DType | None:
    """The DType of a torch dtype (torch.float16, ...), or None for one cugemm has no kernels for;
    read from its name, so this needs no torch import."""
    return _FROM_TORCH.get(str(d))
