"""The bench's host-side pieces, without a GPU: shape grids, percentiles, the table, the result
files and the plot, from synthetic rows."""
import csv
import json
import math

import pytest

from cugemm import bench


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
    assert bench._percentile(v, 50) == 3.0
    assert bench._percentile(v, 20) == pytest.approx(1.8)
    assert bench._percentile(v, 80) == pytest.approx(4.2)
    assert bench._percentile([7.0], 80) == 7.0


def _rows():
    rows = []
    for (m, n, k) in ((1024, 1024, 256), (2048, 2048, 512)):
        for name, ms, status, err in (("cupy.matmul", 0.10, "baseline", 1e-7), ("fast", 0.08, "ok", 2e-7),
                                      ("slow", 0.50, "ok", 2e-7), ("broken", 0.01, "FAIL", math.nan),
                                      ("rejected", None, "ValueError: M=1024 is not a multiple", None)):
            rows.append(dict(variant=name, M=m, N=n, K=k, dtype="f32", ms=ms,
                             p20_ms=ms and ms * 0.99, p80_ms=ms and ms * 1.01,
                             tflops=ms and 2 * m * n * k / ms / 1e9, pct=ms and 10 / ms,
                             rel_err=err, status=status, fastest=name == "fast"))
    return rows


META = {"device": "Test GPU", "compute_capability": "sm_90", "sms": 132, "driver_cuda": "13.0",
        "cuda_runtime": "13.0", "cupy": "14.2.0", "cupy_tf32": "", "date": "2026-11-22 00:00 UTC"}


def test_table_marks_fastest_and_shows_failures():
    text = bench.format_table(_rows()[:5])
    lines = text.splitlines()
    assert "fast *" in text and "broken *" not in text
    assert any("FAIL" in line and line.startswith("broken") for line in lines)
    assert "is not a multiple" in text
    md = bench.format_table(_rows()[:5], markdown=True)
    assert md.splitlines()[0].startswith("| variant")


def test_json_and_csv(tmp_path):
    rows = _rows()
    bench.write_json(tmp_path / "r.json", META, rows, ["--sweep", "square"])
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["meta"]["device"] == "Test GPU" and data["command"] == "python bench.py --sweep square"
    assert len(data["rows"]) == len(rows) and data["rows"][1]["variant"] == "fast"
    bench.write_csv(tmp_path / "r.csv", META, rows)
    got = list(csv.DictReader(open(tmp_path / "r.csv")))
    assert len(got) == len(rows) and got[0]["device"] == "Test GPU" and got[1]["status"] == "ok"


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    for rows, name in ((_rows(), "sweep.png"), (_rows()[:5], "one.png")):
        bench.plot(str(tmp_path / name), META, rows)
        data = (tmp_path / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_bench_without_gpu_exits_2(capsys):
    from cugemm import toolkit

    if toolkit.have_gpu():
        pytest.skip("this machine has a GPU")
    assert bench.main(["--m", "128"]) == 2
    assert "no CUDA GPU" in capsys.readouterr().out
