"""cugemm.matmul's selection and tuning cache, without a GPU: fake devices and operand records.

Every dtype / layout / shape class must land on a plan whose variant accepts the operands it will
really be given (after the plan's copies), as launch.check_operands decides; the tuning cache must
round-trip, rank by what it measured, and survive corrupt, foreign and concurrently written files.
"""
from __future__ import annotations

import json
import multiprocessing
import warnings

import pytest

from cugemm import device, dtypes, operand, select, tuning
from cugemm.launch import check_operands
from cugemm.operand import Operand
from cugemm.registry import get_variant

H100 = device.Device(90, 132, 232448, "NVIDIA H100 80GB HBM3")
A100 = device.Device(80, 108, 166912, "NVIDIA A100-SXM4-80GB")
L40S = device.Device(89, 142, 101376, "NVIDIA L40S")
BASE = 0x7F0000000000  # a 256-byte-aligned fake device address


def info(layout, rows, cols, size, *, ld=None, offset=0, slot=0):
    """(OperandInfo, Operand) of a fake operand: 'row', 'col' or 'strided' (neither)."""
    if layout == "row":
        ld = ld or cols
        strides = (ld * size, size)
    elif layout == "col":
        ld = ld or rows
        strides = (size, ld * size)
    else:
        strides = (2 * cols * size, 2 * size)
    ptr = BASE + (slot << 36) + offset
    return operand.layout_of((rows, cols), strides, size, ptr), strides, ptr


def problem(M, N, K, dtype="float16", a="row", b="row", device=H100, tf32=False, a_ld=None, b_ld=None,
            offset=0):
    dt = dtypes.get(dtype)
    ia, sa, pa = info(a, M, K, dt.itemsize, ld=a_ld, offset=offset, slot=0)
    ib, sb, pb = info(b, K, N, dt.itemsize, ld=b_ld, offset=offset, slot=1)
    ic, sc, pc = info("row", M, N, dt.itemsize, offset=offset, slot=2)
    p = select.Problem(M, N, K, dt, ia, ib, ic, device, tf32)
    return p, ((M, K), sa, pa), ((K, N), sb, pb), ((M, N), sc, pc)


def operand_after(plan, which, original, dt, dims):
    """The Operand record the kernel gets: the original, or the plan's copy (fresh, aligned)."""
    layout, ld = {"A": (plan.copy_a, plan.ld_a), "B": (plan.copy_b, plan.ld_b),
                  "C": ("row" if plan.via_c else "", plan.ld_c)}[which]
    size = dt.itemsize
    if layout:
        rows, cols = dims
        strides = (ld * size, size) if layout == "row" else (size, ld * size)
        shape, ptr = (rows, cols), BASE + ({"A": 3, "B": 4, "C": 5}[which] << 36)
    else:
        shape, strides, ptr = original
    c_contig = len(shape) == 2 and (shape[1] <= 1 or strides[1] == size) and (shape[0] <= 1 or strides[0] == shape[1] * size)
    f_contig = (shape[0] <= 1 or strides[0] == size) and (shape[1] <= 1 or strides[1] == shape[0] * size)
    return Operand(tuple(shape), dt, "", strides, ptr, False, c_contig, f_contig)


def accepts(plan, p, oa, ob, oc):
    """launch.check_operands on what the kernel will really get: raises when the plan is wrong."""
    Mp, Np, Kp = plan.dims
    A = operand_after(plan, "A", oa, p.dtype, (Mp, Kp))
    B = operand_after(plan, "B", ob, p.dtype, (Kp, Np))
    C = operand_after(plan, "C", oc, p.dtype, (Mp, Np))
    assert check_operands(plan.variant, A, B, C) == (Mp, Np, Kp)


SHAPES = {
    "large": (4096, 4096, 4096),
    "k1024": (4096, 4096, 1024),
    "mid": (256, 4096, 4096),
    "skinny": (16, 8192, 8192),
    "gemv": (1, 4096, 4096),
    "odd": (4095, 4097, 1023),
    "tiny": (1, 1, 1),
    "k_small": (64, 64, 3),
    "n_one": (300, 1, 77),
    "tall": (8192, 8, 8),
}


@pytest.mark.parametrize("device", [H100, A100, L40S], ids=["h100", "a100", "l40s"])
@pytest.mark.parametrize("dtype,tf32", [("float16", False), ("bfloat16", False), ("float32", False),
                                        ("float32", True)], ids=["f16", "bf16", "f32", "tf32"])
@pytest.mark.parametrize("layouts", [("row", "row"), ("row", "col"), ("col", "row"), ("col", "col"),
                                     ("strided", "row")], ids=lambda x: "-".join(x))
@pytest.mark.parametrize("shape", list(SHAPES), ids=list(SHAPES))
def test_every_class_lands_on_a_variant_that_accepts_it(device, dtype, tf32, layouts, shape):
    p, oa, ob, oc = problem(*SHAPES[shape], dtype, *layouts, device=device, tf32=tf32)
    choice = select.select(p)
    assert choice.plan is not None, str(choice)
    accepts(choice.plan, p, oa, ob, oc)
    v = choice.plan.variant
    assert v.dt_in is p.dtype and v.dt_out is p.dtype
    assert v.dtype_acc == "float32"
    assert tf32 or v.math_dtype != "tfloat32"
    assert v.min_arch <= device.cc
    for plan in choice.ranked:  # every candidate plan is valid, not only the winner
        accepts(plan, p, oa, ob, oc)


def test_padded_rows_and_misaligned_pointers():
    size = 2
    # a padded leading dimension (a view buf[:, :K]) is row-major with ld > K
    i = operand.layout_of((100, 1023), (1024 * size, size), size, BASE)
    assert (i.layout, i.ld, i.align) == ("row", 1024, 16)
    # the transposed view of a row-major K x M array is column-major, ld = M
    i = operand.layout_of((4096, 64), (size, 4096 * size), size, BASE)
    assert (i.layout, i.ld, i.align) == ("col", 4096, 16)
    # a pointer 2 bytes off, an odd row length: 2-byte aligned
    assert operand.layout_of((10, 10), (20, 2), 2, BASE + 2).align == 2
    assert operand.layout_of((10, 1023), (2046, 2), 2, BASE).align == 2
    # every other element: neither layout
    assert operand.layout_of((10, 10), (40, 4), 2, BASE).layout == ""
    # single rows and columns are dense whatever their strides say
    assert operand.layout_of((1, 8), (0, 2), 2, BASE).layout == "row"
    assert operand.layout_of((8, 1), (2, 999), 2, BASE).layout == "row"


def test_misaligned_operands_are_copied_or_refused_never_passed():
    p, oa, ob, oc = problem(4096, 4096, 4096, offset=2)  # every pointer 2 bytes off 16
    choice = select.select(p)
    plan = choice.plan
    assert plan.copy_a and plan.copy_b  # every fast kernel reads 16-byte-aligned rows
    assert plan.via_c or plan.variant.c_align <= 2  # C in place only for an any-C epilogue
    accepts(choice.plan, p, oa, ob, oc)


def test_transposed_weight_runs_in_place_on_hopper():
    """x @ W.T (B column-major) reads W where it lies when a col-B kernel exists for the chip."""
    p, *_ = problem(4096, 4096, 4096, b="col")
    plans_, _ = select.plans(p)
    in_place = [q for q in plans_ if not q.copies]
    col_b = [v for v in (q.variant for q in plans_) if v.b_layout == "col"]
    if col_b:  # the Hopper rung's col-B form is registered
        assert in_place and all(q.variant.b_layout == "col" for q in in_place)


def test_refusals_name_the_rule():
    p, *_ = problem(128, 4096, 4096, "float16", device=A100)
    choice = select.select(p)
    text = str(choice)
    assert "chosen:" in text and "refused:" in text
    reasons = dict((v.name, why) for v, why in choice.refused)
    hopper = [why for name, why in reasons.items() if name.startswith("hgemm_wgmma")]
    assert hopper and all("sm_90" in why for why in hopper)
    p32, *_ = problem(128, 128, 128, "float32")
    tf = [why for v, why in select.plans(p32, names="hgemm_wgmma_tf32*")[1]]
    assert tf and all("allow_tf32" in why for why in tf)


def test_zero_padding_follows_the_variant_rules():
    """A tile-multiple variant forced onto an odd shape pads with zeros to its multiples."""
    p, oa, ob, oc = problem(100, 200, 30, "float32")
    plans_, refused = select.plans(p, names=["sgemm_warp_tile"])
    assert not refused
    plan = plans_[0]
    v = plan.variant
    assert plan.dims == tuple(-(-x // m) * m for x, m in zip((100, 200, 30), v.multiple_of))
    assert plan.copy_a and plan.copy_b and plan.via_c
    accepts(plan, p, oa, ob, oc)


# ---- the tuning cache ---------------------------------------------------------------------------------
def _entry(p, times, shape=None):
    M, N, K = shape or (p.M, p.N, p.K)
    return {tuning.bucket_key(tuning.problem_group(p), M, N, K): {"shape": [M, N, K], "us": times,
                                                                  "baseline_us": 100.0}}


def test_tuning_cache_round_trips_and_ranks(tmp_path):
    path = tmp_path / "tuning.json"
    p, *_ = problem(4096, 4096, 4096)
    model = select.select(p)
    assert model.plan.source == "model"
    loser = model.ranked[-1].variant.name  # the model's last choice, measured fastest
    times = {q.variant.name: 500.0 for q in model.ranked}
    times[loser] = 100.0
    key = tuning.gpu_key(H100.name, 13000, "test")
    tuning.merge(path, key, _entry(p, times))
    table = tuning.load_tuned(key, path)
    assert len(table) == 1
    choice = select.select(p, tuning.Measured(table))
    assert choice.plan.variant.name == loser and choice.plan.source == "tuned"
    assert choice.plan.est_us == pytest.approx(100.0)
    # a shape of a neighbouring bucket scales the time by the flops
    p2, *_ = problem(4096, 4096, 2048)
    hit = table.lookup(tuning.problem_group(p2), 4096, 4096, 2048, loser)
    assert hit == (pytest.approx(50.0), "tuned~")
    # another GPU, driver or cugemm version does not see it
    assert len(tuning.load_tuned(tuning.gpu_key(H100.name, 13000, "other"), path)) == 0
    # a second merge adds variants to the bucket and keeps the first ones
    tuning.merge(path, key, _entry(p, {"made_up_variant": 1.0}))
    rec = next(iter(tuning.load_tuned(key, path).entries.values()))
    assert rec["us"]["made_up_variant"] == 1.0 and rec["us"][loser] == 100.0


def test_a_bucket_keeps_the_shape_nearest_its_centre_whatever_the_order(tmp_path):
    """1000^3 and 1024^3 share a bucket; 1024^3 is its centre and keeps it, tuned first or last."""
    p, *_ = problem(1024, 1024, 1024)
    assert tuning.bucket_key("g", 1000, 1000, 1000) == tuning.bucket_key("g", 1024, 1024, 1024)
    assert tuning.off_centre((1024, 1024, 1024)) == 0 < tuning.off_centre((1000, 1000, 1000))
    for i, order in enumerate([((1024,) * 3, (1000,) * 3), ((1000,) * 3, (1024,) * 3)]):
        path = tmp_path / f"t{i}.json"
        for shape in order:
            tuning.merge(path, "gpu", _entry(p, {"v": float(shape[0])}, shape))
        (rec,) = json.loads(path.read_text())["entries"]["gpu"].values()
        assert rec["shape"] == [1024, 1024, 1024] and rec["us"] == {"v": 1024.0}


def test_a_partial_tune_keeps_the_buckets_clock_and_shape(tmp_path):
    """Some variants re-timed in another run: their times are scaled to the bucket's baseline (the
    run that timed the others), and a shape nearer the centre with fewer variants displaces nothing."""
    p, *_ = problem(1000, 1000, 1000)
    path = tmp_path / "t.json"
    tuning.merge(path, "gpu", _entry(p, {"a": 30.0, "b": 40.0}))  # baseline 100
    partial = _entry(p, {"c": 33.0})
    next(iter(partial.values()))["baseline_us"] = 110.0  # a run 10% slower
    tuning.merge(path, "gpu", partial)
    (rec,) = json.loads(path.read_text())["entries"]["gpu"].values()
    assert rec["us"] == {"a": 30.0, "b": 40.0, "c": pytest.approx(30.0)} and rec["baseline_us"] == 100.0
    tuning.merge(path, "gpu", _entry(p, {"c": 1.0}, (1024, 1024, 1024)))  # the centre, one variant
    (rec,) = json.loads(path.read_text())["entries"]["gpu"].values()
    assert rec["shape"] == [1000, 1000, 1000] and set(rec["us"]) == {"a", "b", "c"}
    tuning.merge(path, "gpu", _entry(p, {"a": 2.0, "b": 3.0, "c": 4.0}, (1024, 1024, 1024)))  # a whole tune
    (rec,) = json.loads(path.read_text())["entries"]["gpu"].values()
    assert rec["shape"] == [1024, 1024, 1024] and rec["us"] == {"a": 2.0, "b": 3.0, "c": 4.0}


@pytest.mark.parametrize("text", ["{not json", "[]", json.dumps({"format": 99, "entries": {}}),
                                  json.dumps({"format": 1, "entries": {"k": {"x|y": {"us": 3}}}})])
def test_corrupt_or_foreign_cache_is_ignored_then_replaced(tmp_path, text):
    path = tmp_path / "tuning.json"
    path.write_text(text)
    key = tuning.gpu_key("GPU", 1, "v")
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        table = tuning.load_tuned(key, path)
    assert len(table) == 0
    p, *_ = problem(64, 64, 64)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        tuning.merge(path, key, _entry(p, {"v1": 2.0}))
    assert len(tuning.load_tuned(key, path)) == 1
    assert json.loads(path.read_text())["format"] == tuning.FORMAT


def test_stale_records_with_bad_values_are_skipped(tmp_path):
    path = tmp_path / "tuning.json"
    key = tuning.gpu_key("GPU", 1, "v")
    p, *_ = problem(64, 64, 64)
    bucket = tuning.bucket_key(tuning.problem_group(p), 64, 64, 64)
    path.write_text(json.dumps({"format": 1, "entries": {key: {
        bucket: {"shape": [64, 64, 64], "us": {"good": 5.0, "nan": float("nan"), "neg": -1.0}},
        "bad|bucket": {"shape": [0, 1], "us": {}}}}}))
    table = tuning.load_tuned(key, path)
    g = tuning.problem_group(p)
    assert table.lookup(g, 64, 64, 64, "good") == (5.0, "tuned")
    assert table.lookup(g, 64, 64, 64, "nan") is None and table.lookup(g, 64, 64, 64, "neg") is None


def _writer(args):
    path, i = args
    p, *_ = problem(2 ** (4 + i), 64, 64)
    for j in range(5):
        tuning.merge(path, "gpu", _entry(p, {f"v{j}": float(j + 1)}))
    return i


def test_concurrent_writers_lose_nothing(tmp_path):
    path = tmp_path / "tuning.json"
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(4) as pool:
        assert sorted(pool.map(_writer, [(path, i) for i in range(8)])) == list(range(8))
    entries = json.loads(path.read_text())["entries"]["gpu"]
    assert len(entries) == 8
    assert all(sorted(rec["us"]) == [f"v{j}" for j in range(5)] for rec in entries.values())
    assert not list(tmp_path.glob("*.tmp"))


def test_shipped_table_is_valid_and_names_registered_variants():
    import cugemm

    path = tuning.shipped_path(H100.name)
    assert path is not None and tuning.shipped_path("NVIDIA H200") is not None
    if not path.exists():
        pytest.skip("no shipped table yet")
    data = json.loads(path.read_text())
    assert data["format"] == tuning.FORMAT and data["entries"]
    names = {v.name for v in cugemm.variants()}
    for bucket, rec in data["entries"].items():
        assert set(rec["us"]) <= names, bucket
        assert all(t > 0 for t in rec["us"].values())


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_relayout_kernel_compiles_without_spills(arch):
    """kernels/util/relayout.cu, matmul's copy into an aligned workspace, on every chip of the zoo."""
    pytest.importorskip("cupy")
    from cugemm import jit

    text = jit.file_source(jit.KERNEL_DIR / "util" / "relayout.cu")
    reports = jit.compile_source(text, ["relayout<unsigned short>", "relayout<unsigned int>"], arch)
    assert len(reports) == 2 and all(r.spill_bytes == 0 and r.stack_frame == 0 for r in reports)


def test_plans_of_one_problem_compare_on_one_bucket(tmp_path):
    """A variant the tuner timed only in a neighbouring bucket gets no time where the problem's own
    bucket was measured: flops scaled across buckets would ignore tile quantisation."""
    path = tmp_path / "tuning.json"
    key = "gpu"
    p, *_ = problem(128, 4096, 4096)
    near, *_ = problem(256, 4096, 4096)
    tuning.merge(path, key, {**_entry(p, {"a": 30.0}), **_entry(near, {"a": 31.0, "b": 20.0})})
    m = tuning.Measured(tuning.load_tuned(key, path))
    g = tuning.problem_group(p)
    table = m.tables[0]
    assert table.lookup(g, 128, 4096, 4096, "a") == (30.0, "tuned")
    assert table.lookup(g, 128, 4096, 4096, "b") is None  # not 10 us scaled from M = 256
    # a problem whose own bucket nobody measured uses the nearest one, for every variant alike
    assert table.lookup(g, 362, 4096, 4096, "b")[1] == "tuned~"


def test_a_neighbouring_bucket_is_scaled_by_the_model_not_the_flops(tmp_path):
    """Measured at M = 1024 against a 1024 x 4096 weight, 128 x 64 tiles (128 tiles: one wave) beat
    128 x 128 tiles (64: half the SMs idle). At M = 2048 the first need two waves and the second
    fill one: the times from the neighbouring bucket are scaled by the model's ratio of the two
    shapes, so the 128 x 128 tiles win there, as a ratio of flops would never say."""
    n64 = "hgemm_wgmma_m64n64k16_persistent_cluster2_tma_store_stage8_bcol"
    n128 = "hgemm_wgmma_m64n128k16_persistent_cluster2_tma_store_stage6_bcol"
    path = tmp_path / "tuning.json"
    ref, *_ = problem(1024, 1024, 4096, b="col")
    tuning.merge(path, "gpu", _entry(ref, {n64: 10.0, n128: 14.0}))
    m = tuning.Measured(tuning.load_tuned("gpu", path))
    assert select.select(ref, m, [n64, n128]).plan.variant.name == n64
    p, *_ = problem(2048, 1024, 4096, b="col")
    t64, src = m(get_variant(n64), p)
    t128, _ = m(get_variant(n128), p)
    assert src == "tuned~"
    # twice the tiles, about twice the waves (model ratio 1.94) past the fixed part that does not scale
    ratio = tuning.model_us(get_variant(n64), p) / tuning.model_us(get_variant(n64), ref)
    assert 1.8 < ratio < 2.1
    assert t64 == pytest.approx(tuning.FIXED_US + (10.0 - tuning.FIXED_US) * ratio, rel=1e-9)
    assert t128 == pytest.approx(14.0, rel=0.05)  # twice the tiles, the same one wave
    assert select.select(p, m, [n64, n128]).plan.variant.name == n128


def test_the_model_counts_the_dead_tiles_of_a_cluster():
    """M = 192 is three 64-row tiles: rung 10's clusters of two along M run four, so at N = 5120
    (40 tiles of 128 columns) its 160 tiles take two waves of 132 SMs where the clusters along N
    (3 x 40 = 120 tiles) take one."""
    along_m = get_variant("hgemm_wgmma_m64n128k16_small_m_cluster2m_stage8_bcol")
    along_n = get_variant("hgemm_wgmma_m64n128k16_small_m_cluster2n_stage8_bcol")
    p, *_ = problem(192, 5120, 5120, b="col")
    t_m = select.model_kernel_us(along_m, p, (192, 5120, 5120))
    t_n = select.model_kernel_us(along_n, p, (192, 5120, 5120))
    assert t_m > 1.5 * t_n


def test_ragged_rows_are_a_class_of_their_own():
    """Rows 16-byte aligned but not 32 bytes apart (A's or B's; C's do not count) make a problem
    'ragged'; a view whose rows lie 32 bytes apart is 'aligned' whatever its extent."""
    cls = lambda *a, **k: tuning.alignment_class(problem(*a, **k)[0])  # noqa: E731
    assert cls(4096, 4096, 4096) == "aligned"
    assert cls(2184, 2184, 2184) == "ragged"                       # rows of 4368 bytes
    assert cls(2184, 2184, 2184, a_ld=2240, b_ld=2240) == "aligned"  # the same extents in wider rows
    assert cls(4096, 2184, 4096) == "ragged"                       # B's rows only
    assert cls(4096, 2184, 4096, b="col") == "aligned"             # x @ W.T: B's columns are K long
    assert cls(4096, 4096, 1000, b="col") == "ragged"
    assert cls(2184, 4096, 4096) == "aligned"                      # M and C's rows do not count
    assert cls(1616, 1616, 1616) == "aligned"                      # 3232-byte rows: 32 x 101
    assert cls(2184, 2184, 2184, a_ld=2192, b_ld=2192) == "aligned"
    assert cls(1024, 1024, 1004, "float32") == "ragged"            # 4016-byte rows
    assert cls(1024, 1024, 1024, "float32") == "aligned"
    assert cls(4096, 4096, 4095) == "unaligned"
    for shape, layouts in (((2184, 2184, 2184), ("row", "row")), ((4096, 4096, 1000), ("row", "col")),
                           ((4096, 2184, 4096), ("row", "col")), ((520, 4096, 4096), ("col", "row"))):
        p, *_ = problem(*shape, a=layouts[0], b=layouts[1])
        assert tuning.dense_class(p.dtype, *layouts, *shape) == tuning.alignment_class(p), (shape, layouts)


def test_a_ragged_problem_reads_ragged_buckets_else_aligned_ones(tmp_path):
    v = "hgemm_wgmma_m64n192k16_persistent_tma_store_stage4"
    path = tmp_path / "tuning.json"
    aligned, *_ = problem(2048, 2048, 2048)
    tuning.merge(path, "gpu", _entry(aligned, {v: 30.0}))
    ragged, *_ = problem(2056, 2056, 2056)
    m = tuning.Measured(tuning.load_tuned("gpu", path))
    assert tuning.problem_group(ragged).endswith("|ragged")
    t, src = m(get_variant(v), ragged)  # no ragged bucket near: the aligned one answers
    assert src == "tuned" and 30.0 < t < 32.0  # 2048^3 scaled to 2056^3
    tuning.merge(path, "gpu", _entry(ragged, {v: 55.0}))
    m = tuning.Measured(tuning.load_tuned("gpu", path))
    assert m(get_variant(v), ragged) == (55.0, "tuned")
    assert m(get_variant(v), aligned) == (30.0, "tuned")  # and the aligned problem keeps its own


def test_copies_of_a_and_b_get_rows_128_bytes_apart():
    """A plan that copies A or B gives the copy 128-byte rows (the TMA kernels read ragged rows
    slowly); C's workspace keeps 16-byte rows."""
    p, *_ = problem(4095, 4097, 1023)
    plan = select.plans(p, names=["hgemm_wgmma_m64n192k16_persistent_tma_store_stage4"])[0][0]
    assert plan.copy_a == "row" and plan.copy_b == "row" and plan.via_c
    assert (plan.ld_a, plan.ld_b, plan.ld_c) == (1024, 4160, 4104)
    # a dense kernel (no leading dimension) gets rows of exactly its padded extent
    plan = select.plans(p, names=["hgemm_wgmma_m64n256k16_bt_persistent_stage4"])[0][0]
    assert (plan.ld_a, plan.ld_b, plan.ld_c) == (1024, 4104, 4104)


def test_batched_forms_compete_for_2d_products_only_where_timed():
    """The shipped table times rung 7's batched forms as 2-D candidates in the tall-k and small-k
    buckets: there one may win (131072 x 4096 x 64, where C's stores set the time); in a bucket they
    were not timed in, their times scaled from a neighbour do not count (the model rates them)."""
    from cugemm.operand import Layout

    meas = tuning.Measured(tuning.load_shipped(H100.name))

    def choice(M, N, K):
        return select.select(select.Problem(M, N, K, dtypes.FLOAT16, Layout("row", K, 16), Layout("row", N, 16),
                                            Layout("row", N, 16), H100), meas)

    timed = choice(131072, 4096, 64)
    assert timed.plan.variant.batched and timed.plan.source.startswith("table") and not timed.plan.source.endswith("~")
    near = choice(3072, 2048, 1024)  # next to small-k's buckets, in none of them
    assert not near.plan.variant.batched
    assert all(q.source == "model" for q in near.ranked if q.variant.batched)
