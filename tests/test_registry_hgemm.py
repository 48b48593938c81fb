"""The FP16 CUDA-core (half2) HGEMM family: the notes' ladder by name and in order, the warp-tiled
rung above it, and the facts every row of the family shares."""
from cugemm import jit
from cugemm.registry import get_variant, variants

# The half2 ladder of seeds 002 and 004, by the notes' names (+ the `_offset` / `_async` siblings).
HGEMM_LADDER = [
    "hgemm_naive_f16", "hgemm_sliced_k_f16",
    "hgemm_t_8x8_sliced_k_f16x4", "hgemm_t_8x8_sliced_k_f16x4_pack",
    "hgemm_t_8x8_sliced_k_f16x4_bcf", "hgemm_t_8x8_sliced_k_f16x4_pack_bcf",
    "hgemm_t_8x8_sliced_k_f16x4_pack_bcf_offset",
    "hgemm_t_4x4_sliced_k_f16x4_pack_bcf", "hgemm_t_4x4_sliced_k_f16x4_pack_bcf_offset",
    "hgemm_t_8x8_sliced_k_f16x8_pack_bcf", "hgemm_t_8x8_sliced_k_f16x8_pack_bcf_offset",
    "hgemm_t_8x8_sliced_k_f16x8_pack_bcf_dbuf",
    "hgemm_t_8x8_sliced_k16_f16x8_pack_dbuf", "hgemm_t_8x8_sliced_k16_f16x8_pack_dbuf_offset",
    "hgemm_t_8x8_sliced_k16_f16x8_pack_dbuf_async",
    "hgemm_t_8x8_sliced_k32_f16x8_pack_dbuf", "hgemm_t_8x8_sliced_k32_f16x8_pack_dbuf_async",
    "hgemm_t_16x8_sliced_k32_f16x8_pack_dbuf", "hgemm_t_16x8_sliced_k32_f16x8_pack_dbuf_async",
]


def test_ladder_is_registered_in_order():
    names = [v.name for v in variants(family="hgemm")]
    assert [n for n in names if n in HGEMM_LADDER] == HGEMM_LADDER


def test_warp_tiled_rung_above_the_notes():
    warp = [v for v in variants(family="hgemm") if v.template == "hgemm_warp_tile_f16x8_pack_dbuf"]
    assert warp and all("_warp" in v.name for v in warp)
    assert get_variant("hgemm_warp_tile") in warp
    names = [v.name for v in variants(family="hgemm")]
    assert names.index(HGEMM_LADDER[-1]) < min(names.index(v.name) for v in warp)


def test_family_facts():
    for v in variants(family="hgemm"):
        assert (v.dtype_in, v.dtype_out, v.dtype_acc, v.math) == ("float16", "float16", "float16", "hfma2")
        assert "cuda_fp16.h" in jit.cuda_headers(jit.source(v))
        assert v.seed in ("002", "004", "cugemm")
        if v.any_shape:  # naive and sliced_k: guarded scalar accesses
            assert v.name in ("hgemm_naive_f16", "hgemm_sliced_k_f16")
        else:  # tile multiples, and vector access needs 8- or 16-byte aligned operands
            assert v.multiple_of == v.tile and v.align in (8, 16)


def test_siblings_share_a_template():
    t = lambda n: get_variant(n).template  # noqa: E731
    assert t("hgemm_t_8x8_sliced_k_f16x4") == t("hgemm_t_8x8_sliced_k_f16x4_pack")
    bcf = {t(n) for n in HGEMM_LADDER if n.endswith(("_bcf", "_bcf_offset"))}
    assert len(bcf) == 1
    dbuf = {t(n) for n in HGEMM_LADDER if "sliced_k16" in n or "sliced_k32" in n}
    assert len(dbuf) == 2  # register-staged and cp.async
    assert get_variant("hgemm_t_8x8_sliced_k_f16x4_pack_bcf_offset").param_dict["PAD"] > 0
