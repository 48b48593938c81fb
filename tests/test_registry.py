"""Registry invariants: names, aliases, derived name expressions, and that the table and the kernel
sources agree (template names and parameter counts, no orphan kernel file)."""
import dataclasses
import re

import pytest

import cugemm
from cugemm import jit
from cugemm.registry import build_index, get_variant, variants

# The FP32 ladder, by the notes' names.
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


def test_a_name_registered_twice_is_refused():
    v = get_variant("sgemm_naive_f32")
    with pytest.raises(RuntimeError, match="registered twice"):
        build_index([v, dataclasses.replace(v, name="other", aliases=(v.name,))])
    assert set(build_index(variants())) == {n for v in variants() for n in (v.name,) + v.aliases}


@pytest.mark.parametrize("v", variants(), ids=lambda v: v.name)
def test_variant_record(v):
    assert get_variant(v.name) is v
    for alias in v.aliases:
        assert get_variant(alias) is v
    # the name expression is derived from the record: template<args in parameter order>
    args = [("true" if x else "false") if isinstance(x, bool) else str(x) for _, x in v.params]
    assert all(isinstance(x, (bool, int, str)) for _, x in v.params)
    assert v.name_expression == f"{v.template}<{', '.join(args)}>"
    assert 0 < v.threads <= 1024 and v.threads % 32 == 0
    assert v.dtype_in and v.dtype_out and v.dtype_acc and v.layout in ("row", "col")
    assert v.archs and all(a.startswith("sm_") for a in v.archs)
    assert v.doc and v.seed
    assert v.align in (2, 4, 8, 16) and v.align % v.dt_in.itemsize == 0
    assert jit.kernel_path(v).is_file()


def _templates_in(path):
    """{template name: [parameter names]} for every __global__ template in a file."""
    text = re.sub(r"//.*", "", path.read_text())
    out = {}
    for m in re.finditer(r"template\s*<([^>]*)>\s*__global__.*?(\w+)\s*\(\s*const\b", text, re.S):
        # a defaulted trailing parameter (04_persistent.cu's EPI) is named only by the variants using it
        out[m.group(2)] = [p.split("=")[0].split()[-1] + ("=" if "=" in p else "")
                           for p in m.group(1).split(",") if p.strip()]
    return out


@pytest.mark.parametrize("v", variants(), ids=lambda v: v.name)
def test_template_matches_source(v):
    templates = _templates_in(jit.kernel_path(v))
    assert v.template in templates, f"{v.source} defines {sorted(templates)}"
    names = templates[v.template]
    required = [n for n in names if not n.endswith("=")]
    given = [name for name, _ in v.params]
    assert given == [n.rstrip("=") for n in names[:len(given)]] and len(given) >= len(required), \
        "template parameter names, in order (defaulted ones last, optional)"


def test_template_parser_reads_names():
    # the parser the test above relies on, on a known text
    import pathlib
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = pathlib.Path(d) / "k.cu"
        p.write_text("template <int BM, bool F16ACC, class T>\n__global__ void __launch_bounds__(256)\n"
                     "k(const T* a) {}\n")
        assert _templates_in(p) == {"k": ["BM", "F16ACC", "T"]}


def test_one_kernel_template_per_file_and_no_orphans():
    used = {v.source for v in variants()}
    # kernels/util/ holds the helpers of cugemm.matmul (relayout.cu), not GEMM variants
    files = {str(p.relative_to(jit.KERNEL_DIR)) for p in jit.KERNEL_DIR.rglob("*.cu")
             if p.parent.name != "util"}
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
    assert set(cugemm.__all__) >= {"run", "variants", "get_variant", "compile", "compile_source",
                                   "float16", "bfloat16"}
    v = cugemm.get_variant("sgemm_naive_f32")
    assert (v.dtype_in, v.dtype_out, v.dtype_acc, v.layout, v.min_arch) == ("float32", "float32", "float32",
                                                                          "row", 80)
    assert cugemm.bfloat16.name == "bfloat16" and cugemm.float16.short == "f16"


def test_archs_fit_shared_memory():
    """No variant claims an arch whose chips cannot give a block its shared memory, and min_arch is
    the lowest claim (the registry derives it)."""
    from cugemm import arch

    for v in variants():
        for a in v.archs:
            assert v.smem_dynamic <= arch.smem_optin(arch.parse(a).cc), (v.name, a)
        assert v.min_arch == min(arch.parse(a).cc for a in v.archs), v.name
    big = get_variant("hgemm_wmma_m16n16k16_mma2x4_warp4x4x4_stage4")
    assert big.smem_dynamic > 163 * 1024 and big.archs == ("sm_90",) and big.min_arch == 90
    with pytest.raises(ValueError, match="claims sm_80 but needs"):
        dataclasses.replace(big, archs=("sm_80", "sm_90"))


def test_launch_shape_hooks(monkeypatch):
    """A grid rule sees the device (persistent kernels size their grid by SM count), clusters round
    the grid up to whole clusters, an argument rule sees the operands; a rule name nobody declared is
    refused when the variant is made."""
    from cugemm import rules
    from cugemm.device import Device

    v = get_variant("sgemm_warp_tile")
    dev = Device(cc=90, sms=132, smem_optin=227 * 1024)
    assert v.grid(1000, 1000, 64, dev) == (-(-1000 // v.tile[1]), -(-1000 // v.tile[0]), 1)
    monkeypatch.setitem(rules.GRIDS, "test_sms", lambda v, M, N, K, dev: (dev.sms, 1, 1))
    persistent = dataclasses.replace(v, name="p", grid_rule="test_sms")
    assert persistent.grid(4096, 4096, 4096, dev) == (132, 1, 1)
    clustered = dataclasses.replace(v, name="c", cluster=(2, 1, 1))
    gx, gy, _ = clustered.grid(1000, 1000, 64, dev)
    assert gx % 2 == 0 and gx >= -(-1000 // v.tile[1]) and gy == -(-1000 // v.tile[0])
    with pytest.raises(ValueError, match="cluster"):
        dataclasses.replace(v, name="bad", cluster=(0, 1, 1))
    seen = []
    monkeypatch.setitem(rules.ARGS, "test_seen", lambda v, A, B, C, M, N, K: seen.append((A, M)) or (7,))
    hooked = dataclasses.replace(v, name="h", args_rule="test_seen")
    assert hooked.extra_args("A", "B", "C", 1, 2, 3) == (7,) and seen == [("A", 1)]
    for field in ("grid_rule", "args_rule", "workspace_rule"):
        with pytest.raises(ValueError, match="no .* rule 'nonesuch'; rules: "):
            dataclasses.replace(v, name="n", **{field: "nonesuch"})
