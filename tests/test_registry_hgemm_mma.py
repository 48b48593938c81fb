"""The mma.sync HGEMM family: the ladder is registered in order, every record agrees with
its kernel template (tile, block, shared memory, the rung flags its name spells), the bf16 siblings
mirror fp16 rungs, the any-shape rungs state the 16-byte row rule; the fast rungs' SASS is what the
family claims (HMMA.16816, ldmatrix, no local memory). GPU: the any-shape rungs on odd
shapes, NaN-poisoned, inside NaN guard zones."""
import re

import pytest

from cugemm import jit
from cugemm.registry import get_variant, variants

_H = "hgemm_mma_m16n8k16_"
_S = _H + "mma2x4_warp4x4x2_stage3"
LADDER = [
    _H + "naive",
    _H + "mma2x4_warp4x4",
    _H + "mma2x4_warp4x4_ldmatrix",
    _H + "mma2x4_warp4x4x2_stage2",
    _S,
    _S + "_swizzle",
    _S + "_swizzle_bswizzle",
    _S + "_swizzle_bswizzle_rbuf",
    _S + "_swizzle_bswizzle_rbuf_epi",
]
FAMILY = variants(family="hgemm_mma")
SWIZZLED = [v for v in FAMILY if v.template == "hgemm_mma_swizzle"]
# the any-shape rungs: _edge (rungs 11, 12) and the persistent rung 13 (TMA zero-fills and clips)
EDGE = [v for v in FAMILY if v.param_dict.get("EDGE") or v.template == "hgemm_mma_persistent"]
TMA = ("hgemm_mma_ws", "hgemm_mma_persistent")  # rungs 12 and 13: sm_90a, a producer warpgroup


# The kernels' shared-memory layouts (kernels/hgemm_mma/*.cu) for a bm x bn block tile of 16-bit
# elements, written out here so that the record's smem_dynamic (cugemm/tables/smem.json, read from the
# compiled PTX) is checked against an independent number.
def stages_smem(bm: int, bn: int, BK: int, STAGES: int, PAD: int) -> int:
    """04_stages.cu: STAGES padded A (bm x BK + PAD) and B (BK x bn + PAD) tiles."""
    return STAGES * (bm * (BK + PAD) + BK * (bn + PAD)) * 2


def swizzle_smem(bm: int, bn: int, BK: int, STAGES: int, EPI: bool) -> int:
    """05_swizzle.cu: the ring of STAGES unpadded A and B tiles, or the C tile of the shared-memory
    epilogue (EPI) if larger."""
    return max(STAGES * (bm * BK + BK * bn) * 2, bm * bn * 2 if EPI else 0)


def ws_smem(bm: int, bn: int, STAGES: int) -> int:
    """06_ws.cu: STAGES A [bm][64] and B [64][bn] tiles and 1024 bytes of alignment slack (the TMA
    ring is 1024-byte aligned by hand: 128-byte swizzle atoms)."""
    return STAGES * (bm + bn) * 128 + 1024


def persistent_smem(bm: int, bn: int, warps: int, STAGES: int) -> int:
    """07_persistent.cu: rung 12's ring and slack, and two 2 KB staging boxes per consumer warp."""
    return ws_smem(bm, bn, STAGES) + warps * 2 * 16 * 128


def test_ladder_is_registered_in_order():
    names = [v.name for v in FAMILY]
    assert [n for n in names if n in LADDER] == LADDER


def test_one_template_per_rung_file():
    by_template = {}
    for v in FAMILY:
        by_template.setdefault(v.template, set()).add(v.source)
    assert by_template == {
        "hgemm_mma_naive": {"hgemm_mma/01_naive.cu"},
        "hgemm_mma_warp_tile": {"hgemm_mma/02_warp_tile.cu"},
        "hgemm_mma_ldmatrix": {"hgemm_mma/03_ldmatrix.cu"},
        "hgemm_mma_stages": {"hgemm_mma/04_stages.cu"},
        "hgemm_mma_swizzle": {"hgemm_mma/05_swizzle.cu"},
        "hgemm_mma_swizzle_batched": {"hgemm_mma/08_swizzle_batched.cu"},
        "hgemm_mma_ws": {"hgemm_mma/06_ws.cu"},
        "hgemm_mma_persistent": {"hgemm_mma/07_persistent.cu"},
    }


def test_fast_aliases_take_any_aligned_shape():
    h, b = get_variant("hgemm_mma_fast"), get_variant("bgemm_mma_fast")
    assert h.family == b.family == "hgemm_mma" and h.template == b.template == "hgemm_mma_persistent"
    assert (h.dtype_in, h.dtype_out, h.dtype_acc) == ("float16", "float16", "float32")
    assert (b.dtype_in, b.dtype_out, b.dtype_acc) == ("bfloat16", "bfloat16", "float32")
    assert h.multiple_of == b.multiple_of == (1, 8, 8) and h in EDGE and b in EDGE
    assert h.name.startswith("hgemm_mma_") and b.name.startswith("bgemm_mma_")


@pytest.mark.parametrize("v", FAMILY, ids=lambda v: v.name)
def test_record(v):
    p = v.param_dict
    bf16 = v.name.startswith("bgemm_mma_")
    assert v.name.startswith(("hgemm_mma_m16n8k16_", "bgemm_mma_m16n8k16_"))
    assert v.dtype_in == v.dtype_out == ("bfloat16" if bf16 else "float16")
    assert p["T"] == ("__nv_bfloat16" if bf16 else "half") and v.params[-1][0] == "T"
    assert v.dtype_acc == ("float16" if v.name.endswith("_f16acc") or "_f16acc_" in v.name else "float32")
    assert v.math == "mma" and v.seed == "cugemm" and v.align == 16 and v.doc
    assert v.source.startswith("hgemm_mma/") and v.template.startswith("hgemm_mma_")
    # rungs 12, 13 (TMA, setmaxnreg) are Hopper-only; every other rung claims sm_90 (and sm_80 where it fits)
    assert v.archs == ("sm_90a",) if v.template in TMA else "sm_90" in v.archs
    assert v.min_arch >= 80
    # the block tile and the block follow from the warps and the mma tiles per warp
    warps = p.get("WARPS_M", 1) * p.get("WARPS_N", 1)
    bm = 16 * p.get("FRAGS_M", 4 if v.template == "hgemm_mma_persistent" else 1) * p.get("WARPS_M", 1)
    bn = 8 * p.get("FRAGS_N", 8 if v.template == "hgemm_mma_persistent" else 1) * p.get("WARPS_N", 1)
    ws = v.template in TMA  # rungs 12, 13: one producer warpgroup more, BK fixed at 64
    assert v.block == (32 * warps + (128 if ws else 0), 1, 1)
    assert v.tile == (bm, bn, 64 if ws else p.get("BK", 16))
    m = re.search(r"_mma(\d)x(\d)_warp(\d)x(\d)(?:x(\d))?", v.name)
    if m:  # mmaAxB: warps; warpCxD[xE]: mma tiles per warp, E k steps of 16 per K-tile
        assert tuple(map(int, m.groups()[:4])) == (p["WARPS_M"], p["WARPS_N"], p.get("FRAGS_M", 4), p.get("FRAGS_N", 8))
        assert int(m.group(5) or 1) * 16 == v.tile[2]
    # the rung flags the name spells
    if "STAGES" in p:
        assert f"_stage{p['STAGES']}" in v.name
    if v.template in ("hgemm_mma_swizzle", "hgemm_mma_swizzle_batched"):
        batched = v.template == "hgemm_mma_swizzle_batched"  # the _edge rungs' batched forms (products in z)
        name = v.name[:-len("_batched")] if batched else v.name
        assert v.name.endswith("_edge_batched") == batched and "_swizzle" in v.name
        m = re.search(r"_bswizzle(\d*)_", name + "_")
        assert p["GROUP"] == (int(m.group(1) or 8) if m else 0)  # _bswizzle: bands of 8 tile rows
        assert p["RBUF"] == ("_rbuf" in name) and p["EPI_SMEM"] == ("_epi" in name)
        assert p["F16ACC"] == name.endswith("_f16acc") and p["EDGE"] == name.endswith("_edge")
        assert v.smem_dynamic == swizzle_smem(bm, bn, p["BK"], p["STAGES"], p["EPI_SMEM"]) and v.grid_fn is None
        assert (v.args_rule == "batch") == batched and (not batched or v.matmul.order >= 200)
    elif v.template == "hgemm_mma_persistent":
        assert f"_stage{p['STAGES']}_persistent" in v.name and p["GROUP"] == 8
        cm = p["CLUSTER_M"]  # _cluster2: tiles stacked in M, the persistent grid's x
        assert v.cluster == (cm, 1, 1) and (f"_persistent_cluster{cm}" in v.name) == (cm > 1)
        assert v.args_fn is not None and v.grid_fn is not None
        assert v.smem_dynamic == persistent_smem(bm, bn, warps, p["STAGES"])
    elif ws:
        assert "_ws" in v.name and f"_stage{p['STAGES']}_ws" in v.name and p["GROUP"] == 8
        assert p["EDGE"] == v.name.endswith("_edge") and v.args_fn is not None and v.grid_fn is None
        assert v.cluster == (1, 1, 1)
        assert v.smem_dynamic == ws_smem(bm, bn, p["STAGES"])
    elif v.template == "hgemm_mma_stages":
        assert p["PAD"] == 8 and v.smem_dynamic == stages_smem(bm, bn, p["BK"], p["STAGES"], p["PAD"])
    else:
        assert v.smem_dynamic == 0
    # shape rule: the tile, or (EDGE) 16-byte rows of A and B
    assert v.multiple_of == ((1, 8, 8) if v in EDGE else v.tile)
    assert "sm_80" in v.archs or v.smem_dynamic > 163 * 1024 or ws


def test_bf16_siblings_mirror_fp16_rungs():
    bf16 = [v for v in FAMILY if v.dtype_in == "bfloat16"]
    assert len(bf16) >= 2 and any(v in EDGE for v in bf16)
    for v in bf16:
        fp16 = get_variant(v.name.replace("bgemm_mma_", "hgemm_mma_", 1))
        assert fp16.template == v.template and fp16.tile == v.tile and fp16.smem_dynamic == v.smem_dynamic
        assert fp16.params[:-1] == v.params[:-1] and fp16.param_dict["T"] == "half"


def test_edge_shape_rule():
    v = get_variant("hgemm_mma_fast")
    for shape in [(1, 8, 8), (17, 24, 8), (4095, 4096, 1016), (127, 8, 4096), (4095, 4104, 1024)]:
        v.check_shape(*shape)
    with pytest.raises(ValueError, match=r"N=12 is not a multiple of 8.*16-byte aligned"):
        v.check_shape(16, 12, 8)
    with pytest.raises(ValueError, match=r"K=1020 is not a multiple of 8"):
        v.check_shape(4096, 4096, 1020)
    tiled = get_variant(_H + "mma2x4_warp4x8x4_stage3_swizzle_bswizzle_rbuf_epi")
    with pytest.raises(ValueError, match=r"M=4095 is not a multiple of 128"):
        tiled.check_shape(4095, 4096, 1024)


def _sass_ops(v, arch):
    try:
        sass = jit.disassemble(jit.compile_offline(v, arch).cubin)
    except RuntimeError as e:  # no cuobjdump on this machine
        pytest.skip(str(e))
    ops = re.findall(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)", sass)
    return ops


@pytest.mark.parametrize("name", ["hgemm_mma_fast", "bgemm_mma_fast", _H + "mma2x4_warp4x8x4_stage4_ws_edge",
                                  _S + "_swizzle_bswizzle_rbuf_epi",
                                  _H + "mma2x4_warp4x8x4_stage3_swizzle_bswizzle_rbuf_epi_edge"])
@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "sm_90a"])
def test_sass_is_mma_sync_with_ldmatrix(name, arch):
    """The main loop is HMMA.16816 fed by LDSM (A) and LDSM .T (B), copies are LDGSTS (rung 12: TMA,
    UTMALDG, and mbarrier waits instead of block barriers), nothing goes to local memory; the sm_90
    epilogue uses STSM (stmatrix)."""
    v = get_variant(name)
    if arch not in v.archs:
        pytest.skip(f"{v.name} claims {v.archs}")
    ops = _sass_ops(v, arch)
    ws = v.template in TMA
    p = v.param_dict
    hmma = [o for o in ops if o.startswith("HMMA.16816")]
    per_kstep = p.get("FRAGS_M", 4) * p.get("FRAGS_N", 8)
    assert hmma and len(hmma) % per_kstep == 0
    assert all(o == ("HMMA.16816.F32.BF16" if v.dtype_in == "bfloat16" else "HMMA.16816.F32") for o in hmma)
    assert any(o.startswith("LDSM.16.M88.4") for o in ops) and any(o.startswith("LDSM.16.MT88.4") for o in ops)
    assert any(o.startswith("UTMALDG" if ws else "LDGSTS") for o in ops)
    assert not any(o.startswith(("LDL", "STL")) for o in ops), "local memory in the kernel"
    assert any(o.startswith("STSM") for o in ops) == arch.startswith("sm_90")
    if v.template == "hgemm_mma_ws":  # the consumers' only block-wide barrier is the epilogue's named barrier
        assert any(o.startswith("SYNCS.PHASECHK") for o in ops) and ops.count("BAR.SYNC.DEFER_BLOCKING") == 2
    elif ws:  # rung 13: no block-wide barrier after the set-up; the epilogue is TMA stores (UTMASTG)
        assert any(o.startswith("SYNCS.PHASECHK") for o in ops) and ops.count("BAR.SYNC.DEFER_BLOCKING") == 1
        assert any(o.startswith("UTMASTG") for o in ops)


# ---- GPU: the any-shape rungs on odd shapes --------------------------------------------------------
# small ones (also what compute-sanitizer runs: pytest -m gpu -k small), then large ones
SMALL = [(1, 8, 8), (17, 24, 8), (1, 8, 4104), (130, 264, 24), (129, 520, 72), (255, 8, 136)]
LARGE = [(4095, 4096, 1016), (127, 8, 4096), (4095, 4104, 1024), (1000, 2056, 2048)]


def _run_poisoned(v, M, N, K, guard=64):
    pytest.importorskip("cupy")
    from cugemm import accuracy, testing

    a, b = testing.random_operands(v.dtype_in, M, N, K)
    out, guards_ok = testing.run_guarded(v, a, b, guard)
    assert guards_ok, "wrote outside C"
    err, ok = accuracy.check(out, accuracy.reference(a, b), v)
    assert ok, f"{v.name} {M}x{N}x{K}: rel err {err:.2e}"


@pytest.mark.gpu
@pytest.mark.parametrize("shape", SMALL, ids=lambda s: "small-" + "x".join(map(str, s)))
@pytest.mark.parametrize("v", EDGE, ids=lambda v: v.name)
def test_edge_small_shapes(v, shape):
    _run_poisoned(v, *shape)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", LARGE, ids=lambda s: "large-" + "x".join(map(str, s)))
@pytest.mark.parametrize("v", EDGE, ids=lambda v: v.name)
def test_edge_large_shapes(v, shape):
    _run_poisoned(v, *shape)
