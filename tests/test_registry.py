"""Registry invariants: names, aliases, derived name expressions, and that the table and the kernel
sources agree (template names and parameter counts, no orphan kernel file)."""
import re

import pytest

import cugemm
from cugemm import jit
from cugemm.registry import get_variant, variants

# The FP32 ladder the foundation issue asks for, by the notes' names.
SGEMM_LADDER = [
    "sgemm_naive_f32", "sgemm_sliced_k_f32", "sgemm_t_8x8_sliced_k_f32x4",
    "sgemm_t_8x8_sliced_k_f32x4_bcf", "sgemm_t_8x8_sliced_k_f32x4_bcf_offset",
    "sgemm_t_8x8_sliced_k_f32x4_bcf_dbuf", "sgemm_t_8x8_sliced_k_f32x4_bcf_dbuf_offset",
    "sgemm_t_8x4_sliced_k16_f32x4_bcf_dbuf", "sgemm_t_8x8_sliced_k16_f32x4_bcf_dbuf",
    "sgemm_t_8x16_sliced_k16_f32x4_bcf_dbuf", "sgemm_t_8x4_sliced_k16_f32x4_bcf_dbuf_async",
    "sgemm_t_8x8_sliced_k16_f32x4_bcf_dbuf_async", "sgemm_t_8x16_sliced_k16_f32x4_bcf_dbuf_async",
]


def test_ladder_is_registered_in_order():
    names = [v.name for v in variants(family="sgemm")]
    assert [n for n in names if n in SGEMM_LADDER] == SGEMM_LADDER


def test_above_the_notes():
    warp = [v for v in variants(family="sgemm") if v.template == "sgemm_warp_tile_dbuf"]
    assert any(not v.any_shape for v in warp), "a warp-tiled FFMA variant"
    assert any(v.any_shape and v.dtype_in == "float32" for v in warp), "an any-shape FP32 variant"


def test_names_and_aliases_are_unique():
    seen = set()
    for v in variants():
        for n in (v.name,) + v.aliases:
            assert n not in seen
            seen.add(n)


@pytest.mark.parametrize("v", variants(), ids=lambda v: v.name)
def test_variant_record(v):
    assert get_variant(v.name) is v
    for alias in v.aliases:
        assert get_variant(alias) is v
    # the name expression is derived from the record: template<args in parameter order>
    args = [("true" if x else "false") if isinstance(x, bool) else str(x) for _, x in v.params]
    assert v.name_expression == f"{v.template}<{', '.join(args)}>"
    assert 0 < v.threads <= 1024 and v.threads % 32 == 0
    assert v.dtype_in and v.dtype_out and v.dtype_acc and v.layout in ("row", "col")
    assert v.archs and all(a.startswith("sm_") for a in v.archs)
    assert v.doc and v.seed
    assert v.align in (2, 4, 8, 16) and v.align % v._np_in.itemsize == 0
    assert jit.kernel_path(v).is_file()


def _templates_in(path):
    """{template name: number of template parameters} for every __global__ template in a file."""
    text = re.sub(r"//.*", "", path.read_text())
    out = {}
    for m in re.finditer(r"template\s*<([^>]*)>\s*__global__.*?(\w+)\s*\(\s*const\b", text, re.S):
        out[m.group(2)] = len([p for p in m.group(1).split(",") if p.strip()])
    return out


@pytest.mark.parametrize("v", variants(), ids=lambda v: v.name)
def test_template_matches_source(v):
    templates = _templates_in(jit.kernel_path(v))
    assert v.template in templates, f"{v.source} defines {sorted(templates)}"
    assert templates[v.template] == len(v.params)


def test_one_kernel_template_per_file_and_no_orphans():
    used = {v.source for v in variants()}
    files = {str(p.relative_to(jit.KERNEL_DIR)) for p in jit.KERNEL_DIR.rglob("*.cu")}
    assert files == used
    for f in files:
        assert len(_templates_in(jit.KERNEL_DIR / f)) == 1, f


def test_front_page_alias_and_unknown_name():
    with pytest.raises(KeyError) as e:
        get_variant("sgemm_t_8x8_sliced_k_f32x4_bfc")
    assert "sgemm_t_8x8_sliced_k_f32x4_bcf" in str(e.value)
    with pytest.raises(KeyError):
        get_variant("no_such_kernel")


def test_variants_filters():
    assert variants("sgemm_t_8x8_sliced_k16*") and all(
        v.name.startswith("sgemm_t_8x8_sliced_k16") for v in variants("sgemm_t_8x8_sliced_k16*"))
    anyv = variants(any_shape=True)
    assert anyv and all(v.multiple_of == (1, 1, 1) for v in anyv)
    assert variants("sgemm_warp_tile") == [get_variant("sgemm_warp_tile")]


def test_check_shape_names_the_rule():
    v = get_variant("sgemm_t_8x8_sliced_k_f32x4")
    v.check_shape(256, 128, 16)
    with pytest.raises(ValueError, match=r"N=100 is not a multiple of 128"):
        v.check_shape(128, 100, 8)
    with pytest.raises(ValueError, match=r"K=12 is not a multiple of 8"):
        v.check_shape(128, 128, 12)
    with pytest.raises(ValueError, match="32-bit"):
        get_variant("sgemm_naive_f32").check_shape(2**16, 2**16, 1)
    get_variant("sgemm_naive_f32").check_shape(7, 3, 5)


def test_public_api():
    for name in ("run", "variants", "get_variant", "compile"):
        assert callable(getattr(cugemm, name))
    v = cugemm.get_variant("sgemm_naive_f32")
    for field in ("name", "family", "dtype_in", "dtype_out", "dtype_acc", "layout", "min_arch"):
        assert getattr(v, field) is not None
