"""cugemm.batched without a GPU: the batch windows, which operands are read in place or copied,
the kernel's records and batch arguments, the ranking among the batched forms."""
import pytest

from cugemm import batched, operand, serve, tuning
from cugemm.device import Device
from cugemm.tma_args import maps_persistent

H100 = Device(90, 132, 232448, "NVIDIA H100 80GB HBM3")


@pytest.mark.parametrize("batch,strides,want", [
    ((64,), (8192,), (1, 64, 8192)),              # a plain batch
    ((64,), (0,), (1, 1, 0)),                     # one matrix for every product
    ((8, 16), (16 * 512, 512), (1, 128, 512)),    # two dimensions that merge
    ((8, 16), (0, 512), (1, 16, 512)),            # (1, 16) against (8, 16): varies fastest
    ((8, 16), (512, 0), (16, 8, 512)),            # (8, 1) against (8, 16): read 16 times in a row
    ((2, 3, 4), (0, 4 * 512, 512), (1, 12, 512)),
    ((2, 3, 4), (3 * 512, 0, 512), None),         # varies in dims 0 and 2, broadcast in 1: copied
    ((8, 16), (512, 512), None),                  # not one stride
    ((1, 16), (999, 512), (1, 16, 512)),          # dimensions of one ignored
])
def test_window(batch, strides, want):
    assert batched.window(batch, strides) == want


class _Fake:
    def __init__(self, shape, strides, ptr, typestr="<f2"):
        self.__cuda_array_interface__ = dict(shape=shape, typestr=typestr, strides=strides, data=(ptr, False),
                                             version=3)


def _dense(shape, size=2):
    return operand.dense_strides(shape, size, "C")


def _decide(a_shape, b_shape, a_strides=None, b_strides=None, b_col=False, ptr_a=1 << 40, info=H100):
    if b_col:  # a transposed view of a dense (..., N, K)
        *lead, K, N = b_shape
        s = _dense(tuple(lead) + (N, K))
        b_strides = tuple(s[:-2]) + (s[-1], s[-2])
    A = operand.describe(_Fake(a_shape, a_strides or _dense(a_shape), ptr_a), "A", "test")
    B = operand.describe(_Fake(b_shape, b_strides or _dense(b_shape), 1 << 41), "B", "test")
    batch, M, K, N, _, _ = serve.result_shape(A.shape, B.shape)
    c_strides = _dense(batch + (M, N))
    O = operand.Operand(batch + (M, N), A.dtype, "<f2", c_strides, 1 << 42, False, True, False)
    (a_b, a2s, a2st), (b_b, b2s, b2st) = serve.expand(A, batch, True), serve.expand(B, batch, False)
    A2, B2 = A._replace(shape=a2s, strides=a2st), B._replace(shape=b2s, strides=b2st)
    c_b, C2 = c_strides[:len(batch)], O._replace(shape=(M, N), strides=c_strides[-2:])
    meas = tuning.Measured(tuning.load_shipped(H100.name))
    return batched.decide(A, B, O, batch, M, N, K, a_b, b_b, c_b, A2, B2, C2, info, meas), (M, N, K)


def test_in_place_batches_and_their_arguments(fake_encode):
    (choice, flags, recs, shapes), (M, N, K) = _decide((8, 16, 512, 64), (16, 64, 512))
    assert flags == (False, False, False) and shapes == (None, None, None)
    v = choice.plan.variant
    assert v.param_dict["BATCHED"] and "one launch" in choice.plan.note
    args = maps_persistent(v, *recs, M, N, K)
    assert [int(x) for x in args[3:]] == [128, 1, 128, 1, 16]  # 128 products; A: z; B: z % 16
    assert [m.spec.depth for m in args[:3]] == [128, 16, 128]


def test_a_transposed_b_takes_the_bcol_forms(fake_encode):
    (choice, flags, recs, _), _ = _decide((32, 1024, 128), (32, 128, 1024), b_col=True)
    assert flags == (False, False, False) and choice.plan.variant.b_layout == "col"
    assert all(q.variant.b_layout == "col" and q.variant.param_dict["BATCHED"] for q in choice.ranked)


def test_what_cannot_be_read_in_place_is_copied(fake_encode):
    # K and N not multiples of 8: A, B and C copied into batches of 16-byte lines
    (choice, flags, recs, shapes), _ = _decide((4, 100, 61), (4, 61, 77))
    assert flags == (True, True, True)
    assert shapes == ((4, 100, 64), (4, 61, 80), (4, 100, 80))
    # a 2-byte-aligned A: copied; B broadcast over a dimension between two it varies in: copied whole
    (_, flags, _, _), _ = _decide((3, 128, 64), (3, 64, 96), ptr_a=(1 << 40) + 2)
    assert flags == (True, False, False)
    (_, flags, _, shapes), _ = _decide((2, 3, 4, 96, 64), (2, 1, 4, 64, 64))
    assert flags == (False, True, False) and shapes[1] == (24, 64, 64)


def _fp32_args(count, n):
    A = operand.describe(_Fake((count, n, n), _dense((count, n, n), 4), 1 << 40, "<f4"), "A", "test")
    A2 = A._replace(shape=(n, n), strides=A.strides[1:])
    meas = tuning.Measured(tuning.load_shipped(H100.name))
    return (A, A, A, (count,), n, n, n, A.strides[:1], A.strides[:1], A.strides[:1], A2, A2, A2, H100, meas)


def test_float32_takes_the_fp32_batched_form():
    args = _fp32_args(4, 64)
    choice, flags, recs, _ = batched.decide(*args)
    v = choice.plan.variant
    assert v.template == "sgemm_warp_tile_dbuf_batched" and flags == (False, False, False)
    assert [int(x) for x in v.extra_args(*recs, 64, 64, 64)] == [1, 4, 4096, 1, 4, 4096, 4096, 0]


def test_tf32_batches_take_the_tf32_batched_form_on_sm90(fake_encode):
    """With allow_tf32 on sm_90, one launch of the TF32 rung's batched form whatever the size; exact
    FP32 (the dense form) without it, and off sm_90 (no TF32 batched form there)."""
    for count, n in ((64, 256), (8, 4096)):
        args = _fp32_args(count, n)
        choice, flags, recs, _ = batched.decide(*args, allow_tf32=True)
        v = choice.plan.variant
        assert v.math_dtype == "tfloat32" and v.param_dict["BATCHED"] and flags == (False, False, False)
        assert all(q.variant.math_dtype == "tfloat32" for q in choice.ranked)
        *maps, products, a_div, a_mod, b_div, b_mod, c_stride, ends, masked_m = v.extra_args(*recs, n, n, n, raw=True)
        assert [int(x) for x in (products, a_div, a_mod, b_div, b_mod, c_stride)] == [count, 1, count, 1, count, n * n]
        assert [m.spec.depth for m in maps] == [count, count] and int(ends) == int(masked_m) == 0
        assert batched.decide(*args)[0].plan.variant.math == "ffma"  # exact FP32 unless TF32 is allowed
    a100 = _fp32_args(8, 256)[:-2] + (Device(80, 108, 166912, "NVIDIA A100"), _fp32_args(8, 256)[-1])
    assert batched.decide(*a100, allow_tf32=True)[0].plan.variant.math == "ffma"


def test_a_named_2d_kernel_is_refused_for_a_batch():
    args = _fp32_args(4, 64)
    with pytest.raises(ValueError, match="2-D kernel"):
        batched.decide(*args, variant="hgemm_wgmma_tf32_m64n256k8_persistent_stage4")
    v = batched.decide(*args, variant="hgemm_wgmma_tf32_m64n256k8_persistent_stage4_batched")[0].plan.variant
    assert v.name == "hgemm_wgmma_tf32_m64n256k8_persistent_stage4_batched"


def test_dense_forms_loop_over_products_past_grid_z():
    """More than 65535 products: grid z stops at 65535 (BatchedReady launches the rest, one launch per
    65535 products, each with its first product z0 as the last argument: 0 here)."""
    from cugemm import grids

    args = _fp32_args(70000, 8)
    choice, flags, recs, _ = batched.decide(*args)
    v = choice.plan.variant
    assert grids.batched_grid(v, 70000, 8, 8, H100)[2] == grids.GRID_Z_MAX
    assert int(v.extra_args(*recs, 8, 8, 8)[-1]) == 0


def test_gpus_before_sm80_have_no_batched_form():
    (d, _) = _decide((4, 64, 64), (4, 64, 64))
    assert d is not None
    (d, _) = _decide((4, 64, 64), (4, 64, 64), info=Device(75, 40, 65536, "Tesla T4"))
    assert d is None


A100 = Device(80, 108, 166912, "NVIDIA A100")
RTX4090 = Device(89, 128, 101376, "NVIDIA GeForce RTX 4090")


def test_gpus_without_wgmma_take_the_mma_sync_batched_form():
    """sm_80 / sm_89: the _edge rung's batched form (products in grid z), chosen by the model among the
    forms the GPU can run (128 x 128 tiles where a block has ~100 KB); its batch arguments in elements."""
    for info, widths in ((A100, {128, 256}), (RTX4090, {128})):  # 128 x 256 needs 144 KB of shared memory
        (choice, flags, recs, shapes), (M, N, K) = _decide((8, 16, 512, 64), (16, 64, 512), info=info)
        v = choice.plan.variant
        assert v.math == "mma" and v.template == "hgemm_mma_swizzle_batched"
        assert {q.variant.tile[1] for q in choice.ranked} == widths
        assert flags == (False, False, False) and all(q.variant.math == "mma" for q in choice.ranked)
        args = v.extra_args(*recs, M, N, K)
        # A: product z reads matrix z (512 x 64 elements apart); B: z % 16; C: z
        assert [int(x) for x in args] == [1, 128, 512 * 64, 1, 16, 64 * 512, 512 * 512, 0]
        assert grids_of(v, M, N, info) == (512 // v.tile[1], 4, 128)


def test_the_mma_sync_form_copies_padded_or_transposed_operands():
    # a transposed B (x @ W.T per product): the dense row-major kernel gets a copy
    (choice, flags, _, shapes), _ = _decide((32, 1024, 128), (32, 128, 1024), b_col=True, info=A100)
    assert choice.plan.variant.math == "mma" and flags == (False, True, False) and shapes[1] == (32, 128, 1024)
    # rows padded past the matrix (a strided view): copied dense (the kernel takes no leading dimension)
    (_, flags, _, _), _ = _decide((4, 128, 64), (4, 64, 96), a_strides=(128 * 72 * 2, 72 * 2, 2), info=A100)
    assert flags[0]


def grids_of(v, M, N, info):
    from cugemm import grids

    return grids.batched_grid(v, 128, M, N, info)


def test_products_of_at_most_128_rows_skip_the_192_row_tiles():
    (choice, _, _, _), _ = _decide((256, 128, 64), (256, 64, 128))
    assert choice.plan.variant.tile[0] == 128
    assert all(q.variant.tile[0] <= 128 for q in choice.ranked)
    (choice, _, _, _), _ = _decide((64, 576, 64), (64, 64, 576))  # 192-row tiles still ranked for taller products
    assert any(q.variant.tile[0] == 192 for q in choice.ranked)


def test_a_batch_larger_than_32_bit_indices_in_all_is_one_launch():
    """The index and grid rules are a product's: 256 products of 4096 x 4096 (2^32 elements of C in
    all, each product's 2^24) still take one batched launch."""
    (choice, flags, _, _), _ = _decide((256, 4096, 4096), (256, 4096, 4096))
    assert choice.plan.variant.param_dict["BATCHED"] and flags == (False, False, False)


def test_tf32_batches_read_a_transposed_b_in_place(fake_encode):
    """q @ k.T in float32 with TF32: the `_bcol` TF32 form reads B's (N, K) memory, nothing copied."""
    count, n = 16, 256
    A = operand.describe(_Fake((count, n, 64), _dense((count, n, 64), 4), 1 << 40, "<f4"), "A", "test")
    s = _dense((count, n, 64), 4)
    B = operand.describe(_Fake((count, 64, n), (s[0], s[2], s[1]), 1 << 41, "<f4"), "B", "test")
    batch, M, K, N = (count,), n, 64, n
    O = operand.Operand((count, M, N), A.dtype, "<f4", _dense((count, M, N), 4), 1 << 42, False, True, False)
    (a_b, a2s, a2st), (b_b, b2s, b2st) = serve.expand(A, batch, True), serve.expand(B, batch, False)
    A2, B2 = A._replace(shape=a2s, strides=a2st), B._replace(shape=b2s, strides=b2st)
    C2 = O._replace(shape=(M, N), strides=O.strides[-2:])
    meas = tuning.Measured(tuning.load_shipped(H100.name))
    choice, flags, recs, _ = batched.decide(A, B, O, batch, M, N, K, a_b, b_b, O.strides[:1], A2, B2, C2, H100,
                                            meas, None, True)
    v = choice.plan.variant
    assert v.math_dtype == "tfloat32" and v.b_layout == "col" and flags == (False, False, False)
    maps = v.extra_args(*recs, M, N, K, raw=True)[:2]
    assert maps[1].spec.rows == N and maps[1].spec.cols == K and maps[1].spec.depth == count
