"""run() checks its inputs before it launches, with no GPU needed: every bad input raises the
documented error naming the variant and the rule. Inputs here are metadata-only stand-ins that
expose __cuda_array_interface__ (see conftest.FakeDeviceArray); no check may touch the device."""
import numpy as np
import pytest

import cugemm
from cugemm.launch import check_inputs

T8 = cugemm.get_variant("sgemm_t_8x8_sliced_k_f32x4")      # tiles 128x128x8, float4 (16 B) loads
ANY = cugemm.get_variant("sgemm_any_shape")


def test_good_inputs_give_mnk(fake):
    assert check_inputs(T8, fake((256, 16)), fake((16, 384))) == (256, 384, 16)
    assert check_inputs(ANY, fake((7, 3)), fake((3, 5)), fake((7, 5), ptr=0x7F0000100004)) == (7, 5, 3)


def test_wrong_dtype(fake):
    with pytest.raises(TypeError, match=r"sgemm_t_8x8_sliced_k_f32x4: A has dtype float16"):
        check_inputs(T8, fake((128, 8), "<f2"), fake((8, 128)))
    with pytest.raises(TypeError, match="B has dtype float64"):
        check_inputs(T8, fake((128, 8)), fake((8, 128), "<f8"))
    with pytest.raises(TypeError, match="out has dtype int32"):
        check_inputs(T8, fake((128, 8)), fake((8, 128)), fake((128, 128), "<i4"))


def test_not_2d(fake):
    with pytest.raises(ValueError, match="A must be 2-D"):
        check_inputs(T8, fake((2, 128, 8)), fake((8, 128)))
    with pytest.raises(ValueError, match="B must be 2-D"):
        check_inputs(T8, fake((128, 8)), fake((1024,)))


def test_inner_dimensions(fake):
    with pytest.raises(ValueError, match="inner dimensions differ: A is 128x8, B is 16x128"):
        check_inputs(T8, fake((128, 8)), fake((16, 128)))


def test_out_shape_and_readonly(fake):
    with pytest.raises(ValueError, match=r"out has shape \(128, 64\), expected \(128, 128\)"):
        check_inputs(T8, fake((128, 8)), fake((8, 128)), fake((128, 64)))
    with pytest.raises(ValueError, match="read-only"):
        check_inputs(T8, fake((128, 8)), fake((8, 128)), fake((128, 128), readonly=True))


def test_out_overlapping_an_input(fake):
    a = fake((128, 8), ptr=0x7F0000000000)
    with pytest.raises(ValueError, match="out overlaps A"):
        check_inputs(T8, a, fake((8, 128), ptr=0x7F0001000000), fake((128, 128), ptr=0x7F0000000000 + 1024))


def test_non_contiguous(fake):
    # a column-major (Fortran-order) A, and a row-strided view of B
    with pytest.raises(ValueError, match="A must be C-contiguous"):
        check_inputs(T8, fake((128, 8), strides=(4, 512)), fake((8, 128)))
    with pytest.raises(ValueError, match="B must be C-contiguous"):
        check_inputs(T8, fake((128, 8)), fake((8, 128), strides=(1024, 4)))
    # explicit C strides are fine
    check_inputs(T8, fake((128, 8), strides=(32, 4)), fake((8, 128)))


def test_misaligned(fake):
    with pytest.raises(ValueError, match="not 16-byte aligned"):
        check_inputs(T8, fake((128, 8), ptr=0x7F0000000004), fake((8, 128)))
    # the any-shape variant reads scalars: 4-byte alignment is enough
    check_inputs(ANY, fake((128, 8), ptr=0x7F0000000004), fake((8, 128)))


def test_shape_rules_point_to_any_shape(fake):
    with pytest.raises(ValueError, match=r"M=100 is not a multiple of 128.*any shape"):
        check_inputs(T8, fake((100, 8)), fake((8, 128)))
    with pytest.raises(ValueError, match=r"K=12 is not a multiple of 8"):
        check_inputs(T8, fake((128, 12)), fake((12, 128)))
    check_inputs(ANY, fake((101, 13)), fake((13, 97)))


def test_32bit_overflow(fake):
    with pytest.raises(ValueError, match=r"M\*K \(A\) = 2147483648 elements \(rounded up to whole tiles\) overflows"):
        check_inputs(ANY, fake((2**16, 2**15)), fake((2**15, 8)))
    with pytest.raises(ValueError, match=r"M\*N \(C\)"):
        check_inputs(ANY, fake((2**16, 1)), fake((1, 2**15 + 1)))
    # within the limit as given, over it once rounded up to the 128x128x16 tiles
    with pytest.raises(ValueError, match=r"K\*N \(B\) = \d+ elements \(rounded up"):
        check_inputs(ANY, fake((1, 2**16 - 1)), fake((2**16 - 1, 2**15 - 1)))


def test_grid_limit(fake):
    naive = cugemm.get_variant("sgemm_naive_f32")       # BM=16: 65535 block rows at most
    with pytest.raises(ValueError, match="grid limit"):
        check_inputs(naive, fake((16 * 65536, 1)), fake((1, 1)))


def test_device_check():
    T8.check_device(80)
    T8.check_device(90)
    with pytest.raises(RuntimeError, match=r"needs compute capability >= 8.0 \(sm_80\); this GPU is sm_75"):
        T8.check_device(75)


def test_arch_specific_variants_run_only_on_their_chip():
    import dataclasses

    v = dataclasses.replace(T8, name="hopper_only", archs=("sm_90a",), min_arch=90)
    v.check_device(90)
    with pytest.raises(RuntimeError, match="built for sm_90a only"):
        v.check_device(100)


def test_shared_memory_limit():
    big = [v for v in cugemm.variants() if v.smem_dynamic > 48 * 1024]
    assert big, "some variant uses dynamic shared memory beyond 48 KB"
    v = max(big, key=lambda v: v.smem_dynamic)
    v.check_device(90, 227 * 1024)  # Hopper's opt-in limit
    with pytest.raises(RuntimeError, match=r"bytes of dynamic shared memory per block; sm_90 allows 101376"):
        v.check_device(90, 99 * 1024)  # what the GPU itself reports wins over the table
    with pytest.raises(RuntimeError, match=r"sm_89 allows 101376"):
        cugemm.get_variant("hgemm_wmma_fast").check_device(89)  # 153 KB: not on an RTX 40xx


def test_host_arrays_and_junk_are_refused():
    with pytest.raises(TypeError, match="host numpy array"):
        cugemm.run("sgemm_naive_f32", np.ones((4, 4), np.float32), np.ones((4, 4), np.float32))
    with pytest.raises(TypeError, match="must be a GPU array"):
        check_inputs(T8, [[1.0]], [[1.0]])


def test_unknown_variant_in_run():
    with pytest.raises(KeyError, match="closest"):
        cugemm.run("sgemm_naive_f3", None, None)


class _Tensor:
    """A stand-in for a torch tensor: __cuda_array_interface__ plus a dtype attribute."""

    def __init__(self, shape, typestr, dtype, ptr=0x7F0000000000):
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr, "data": (ptr, False),
                                         "strides": None, "version": 3}
        self.dtype = dtype


def test_bf16_through_cuda_array_interface(fake):
    import dataclasses

    bf = dataclasses.replace(cugemm.get_variant("hgemm_wmma_fast"), name="bf16_kernel",
                             dtype_in="bfloat16", dtype_out="bf16")
    assert bf.dt_in is cugemm.bfloat16 and bf.dtype_out == "bfloat16"
    # torch reports bfloat16 as a 2-byte void; its dtype attribute says what it is
    a, b = _Tensor((128, 64), "<V2", "torch.bfloat16"), _Tensor((64, 256), "<V2", "torch.bfloat16")
    assert check_inputs(bf, a, b) == (128, 256, 64)
    # a bare 2-byte void is not taken for bfloat16 (nor float16)
    with pytest.raises(TypeError, match=r"A has dtype <V2 \(an unnamed 2-byte type"):
        check_inputs(bf, fake((128, 64), "<V2"), fake((64, 256), "<V2"))
    with pytest.raises(TypeError, match="the variant takes float16"):
        check_inputs(cugemm.get_variant("hgemm_wmma_fast"), a, b)
    with pytest.raises(TypeError, match="A has dtype float16, the variant takes bfloat16"):
        check_inputs(bf, fake((128, 64), "<f2"), b)


def test_run_without_a_gpu_says_so(fake):
    from cugemm import toolkit

    if toolkit.have_gpu():
        pytest.skip("this machine has a GPU")
    # the operands are checked first (no device needed), then the missing GPU is named
    with pytest.raises(ValueError, match="inner dimensions differ"):
        cugemm.run(T8, fake((128, 8)), fake((16, 128)))
    with pytest.raises(RuntimeError, match="(no usable CUDA GPU|no CUDA GPU found|needs CuPy)"):
        cugemm.run(T8, fake((128, 8)), fake((8, 128)))
