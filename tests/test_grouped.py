"""cugemm.grouped without a GPU: the grouped forms and the rule that chooses among them, the layouts of
B read in place, the masked layout's rows stacked, the kernel's maps and group arguments, the rows
each group owns (the clamping of offsets and counts the kernel applies), the torch operator's
shapes."""
from __future__ import annotations

import pytest

from cugemm import grouped, testing, tma_args
from cugemm.dtypes import BFLOAT16, FLOAT16, FLOAT32
from cugemm.operand import Operand
from cugemm.registry import get_variant, variants

BASE = 0x7F0000000000


def _op(shape, strides, dt=BFLOAT16, ptr=BASE):
    size = dt.itemsize
    return Operand(tuple(shape), dt, "<V2", tuple(s * size for s in strides), ptr, False, False, False)


def test_forms_per_type_layout_and_group_count():
    for dt in ("float16", "bfloat16"):
        for lay in ("row", "col"):
            names = grouped.forms(dt, lay)
            assert len(names) == 6 and len(set(names)) == 6
            assert all(get_variant(n).b_layout == lay and get_variant(n).dtype_in == dt for n in names)
            # 129 groups or more: only the forms with 1024-group tables
            big = grouped.forms(dt, lay, 129)
            assert len(big) == 4 and all(get_variant(n).param_dict["GROUPS"] == 1024 for n in big)
            assert grouped.forms(dt, lay, grouped.MAX_GROUPS + 1) == []
    for lay in ("row", "col"):  # float32 (TF32): 256- and 128-row tiles, tables for 1024 groups
        names = grouped.forms("float32", lay, grouped.MAX_GROUPS)
        assert len(names) == 2 and all(get_variant(n).math_dtype == "tfloat32" for n in names)
        assert all(get_variant(n).b_layout == lay for n in names)
        assert get_variant(grouped.choose(4096, 8, 4096, 4096, "float32", lay)).tile[0] == 256
        assert get_variant(grouped.choose(4096, 128, 4096, 4096, "float32", lay)).tile[0] == 128  # 32 rows a group
    every = [v for v in variants() if v.param_dict.get("GROUPS")]
    assert len(every) == 28 and all(v.matmul is None for v in every)  # never a cugemm.matmul candidate


@pytest.mark.parametrize("rows,groups,N,want", [
    (65536, 128, 1536, (256, 4, 2, 128)),   # Qwen3-30B-A3B up-projection: 512 rows a group
    (4096, 8, 4096, (256, 4, 2, 128)),
    (2048, 64, 1024, (256, 3, 4, 1024)),   # 32 rows a group
    (40000, 200, 2048, (256, 3, 4, 1024)),  # more than 128 groups: the 1024-group tables
    (1000, 4, 128, (128, 5, 2, 1024)),     # N <= 128
])
def test_choose(rows, groups, N, want):
    for lay in ("row", "col"):
        v = get_variant(grouped.choose(rows, groups, N, 1024, "bfloat16", lay))
        p = v.param_dict
        assert (v.tile[1], p["STAGES"], p["EPI_BOXES"], p["GROUPS"]) == want and v.b_layout == lay
        assert p["GROUPS"] >= groups


def test_b_layouts_read_in_place():
    G, K, N = 8, 256, 512
    assert grouped.b_layout_of(_op((G, K, N), (K * N, N, 1))) == "row"
    assert grouped.b_layout_of(_op((G, K, N), (K * N, 1, K))) == "col"  # (G, N, K) weights, transposed view
    assert grouped.b_layout_of(_op((G, K, N), (0, N, 1))) is None          # one matrix broadcast: copied
    assert grouped.b_layout_of(_op((G, K, N), (K * N + 4, N, 1))) is None  # matrices not 16 bytes apart
    assert grouped.b_layout_of(_op((G, K, N), (K * N * 2, N * 2, 2))) is None  # neither rows nor columns contiguous
    assert grouped.b_layout_of(_op((1, K, N), (0, N, 1))) == "row"          # one group: its stride is never used


def test_masked_rows_stack():
    A = _op((4, 300, 64), (300 * 64, 64, 1))
    S = grouped.stacked(A, True)
    assert S.shape == (1200, 64) and S.strides == (128, 2) and grouped.rows_fit(S)
    assert grouped.stacked(_op((4, 300, 64), (301 * 64, 64, 1)), True) is None  # groups not max_m rows apart
    assert grouped.stacked(A, False) is A
    assert not grouped.rows_fit(_op((10, 64), (64, 1), ptr=BASE + 2))        # 2-byte-aligned pointer
    assert not grouped.rows_fit(_op((10, 60), (60, 1)))                     # 120-byte rows


def test_grouped_maps_and_arguments(fake_encode):
    """A and C 2-D over every row, B 3-D over the groups (one matrix each), the batch (G, 1, 1, 1, G),
    then the counters, the group ends' address and masked_m."""
    v = get_variant(grouped.choose(4096, 8, 1024, 512, "float16", "col"))
    G, M, N, K = 8, 4096, 1024, 512
    A = _op((M, K), (K, 1), FLOAT16)
    B = _op((G, K, N), (N * K, 1, K), FLOAT16, BASE + 2**30)
    C = _op((M, N), (N, 1), FLOAT16, BASE + 2**31)
    args = tma_args.persistent_args(v, A, B, C, M, N, K, raw=True, groups=(0x1234500, 300))
    ma, mb, mc = args[:3]
    assert (ma.spec.rows, ma.spec.cols, ma.spec.box) == (M, K, (64, 128))
    assert mb.spec.depth == G and (mb.spec.rows, mb.spec.cols) == (N, K) and mb.spec.depth_stride == N * K * 2
    assert (mc.spec.rows, mc.spec.cols, mc.spec.box) == (M, N, (64, 64))
    assert ma.spec.depth == mc.spec.depth == 0  # 2-D maps
    assert tuple(int(x) for x in args[3:8]) == (G, 1, 1, 1, G)
    assert tuple(int(x) for x in args[8:11]) == (0, 0x1234500, 300)
    assert args[11:] == tma_args.epilogue_args()  # no fused epilogue


def test_tf32_grouped_maps_and_arguments(fake_encode):
    """float32 (TF32) groups: A 2-D over every row (boxes of 256 rows of 32 k), B 3-D over the groups
    (the (G, N, K) weights: boxes {32 k, 128 n}), the batch (G, 1, 1, 1, G), no C stride, then the
    group ends' address and masked_m."""
    v = get_variant(grouped.choose(4096, 8, 1024, 512, "float32", "col"))
    assert v.math_dtype == "tfloat32" and v.param_dict["GROUPS"] == grouped.MAX_GROUPS
    G, M, N, K = 8, 4096, 1024, 512
    A = _op((M, K), (K, 1), FLOAT32)
    B = _op((G, K, N), (N * K, 1, K), FLOAT32, BASE + 2**30)
    C = _op((M, N), (N, 1), FLOAT32, BASE + 2**31)
    args = v.args_fn(v, A, B, C, M, N, K, raw=True, groups=(0x1234500, 0))
    ma, mb = args[:2]
    assert (ma.spec.rows, ma.spec.cols, ma.spec.box, ma.spec.depth) == (M, K, (32, 256), 0)
    assert (mb.spec.rows, mb.spec.cols, mb.spec.box, mb.spec.depth) == (N, K, (32, 128), G)
    assert tuple(int(x) for x in args[2:]) == (G, 1, 1, 1, G, 0, 0x1234500, 0)


def test_grouped_rows_clamp_like_the_kernel():
    # contiguous: a running end clamped into [previous end, rows]
    assert testing.grouped_rows([100, 50, 200, 999, -5], 300) == [(0, 100), (100, 100), (100, 200), (200, 300),
                                                                  (300, 300)]
    # masked: counts clamped into [0, max_m], group g from g * max_m
    assert testing.grouped_rows([-3, 500, 129], 390, 130) == [(0, 0), (130, 260), (260, 389)]


def test_torch_operator_shapes():
    torch = pytest.importorskip("torch", exc_type=ImportError)  # a torch that does not load is skipped too
    from cugemm import torch_op

    a, b = torch.empty(10, 64, device="meta"), torch.empty(4, 64, 32, device="meta")
    ends = torch.empty(4, dtype=torch.int32, device="meta")
    assert torch_op.grouped_matmul(a, b, ends).shape == (10, 32)
    am = torch.empty(4, 7, 64, device="meta")
    assert torch_op.grouped_matmul(am, b, ends, True).shape == (4, 7, 32)
    with pytest.raises(ValueError, match="grouped product"):
        torch_op.grouped_matmul(am, b, ends)
