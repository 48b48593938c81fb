"""scripts/retime_buckets.py picks the buckets where a changed kernel may now win: one of the changed
variants less than the margin behind the bucket's best, timed beside the bucket's fastest."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import retime_buckets  # noqa: E402

G = "float16|row,col|aligned"
ENTRIES = {
    f"{G}|20,20,20": {"shape": [1024, 1024, 1024], "us": {"a": 10.0, "b_cluster2": 11.5, "c": 10.4, "d": 12.0}},
    f"{G}|22,22,22": {"shape": [2048, 2048, 2048], "us": {"a": 30.0, "b_cluster2": 33.0}},   # 3 us behind
    f"{G}|24,24,24": {"shape": [4096, 4096, 4096], "us": {"a": 90.0, "b_cluster2": 80.0}},   # already best
    f"bfloat16|row,col|aligned|20,20,20": {"shape": [1024, 1024, 1024], "us": {"a": 10.0, "b_cluster2": 10.5}},
}


def test_only_buckets_a_changed_kernel_may_now_win():
    todo = retime_buckets.plan_buckets(ENTRIES, {G}, "*cluster*", margin=2.0, top=2)
    assert todo == [(G, (1024, 1024, 1024), ["a", "b_cluster2", "c"])]


def test_the_margin_and_the_groups_widen_it():
    todo = retime_buckets.plan_buckets(ENTRIES, {G, "bfloat16|row,col|aligned"}, "*cluster*", margin=4.0, top=1)
    assert [(g, s) for g, s, _ in todo] == [(G, (1024, 1024, 1024)), (G, (2048, 2048, 2048)),
                                            ("bfloat16|row,col|aligned", (1024, 1024, 1024))]
    assert all("a" in names and "b_cluster2" in names for _, _, names in todo)



def test_a_ratio_of_the_best_time_widens_the_margin_on_slow_buckets():
    # 2048^3: 3 us behind 30 (10%); 1024^3: 1.5 us behind 10 (15%)
    todo = retime_buckets.plan_buckets(ENTRIES, {G}, "*cluster*", margin=0.5, top=1, ratio=0.12)
    assert [s for _, s, _ in todo] == [(2048, 2048, 2048)]
    todo = retime_buckets.plan_buckets(ENTRIES, {G}, "*cluster*", margin=0.5, top=1, ratio=0.16)
    assert [s for _, s, _ in todo] == [(1024, 1024, 1024), (2048, 2048, 2048)]


def test_unchanged_kernels_keep_the_mean_of_their_two_measurements():
    old = {k: {"shape": r["shape"], "us": dict(r["us"])} for k, r in ENTRIES.items()}
    new = {k: {"shape": r["shape"], "us": dict(r["us"])} for k, r in ENTRIES.items()}
    key = f"{G}|20,20,20"
    new[key]["us"].update(a=12.1, b_cluster2=9.0, c=10.4)  # re-timed: a drifted, the cluster form got faster
    todo = retime_buckets.plan_buckets(old, {G}, "*cluster*", margin=2.0, top=2)
    assert retime_buckets.pool(old, new, todo, "*cluster*") == 1
    assert abs(new[key]["us"]["a"] - (10.0 * 12.1) ** 0.5) < 1e-9  # two runs of one kernel: their mean
    assert new[key]["us"]["b_cluster2"] == 9.0                     # a changed kernel: the new time alone
    assert new[key]["us"]["c"] == 10.4 and new[key]["us"]["d"] == 12.0


def test_also_adds_the_registered_forms_of_the_buckets_type_and_layouts():
    todo = [(G, (192, 4096, 4096), ["a"]), ("bfloat16|row,row|aligned", (192, 4096, 4096), ["b"])]
    out = retime_buckets.with_also(todo, "*m64n192k16_small_m_cluster2m*")
    assert out[0][2] == ["a", "hgemm_wgmma_m64n192k16_small_m_cluster2m_stage6_bcol"]
    assert out[1][2] == ["b", "hgemm_wgmma_m64n192k16_small_m_cluster2m_stage6_bf16"]


def test_changed_only_takes_the_changed_kernels_new_times_where_the_table_had_them():
    old = {k: {"shape": r["shape"], "us": dict(r["us"])} for k, r in ENTRIES.items()}
    new = {k: {"shape": r["shape"], "us": dict(r["us"])} for k, r in ENTRIES.items()}
    key = f"{G}|20,20,20"
    new[key]["us"].update(a=12.1, b_cluster2=9.0, e_cluster4=8.0)  # e: timed only in the new run
    todo = retime_buckets.plan_buckets(old, {G}, "*cluster*", margin=2.0, top=2)
    assert retime_buckets.changed_only(old, new, todo, "*cluster*") == 1
    assert old[key]["us"] == {"a": 10.0, "b_cluster2": 9.0, "c": 10.4, "d": 12.0}
