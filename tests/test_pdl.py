"""cugemm/pdl.py without a GPU: the ctypes mirrors of the driver's launch structures have cuda.h's
layout, arguments marshal as the kernels take them, and the kernels marked pdl wait on
griddepcontrol before their first global access (and only those are launched that way)."""
import ctypes
import re

import numpy as np
import pytest

from cugemm import jit, pdl, registry, toolkit


def test_launch_structures_match_cuda_h():
    # CUlaunchAttribute: id, pad to 8, a 64-byte union; CUlaunchConfig: 7 uints, stream, attrs, count
    assert ctypes.sizeof(pdl.LaunchAttribute) == 72 and pdl.LaunchAttribute.value.offset == 8
    assert ctypes.sizeof(pdl.LaunchConfig) == 56
    assert (pdl.LaunchConfig.sharedMemBytes.offset, pdl.LaunchConfig.hStream.offset,
            pdl.LaunchConfig.attrs.offset, pdl.LaunchConfig.numAttrs.offset) == (24, 32, 40, 48)
    assert pdl.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION == 6


def test_params_marshal_by_kind():
    p = pdl.param(np.int32(-7))
    assert isinstance(p, ctypes.c_int32) and p.value == -7
    p = pdl.param(np.uint64(2 ** 40 + 3))
    assert isinstance(p, ctypes.c_uint64) and p.value == 2 ** 40 + 3

    class Map:  # a TensorMap: its host bytes, by address
        address = 0x1234

    assert pdl.param(Map()) == 0x1234
    with pytest.raises(TypeError, match="no PDL launch"):
        pdl.param(1.5)


def test_only_the_persistent_rung_is_launched_with_pdl():
    marked = [v for v in registry.variants() if v.pdl]
    assert marked, "no variant is marked pdl"
    assert all(v.source == "hgemm_wgmma/04_persistent.cu" for v in marked)
    assert all(v.pdl for v in registry.variants() if v.source == "hgemm_wgmma/04_persistent.cu")


def test_pdl_kernel_waits_on_the_grid_dependency():
    """griddepcontrol.wait is ACQBULK in the SASS."""
    if toolkit.find_tool("cuobjdump") is None:
        pytest.skip("no cuobjdump on PATH, in the CUDA toolkit or in the nvidia-cuda-cuobjdump wheel")
    v = registry.get_variant("hgemm_wgmma_fast_anyc")
    sass = jit.disassemble(jit.compile_offline(v, "sm_90a").cubin)
    assert re.search(r"\bACQBULK\b", sass)
