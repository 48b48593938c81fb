"""The WMMA HGEMM family (seed 002 and the rung above it): every name of the notes' ladder is registered,
in ladder order, with the record fields the family promises; the front-page alias resolves."""
import pytest

import cugemm
from cugemm import jit
from cugemm.registry import get_variant, variants

_W = "hgemm_wmma_m16n16k16_"
# The notes' ladder, by their names, in order (each `_offset` sibling right after its rung).
HGEMM_WMMA_LADDER = [
    _W + "naive",
    _W + "mma4x2",
    _W + "mma4x2_warp2x4",
    _W + "mma4x2_warp2x4_async",
    _W + "mma4x2_warp2x4_async_offset",
    _W + "mma4x2_warp2x4_dbuf_async",
    _W + "mma4x2_warp2x4_dbuf_async_offset",
    _W + "mma4x4_warp2x2x2_dbuf_async",
    _W + "mma4x4_warp2x2x2_dbuf_async_offset",
    "hgemm_wmma_m32n8k16_mma2x4_warp2x4_dbuf_async",
    "hgemm_wmma_m32n8k16_mma2x4_warp2x4_dbuf_async_offset",
    _W + "mma4x2_warp2x4x2_rbuf_async",
    _W + "mma4x2_warp2x4x2_rbuf_async_offset",
    _W + "mma4x2_warp2x4x2_rbuf_async_dbuf",
]


def stages_smem(bm: int, bn: int, bk: int, STAGES: int, PAD: int, WM: int, WN: int, WTN: int, warps: int,
                f16acc: bool) -> int:
    """06_stages.cu's shared memory, written out from the kernel's layout (checked against the record's
    smem_dynamic, which cugemm/tables/smem.json reads from the PTX): STAGES A (bm x bk + PAD) and B
    (bk x bn + PAD) 16-bit tiles, or the fp32 epilogue's per-warp scratch strips (WM rows of
    WTN * WN + 4 floats) if larger."""
    pipe = STAGES * (bm * (bk + PAD) + bk * (bn + PAD)) * 2
    epi = 0 if f16acc else warps * WM * (WTN * WN + 4) * 4
    return max(pipe, epi)


def _family():
    return variants(family="hgemm_wmma")


def test_ladder_is_registered_in_order():
    names = [v.name for v in _family()]
    assert [n for n in names if n in HGEMM_WMMA_LADDER] == HGEMM_WMMA_LADDER


def test_front_page_alias():
    v = get_variant("hgemm_wmma_mma4x2_warp2x4_dbuf")
    assert v.name == _W + "mma4x2_warp2x4_dbuf_async"
    assert v is get_variant(_W + "mma4x2_warp2x4_dbuf_async")
    assert variants("hgemm_wmma_mma4x2_warp2x4_dbuf") == [v]


def test_fast_alias_is_a_rung_above_the_notes():
    v = get_variant("hgemm_wmma_fast")
    assert v.family == "hgemm_wmma" and v.template == "hgemm_wmma_stages"
    assert v.smem_dynamic > 48 * 1024  # a multi-stage pipeline in dynamic shared memory


@pytest.mark.parametrize("v", _family(), ids=lambda v: v.name)
def test_record(v):
    assert v.dtype_in == v.dtype_out == "float16" and v.math == "wmma"
    assert v.dtype_acc == ("float16" if v.name.endswith("_f16acc") else "float32")
    assert dict(v.params)["F16ACC"] is v.name.endswith("_f16acc")
    assert v.source.startswith("hgemm_wmma/") and v.template.startswith("hgemm_wmma_")
    assert v.multiple_of == v.tile and v.align == 16 and v.min_arch >= 80
    assert "sm_90" in v.archs and ("sm_80" in v.archs) == (v.smem_dynamic <= 163 * 1024)
    assert {"mma.h", "cuda_fp16.h"} <= set(jit.cuda_headers(jit.source(v)))
    assert v.seed in ("002", "cugemm")
    p = v.param_dict
    # the block tile and the block follow from the WMMA shape, warps and fragments per warp
    warps = p.get("WARPS_M", 1) * p.get("WARPS_N", 1)
    assert v.block == (32 * warps, 1, 1)
    bm = p["WMMA_M"] * p.get("WARP_TILE_M", 1) * p.get("WARPS_M", 1)
    bn = p["WMMA_N"] * p.get("WARP_TILE_N", 1) * p.get("WARPS_N", 1)
    bk = p["WMMA_K"] * p.get("WARP_TILE_K", 1)
    assert v.tile == (bm, bn, bk)
    # names say what the parameters are: _offset pads the shared rows, mmaAxB / warpCxD[xE]
    if "PAD" in p:
        assert (p["PAD"] > 0) == ("_offset" in v.name or v.template == "hgemm_wmma_stages")
    if "mma4x2" in v.name:
        assert (p.get("WARPS_M"), p.get("WARPS_N")) == (4, 2)
    if v.template == "hgemm_wmma_stages":
        assert v.name.endswith(f"_stage{p['STAGES']}") or f"_stage{p['STAGES']}_" in v.name
        assert v.smem_dynamic == stages_smem(bm, bn, bk, p["STAGES"], p["PAD"], p["WMMA_M"], p["WMMA_N"],
                                             p["WARP_TILE_N"], warps, p["F16ACC"])
        assert (p["SWIZZLE"] > 1) == ("_swizzle" in v.name)
    else:
        assert v.smem_dynamic == 0


def test_one_template_per_algorithm():
    by_template = {}
    for v in _family():
        by_template.setdefault(v.template, set()).add(v.source)
    assert all(len(s) == 1 for s in by_template.values())
    assert set(by_template) == {"hgemm_wmma_naive", "hgemm_wmma_smem", "hgemm_wmma_async",
                                "hgemm_wmma_dbuf_async", "hgemm_wmma_rbuf_async", "hgemm_wmma_stages"}


def test_shape_rules():
    v = get_variant("hgemm_wmma_mma4x2_warp2x4_dbuf")
    v.check_shape(128, 256, 16)
    with pytest.raises(ValueError, match="K=24 is not a multiple of 16"):
        v.check_shape(128, 128, 24)
    with pytest.raises(ValueError, match="M=64 is not a multiple of 128"):
        v.check_shape(64, 128, 16)


@pytest.mark.gpu
def test_front_page_example_runs_on_a_gpu():
    cupy = pytest.importorskip("cupy")
    a = cupy.random.standard_normal((256, 128), dtype=cupy.float32).astype(cupy.float16)
    b = cupy.random.standard_normal((128, 384), dtype=cupy.float32).astype(cupy.float16)
    c = cugemm.run("hgemm_wmma_mma4x2_warp2x4_dbuf", a, b)
    ref = a.astype(cupy.float64) @ b.astype(cupy.float64)
    assert c.dtype == cupy.float16 and c.shape == (256, 384)
    assert float(cupy.linalg.norm(c - ref) / cupy.linalg.norm(ref)) < 2e-3
