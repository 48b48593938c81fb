"""The skinny-product family, without a GPU: every record agrees with its kernel
template (tile, block, shared memory, layout, the M bound its name spells), the bf16 siblings
mirror fp16 variants, the shape rule (M <= max_m, N % 8, K % 8) is the one stated, the launcher
takes a column-major B (x @ W.T) for the _bcol variants and refuses it for the others, and the
split-K plan leaves no K-slice empty and fills the GPU. The SASS is mma.sync fed by ldmatrix and
cp.async, with nothing in local memory."""
import re

import pytest

from cugemm import jit, launch, operand, splitk
from cugemm.arch import archs_for_smem
from cugemm.registry import get_variant, variants
from cugemm.device import Device

FAMILY = variants(family="hgemm_skinny")
H100 = Device(90, 132, 227 * 1024)
A100 = Device(80, 108, 163 * 1024)
LLM = [(m, n, k) for m in (1, 2, 4, 8, 16, 32, 64) for n, k in
       ((4096, 4096), (11008, 4096), (4096, 11008), (14336, 4096))] + [(16, 8192, 8192)]


def skinny_smem(NF: int, MT: int, BK: int, STAGES: int) -> int:
    """01_splitk.cu's shared memory, written out from the kernel's layout (checked against the record's
    smem_dynamic, which cugemm/tables/smem.json reads from the PTX): STAGES ring stages of an 8 MT x BK
    A tile and a 64 NF x BK B tile (16-bit), or the fp32 partial tile (8 MT rows of 64 NF + 4) if larger."""
    bn, bm = 64 * NF, 8 * MT
    return max(STAGES * (bm * BK + bn * BK) * 2, bm * (bn + 4) * 4)


def test_family_is_registered():
    names = [v.name for v in FAMILY]
    assert names and all(n.startswith(("hgemm_skinny_splitk_", "bgemm_skinny_splitk_")) for n in names)
    assert {v.max_m for v in FAMILY} >= {16, 64}
    for dtype in ("float16", "bfloat16"):
        for layout in ("row", "col"):
            assert any(v.dtype_in == dtype and v.b_layout == layout and v.max_m == 64 for v in FAMILY)


@pytest.mark.parametrize("v", FAMILY, ids=lambda v: v.name)
def test_record(v):
    p = v.param_dict
    bf16 = v.name.startswith("bgemm_")
    assert v.template == "hgemm_skinny_splitk" and v.source == "hgemm_skinny/01_splitk.cu"
    assert [n for n, _ in v.params] == ["NF", "MT", "BK", "STAGES", "BCOL", "T"]
    assert v.dtype_in == v.dtype_out == ("bfloat16" if bf16 else "float16") and v.dtype_acc == "float32"
    assert p["T"] == ("__nv_bfloat16" if bf16 else "half")
    assert v.math == "mma" and v.seed == "cugemm" and v.align == 16 and v.doc
    m = re.fullmatch(r"[hb]gemm_skinny_splitk_m(\d+)_n(\d+)k(\d+)_stage(\d+)(_bcol)?", v.name)
    assert m, v.name
    maxm, bn, bk, stages = map(int, m.groups()[:4])
    assert v.max_m == maxm == 8 * p["MT"] and bn == 64 * p["NF"] and bk == p["BK"] and stages == p["STAGES"]
    assert p["BCOL"] == bool(m.group(5)) and v.b_layout == ("col" if p["BCOL"] else "row")
    assert v.a_layout == "row" and v.layout == "row" and not v.strided
    assert v.tile == (maxm, bn, bk) and v.block == (128, 1, 1)
    assert v.multiple_of == (1, 8, 8)
    assert v.smem_dynamic == skinny_smem(NF=p["NF"], MT=p["MT"], BK=bk, STAGES=stages)
    # every form runs on sm_90; sm_80 where its ring fits sm_80's shared memory (not m32 stage8's 192 KB)
    assert v.archs == archs_for_smem(v.smem_dynamic) and "sm_90" in v.archs
    assert v.grid_fn is not None and v.args_fn is not None


def test_bf16_siblings_mirror_fp16_variants():
    bf16 = [v for v in FAMILY if v.dtype_in == "bfloat16"]
    assert len(bf16) >= 4
    for v in bf16:
        h = get_variant(v.name.replace("bgemm_", "hgemm_", 1))
        assert h.params[:-1] == v.params[:-1] and h.tile == v.tile and h.smem_dynamic == v.smem_dynamic


def test_shape_rule():
    v = get_variant("hgemm_skinny_splitk_m64_n128k64_stage4")
    for shape in [(1, 8, 8), (64, 8, 8), (17, 4104, 11000), (3, 24, 4104), (64, 14336, 4096)]:
        v.check_shape(*shape)
    with pytest.raises(ValueError, match=r"M=65 is over 64 \(rule: M <= 64"):
        v.check_shape(65, 4096, 4096)
    with pytest.raises(ValueError, match=r"N=12 is not a multiple of 8"):
        v.check_shape(16, 12, 8)
    with pytest.raises(ValueError, match=r"K=4100 is not a multiple of 8"):
        v.check_shape(16, 4096, 4100)
    with pytest.raises(ValueError, match=r"M=17 is over 16"):
        get_variant("hgemm_skinny_splitk_m16_n64k128_stage4_bcol").check_shape(17, 4096, 4096)


def _op(shape, strides, ptr=1 << 20, dtype="float16"):
    from cugemm import dtypes

    dt = dtypes.get(dtype)
    rows, cols = shape
    c = strides == (cols * 2, 2)
    f = strides == (2, rows * 2)
    return operand.Operand(shape, dt, dt.numpy, strides, ptr, False, c, f)


def test_launcher_takes_the_layout_of_b():
    M, N, K = 16, 4096, 1024
    A = _op((M, K), (2 * K, 2))
    B_row = _op((K, N), (2 * N, 2), ptr=1 << 28)
    B_col = _op((K, N), (2, 2 * K), ptr=1 << 28)  # W.T of a row-major N x K weight
    col, row = get_variant("hgemm_skinny_splitk_m16_n64k128_stage4_bcol"), get_variant(
        "hgemm_skinny_splitk_m16_n64k128_stage4")
    assert launch.check_operands(col, A, B_col) == (M, N, K)
    assert launch.check_operands(row, A, B_row) == (M, N, K)
    with pytest.raises(ValueError, match="F-contiguous"):
        launch.check_operands(col, A, B_row)
    with pytest.raises(ValueError, match="C-contiguous"):
        launch.check_operands(row, A, B_col)


@pytest.mark.parametrize("dev", [H100, A100], ids=["h100", "a100"])
@pytest.mark.parametrize("v", [v for v in FAMILY if v.dtype_in == "float16" and v.b_layout == "row"],
                         ids=lambda v: v.name)
def test_plan_covers_the_product_without_empty_slices(v, dev):
    bn, bk = v.tile[1], v.tile[2]
    for M, N, K in LLM + [(1, 8, 8), (3, 24, 4104), (64, 8, 65536), (7, 65536, 8)]:
        if M > v.max_m:
            continue
        slabs, s = splitk.skinny_plan(v, M, N, K, dev)
        assert splitk.skinny_plan_of(v, M, N, K, dev) == (slabs, s)  # the remembered plan is the model's
        assert v.grid(M, N, K, dev) == (slabs, s, 1)
        assert slabs * bn >= N > (slabs - 1) * bn
        kt = -(-K // bk)
        per = -(-kt // s)  # what the kernel computes from gridDim.y
        assert 1 <= s <= min(kt, splitk.SKINNY_MAX_SPLITS) and (s - 1) * per < kt  # the last slice is not empty
        if slabs * min(kt, splitk.SKINNY_MAX_SPLITS) >= 2 * dev.sms * splitk.blocks_per_sm(v, dev):  # enough work to fill the GPU
            assert slabs * s >= 0.9 * dev.sms * splitk.blocks_per_sm(v, dev), (M, N, K, s)


def test_blocks_per_sm_follow_shared_memory():
    v = get_variant("hgemm_skinny_splitk_m16_n64k128_stage4")
    assert splitk.blocks_per_sm(v, H100) == 2
    assert splitk.blocks_per_sm(v, Device(90, 132, 64 * 1024)) == 1


def _sass_ops(v, arch):
    try:
        sass = jit.disassemble(jit.compile_offline(v, arch).cubin)
    except RuntimeError as e:  # no cuobjdump on this machine
        pytest.skip(str(e))
    return re.findall(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)", sass)


@pytest.mark.parametrize("name", ["hgemm_skinny_splitk_m16_n64k128_stage4",
                                  "bgemm_skinny_splitk_m64_n128k64_stage4_bcol"])
def test_sass_is_mma_sync_fed_by_ldmatrix_and_cp_async(name):
    v = get_variant(name)
    ops = _sass_ops(v, "sm_90")
    hmma = [o for o in ops if o.startswith("HMMA.16816")]
    assert hmma and all(o == ("HMMA.16816.F32.BF16" if v.dtype_in == "bfloat16" else "HMMA.16816.F32")
                        for o in hmma)
    ldsm_b = "LDSM.16.M88.4" if v.b_layout == "col" else "LDSM.16.MT88.4"
    assert any(o.startswith(ldsm_b) for o in ops) and any(o.startswith("LDGSTS") for o in ops)
    assert any(o.startswith("ATOM") or o.startswith("RED") for o in ops)  # the per-slab counter
    assert not any(o.startswith(("LDL", "STL")) for o in ops), "local memory in the kernel"
