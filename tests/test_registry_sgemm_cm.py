"""Registry rows of the column-major FP32 ladder (seed 001): names in ladder order, all column-major,
and shape rules that match what each kernel needs. No GPU needed."""
import pytest

from cugemm import jit
from cugemm.launch import check_inputs
from cugemm.registry import get_variant, variants

SGEMM_CM_LADDER = [
    "sgemm_cm_naive", "sgemm_cm_shared", "sgemm_cm_thread_tile", "sgemm_cm_64", "sgemm_cm_64_opt",
    "sgemm_cm_128", "sgemm_cm_128_pipeline",
]


def test_ladder_is_registered_in_order():
    assert [v.name for v in variants(family="sgemm_cm")] == SGEMM_CM_LADDER


@pytest.mark.parametrize("name", SGEMM_CM_LADDER)
def test_row(name):
    v = get_variant(name)
    assert v.family == "sgemm_cm" and v.layout == "col" and v.seed == "001"
    assert (v.dtype_in, v.dtype_out, v.dtype_acc, v.math) == ("float32", "float32", "float32", "ffma")
    assert v.math_dtype == "float32"
    assert v.source.startswith("sgemm_cm/") and jit.kernel_path(v).is_file()
    assert v.template == name  # one kernel template per rung, named after it
    assert "cooperative_groups.h" in jit.cuda_headers(jit.source(v))
    assert v.block[1:] == (1, 1) and v.threads % 32 == 0
    assert v.doc


def test_source_files_are_numbered_in_ladder_order():
    files = [get_variant(n).source for n in SGEMM_CM_LADDER]
    assert [int(f.split("/")[1][:2]) for f in files] == list(range(1, len(files) + 1))


def test_shape_rules():
    naive = get_variant("sgemm_cm_naive")
    assert naive.any_shape and naive.align == 4
    for n in ("sgemm_cm_shared", "sgemm_cm_thread_tile"):
        v = get_variant(n)
        assert v.multiple_of == v.tile == (32, 32, 32) and v.align == 4
    for n in ("sgemm_cm_64", "sgemm_cm_64_opt"):
        v = get_variant(n)
        assert v.multiple_of == v.tile == (64, 64, 64) and v.align == 16  # float4 accesses
    for n in ("sgemm_cm_128", "sgemm_cm_128_pipeline"):
        v = get_variant(n)
        assert v.multiple_of == v.tile == (128, 128, 8) and v.align == 16
        assert v.param_dict == {"BM": 128, "BN": 128, "BK": 8, "TM": 4, "TN": 16}
        assert v.block == (256, 1, 1)


def test_takes_fortran_order_only(fake):
    v = get_variant("sgemm_cm_128_pipeline")
    # F-contiguous MxK and KxN: strides (4, 4*rows)
    assert check_inputs(v, fake((256, 16), strides=(4, 1024)), fake((16, 128), strides=(4, 64))) == (256, 128, 16)
    with pytest.raises(ValueError, match="A must be F-contiguous"):
        check_inputs(v, fake((256, 16)), fake((16, 128), strides=(4, 64)))
    with pytest.raises(ValueError, match="M=100 is not a multiple of 128"):
        check_inputs(v, fake((100, 16), strides=(4, 400)), fake((16, 128), strides=(4, 64)))
    # the naive rung takes any shape and 4-byte aligned operands
    check_inputs(get_variant("sgemm_cm_naive"), fake((7, 3), strides=(4, 28), ptr=0x7F0000000004),
                 fake((3, 5), strides=(4, 12)))
