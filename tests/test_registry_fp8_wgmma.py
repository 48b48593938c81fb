"""The FP8 family without a GPU: the declared product of rungs, tiles, operand and output types is
registered whole and each record agrees with its kernel template (shared memory written out from the
layout, block, cluster, types); the scaling mode follows the scales' shapes exactly as documented
(and names the shapes it takes otherwise); the tile choice fills the GPU; the tensor maps describe
K-major operands in 128-byte boxes and fall back to the consumers' own stores for a C TMA cannot
store; the launch's dtype checks take B's type from dtype_b; the 8-bit type records."""
import itertools

import pytest

from cugemm import dtypes, launch, operand, scaled, tma_args
from cugemm.families import fp8_wgmma as fam
from cugemm.registry import get_variant, variants

FAMILY = variants(family="fp8_wgmma")


def smem(bm: int, bn: int, stages: int) -> int:
    """fp8_wgmma::Smem written out: STAGES rings of BM x 128 A and BN x 128 B bytes, two 8 KB staging
    boxes per consumer warpgroup, 1024 bytes of alignment slack."""
    return stages * (bm + bn) * 128 + 2 * (bm // 64) * 8192 + 1024


def test_the_declared_product_is_registered():
    rungs = [("tensor_fastacc", fam.FAST_TILES), ("row_fastacc", fam.FAST_TILES), ("tensor", fam.PROMOTED_TILES),
             ("row", fam.PROMOTED_TILES), ("block", fam.PROMOTED_TILES)]
    want = {fam.variant_name(r, *t, ta, tb, out) for r, tiles in rungs for t in tiles
            for (ta, tb), out in itertools.product(fam.TYPES, fam.OUTS)}
    assert {v.name for v in FAMILY} == want and len(FAMILY) == 117
    assert get_variant("fp8_wgmma_m64n192k32_cluster2_stage4_block_e4m3e5m2_f32").dt_b is dtypes.FLOAT8_E5M2


@pytest.mark.parametrize("v", FAMILY, ids=lambda v: v.name)
def test_record_agrees_with_its_template(v):
    p = v.param_dict
    assert v.archs == ("sm_90a",) and v.b_layout == "col" and v.a_layout == "row" and v.strided
    assert v.smem_dynamic == smem(p["BM"], p["BN"], p["STAGES"]) <= 232448
    assert v.block == (128 + 2 * p["BM"], 1, 1) and v.cluster == (p["CLUSTER_M"], 1, 1)
    assert v.tile == (p["BM"], p["BN"], 128) and v.multiple_of == (1, 1, 16)
    assert dtypes.get(v.dtype_in).fp8 and v.dt_b.fp8 and not (v.dtype_in == v.dt_b.name == "float8_e5m2")
    assert (p["TA"], p["TB"], p["TC"]) == (v.dt_in.ctype, v.dt_b.ctype, v.dt_out.ctype)
    fast = v.template == "fp8_wgmma_scaled"
    assert fast == v.name.split("_")[-1].startswith("fastacc") or "_fastacc_" in v.name
    if not fast:  # rung 3: two (PIPE > 1: three) accumulator sets of BN / 2 registers in 232
        assert (3 if p["PIPE"] > 1 else 2) * p["BN"] // 2 <= 192 and p["PIPE"] in (1, 2, 4, 8)


def test_scale_mode_follows_the_shapes():
    M, N, K = 300, 520, 1000
    assert scaled.scale_mode(M, N, K, (), (1,)) == "tensor"
    assert scaled.scale_mode(M, N, K, (1, 1), ()) == "tensor"
    assert scaled.scale_mode(M, N, K, (M, 1), (1, N)) == "row"
    assert scaled.scale_mode(M, N, K, (M,), (N,)) == "row"
    assert scaled.scale_mode(M, N, K, (M, 8), (8, 5)) == "block"  # ceil(1000 / 128) = 8, ceil(520 / 128) = 5
    for sa, sb in (((M, 1), ()), ((M, 7), (7, 5)), ((M, 8), (5, 8)), ((N, 1), (1, M))):
        with pytest.raises(ValueError, match=r"match no scaling mode.*per-row: \(300, 1\) and \(1, 520\)"):
            scaled.scale_mode(M, N, K, sa, sb)


def test_choice_fills_the_gpu():
    sms = 132
    # rung 3: the least rounds x tile work / rate (4096^2: 8 rounds of 128 x 128 against 6 of 128 x 192)
    for M, N, mode, fast, want in ((4096, 4096, "tensor", False, (128, 128)), (4096, 4096, "tensor", True, (128, 256)),
                                   (8192, 8192, "row", False, (128, 192)), (2048, 7168, "tensor", False, (128, 128)),
                                   (128, 7168, "block", False, (64, 128)), (128, 7168, "tensor", True, (128, 128)),
                                   (1024, 4096, "block", False, (128, 128)), (600, 4096, "block", True, (128, 192))):
        v = get_variant(scaled.choose(mode, M, N, 4096, "float8_e4m3fn", "float8_e4m3fn", "bfloat16", sms, fast))
        assert v.tile[:2] == want, (M, N, mode, fast, v.name)
        assert (v.template == "fp8_wgmma_scaled") == (fast and mode != "block")


def test_maps_are_k_major_and_c_falls_back(fake_encode):
    v = get_variant("fp8_wgmma_m64n192k32_cluster2_stage4_tensor")
    M, N, K = 300, 777, 1000
    A = operand.of_layout((M, K), dtypes.FLOAT8_E4M3, "row", 1008, 1 << 40)   # rows padded to 16 bytes
    B = operand.of_layout((K, N), dtypes.FLOAT8_E4M3, "col", 1008, 2 << 40)   # W.T, W's rows padded
    C = operand.of_layout((M, N), dtypes.BFLOAT16, "row", 784, 3 << 40)       # 1568-byte rows: TMA stores
    ma, mb, mc, ldc = tma_args.maps_fp8(v, A, B, C, M, N, K)
    assert (ma.spec.box, mb.spec.box, mc.spec.box) == ((128, 128), (128, 96), (64, 64)) and int(ldc) == 0
    assert (ma.spec.cols, ma.spec.row_stride, mb.spec.rows, mb.spec.cols) == (K, 1008, N, K)
    odd = operand.of_layout((M, N), dtypes.BFLOAT16, "row", N, 3 << 40)        # 1554-byte rows: no map
    *_, mc2, ldc2 = tma_args.maps_fp8(v, A, B, odd, M, N, K)
    assert int(ldc2) == N and mc2 is ma
    f32 = get_variant("fp8_wgmma_m64n128k32_stage6_row_fastacc_f32")
    *_, mc3, _ = tma_args.maps_fp8(f32, A, B, operand.of_layout((M, 512), dtypes.FLOAT32, "row", 512, 4 << 40),
                                   M, 512, K)
    assert mc3.spec.box == (32, 64)  # 32 floats: one 128-byte row of a staging box


def test_launch_checks_b_against_dtype_b():
    v = get_variant("fp8_wgmma_m64n128k32_stage6_tensor_fastacc_e4m3e5m2")
    A = operand.of_layout((64, 128), dtypes.FLOAT8_E4M3, "row", 128, 1 << 40)
    B = operand.of_layout((128, 64), dtypes.FLOAT8_E5M2, "col", 128, 2 << 40)
    assert launch.check_operands(v, A, B) == (64, 64, 128)
    with pytest.raises(TypeError, match="B has dtype float8_e4m3fn, the variant takes float8_e5m2"):
        launch.check_operands(v, A, B._replace(dtype=dtypes.FLOAT8_E4M3))


def test_eight_bit_types():
    e4, e5 = dtypes.get("e4m3"), dtypes.get("float8_e5m2")
    assert (e4.name, e4.itemsize, e4.fp8, e5.short) == ("float8_e4m3fn", 1, True, "e5m2")
    assert dtypes.FP8_MAX == {"float8_e4m3fn": 448.0, "float8_e5m2": 57344.0}
    assert dtypes.from_torch("torch.float8_e4m3fn") is e4 and dtypes.from_torch("torch.float8_e5m2") is e5
    assert dtypes.of_typestr("<V1", "torch.float8_e4m3fn") is e4 and dtypes.of_typestr("<V1") is None
    assert not dtypes.FLOAT16.fp8
