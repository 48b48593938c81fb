"""The Hopper split-K rung (kernels/hgemm_wgmma/07_splitk.cu, cugemm/families/hgemm_wgmma_splitk.py):
records, the split plan (every tile and K-tile covered exactly once by the kernel's work list, the
workspace the launch allocates big enough for it), and the SASS of a real Hopper kernel. No GPU."""
import re

import pytest

from cugemm import jit, toolkit
from cugemm.families import hgemm_wgmma_splitk as sk
from cugemm.registry import get_variant, variants
from cugemm.device import Device

NAMES = ["hgemm_wgmma_m64n256k16_splitk_stage4", "hgemm_wgmma_m64n128k16_splitk_stage6",
         "hgemm_wgmma_m64n256k16_splitk_stage4_bf16", "hgemm_wgmma_m64n128k16_splitk_stage6_bf16"]
H100 = Device(cc=90, sms=132, smem_optin=232448)
SHAPES = [(1, 8, 8), (17, 24, 8), (128, 4096, 4096), (256, 11008, 4096), (512, 4096, 11008),
          (1024, 14336, 4096), (1024, 1024, 1024), (2048, 2048, 2048), (2048, 2048, 8192),
          (16, 8192, 8192), (4095, 4104, 1016), (4096, 4096, 4096), (300, 4100, 64), (129, 264, 72)]


def test_registered_in_the_family():
    vs = [v for v in variants(family="hgemm_wgmma") if v.template == "hgemm_wgmma_splitk"]
    assert [v.name for v in vs] == NAMES
    assert all(v in variants("hgemm_wgmma*splitk*") for v in vs)


@pytest.mark.parametrize("name", NAMES)
def test_record(name):
    v = get_variant(name)
    p = v.param_dict
    assert v.family == "hgemm_wgmma" and v.source == "hgemm_wgmma/07_splitk.cu"
    assert list(p) == ["BN", "STAGES", "GROUP", "T"]
    assert v.tile == (128, p["BN"], 64) and v.block == (384, 1, 1) and v.cluster == (1, 1, 1)
    assert v.multiple_of == (1, 8, 8) and v.align == 16 and v.archs == ("sm_90a",)
    assert v.a_layout == v.b_layout == "row"
    assert v.dtype_in == v.dtype_out and v.dtype_acc == "float32" and v.math == "wgmma"
    assert v.name.endswith("_bf16") == (v.dtype_in == "bfloat16")
    assert f"n{p['BN']}k16" in v.name and f"_stage{p['STAGES']}" in v.name
    assert v.smem_dynamic == sk.splitk_smem_bytes(p["BN"], p["STAGES"]) <= 232448


def _units(M, N, K, bn, sms):
    """The kernel's work list (unit_of in 07_splitk.cu), per block in walk order."""
    dp, S, grid = sk.plan(M, N, K, bn, sms)
    T = -(-M // 128) * -(-N // bn)
    kt = -(-K // 64)
    units = []
    for u in range(dp + (T - dp) * S):
        if u < dp:
            units.append((u, 0, 0, kt, 0, False))
        else:
            q = u - dp
            s = q % S
            units.append((dp + q // S, s, s * kt // S, (s + 1) * kt // S, q, S > 1))
    return dp, S, grid, T, kt, units


@pytest.mark.parametrize("bn", [256, 128])
@pytest.mark.parametrize("sms", [132, 114, 78, 8])
def test_plan_covers_every_k_tile_once(bn, sms):
    for M, N, K in SHAPES:
        dp, S, grid, T, kt, units = _units(M, N, K, bn, sms)
        assert 1 <= S <= max(1, kt) and 0 <= dp <= T and 1 <= grid <= sms
        assert dp == T or dp % sms == 0, "whole tiles run in full waves"
        assert grid == min(len(units), sms)
        if S > 1:  # one wave of slices: a block's slice is its last unit (the kernel reuses its ring)
            assert (T - dp) * S <= grid
        cover = {}
        for tile, s, k0, k1, q, split in units:
            assert 0 <= k0 < k1 <= kt, "every unit has at least one K-tile"
            for k in range(k0, k1):
                assert (tile, k) not in cover
                cover[(tile, k)] = s
            if split:  # slices of a tile are consecutive: slot q - s is slice 0's
                assert units[dp + q - s][0] == tile and units[dp + q - s][1] == 0
        assert len(cover) == T * kt


@pytest.mark.parametrize("bn", [256, 128])
def test_workspace_sizes(bn):
    """The slots and counters _args asks for hold every slot and counter index the kernel forms."""
    for M, N, K in SHAPES:
        dp, S, grid, T, kt, units = _units(M, N, K, bn, 132)
        split_tiles = T - dp if S > 1 else 0
        floats, counters = split_tiles * S * 128 * bn, 2 * split_tiles
        for tile, s, k0, k1, q, split in units:
            if split:
                assert (q + 1) * 128 * bn <= floats and 2 * (q // S) + 1 < counters


def test_splits_where_tiles_do_not_fill_the_gpu():
    # M = 128 tokens against a 4096 x 4096 weight: 16 tiles of 128 x 256 on 132 SMs
    dp, S, grid = sk.plan(128, 4096, 4096, 256, 132)
    assert dp == 0 and S > 1 and grid > 16
    # a product with many tiles runs whole tiles in full waves
    dp, S, grid = sk.plan(4096, 4096, 4096, 256, 132)
    assert dp == 512 and S == 1 and grid == 132
    assert sk.plan(1, 8, 8, 256, 132) == (1, 1, 1)


def test_grid_fn():
    v = get_variant(NAMES[0])
    assert v.grid(128, 4096, 4096, H100) == (sk.plan(128, 4096, 4096, 256, 132)[2], 1, 1)
    assert v.grid(8192, 8192, 8192, Device(90, 114, 232448)) == (114, 1, 1)


@pytest.mark.parametrize("name", NAMES[:2])
def test_sass_is_a_hopper_split_k_kernel(name):
    if toolkit.find_tool("cuobjdump") is None:
        pytest.skip("no cuobjdump on PATH, in the CUDA toolkit or in the nvidia-cuda-cuobjdump wheel")
    v = get_variant(name)
    sass = jit.disassemble(jit.compile_offline(v, "sm_90a").cubin)
    assert re.search(rf"\bHGMMA\.64x{v.param_dict['BN']}x16", sass)
    assert re.search(r"\bUTMALDG\.2D\b", sass) and "USETMAXREG" in sass and "SYNCS.PHASECHK" in sass
    assert re.search(r"\bATOMG?\.E\.ADD|\bATOMG\.", sass) or "RED." in sass, "no counter atomic"
    assert "MEMBAR" in sass, "no fence before the arrival"
    assert "LDL" not in sass and "STL" not in sass
