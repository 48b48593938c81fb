"""The Hopper wgmma family: the ladder is registered in order with the record fields its
kernels need, the top rungs really are Hopper kernels (the SASS of their NVRTC cubins holds HGMMA
and UTMALDG: a silent fallback to another instruction cannot pass), the persistent grids fit the
GPU, and TMA arguments are refused before launch when TMA cannot describe the operands. No GPU
needed (the SASS test needs cuobjdump: the toolkit's or the nvidia-cuda-cuobjdump wheel).

Issue 13's forms of the top rung: transposed operands read without a copy (A_COL, B_COL), any shape
and leading dimension (strided), and the ANY_C sibling for a C that TMA cannot store; their tensor
maps (or C's row stride) are built from the operands' true strides."""
import re

import numpy as np
import pytest

from cugemm import jit, tma_args, toolkit
from cugemm.families import hgemm_wgmma
from cugemm.launch import check_operands, describe
from cugemm.registry import get_variant, variants
from cugemm.device import Device

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
H100 = Device(cc=90, sms=132, smem_optin=232448)
CTYPES = {"float16": "half", "bfloat16": "__nv_bfloat16"}  # the kernels' element type argument T

# The kernels' shared-memory layouts (kernels/hgemm_wgmma/*.cu), written out here so that the record's
# smem_dynamic (cugemm/tables/smem.json, read from the compiled PTX) is checked against an independent
# number: 16-bit tiles are 64 k wide (128 bytes a row), plus 1024 bytes of alignment slack (the
# 1024-byte swizzle atoms).
SLACK = 1024
STAGING = 2 * 2 * 64 * 128  # the TMA-store epilogue: two 64 x 64 staging boxes of C per consumer warpgroup


def ring_smem(bm: int, bn: int, stages: int) -> int:
    """Rungs 1-4: a ring of STAGES (A bm x 64, B 64 x bn) tiles."""
    return stages * (bm + bn) * 128 + SLACK


def persistent_smem(bm: int, bn: int, stages: int, tma_store: bool, any_c: bool, epi_boxes: int = 2) -> int:
    """04_persistent.cu: the ring of bm x 64 A and 64 x bn B tiles, the staging boxes of the TMA-store
    epilogue (epi_boxes per consumer warpgroup, bm / 64 of them), or ANY_C's two whole staged slabs
    (64 x bn each; the STAGED form, ANY_C with TMA stores, too: its stores read the slabs)."""
    staging = STAGING * bm // 128 * epi_boxes // 2 if tma_store and not any_c else 0
    return stages * (bm + bn) * 128 + staging + (2 * 64 * bn * 2 if any_c else 0) + SLACK


def persistent_bt_smem(stages: int) -> int:
    """06_persistent_bt.cu: 256 x 64 A and 64 x 128 B tiles per stage, the staging boxes."""
    return stages * (256 + 128) * 128 + STAGING + SLACK


def tf32_smem(stages: int, bm: int = 256) -> int:
    """05_tf32.cu: bm x 32 A and 32 x 128 B float tiles per stage."""
    return stages * (bm * 128 + 4 * 32 * 128) + SLACK


def small_m_smem(bn: int, stages: int) -> int:
    """08_small_m.cu: a ring of 64 x 64 A and 64 x bn B tiles."""
    return stages * (64 + bn) * 128 + SLACK


def _family():
    """This family's table (another file may register rungs under the same family name)."""
    mine = {v.name for v in hgemm_wgmma.VARIANTS}
    return [v for v in variants(family="hgemm_wgmma") if v.name in mine]


FORMS = {"_acol": ("col", "row"), "_bcol": ("row", "col"), "_acol_bcol": ("col", "col")}


def test_ladder_is_registered_in_order():
    names = [v.name for v in _family()]
    assert [n for n in names if n in LADDER] == LADDER


def test_aliases():
    fast = get_variant("hgemm_wgmma_fast")
    assert fast.family == "hgemm_wgmma" and fast.dtype_in == "float16" and fast.multiple_of == (1, 8, 1)
    assert fast.strided and fast.a_layout == fast.b_layout == "row" and fast.c_align == 16
    assert get_variant("hgemm_wgmma_fast_bf16").dtype_in == "bfloat16"
    for bf in ("", "_bf16"):
        for suffix, (la, lb) in FORMS.items():
            v = get_variant("hgemm_wgmma_fast" + suffix + bf)
            assert v.name == _P + "_cluster2_tma_store_stage4" + suffix + bf
            assert (v.a_layout, v.b_layout, v.c_align) == (la, lb, 16)
        for suffix, (la, lb) in [("", ("row", "row")), *FORMS.items()]:
            v = get_variant("hgemm_wgmma_fast_anyc" + suffix + bf)
            assert v.name == _P + "_cluster2_anyc_stage3" + suffix + bf
            assert (v.a_layout, v.b_layout, v.c_align, v.strided) == (la, lb, 2, True)
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
        # a column-major B (W of x @ W.T) has rows of K: any N
        assert v.tile == (p["BM"], 128, 32) and v.block == (384, 1, 1) and f"_m64n{p['BM']}k8_" in v.name
        assert v.multiple_of == ((1, 1, 4) if p["B_COL"] else (1, 4, 4))
        assert ("_bcol" in v.name) == p["B_COL"] == (v.b_layout == "col")
        assert ("_batched" in v.name or "_grouped" in v.name) == p["BATCHED"] == v.batched
        assert ("_grouped" in v.name) == (p["GROUPS"] == 1024)
        assert v.cluster == (p["CLUSTER_N"], 1, 1)
        assert v.smem_dynamic == tf32_smem(p["STAGES"], p["BM"])
        assert ("_cluster2" in v.name) == (p["CLUSTER_N"] == 2)
        return
    assert p["T"] == CTYPES[v.dtype_in]
    assert v.name.endswith("_bf16") == (v.dtype_in == "bfloat16")
    assert f"_stage{p['STAGES']}" in v.name
    if v.template == "hgemm_wgmma_persistent_bt":  # C^T = B^T A^T: 256 x 128 tiles, clusters along N
        assert v.tile == (256, 128, 64) and v.block == (384, 1, 1) and v.multiple_of == (1, 8, 8)
        assert v.cluster == (p["CLUSTER_N"], 1, 1) and ("_cluster2" in v.name) == (p["CLUSTER_N"] == 2)
        assert v.smem_dynamic == persistent_bt_smem(p["STAGES"])
        return
    if v.template == "hgemm_wgmma_small_m":  # rung 10: 64-row tiles, one consumer warpgroup + a producer warp
        assert f"_m64n{p['BN']}k16_small_m" in v.name and v.tile == (64, p["BN"], 64)
        assert v.block == (160, 1, 1) and v.multiple_of == (1, 8, 8) and not v.strided
        assert v.cluster == (p["CLUSTER"], 1, 1)
        # whole 32-column panels; the fitted widths (any multiple of 8) are x @ W.T forms without clusters
        assert p["BN"] % 32 == 0 or (p["BN"] % 8 == 0 and p["B_COL"] and p["CLUSTER"] == 1 and "_bcol" in v.name)
        side = "" if p["CLUSTER"] == 1 else f"_cluster{p['CLUSTER']}{'m' if p['ALONG_M'] else 'n'}"
        assert f"small_m{side}_stage" in v.name
        assert v.smem_dynamic == small_m_smem(p["BN"], p["STAGES"])
        return
    bm = p.get("BM", 128)
    assert f"n{p['BN']}k16" in v.name and v.tile == (bm, p["BN"], 64)
    if v.template == "hgemm_wgmma_persistent":
        # 192-row tiles: three consumer warpgroups, TMA-store forms of at most 192 columns
        assert bm in (128, 192) and v.block == (128 + 2 * bm, 1, 1) and ("_wg3" in v.name) == (bm == 192)
        assert bm == 128 or (p["TMA_STORE"] and p["BN"] <= 192 and not p["A_COL"])
        assert v.cluster == (p["CLUSTER_M"], 1, 1)
        assert ("_cluster2" in v.name) == (p["CLUSTER_M"] == 2)
        staged = p["ANY_C"] and p["TMA_STORE"]  # the STAGED form: ANY_C's slabs, TMA-stored
        bounded = p["ANY_C"] and not p["TMA_STORE"]  # ANY_C's bounded stores: any C
        assert ("_tma_store" in v.name) == (p["TMA_STORE"] and not staged) and ("_anyc" in v.name) == bounded
        assert ("_tma_staged" in v.name) == staged
        assert not staged or (bm == 128 and p["CLUSTER_M"] == 2 and not p["BATCHED"] and not p["PINGPONG"]
                              and v.matmul is None)  # fused epilogues only (cugemm.epilogue.fused_plan)
        assert ("_acol" in v.name) == p["A_COL"] == (v.a_layout == "col")
        assert ("_bcol" in v.name) == p["B_COL"] == (v.b_layout == "col")
        assert v.layout == "row" and v.c_align == (2 if bounded else 16)
        # the operand forms (and rung 7 itself) take any shape and leading dimension
        # (the ladder's 128x256 sibling without clusters keeps its tile multiples)
        fitted = p["BN"] % 64 != 0  # a fitted width: x @ W.T, TMA stores, dense operands (C's rows are N apart)
        assert not fitted or (p["B_COL"] and p["TMA_STORE"] and not p["A_COL"] and p["BN"] % 16 == 0)
        assert v.strided == (not fitted and (p["TMA_STORE"] and (p["CLUSTER_M"] == 2 or p["BN"] < 256 or p["BATCHED"])
                                             or p["ANY_C"]))
        # TMA stores write a row's last 16-byte piece whole: their C rows must end on 16 bytes
        assert v.multiple_of == ((1, 1, 1) if bounded else (1, 8, 1) if v.strided else (1, 8, 8))
        # the edge-tile wgmma widths are a 256-column tile's (BN = 64, 128, 192 have no NARROW_EDGE, their
        # _bcol forms included); every batched form of 256 columns has them
        assert p["NARROW_EDGE"] == ((p["A_COL"] or p["B_COL"] or p["ANY_C"] or p["BATCHED"]) and p["BN"] == 256)
        # more than two staging boxes: the batched forms only, whose small-K products the C store bounds
        assert (p["EPI_BOXES"] == 2) == (("_epi%d" % p["EPI_BOXES"]) not in v.name) and (p["EPI_BOXES"] == 2 or p["BATCHED"])
        assert p["BATCHED"] == v.name.endswith(("_batched", "_batched_bf16", "_grouped", "_grouped_bf16"))
        # the grouped forms: the batched form's B and dynamic walk (no clusters) over groups of A's rows
        assert (p["GROUPS"] > 0) == v.name.endswith(("_grouped", "_grouped_bf16"))
        assert not p["GROUPS"] or (not p["A_COL"] and v.matmul is None
                                   and v.workspace_rule == ("dynamic_walk" if p["CLUSTER_M"] == 1 else "")
                                   and (f"_g{p['GROUPS']}_" in v.name) == (p["GROUPS"] < 1024))
        assert v.smem_dynamic == persistent_smem(bm, p["BN"], p["STAGES"], p["TMA_STORE"], p["ANY_C"], p["EPI_BOXES"])
    else:
        assert v.multiple_of == v.tile and v.cluster == (1, 1, 1)
        assert v.smem_dynamic == ring_smem(128, p["BN"], p["STAGES"])
        threads = 128 * (p["CONSUMERS"] + 1) if v.template == "hgemm_wgmma_ws" else 256
        assert v.block == (threads, 1, 1)
    assert v.smem_dynamic <= 232448  # one block per SM on sm_90


def test_one_template_per_rung_file():
    by_template = {}
    for v in _family():
        by_template.setdefault(v.template, set()).add(v.source)
    assert all(len(s) == 1 for s in by_template.values())
    assert set(by_template) == {"hgemm_wgmma_cpasync", "hgemm_wgmma_tma", "hgemm_wgmma_ws",
                                "hgemm_wgmma_persistent", "hgemm_wgmma_persistent_bt", "hgemm_wgmma_tf32",
                                "hgemm_wgmma_small_m"}


# Rung 7's narrower tile forms (_tile_forms) and their _bcol forms (x @ W.T without a copy)
TILE_FORMS = {64: "hgemm_wgmma_m64n64k16_persistent_cluster2_tma_store_stage8",
              128: "hgemm_wgmma_m64n128k16_persistent_cluster2_tma_store_stage6",
              192: "hgemm_wgmma_m64n192k16_persistent_cluster2_tma_store_stage4"}


@pytest.mark.parametrize("bn", sorted(TILE_FORMS))
def test_tile_forms_have_bcol_forms(bn):
    """Each 128 x bn TMA-store form has a _bcol form in fp16 and bf16: the same kernel but for B_COL
    (no NARROW_EDGE, which is BN = 256's), registered right after the row-major pair, and a matmul
    candidate at its row-major sibling's nominal rate."""
    from cugemm import dtypes, select

    names = [v.name for v in _family()]
    base = TILE_FORMS[bn]
    assert names[names.index(base):names.index(base) + 4] == [base, base + "_bf16", base + "_bcol",
                                                              base + "_bcol_bf16"]
    for bf in ("", "_bf16"):
        row, col = get_variant(base + bf), get_variant(base + "_bcol" + bf)
        assert col.param_dict == {**row.param_dict, "B_COL": True} and col.param_dict["BN"] == bn
        assert not col.param_dict["NARROW_EDGE"]
        assert (col.a_layout, col.b_layout, col.c_align, col.strided) == ("row", "col", 16, True)
        for field in ("tile", "block", "cluster", "multiple_of", "smem_dynamic", "dtype_in", "source", "template"):
            assert getattr(col, field) == getattr(row, field), field
        dt = dtypes.get(col.dtype_in)
        (_, rate_row, kind_row), (_, rate_col, kind_col) = (select.fallback_row(v, dt, False) for v in (row, col))
        assert (rate_col, kind_col) == (rate_row, kind_row) == (rate_row, "persistent")


def test_every_fp16_top_rung_has_a_bf16_sibling():
    names = {v.name for v in _family()}
    for n in (_P + "_stage4", _P + "_cluster2_stage4", _P + "_cluster2_tma_store_stage4",
              "hgemm_wgmma_m64n256k16_bt_persistent_cluster2_stage4",
              "hgemm_wgmma_m64n256k16_bt_persistent_stage4"):
        assert n + "_bf16" in names


@pytest.mark.parametrize("name", [_P + "_stage4", _P + "_cluster2_tma_store_stage4",
                                  "hgemm_wgmma_m64n256k16_bt_persistent_cluster2_stage4",
                                  "hgemm_wgmma_tf32_m64n256k8_persistent_cluster2_stage4",
                                  "hgemm_mma_m16n8k16_mma2x4_warp4x8x4_stage3_persistent",
                                  "hgemm_mma_m16n8k16_mma2x4_warp4x8x4_stage3_persistent_cluster2"])
def test_persistent_grid(name):
    v = get_variant(name)
    cl = v.cluster[0]
    for M, N, K in [(4096, 4096, 4096), (8192, 8192, 8192), (1, 8, 8), (129, 264, 72), (300, 4100, 64)]:
        g = v.grid(M, N, K, H100)
        assert g[1] == g[2] == 1 and g[0] % cl == 0 and cl <= g[0] <= 132
        tm, tn = -(-M // v.tile[0]), -(-N // v.tile[1])
        ctiles = (-(-tm // cl) * tn) if v.template in ("hgemm_wgmma_persistent", "hgemm_mma_persistent") else (tm * -(-tn // cl))
        assert g[0] == min(ctiles, 132 // cl) * cl  # one block per SM, never more than the tiles need
    assert v.grid(8192, 8192, 8192, Device(90, 114, 232448))[0] == 114 // cl * cl  # H100 PCIe


def test_shape_rules():
    v = get_variant(_P + "_cluster2_stage4")
    v.check_shape(1, 8, 8)
    v.check_shape(4095, 4104, 1016)
    with pytest.raises(ValueError, match="N=12 is not a multiple of 8"):
        v.check_shape(16, 12, 64)
    with pytest.raises(ValueError, match="K=20 is not a multiple of 8"):
        v.check_shape(16, 16, 20)
    for name in ("hgemm_wgmma_fast", "hgemm_wgmma_fast_acol_bcol", "hgemm_wgmma_fast_anyc_bf16"):
        for shape in [(1, 8, 1), (17, 24, 9), (4095, 4104, 1023)]:
            get_variant(name).check_dims(*shape)  # strided: the leading dimensions carry the alignment
        with pytest.raises(ValueError, match="not a multiple of 16"):
            get_variant(name).check_shape(17, 24, 9)  # ... which dense operands of K = 9 do not
    for shape in [(1, 1, 1), (17, 23, 9), (4095, 4097, 1023)]:
        get_variant("hgemm_wgmma_fast_anyc_acol").check_dims(*shape)
        with pytest.raises(ValueError, match=r"N=\d+ is not a multiple of 8"):
            get_variant("hgemm_wgmma_fast_bcol").check_dims(*shape)
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


# ---- the operand forms' tensor maps, ANY_C's row stride, the launcher's rules ------------
BASE = 0x7F0000000000


def _ops(M, N, K, *, a_col=False, b_col=False, lda=None, ldb=None, ldc=None, c_off=0, size=2):
    """Fake operands: A (M x K), B (K x N), C (M x N) with leading dimensions in elements ('col':
    the transposed view of a row-major array with that row length)."""
    lda = lda or (M if a_col else K)
    ldb = ldb or (K if b_col else N)
    ldc = ldc or N
    a = _Fake((M, K), "<f2", BASE, (size, lda * size) if a_col else (lda * size, size))
    b = _Fake((K, N), "<f2", BASE + 2**30, (size, ldb * size) if b_col else (ldb * size, size))
    c = _Fake((M, N), "<f2", BASE + 2**31 + c_off, (ldc * size, size))
    return a, b, c


@pytest.mark.parametrize("suffix", ["", "_acol", "_bcol", "_acol_bcol"])
def test_maps_of_each_form(fake_encode, suffix):
    """4095 x 4096 x 1023 with leading dimensions padded to 16 bytes (and beyond): the maps describe the memory
    as it lies (a 'col' operand's rows are its columns) with the true extents (TMA zero-fills past
    them), boxes of what the kernel's tiles hold."""
    v = get_variant("hgemm_wgmma_fast" + suffix)
    M, N, K = 4095, 4096, 1023
    a_col, b_col = "acol" in suffix, "bcol" in suffix
    a, b, c = _ops(M, N, K, a_col=a_col, b_col=b_col, lda=4096 if a_col else 1024,
                   ldb=1024 if b_col else 4104, ldc=4104)
    A, B, C = (describe(x, w, v.name) for x, w in ((a, "A"), (b, "B"), (c, "out")))
    assert check_operands(v, A, B, C) == (M, N, K)
    args = v.extra_args(A, B, C, M, N, K)
    sa, sb, sc = (x[1] for x in args[:3])
    # one product (the batched form's count, divs and mods), no counters, no group ends (masked_m 0)
    assert args[3:11] == (1, 1, 1, 1, 1, 0, 0, 0)
    assert args[11:] == tma_args.epilogue_args()  # no fused epilogue: zero addresses, alpha 1, beta 0
    assert (sa.rows, sa.cols, sa.row_stride, sa.box) == ((K, M, 8192, (64, 64)) if a_col else
                                                         (M, K, 2048, (64, 128)))
    assert (sb.rows, sb.cols, sb.row_stride, sb.box) == ((N, K, 2048, (64, 64)) if b_col else
                                                         (K, N, 8208, (64, 64)))
    assert (sc.rows, sc.cols, sc.row_stride, sc.box) == (M, N, 8208, (64, 64))
    again = v.extra_args(A, B, C, M, N, K)  # the maps remembered per (operands, shape)
    assert all(x is y for x, y in zip(again[:-10], args[:-10])) and again[-10:-7] == args[-10:-7] == (0, 0, 0)


@pytest.mark.parametrize("bn", sorted(TILE_FORMS))
def test_maps_of_the_narrow_bcol_forms(fake_encode, bn):
    """The narrower tiles' _bcol forms: B's map describes the N x K memory of W (box {64 k, 64 n}: a
    tile of bn columns is bn / 64 such boxes, the 64-column tile one box), A's and C's are rung 7's."""
    v = get_variant(TILE_FORMS[bn] + "_bcol")
    M, N, K = 1000, 776, 520
    a, b, c = _ops(M, N, K, b_col=True, lda=528, ldb=536, ldc=784)
    A, B, C = (describe(x, w, v.name) for x, w in ((a, "A"), (b, "B"), (c, "out")))
    assert check_operands(v, A, B, C) == (M, N, K)
    sa, sb, sc = (x[1] for x in v.extra_args(A, B, C, M, N, K)[:3])
    assert (sa.rows, sa.cols, sa.row_stride, sa.box) == (M, K, 1056, (64, 128))
    assert (sb.rows, sb.cols, sb.row_stride, sb.box) == (N, K, 1072, (64, 64))
    assert (sc.rows, sc.cols, sc.row_stride, sc.box) == (M, N, 1568, (64, 64))
    with pytest.raises(ValueError, match="row-major|column-major|layout"):
        check_operands(get_variant(TILE_FORMS[bn]), A, B, C)  # the row-major form refuses W.T


@pytest.mark.parametrize("suffix", ["", "_acol_bcol"])
def test_any_c_gets_the_row_stride(fake_encode, suffix):
    """ANY_C: C may be 2-byte aligned with any row stride; its last argument is that stride in
    elements (no map of C is made); A and B still need 16-byte rows."""
    v = get_variant("hgemm_wgmma_fast_anyc" + suffix)
    M, N, K = 4095, 4097, 1023
    a_col, b_col = "acol" in suffix, "bcol" in suffix
    a, b, c = _ops(M, N, K, a_col=a_col, b_col=b_col, lda=4096 if a_col else 1024,
                   ldb=1024 if b_col else 4104, ldc=4097, c_off=2)
    A, B, C = (describe(x, w, v.name) for x, w in ((a, "A"), (b, "B"), (c, "out")))
    assert check_operands(v, A, B, C) == (M, N, K)
    args = v.extra_args(A, B, C, M, N, K)
    assert isinstance(args[2], np.int32) and int(args[2]) == 4097
    assert len(fake_encode) == 2
    with pytest.raises(ValueError, match="16-byte aligned|not a multiple of 16"):
        get_variant("hgemm_wgmma_fast" + suffix).extra_args(A, B, C, M, N, K)  # TMA cannot store this C


def test_one_row_and_one_column_operands(fake_encode):
    """1 x N x 1: a matrix of one memory row gets a 16-byte stride (TMA's rule even for a stride it
    never uses), whatever the operand reports."""
    for name, N in (("hgemm_wgmma_fast_acol_bcol", 8), ("hgemm_wgmma_fast_anyc", 1)):
        v = get_variant(name)
        a, b, c = _ops(1, N, 1, a_col="acol" in name, b_col="bcol" in name, lda=8, ldb=8)
        A, B, C = (describe(x, w, v.name) for x, w in ((a, "A"), (b, "B"), (c, "out")))
        assert check_operands(v, A, B, C) == (1, N, 1)
        args = v.extra_args(A, B, C, 1, N, 1)
        assert all(x[1].row_stride == 16 for x in args if isinstance(x, tuple))


@pytest.mark.parametrize("name", ["hgemm_wgmma_fast_acol", "hgemm_wgmma_fast_anyc_bcol_bf16"])
def test_new_forms_are_hopper_kernels(name):
    """The forms issue the narrow-edge wgmmas (n64 .. n256); ANY_C writes C with plain streaming
    stores (STG.E.EF: st.global.cs, 4 and 2 bytes) and no TMA store; the TMA-store forms keep UTMASTG."""
    if toolkit.find_tool("cuobjdump") is None:
        pytest.skip("no cuobjdump on PATH, in the CUDA toolkit or in the nvidia-cuda-cuobjdump wheel")
    v = get_variant(name)
    sass = _sass(v)
    for n in (64, 128, 192, 256):
        assert re.search(rf"\bHGMMA\.64x{n}x16\.F32", sass), f"no wgmma m64n{n} in the SASS"
    assert "UTMALDG.2D.MULTICAST" in sass and "USETMAXREG" in sass
    if v.param_dict["ANY_C"]:
        assert "UTMASTG" not in sass and "STG.E.EF.U16" in sass and re.search(r"\bSTG\.E\.EF\s", sass)
    else:
        assert "UTMASTG.2D" in sass


@pytest.mark.parametrize("name", [TILE_FORMS[64] + "_bcol", TILE_FORMS[128] + "_bcol_bf16", TILE_FORMS[192] + "_bcol"])
def test_narrow_bcol_forms_are_hopper_kernels(name):
    """The narrower tiles' _bcol forms issue wgmmas of their tile width with a K-major B (no .tnspB,
    which every row-major B form's HGMMA carries), B multicast to the cluster, TMA stores."""
    if toolkit.find_tool("cuobjdump") is None:
        pytest.skip("no cuobjdump on PATH, in the CUDA toolkit or in the nvidia-cuda-cuobjdump wheel")
    v = get_variant(name)
    bn = v.param_dict["BN"]
    sass = _sass(v)
    hgmma = [line for line in sass.splitlines() if "HGMMA." in line]
    assert hgmma and all(re.search(rf"\bHGMMA\.64x{bn}x16\.F32", line) for line in hgmma)
    assert not any(".tnspB" in line for line in hgmma), "B_COL's B tile is K-major: no transposed-B wgmma"
    assert "UTMALDG.2D.MULTICAST" in sass and "UTMASTG.2D" in sass and "USETMAXREG" in sass


# ---- rung 10's _bcol forms: x @ W.T without a copy, K-major B panels (08_small_m.cu, B_COL) -------
def _small_m_rows():
    return [v for v in _family() if v.template == "hgemm_wgmma_small_m" and not v.param_dict["B_COL"]]


def _bcol_name(name: str) -> str:
    """The _bcol sibling's name: `_bcol` before the dtype suffix (..._stage8_bcol, ..._stage8_bcol_bf16)."""
    return name[:-5] + "_bcol_bf16" if name.endswith("_bf16") else name + "_bcol"


SMALL_M_BCOL = [_bcol_name(v.name) for v in _small_m_rows()]


def test_small_m_forms_all_have_bcol_forms():
    """Every rung-10 form has a _bcol form in fp16 and bf16, registered right after its row-major pair;
    the row-major ones are B_COL = false, and no other rung-10 variant exists."""
    names = [v.name for v in _family()]
    rows = _small_m_rows()
    assert len(rows) >= 12 and len(SMALL_M_BCOL) == len(rows)
    for v in rows:
        if v.name.endswith("_bf16"):
            continue
        i = names.index(v.name)
        assert names[i:i + 4] == [v.name, v.name + "_bf16", v.name + "_bcol", v.name + "_bcol_bf16"]
    small = {v.name for v in _family() if v.template == "hgemm_wgmma_small_m"}
    fitted = {v.name for v in _family() if v.template == "hgemm_wgmma_small_m" and v.param_dict["BN"] % 32}
    assert small == {v.name for v in rows} | set(SMALL_M_BCOL) | fitted
    assert {64, 128} <= {get_variant(n).param_dict["BN"] for n in SMALL_M_BCOL}
    # the fitted widths: x @ W.T only, in fp16 and bf16
    assert {get_variant(n).param_dict["BN"] for n in fitted} == {40, 48, 80} and len(fitted) == 6
    assert all(get_variant(n).b_layout == "col" for n in fitted)


@pytest.mark.parametrize("row", _small_m_rows(), ids=lambda v: v.name)
def test_small_m_bcol_form_is_its_siblings_kernel_but_for_b(row):
    """The _bcol form is the row-major form's record with B_COL = true and b_layout 'col', nothing else:
    same tile, block, cluster, stages, shape rules, shared memory, grid, not strided (dense W), and a
    matmul candidate at its sibling's nominal rate (the same fallback row)."""
    from cugemm import dtypes, select

    col = get_variant(_bcol_name(row.name))
    assert row.param_dict["B_COL"] is False and (row.a_layout, row.b_layout) == ("row", "row")
    assert col.param_dict == {**row.param_dict, "B_COL": True}
    assert [n for n, _ in col.params] == [n for n, _ in row.params]  # the template's parameter order
    assert (col.a_layout, col.b_layout, col.layout) == ("row", "col", "row")
    for field in ("tile", "block", "cluster", "multiple_of", "smem_dynamic", "dtype_in", "dtype_out", "source",
                  "template", "strided", "align", "c_align", "max_m", "grid_fn", "archs", "math", "pdl"):
        assert getattr(col, field) == getattr(row, field), field
    assert col.args_fn.maps_fn is row.args_fn.maps_fn is tma_args.maps_small_m
    for shape in [(64, 4096, 4096), (100, 1000, 776), (512, 2304, 768)]:
        assert col.grid(*shape, H100) == row.grid(*shape, H100)
    dt = dtypes.get(col.dtype_in)
    (_, rate_row, kind_row), (_, rate_col, kind_col) = (select.fallback_row(v, dt, False) for v in (row, col))
    assert (rate_col, kind_col) == (rate_row, kind_row) == (rate_row, "stream")


@pytest.mark.parametrize("name", [n for n in SMALL_M_BCOL if not n.endswith("_bf16")])  # (fake fp16 operands)
@pytest.mark.parametrize("M", [100, 16])
def test_maps_of_the_small_m_bcol_forms(fake_encode, name, M):
    """B's map describes W's dense N x K memory (the 'col' B's rows are its columns): one box {64 k, BN n}
    of the K-major tile, BN / 2 n rows with clusters along M (each block multicasts its half of the
    tile), always the 128-byte swizzle; A's map is the row-major sibling's (M rounded up to 8 rows
    below 64; 32 rows with clusters along N)."""
    v = get_variant(name)
    p = v.param_dict
    N, K = 1000, 776
    a, b, c = _ops(M, N, K, b_col=True)
    A, B, C = (describe(x, w, v.name) for x, w in ((a, "A"), (b, "B"), (c, "out")))
    assert check_operands(v, A, B, C) == (M, N, K)
    sa, sb = (x[1] for x in v.extra_args(A, B, C, M, N, K)[:2])
    panel = 64 if p["BN"] % 64 == 0 else 32  # the row-major sibling's B panels
    n_rows = p["BN"] // 2 if p["CLUSTER"] == 2 and p["ALONG_M"] else p["BN"]
    assert (sb.rows, sb.cols, sb.row_stride, sb.box, sb.swizzle) == (N, K, 2 * K, (64, n_rows), 128)
    assert n_rows % 8 == 0 and sb.box[0] * 2 == 128  # whole 128-byte rows, whole 1024-byte swizzle atoms
    a_rows = 32 if p["CLUSTER"] == 2 and not p["ALONG_M"] else min(64, -(-M // 8) * 8)
    assert (sa.rows, sa.cols, sa.row_stride, sa.box, sa.swizzle) == (M, K, 2 * K, (64, a_rows), 128)
    assert len(fake_encode) == 2
    # the row-major sibling reads B as K x N (its own panels) and refuses W.T
    row = get_variant(name.replace("_bcol", ""))
    with pytest.raises(ValueError, match="row-major|column-major|layout"):
        check_operands(row, A, B, C)
    _, b_row, _ = _ops(M, N, K)
    rb = row.extra_args(A, describe(b_row, "B", row.name), C, M, N, K)[1][1]
    assert (rb.rows, rb.cols, rb.box, rb.swizzle) == (K, N, (panel, 32 if p["CLUSTER"] == 2 and p["ALONG_M"] else 64),
                                                       2 * panel)


def test_small_m_bcol_refuses_a_strided_w(fake_encode):
    """Rung 10 is not strided: W.T must be dense (W's rows K elements apart)."""
    v = get_variant(SMALL_M_BCOL[0])
    a, b, c = _ops(64, 1024, 512, b_col=True, ldb=520)
    A, B, C = (describe(x, w, v.name) for x, w in ((a, "A"), (b, "B"), (c, "out")))
    with pytest.raises(ValueError, match="column-major, dense"):
        check_operands(v, A, B, C)


@pytest.mark.parametrize("name", [n for n in SMALL_M_BCOL if not n.endswith("_bf16")]
                         + [n for n in SMALL_M_BCOL if n.endswith("_bf16")][:2])
def test_small_m_bcol_forms_are_hopper_kernels(name):
    """The _bcol forms issue wgmmas of the tile width with a K-major B: no .tnspB, which the row-major
    sibling's every HGMMA carries; TMA loads (multicast with clusters: B along M, A along N), one box
    of A and one of B (with clusters along M, the block's piece of the tile) per K-tile; no
    setmaxnreg (one consumer warpgroup and a producer warp)."""
    if toolkit.find_tool("cuobjdump") is None:
        pytest.skip("no cuobjdump on PATH, in the CUDA toolkit or in the nvidia-cuda-cuobjdump wheel")
    v = get_variant(name)
    p = v.param_dict
    bn = p["BN"]
    sass = _sass(v)
    hgmma = [line for line in sass.splitlines() if "HGMMA." in line]
    assert len(hgmma) == 4, "four k16 wgmmas per K-tile"
    assert all(re.search(rf"\bHGMMA\.64x{bn}x16\.F32", line) for line in hgmma)
    assert not any(".tnspB" in line or ".tnspA" in line for line in hgmma), "B_COL: K-major B, not transposed"
    row_hgmma = [line for line in _sass(get_variant(name.replace("_bcol", ""))).splitlines() if "HGMMA." in line]
    assert row_hgmma and all(".tnspB" in line for line in row_hgmma)
    assert "SYNCS.PHASECHK" in sass and "USETMAXREG" not in sass
    loads = re.findall(r"\bUTMALDG\.2D(\.MULTICAST)?\b", sass)
    assert len(loads) == 2
    multicast = sum(1 for m in loads if m)
    assert multicast == (0 if p["CLUSTER"] == 1 else 1)
