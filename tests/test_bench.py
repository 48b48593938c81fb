"""The bench's pieces. Without a GPU: shape grids, percentiles, the Row record, the table, the
result files and the plot, from synthetic rows. With a GPU (marker gpu): the timer and the
measurement itself, including that a wrong result is caught."""
import csv
import json
import math

import pytest

from cugemm import bench
from cugemm.bench import Row, Status, report, timing


def test_sweeps():
    hg = bench.sweep_shapes("seed-hgemm")
    assert len(hg) == 27 and (1024, 2048, 512) in hg and max(max(s) for s in hg) == 4096
    sg = bench.sweep_shapes("seed-sgemm")
    assert len(sg) == 27 and (16384, 16384, 8192) in sg
    capped = bench.sweep_shapes("seed-sgemm", max_size=8192)
    assert len(capped) == 12 and all(max(s) <= 8192 for s in capped)
    assert bench.sweep_shapes("square") == [(s, s, s) for s in (256, 512, 1024, 2048, 4096, 8192)]
    with pytest.raises(KeyError, match="unknown sweep"):
        bench.sweep_shapes("nope")


def test_parse_shapes():
    assert bench.parse_shapes("4096x4096x1024, 128X256x64") == [(4096, 4096, 1024), (128, 256, 64)]
    with pytest.raises(ValueError, match="not MxNxK"):
        bench.parse_shapes("4096x4096")


def test_percentile():
    v = sorted([5.0, 1.0, 3.0, 2.0, 4.0])
    assert timing.percentile(v, 50) == 3.0
    assert timing.percentile(v, 20) == pytest.approx(1.8)
    assert timing.percentile(v, 80) == pytest.approx(4.2)
    assert timing.percentile([7.0], 80) == 7.0


def _rows():
    rows = []
    for (m, n, k) in ((1024, 1024, 256), (2048, 2048, 512)):
        for name, ms, status, err, detail in (
                ("cupy.matmul", 0.10, Status.BASELINE, 1e-7, ""), ("fast", 0.08, Status.OK, 2e-7, ""),
                ("slow", 0.50, Status.OK, 2e-7, ""), ("broken", 0.01, Status.FAIL, math.nan, ""),
                ("rejected", None, Status.ERROR, None, "ValueError: M=1024 is not a multiple")):
            rows.append(Row(variant=name, M=m, N=n, K=k, dtype="f32", ms=ms,
                            p20_ms=ms and ms * 0.99, p80_ms=ms and ms * 1.01,
                            tflops=ms and 2 * m * n * k / ms / 1e9, pct=ms and 10 / ms,
                            rel_err=err, status=status, detail=detail, fastest=name == "fast"))
    return rows


META = {"device": "Test GPU", "compute_capability": "sm_90", "sms": 132, "driver_cuda": "13.0",
        "cuda_runtime": "13.0", "cupy": "14.2.0", "cupy_tf32": "", "date": "2026-11-22 00:00 UTC"}


def test_row_record_round_trips():
    for r in _rows():
        back = Row.from_dict(json.loads(json.dumps(r.as_dict())))
        assert back.status is r.status and back.detail == r.detail and back.variant == r.variant
    # result files from before the Status enum carried the error text as the status
    old = Row.from_dict({"variant": "x", "M": 1, "N": 1, "K": 1, "dtype": "f16", "status": "KeyError: no"})
    assert old.status is Status.ERROR and old.label == "KeyError: no" and not old.timed
    assert [r.timed for r in _rows()[:5]] == [True, True, True, False, False]


def test_table_marks_fastest_and_shows_failures():
    text = report.format_table(_rows()[:5])
    lines = text.splitlines()
    assert "fast *" in text and "broken *" not in text
    assert any("FAIL" in line and line.startswith("broken") for line in lines)
    assert "is not a multiple" in text
    md = report.format_table(_rows()[:5], markdown=True)
    assert md.splitlines()[0].startswith("| variant")


def test_json_and_csv(tmp_path):
    rows = _rows()
    report.write_json(tmp_path / "r.json", META, rows, ["--sweep", "square"])
    data, back = report.read_json(tmp_path / "r.json")
    assert data["meta"]["device"] == "Test GPU" and data["command"] == "python bench.py --sweep square"
    assert [r.variant for r in back] == [r.variant for r in rows] and back[1].status is Status.OK
    report.write_csv(tmp_path / "r.csv", META, rows)
    got = list(csv.DictReader(open(tmp_path / "r.csv")))
    assert len(got) == len(rows) and got[0]["device"] == "Test GPU" and got[1]["status"] == "ok"


def test_readme_table_from_rows(tmp_path):
    report.write_json(tmp_path / "r.json", META, _rows(), ["--dtype", "f32"])
    data, rows = report.read_json(tmp_path / "r.json")
    md = report.results_markdown(data, rows, "r.json")
    assert "| fast | **6.7 (125%)** | **53.7 (125%)** |" in md
    assert "| broken | FAIL | FAIL |" in md and "| rejected | rejected: M=1024 is not a multiple | rejected: M=1024 is not a multiple |" in md


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    for rows, name in ((_rows(), "sweep.png"), (_rows()[:5], "one.png")):
        report.plot(str(tmp_path / name), META, rows)
        data = (tmp_path / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_bench_usage_errors(capsys):
    assert bench.main(["--shapes", "4096x4096"]) == 2
    assert "is not MxNxK" in capsys.readouterr().err
    assert bench.main(["--sweep", "square", "--shapes", "1x1x1"]) == 2
    assert bench.main(["--dtype", "f64"]) == 2


def test_bench_without_gpu_exits_2(capsys):
    from cugemm import toolkit

    if toolkit.have_gpu():
        pytest.skip("this machine has a GPU")
    assert bench.main(["--m", "128"]) == 2
    assert "no CUDA GPU" in capsys.readouterr().err


# ---- with a GPU --------------------------------------------------------------------------------
@pytest.mark.gpu
def test_timer_measures_a_kernel():
    cupy = pytest.importorskip("cupy")
    x = cupy.random.standard_normal((4096, 4096), dtype=cupy.float32)
    timer = timing.Timer(warmup=2, iters=20)
    t = timer.measure(lambda: x @ x)
    assert 0 < t["p20"] <= t["median"] <= t["p80"] and t["n"] >= 5
    # 137 GFLOP can not take under 0.05 ms (2700 TFLOP/s) nor over a second
    assert 0.05 < t["median"] < 1000
    # alternating a kernel with one doing twice the work: the pair keeps them apart
    y = cupy.random.standard_normal((4096, 8192), dtype=cupy.float32)
    one, two = timer.measure_pair(lambda: x @ x, lambda: x @ y)
    assert one["n"] == two["n"] and 1.5 < two["median"] / one["median"] < 2.5


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,glob", [("f32", "sgemm_warp_tile"), ("f16", "hgemm_wmma_fast")])
def test_bench_shape_checks_then_times(dtype, glob):
    rows = bench.bench_shape(512, 256, 128, dtype, pattern=glob, warmup=1, iters=5)
    assert [r.status for r in rows] == [Status.BASELINE, Status.OK]
    assert all(r.ms > 0 and r.tflops > 0 and r.rel_err < 1e-2 for r in rows)
    # the variant's ratio comes from its own alternating pair with cupy.matmul: near, not equal to,
    # the ratio to the baseline row timed alone
    assert rows[1].fastest and rows[0].pct == 100.0
    assert 0.5 < rows[1].pct / (100 * rows[0].ms / rows[1].ms) < 2


@pytest.mark.gpu
def test_bench_shape_catches_a_wrong_result(monkeypatch):
    import cugemm.launch

    monkeypatch.setattr(cugemm.launch, "run", lambda v, a, b, out: out.fill(0))
    rows = bench.bench_shape(256, 256, 64, "f32", pattern="sgemm_warp_tile", warmup=1, iters=5)
    assert rows[1].status is Status.FAIL and not rows[1].fastest
