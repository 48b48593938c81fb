"""cugemm's element types: names, CLI spellings, NumPy/CuPy dtypes, __cuda_array_interface__ typestrs.
No GPU and no ml_dtypes needed (bfloat16 arrays need ml_dtypes; naming the type does not)."""
import numpy as np
import pytest

import cugemm
from cugemm import dtypes
from cugemm.registry import variants


def test_names_and_spellings():
    for d in dtypes.ALL:
        assert dtypes.get(d.name) is d and dtypes.get(d.short) is d and dtypes.get(d) is d
    assert dtypes.get(np.float16) is dtypes.FLOAT16 and dtypes.get(np.dtype("float32")) is dtypes.FLOAT32
    assert (cugemm.float32.itemsize, cugemm.float16.itemsize, cugemm.bfloat16.itemsize) == (4, 2, 2)
    assert cugemm.tfloat32.storage == "float32"
    with pytest.raises(TypeError, match="no element type 'float64'"):
        dtypes.get("float64")
    with pytest.raises(TypeError, match="no element type"):
        dtypes.get(np.int32)


def test_typestrs():
    assert dtypes.of_typestr("<f4") is dtypes.FLOAT32 and dtypes.of_typestr("<f2") is dtypes.FLOAT16
    assert dtypes.of_typestr("<V2") is None and dtypes.of_typestr("|V2") is None
    assert dtypes.of_typestr("<V2", "torch.bfloat16") is dtypes.BFLOAT16
    assert dtypes.of_typestr("<V2", "torch.float16") is None
    assert dtypes.of_typestr("<f8") is None


def test_bfloat16_numpy_dtype():
    try:
        import ml_dtypes
    except ImportError:
        with pytest.raises(TypeError, match="ml_dtypes"):
            dtypes.BFLOAT16.numpy
    else:
        assert dtypes.BFLOAT16.numpy == np.dtype(ml_dtypes.bfloat16)
        assert dtypes.get(ml_dtypes.bfloat16) is dtypes.BFLOAT16


def test_variants_filter_takes_every_spelling():
    assert variants(dtype="f16") == variants(dtype="float16") == variants(dtype=np.float16)
    assert variants(dtype="f16") and all(v.dtype_in == "float16" for v in variants(dtype="f16"))
    assert variants(math_dtype="tf32") == variants(math_dtype="tfloat32") != []
    with pytest.raises(TypeError):
        variants(dtype="f64")


def test_bf16_variants_need_no_ml_dtypes():
    """Declaring, listing, validating and compiling bf16 variants works with ml_dtypes unimportable;
    only making a bf16 array asks for it, by name."""
    import subprocess
    import sys

    code = """
import sys; sys.modules['ml_dtypes'] = None          # import ml_dtypes now raises ImportError
import dataclasses, cugemm
from cugemm.launch import check_inputs
v = dataclasses.replace(cugemm.get_variant('hgemm_wmma_fast'), name='bf', dtype_in='bfloat16', dtype_out='bfloat16')
class T:
    def __init__(s, shape):
        s.__cuda_array_interface__ = dict(shape=shape, typestr='<V2', data=(1 << 40, False), strides=None, version=3)
        s.dtype = 'torch.bfloat16'
print(check_inputs(v, T((128, 64)), T((64, 256))), v.dt_in.short)
try:
    v.dt_out.numpy
except TypeError as e:
    print('numpy:', e)
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "(128, 256, 64) bf16" in r.stdout and "numpy: bfloat16 arrays need the ml_dtypes package" in r.stdout
