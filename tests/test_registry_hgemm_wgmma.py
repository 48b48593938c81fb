"""The Hopper wgmma family (issue 12): the ladder is registered in order with the record fields its
kernels need, the top rungs really are Hopper kernels (the SASS of their NVRTC cubins holds HGMMA
and UTMALDG: a silent fallback to another instruction cannot pass), the persistent grids fit the
GPU, and TMA arguments are refused before launch when TMA cannot describe the operands. No GPU
needed (the SASS test needs cuobjdump: the toolkit's or the nvidia-cuda-cuobjdump wheel)."""
import re

import pytest

import cugemm
from cugemm import jit, toolkit
from cugemm.families import hgemm_wgmma
from cugemm.launch import describe
from cugemm.registry import get_variant, variants
from cugemm.variant import DeviceInfo

_P = "hgemm_wgmma_m64n256k16_persistent"
# The fp16 ladder, one idea per rung, in order.
LADDER = [
    "hgemm_wgmma_m64n128k16_cpasync_stage4",
    "hgemm_wgmma_m64n128k16_tma_stage4",
    "hgemm_wgmma_m64n128k16_ws_stage6",
    "hgemm_wgmma_m64n256k16_ws_wg2_stage4",
    _P + "_stage4",
    _P + "_cluster2_stage4",
    _P + "_cluster2_tma_store_stage4",
    "hgemm_wgmma_m64n256k16_bt_persistent_cluster2_stage4",
]
TOP = [_P + "_cluster2_tma_store_stage4", _P + "_cluster2_tma_store_stage4_bf16",
       "hgemm_wgmma_m64n256k16_bt_persistent_cluster2_stage4",
       "hgemm_wgmma_m64n256k16_bt_persistent_cluster2_stage4_bf16",
       "hgemm_wgmma_tf32_m64n256k8_persistent_cluster2_stage4"]
H100 = DeviceInfo(cc=90, sms=132, smem_optin=232448)


def _family():
    return variants(family="hgemm_wgmma")


def test_ladder_is_registered_in_order():
    names = [v.name for v in _family()]
    assert [n for n in names if n in LADDER] == LADDER


def test_aliases():
    fast = get_variant("hgemm_wgmma_fast")
    assert fast.family == "hgemm_wgmma" and fast.dtype_in == "float16" and fast.multiple_of == (1, 8, 8)
    assert get_variant("hgemm_wgmma_fast_bf16").dtype_in == "bfloat16"
    tf = get_variant("hgemm_wgmma_tf32_fast")
    assert tf.dtype_in == "float32" and tf.math_dtype == "tfloat32"


@pytest.mark.parametrize("v", _family(), ids=lambda v: v.name)
def test_record(v):
    p = v.param_dict
    assert v.archs == ("sm_90a",) and v.math == "wgmma" and v.align == 16 and v.seed == "cugemm"
    assert v.source.startswith("hgemm_wgmma/") and v.template.startswith("hgemm_wgmma_")
    assert v.dtype_out == v.dtype_in and v.dtype_acc == "float32"
    if v.dtype_in == "float32":  # the TF32 sibling: rounded by the copy engine, any M, 16-byte rows
        assert v.math_dtype == "tfloat32" and v.template == "hgemm_wgmma_tf32"
        assert v.tile == (256, 128, 32) and v.block == (384, 1, 1) and v.multiple_of == (1, 4, 4)
        assert v.cluster == (p["CLUSTER_N"], 1, 1)
        assert v.smem_dynamic == hgemm_wgmma.tf32_smem_bytes(p["STAGES"])
        assert ("_cluster2" in v.name) == (p["CLUSTER_N"] == 2)
        return
    assert p["T"] == hgemm_wgmma.CTYPES[v.dtype_in]
    assert v.name.endswith("_bf16") == (v.dtype_in == "bfloat16")
    assert f"_stage{p['STAGES']}" in v.name
    if v.template == "hgemm_wgmma_persistent_bt":  # C^T = B^T A^T: 256 x 128 tiles, clusters along N
        assert v.tile == (256, 128, 64) and v.block == (384, 1, 1) and v.multiple_of == (1, 8, 8)
        assert v.cluster == (p["CLUSTER_N"], 1, 1) and ("_cluster2" in v.name) == (p["CLUSTER_N"] == 2)
        assert v.smem_dynamic == hgemm_wgmma.persistent_bt_smem_bytes(p["STAGES"])
        return
    assert f"n{p['BN']}k16" in v.name and v.tile == (128, p["BN"], 64)
    if v.template == "hgemm_wgmma_persistent":
        assert v.block == (384, 1, 1) and v.multiple_of == (1, 8, 8)
        assert v.cluster == (p["CLUSTER_M"], 1, 1)
        assert ("_cluster2" in v.name) == (p["CLUSTER_M"] == 2)
        assert ("_tma_store" in v.name) == p["TMA_STORE"]
        assert v.smem_dynamic == hgemm_wgmma.persistent_smem_bytes(p["BN"], p["STAGES"], p["TMA_STORE"])
    else:
        assert v.multiple_of == v.tile and v.cluster == (1, 1, 1)
        assert v.smem_dynamic == hgemm_wgmma.ring_smem_bytes(128, p["BN"], p["STAGES"])
        threads = 128 * (p["CONSUMERS"] + 1) if v.template == "hgemm_wgmma_ws" else 256
        assert v.block == (threads, 1, 1)
    assert v.smem_dynamic <= 232448  # one block per SM on sm_90


def test_one_template_per_rung_file():
    by_template = {}
    for v in _family():
        by_template.setdefault(v.template, set()).add(v.source)
    assert all(len(s) == 1 for s in by_template.values())
    assert set(by_template) == {"hgemm_wgmma_cpasync", "hgemm_wgmma_tma", "hgemm_wgmma_ws",
                                "hgemm_wgmma_persistent", "hgemm_wgmma_persistent_bt", "hgemm_wgmma_tf32"}


def test_every_fp16_top_rung_has_a_bf16_sibling():
    names = {v.name for v in _family()}
    for n in (_P + "_stage4", _P + "_cluster2_stage4", _P + "_cluster2_tma_store_stage4",
              "hgemm_wgmma_m64n256k16_bt_persistent_cluster2_stage4",
              "hgemm_wgmma_m64n256k16_bt_persistent_stage4"):
        assert n + "_bf16" in names


@pytest.mark.parametrize("name", [_P + "_stage4", _P + "_cluster2_tma_store_stage4",
                                  "hgemm_wgmma_m64n256k16_bt_persistent_cluster2_stage4",
                                  "hgemm_wgmma_tf32_m64n256k8_persistent_cluster2_stage4"])
def test_persistent_grid(name):
    v = get_variant(name)
    cl = v.cluster[0]
    for M, N, K in [(4096, 4096, 4096), (8192, 8192, 8192), (1, 8, 8), (129, 264, 72), (300, 4100, 64)]:
        g = v.grid(M, N, K, H100)
        assert g[1] == g[2] == 1 and g[0] % cl == 0 and cl <= g[0] <= 132
        tm, tn = -(-M // v.tile[0]), -(-N // v.tile[1])
        ctiles = (-(-tm // cl) * tn) if v.template == "hgemm_wgmma_persistent" else (tm * -(-tn // cl))
        assert g[0] == min(ctiles, 132 // cl) * cl  # one block per SM, never more than the tiles need
    assert v.grid(8192, 8192, 8192, DeviceInfo(90, 114, 232448))[0] == 114 // cl * cl  # H100 PCIe


def test_shape_rules():
    v = get_variant("hgemm_wgmma_fast")
    v.check_shape(1, 8, 8)
    v.check_shape(4095, 4104, 1016)
    with pytest.raises(ValueError, match="N=12 is not a multiple of 8"):
        v.check_shape(16, 12, 64)
    with pytest.raises(ValueError, match="K=20 is not a multiple of 8"):
        v.check_shape(16, 16, 20)
    get_variant("hgemm_wgmma_tf32_fast").check_shape(7, 4, 12)
    with pytest.raises(ValueError, match="M=64 is not a multiple of 128"):
        get_variant("hgemm_wgmma_m64n128k16_tma_stage4").check_shape(64, 128, 64)


class _Fake:
    def __init__(self, shape, typestr, ptr, strides=None):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (ptr, False),
                                         "strides": strides, "version": 3}


def test_tma_arguments_refused_before_launch():
    """A stride TMA cannot describe is a ValueError from the variant's args_fn, before any encode."""
    v = get_variant("hgemm_wgmma_fast")
    A = describe(_Fake((64, 24), "<f2", 0x7F0000000000, (52, 2)), "A", v.name)  # rows 52 bytes apart
    B = describe(_Fake((24, 64), "<f2", 0x7F0000100000), "B", v.name)
    C = describe(_Fake((64, 64), "<f2", 0x7F0000200000), "out", v.name)
    with pytest.raises(ValueError, match="not a multiple of 16"):
        v.extra_args(A, B, C, 64, 64, 24)
    A = describe(_Fake((64, 24), "<f2", 0x7F0000000008), "A", v.name)  # 8-byte aligned
    with pytest.raises(ValueError, match="16-byte aligned"):
        v.extra_args(A, B, C, 64, 64, 24)


# ---- SASS: the top variants are Hopper kernels ---------------------------------------------------
def _sass(v) -> str:
    """The disassembly of the variant's NVRTC cubin for sm_90a (jit.disassemble pads the cubin
    CuPy's getCUBIN shortens by a byte)."""
    return jit.disassemble(jit.compile_offline(v, "sm_90a").cubin)


@pytest.mark.parametrize("name", TOP)
def test_top_variants_are_hopper_kernels(name):
    if toolkit.find_tool("cuobjdump") is None:
        pytest.skip("no cuobjdump on PATH, in the CUDA toolkit or in the nvidia-cuda-cuobjdump wheel")
    v = get_variant(name)
    sass = _sass(v)
    assert re.search(r"\bHGMMA\.64x256x", sass), "no wgmma m64n256 (HGMMA.64x256...) in the SASS"
    if v.template == "hgemm_wgmma_persistent_bt":
        assert "STSM.16.MT88.4" in sass, "the transposing epilogue without stmatrix.trans"
    assert re.search(r"\bUTMALDG\.2D\b", sass), "no TMA load (UTMALDG) in the SASS"
    assert "USETMAXREG" in sass, "no setmaxnreg (USETMAXREG) in the SASS"
    assert "SYNCS.PHASECHK" in sass, "no mbarrier wait in the SASS"
    if v.cluster[0] > 1:
        assert "UTMALDG.2D.MULTICAST" in sass, "a cluster variant without TMA multicast"
    if v.param_dict.get("TMA_STORE") or v.template == "hgemm_wgmma_persistent_bt":
        assert "UTMASTG.2D" in sass, "a TMA-store epilogue without UTMASTG"
