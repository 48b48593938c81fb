"""The Hopper split-K rung (kernels/hgemm_wgmma/07_splitk.cu, cugemm/families/hgemm_wgmma_splitk.py,
its plan in cugemm/splitk.py):
records, the split plan (every tile and K-tile covered exactly once by the kernel's work list, the
workspace the launch allocates big enough for it), and the SASS of a real Hopper kernel. No GPU.

The _bcol forms (B_COL: B read column-major, the x @ W.T of a linear layer): records that differ
from their row-major siblings only there, B's tensor map of the N x K memory of W, and wgmmas
without the B transpose in their SASS."""
import dataclasses
import functools
import re

import numpy as np
import pytest

from cugemm import jit, rules, splitk, tma_args, toolkit
from cugemm.launch import check_operands, describe
from cugemm.registry import get_variant, variants
from cugemm.device import Device
from cugemm.workspace import Work

ROW = ["hgemm_wgmma_m64n256k16_splitk_stage4", "hgemm_wgmma_m64n128k16_splitk_stage6",
       "hgemm_wgmma_m64n256k16_splitk_stage4_bf16", "hgemm_wgmma_m64n128k16_splitk_stage6_bf16"]
BCOL = ["hgemm_wgmma_m64n256k16_splitk_stage4_bcol", "hgemm_wgmma_m64n128k16_splitk_stage6_bcol",
        "hgemm_wgmma_m64n256k16_splitk_stage4_bcol_bf16", "hgemm_wgmma_m64n128k16_splitk_stage6_bcol_bf16"]
NAMES = ROW + BCOL


def _row_sibling(name: str) -> str:
    return name.replace("_bcol", "")


def splitk_smem(bn: int, stages: int) -> int:
    """07_splitk.cu's shared memory, written out from the kernel's layout (checked here against the
    record's smem_dynamic, which cugemm/tables/smem.json reads from the PTX): a ring of STAGES 128 x 64
    A and 64 x bn B 16-bit tiles, plus 1024 bytes of alignment slack."""
    return stages * (128 + bn) * 128 + 1024


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
    assert list(p) == ["BN", "STAGES", "GROUP", "B_COL", "T"]
    assert v.tile == (128, p["BN"], 64) and v.block == (384, 1, 1) and v.cluster == (1, 1, 1)
    assert v.multiple_of == (1, 8, 8) and v.align == 16 and v.archs == ("sm_90a",)
    assert v.a_layout == "row" and not v.strided
    assert ("_bcol" in v.name) == p["B_COL"] == (v.b_layout == "col")
    assert v.dtype_in == v.dtype_out and v.dtype_acc == "float32" and v.math == "wgmma"
    assert v.name.endswith("_bf16") == (v.dtype_in == "bfloat16")
    assert f"n{p['BN']}k16" in v.name and f"_stage{p['STAGES']}" in v.name
    assert v.smem_dynamic == splitk_smem(p["BN"], p["STAGES"]) <= 232448


def _units(M, N, K, bn, sms):
    """The kernel's work list (unit_of in 07_splitk.cu), per block in walk order."""
    dp, S, grid = splitk.plan(M, N, K, bn, sms)
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
    """The slots and counters splitk.args asks for hold every slot and counter index the kernel forms."""
    for M, N, K in SHAPES:
        dp, S, grid, T, kt, units = _units(M, N, K, bn, 132)
        split_tiles = T - dp if S > 1 else 0
        floats, counters = split_tiles * S * 128 * bn, 2 * split_tiles
        for tile, s, k0, k1, q, split in units:
            if split:
                assert (q + 1) * 128 * bn <= floats and 2 * (q // S) + 1 < counters


def test_splits_where_tiles_do_not_fill_the_gpu():
    # M = 128 tokens against a 4096 x 4096 weight: 16 tiles of 128 x 256 on 132 SMs
    dp, S, grid = splitk.plan(128, 4096, 4096, 256, 132)
    assert dp == 0 and S > 1 and grid > 16
    # a product with many tiles runs whole tiles in full waves
    dp, S, grid = splitk.plan(4096, 4096, 4096, 256, 132)
    assert dp == 512 and S == 1 and grid == 132
    assert splitk.plan(1, 8, 8, 256, 132) == (1, 1, 1)


def test_grid_fn():
    v = get_variant(NAMES[0])
    assert v.grid(128, 4096, 4096, H100) == (splitk.plan(128, 4096, 4096, 256, 132)[2], 1, 1)
    assert v.grid(8192, 8192, 8192, Device(90, 114, 232448)) == (114, 1, 1)


@functools.lru_cache(maxsize=None)
def _sass(name: str) -> str:
    """The disassembly of the variant's NVRTC cubin for sm_90a (one compile per name per run)."""
    return jit.disassemble(jit.compile_offline(get_variant(name), "sm_90a").cubin)


def _need_cuobjdump():
    if toolkit.find_tool("cuobjdump") is None:
        pytest.skip("no cuobjdump on PATH, in the CUDA toolkit or in the nvidia-cuda-cuobjdump wheel")


@pytest.mark.parametrize("name", ROW[:2] + BCOL[:2])
def test_sass_is_a_hopper_split_k_kernel(name):
    _need_cuobjdump()
    v = get_variant(name)
    sass = _sass(name)
    assert re.search(rf"\bHGMMA\.64x{v.param_dict['BN']}x16", sass)
    assert re.search(r"\bUTMALDG\.2D\b", sass) and "USETMAXREG" in sass and "SYNCS.PHASECHK" in sass
    assert re.search(r"\bATOMG?\.E\.ADD|\bATOMG\.", sass) or "RED." in sass, "no counter atomic"
    assert "MEMBAR" in sass, "no fence before the arrival"
    assert "LDL" not in sass and "STL" not in sass


# ---- the _bcol forms: B read column-major (x @ W.T) ---------------------------------------------------
@pytest.mark.parametrize("name", BCOL)
def test_bcol_form_is_its_row_siblings_record_but_for_b(name):
    """Each _bcol form is its row-major sibling (the name without _bcol) with B_COL on and B 'col':
    the same tile, stages, shared memory, shape rules, grid, plan and workspace."""
    v, row = get_variant(name), get_variant(_row_sibling(name))
    bf = "_bf16" if row.name.endswith("_bf16") else ""
    assert row.name in ROW and name == row.name.removesuffix(bf) + "_bcol" + bf  # _bcol before _bf16
    assert v.param_dict == {**row.param_dict, "B_COL": True} and row.param_dict["B_COL"] is False
    assert (v.a_layout, v.b_layout, row.b_layout) == ("row", "col", "row")
    same = {f.name for f in dataclasses.fields(v) if f.compare} - {"name", "params", "b_layout", "doc"}
    for f in sorted(same):
        assert getattr(v, f) == getattr(row, f), f
    assert v.args_fn is row.args_fn and v.grid_fn is row.grid_fn and v.workspace_fn is row.workspace_fn
    assert v.name_expression == row.name_expression.replace(", false, ", ", true, ")


BASE = 0x7F0000000000
WORK = Work(0x7F4000000000, 0x7F5000000000)


def _operands(fake, M, N, K, b_col, size=2):
    """Fake dense operands: A (M x K row-major), B (K x N: row-major, or 'col': W.T of a row-major
    N x K W), C (M x N row-major)."""
    a = fake((M, K), "<f2", BASE, (K * size, size))
    b = fake((K, N), "<f2", BASE + 2**30, (size, K * size) if b_col else (N * size, size))
    c = fake((M, N), "<f2", BASE + 2**31, (N * size, size))
    return a, b, c


@pytest.mark.parametrize("name", BCOL[:2])
@pytest.mark.parametrize("shape", [(200, 1000, 776), (128, 4096, 4096), (1, 4096, 11008)])
def test_bcol_maps(fake_encode, fake, name, shape):
    """B's map describes the N x K memory of W (rows N, columns K, rows K * 2 bytes apart: TMA's
    16-byte rule is K % 8 == 0) in boxes {64 k, 64 n}; A's is the row-major form's; then the
    workspace, dp_tiles and splits of the plan, as for the row-major sibling."""
    v, row = get_variant(name), get_variant(_row_sibling(name))
    M, N, K = shape
    a, b, c = _operands(fake, M, N, K, b_col=True)
    A, B, C = (describe(x, w, v.name) for x, w in ((a, "A"), (b, "B"), (c, "out")))
    assert check_operands(v, A, B, C) == (M, N, K)
    args = v.extra_args(A, B, C, M, N, K, work=WORK, dev=H100)
    assert len(args) == 6 and len(fake_encode) == 2
    sa, sb = args[0][1], args[1][1]
    assert (sa.ptr, sa.rows, sa.cols, sa.row_stride, sa.box, sa.swizzle) == (BASE, M, K, 2 * K, (64, 128), 128)
    assert (sb.ptr, sb.rows, sb.cols, sb.row_stride, sb.box, sb.swizzle) == (BASE + 2**30, N, K, 2 * K, (64, 64),
                                                                             128)
    assert sa.dtype == sb.dtype == v.dtype_in
    dp, S, _ = splitk.plan(M, N, K, v.tile[1], H100.sms)
    assert [int(x) for x in args[2:]] == [WORK.partials, WORK.counters, dp, S]
    assert isinstance(args[2], np.uint64) and isinstance(args[4], np.int32)
    assert v.extra_args(A, B, C, M, N, K, work=WORK, dev=H100) is not None and len(fake_encode) == 2  # cached

    # the row-major sibling on a row-major B of the same shape: (K, N) memory, boxes {64 n, 64 k}
    a, b, c = _operands(fake, M, N, K, b_col=False)
    A, B, C = (describe(x, w, row.name) for x, w in ((a, "A"), (b, "B"), (c, "out")))
    rargs = row.extra_args(A, B, C, M, N, K, work=WORK, dev=H100)
    rb = rargs[1][1]
    assert (rb.rows, rb.cols, rb.row_stride, rb.box) == (K, N, 2 * N, (64, 64))
    assert rargs[0][1] == sa and [int(x) for x in rargs[2:]] == [int(x) for x in args[2:]]


@pytest.mark.parametrize("name", BCOL[2:])
def test_bcol_maps_bf16(fake_encode, fake, name):
    """The bf16 forms' maps (built from fp16-described fake operands: the maps function reads only
    their addresses and strides): the fp16 forms' geometry with BFLOAT16 elements."""
    v = get_variant(name)
    M, N, K = 200, 1000, 776
    a, b, c = _operands(fake, M, N, K, b_col=True)
    A, B, C = (describe(x, w, v.name) for x, w in ((a, "A"), (b, "B"), (c, "out")))
    sa, sb = (m.spec for m in tma_args.maps_ab(v, A, B, C, M, N, K))
    assert (sa.rows, sa.cols, sa.row_stride, sa.box) == (M, K, 2 * K, (64, 128))
    assert (sb.ptr, sb.rows, sb.cols, sb.row_stride, sb.box) == (BASE + 2**30, N, K, 2 * K, (64, 64))
    assert sa.dtype == sb.dtype == "bfloat16"
    assert v.args_fn is rules.ARGS["splitk"] is splitk.args  # the launch's args_fn: these maps, cached
    args = v.extra_args(A, B, C, M, N, K, work=WORK, dev=H100)
    assert [x[1] for x in args[:2]] == [sa, sb]


@pytest.mark.parametrize("name", BCOL[:2])
def test_bcol_layout_rules(fake, name):
    """A _bcol form takes only a column-major B (W.T) and its row-major sibling only a row-major one;
    K must keep 16-byte rows of W (K % 8 == 0)."""
    v, row = get_variant(name), get_variant(_row_sibling(name))
    a, b, c = _operands(fake, 200, 1000, 776, b_col=True)
    A, B, C = (describe(x, w, v.name) for x, w in ((a, "A"), (b, "B"), (c, "out")))
    with pytest.raises(ValueError, match="B must be C-contiguous"):
        check_operands(row, A, B, C)
    a, b, c = _operands(fake, 200, 1000, 776, b_col=False)
    A, B, C = (describe(x, w, v.name) for x, w in ((a, "A"), (b, "B"), (c, "out")))
    with pytest.raises(ValueError, match="B must be F-contiguous"):
        check_operands(v, A, B, C)
    with pytest.raises(ValueError, match="16-byte aligned"):
        v.check_shape(200, 1000, 772)


@pytest.mark.parametrize("name", BCOL[:2] + BCOL[3:])
def test_bcol_sass_has_no_transposed_b(name):
    """B_COL's B tile is K-major: every HGMMA of the _bcol form is its sibling's without .tnspB (which
    every HGMMA of the row-major form carries), at the same width and count; the same TMA loads and
    split-K machinery; no local memory."""
    _need_cuobjdump()
    v = get_variant(name)
    bn = v.param_dict["BN"]
    col_sass, row_sass = _sass(name), _sass(_row_sibling(name))
    col = [line for line in col_sass.splitlines() if "HGMMA." in line]
    row = [line for line in row_sass.splitlines() if "HGMMA." in line]
    assert col and len(col) == len(row)
    assert all(re.search(rf"\bHGMMA\.64x{bn}x16\.F32", line) for line in col + row)
    assert not any(".tnspB" in line for line in col), "B_COL's B tile is K-major: no transposed-B wgmma"
    assert all(".tnspB" in line for line in row), "the row-major B tile is N-major: wgmma transposes B"
    assert not any(".tnspA" in line for line in col + row), "A is K-major in both"
    count = lambda sass, pat: len(re.findall(pat, sass))  # noqa: E731
    assert count(col_sass, r"\bUTMALDG\.2D\b") == count(row_sass, r"\bUTMALDG\.2D\b") > 0
    assert "USETMAXREG" in col_sass and "MEMBAR" in col_sass and "LDL" not in col_sass and "STL" not in col_sass
