"""The TF32 WMMA family (seed 003): every name is registered with TF32 math, the records agree with
the kernel template's rules, and the block-swizzle grid covers every tile exactly once. No GPU."""
import numpy as np
import pytest

from cugemm import grids, jit
from cugemm.registry import get_variant, variants

N_ = "sgemm_wmma_m16n16k8_mma4x2_warp2x4"
NOTES = [f"{N_}_stage2", f"{N_}_stage3", f"{N_}_stage2_dsmem", f"{N_}_stage3_dsmem",
         f"{N_}_stage2_swizzle", f"{N_}_stage3_swizzle", f"{N_}_stage2_dsmem_swizzle",
         f"{N_}_stage3_dsmem_swizzle"]
FAMILY = variants(family="sgemm_tf32")


def test_notes_names_registered_in_order():
    names = [v.name for v in FAMILY]
    assert [n for n in names if n in NOTES] == NOTES
    assert get_variant(f"{N_}_stages") is get_variant(f"{N_}_stage2")  # the notes' own name


def test_fast_aliases():
    assert get_variant("sgemm_tf32_fast").family == "sgemm_tf32"
    v = get_variant("sgemm_tf32_wmma_fast")  # the fastest WMMA rung
    assert v.math == "wmma" and v.param_dict["SHARED_LD"] and not v.param_dict["ROUND"]


@pytest.mark.parametrize("v", [v for v in FAMILY if v.template == "sgemm_wgmma_tf32_ws"],
                         ids=lambda v: v.name)
def test_wgmma_ws_record(v):
    """The warp-specialized Hopper rung (04_wgmma_m64n256k8_ws.cu): 256x128x32, 3 warpgroups."""
    p = v.param_dict
    assert (v.dtype_in, v.dtype_out, v.dtype_acc) == ("float32",) * 3 and v.math == "wgmma"
    assert v.math_dtype == "tfloat32" and v.seed == "003"
    assert v.archs == ("sm_90a",) and v.min_arch == 90
    assert [k for k, _ in v.params] == ["STAGES", "ROUND"]
    assert v.name == "sgemm_wgmma_m64n256k8_rs_ws_stage%d%s" % (p["STAGES"], "" if p["ROUND"] else "_trunc")
    assert 3 <= p["STAGES"] <= 7  # 1 + 2 * STAGES named barriers of 16
    assert v.tile == (256, 128, 32) and v.multiple_of == v.tile and v.align == 16
    assert v.block == (384, 1, 1) and v.args_fn is None
    assert v.smem_dynamic == p["STAGES"] * (256 * 32 + 32 * 136) * 4 + 1024 <= 227 * 1024
    assert v.grid(4096, 4096, 4096) == (4096 // 128, 4096 // 256, 1)


@pytest.mark.parametrize("v", [v for v in FAMILY if v.template == "sgemm_wgmma_tf32_rs"],
                         ids=lambda v: v.name)
def test_wgmma_record(v):
    """The Hopper rung (03_wgmma_m64nNk8_rs.cu): sm_90a only, BK 32, 64 columns per warpgroup."""
    p = v.param_dict
    assert (v.dtype_in, v.dtype_out, v.dtype_acc) == ("float32",) * 3
    assert v.math_dtype == "tfloat32" and v.seed == "003"
    assert v.archs == ("sm_90a",) and v.min_arch == 90
    assert v.name.startswith("sgemm_wgmma_m64n%dk8_" % p["BM"]) and v.template == "sgemm_wgmma_tf32_rs"
    assert [k for k, _ in v.params] == ["BM", "WGS", "STAGES", "A_ROUND"]
    assert p["BM"] in (128, 256) and p["STAGES"] >= 3 and f"_stage{p['STAGES']}" in v.name
    bn = 64 * p["WGS"]
    assert v.tile == (p["BM"], bn, 32) and v.multiple_of == v.tile and v.align == 16
    assert v.block == (128 * p["WGS"], 1, 1) and v.args_fn is None
    smem = p["STAGES"] * (p["BM"] * 32 + 32 * (bn + 8)) * 4 + 1024
    assert v.smem_dynamic == smem <= 227 * 1024
    assert v.grid(4096, 4096, 4096) == (4096 // bn, 4096 // p["BM"], 1)
    # A_ROUND: 0 truncated by the tensor cores, 1 rounded in place in shared memory, 2 via registers
    assert p["A_ROUND"] == (0 if v.name.endswith("_trunc") else 2 if v.name.endswith("_ldg") else 1)


@pytest.mark.parametrize("v", [v for v in FAMILY if v.math != "wgmma"], ids=lambda v: v.name)
def test_tf32_record(v):
    p = v.param_dict
    assert (v.dtype_in, v.dtype_out, v.dtype_acc) == ("float32",) * 3
    assert v.math_dtype == "tfloat32" and v.math in ("wmma", "mma") and v.seed == "003"
    assert "mma.h" in jit.cuda_headers(jit.source(v)) or v.math == "mma"
    assert "sm_90" in v.archs and ("sm_80" in v.archs) == (v.smem_dynamic <= 163 * 1024)
    if v.math == "wmma":  # 16 x 16 wmma fragments
        assert v.name.startswith("sgemm_wmma_m16n16k8_") and v.template == "sgemm_wmma_tf32_stages"
        assert [k for k, _ in v.params] == ["WARPS_M", "WARPS_N", "FRAGS_M", "FRAGS_N", "BK",
                                            "STAGES", "A_PAD", "B_PAD", "SHARED_LD", "DSMEM",
                                            "SWIZZLE", "ROUND"]
        bm, bn = 16 * p["FRAGS_M"] * p["WARPS_M"], 16 * p["FRAGS_N"] * p["WARPS_N"]
    else:  # 16 x 8 mma.sync tiles, the ring always in dynamic shared memory
        assert v.name.startswith("sgemm_mma_m16n8k8_") and v.template == "sgemm_mma_tf32_stages"
        assert [k for k, _ in v.params] == ["WARPS_M", "WARPS_N", "FRAGS_M", "FRAGS_N", "BK",
                                            "STAGES", "A_PAD", "B_PAD", "SWIZZLE", "ROUND"]
        bm, bn = 16 * p["FRAGS_M"] * p["WARPS_M"], 8 * p["FRAGS_N"] * p["WARPS_N"]
        p = dict(p, DSMEM=True)
    assert v.tile == (bm, bn, p["BK"]) and v.multiple_of == v.tile and v.align == 16
    assert v.block == (32 * p["WARPS_M"] * p["WARPS_N"], 1, 1)
    smem = p["STAGES"] * (bm * (p["BK"] + p["A_PAD"]) + p["BK"] * (bn + p["B_PAD"])) * 4
    assert v.smem_dynamic == (smem if p["DSMEM"] else 0)
    assert smem <= 227 * 1024 and (p["DSMEM"] or smem <= 48 * 1024)
    # every variant passes the 7th kernel argument (the swizzle stride, 0 without swizzle); only
    # swizzled ones reshape the grid (into bands)
    assert v.args_fn is not None and (v.grid_fn is not None) == p["SWIZZLE"]
    extra = v.extra_args(None, None, None, 4096, 4096, 4096)
    assert len(extra) == 1 and isinstance(extra[0], np.int32)
    assert (extra[0] == 0) == (not p["SWIZZLE"])
    if not p["SWIZZLE"]:
        assert v.grid(4096, 4096, 4096) == (4096 // bn, 4096 // bm, 1)
    if "_swizzle" in v.name:
        assert p["SWIZZLE"]
    if "_dsmem" in v.name:
        assert p["DSMEM"]
    assert p["ROUND"] == (not v.name.endswith("_trunc"))  # _trunc: the tensor cores truncate
    assert v.min_arch == (80 if v.smem_dynamic <= 163 * 1024 else 90)


@pytest.mark.parametrize("N,stride", [(4096, 1024), (8192, 2048), (16384, 4096), (1024, 256),
                                      (128, 128), (256, 256), (640, 640), (4224, 1024)])
def test_swizzle_stride_rule(N, stride):
    v = get_variant(f"{N_}_stage2_swizzle")  # BN = 128
    assert grids.swizzle_stride(v, N) == stride


@pytest.mark.parametrize("v", [v for v in FAMILY if v.param_dict.get("SWIZZLE")], ids=lambda v: v.name)
@pytest.mark.parametrize("M,N", [(128, 128), (384, 256), (2048, 1536), (4096, 4096), (1024, 4224),
                                 (256, 8192)])
def test_swizzle_grid_covers_each_tile_once(v, M, N):
    """The band grid (kernels/lib/raster.cuh, block_tile_column_bands) visits every tile once, in
    the order raster_grouped gives over tile columns (the one walk the library defines)."""
    bm, bn = v.tile[0], v.tile[1]
    if M % bm or N % bn:
        pytest.skip("not a legal shape for this tile")
    gx, gy, gz = v.grid(M, N, 64)
    (stride,) = v.extra_args(None, None, None, M, N, 64)
    assert stride % bn == 0 and gx == stride // bn and gy == M // bm

    def raster_grouped(i, rows, cols, group):  # kernels/lib/raster.cuh, line for line
        if group <= 1:
            return i // cols, i % cols
        per_band = group * cols
        first = i // per_band * group
        height = min(rows - first, group)
        in_band = i % per_band
        return first + in_band % height, in_band // height

    # launch order: x fastest, then y, then z; block (x, y, z) -> tile (y, z * gx + x), those
    # past column N return
    grid_order = [(y, z * gx + x) for z in range(gz) for y in range(gy) for x in range(gx)
                  if (z * gx + x) * bn < N]
    assert sorted(grid_order) == [(y, x) for y in range(M // bm) for x in range(N // bn)]
    tiles_n = N // bn
    walk = [raster_grouped(i, tiles_n, gy, gx)[::-1] for i in range(tiles_n * gy)]
    assert grid_order == walk
