"""CUGEMM_AUTOTUNE=1: cugemm.matmul times a new shape bucket's plausible plans on its first use and
records them in the tuning cache. CPU: when the hook runs (a plan-cache miss, the variable set, no
named variant, not inside a capture) and what it skips; GPU (marked): a new bucket is timed once,
written to the cache, and decides the plan from then on."""
import json

import pytest

import cugemm
from cugemm import dtypes, operand, serve, tuner, tuning
from cugemm.device import Device

H100 = Device(90, 132, 232448, "NVIDIA H100 80GB HBM3")


class _Lib:
    capturing_now = False

    @classmethod
    def capturing(cls, stream):
        return cls.capturing_now

    @staticmethod
    def stream(dev):
        return 0


class _Stop(Exception):
    pass


def _records(M, N, K, ptr=0x7000_0000):
    f16 = dtypes.FLOAT16
    return (operand.of_layout((M, K), f16, "row", K, ptr), operand.of_layout((K, N), f16, "col", K, ptr + 2**24),
            operand.of_layout((M, N), f16, "row", N, ptr + 2**25))


@pytest.fixture
def hooked(monkeypatch):
    calls = []
    monkeypatch.setattr(serve, "AUTOTUNE", lambda p, dev: calls.append((p.M, p.N, p.K, p.b.layout, dev)))
    monkeypatch.setattr(serve._device, "get", lambda dev=None: H100)

    def stop(*a, **k):
        raise _Stop

    monkeypatch.setattr(serve, "choose", stop)
    monkeypatch.setattr(_Lib, "capturing_now", False)
    return calls


def test_the_package_registers_the_tuner():
    assert serve.AUTOTUNE is tuner.autotune
    assert cugemm.tune is tuner.tune


def test_autotune_runs_on_a_miss_only_when_asked(hooked, monkeypatch):
    A, B, C = _records(384, 2304, 768)
    monkeypatch.delenv("CUGEMM_AUTOTUNE", raising=False)
    with pytest.raises(_Stop):
        serve.ready_for(A, B, C, False, None, 0, _Lib)
    monkeypatch.setenv("CUGEMM_AUTOTUNE", "0")
    with pytest.raises(_Stop):
        serve.ready_for(A, B, C, False, None, 0, _Lib)
    assert hooked == []
    monkeypatch.setenv("CUGEMM_AUTOTUNE", "1")
    with pytest.raises(_Stop):
        serve.ready_for(A, B, C, False, None, 0, _Lib)
    assert hooked == [(384, 2304, 768, "col", 0)]
    with pytest.raises(_Stop):  # a named variant runs as named: nothing to choose, nothing to tune
        serve.ready_for(A, B, C, False, "hgemm_wgmma_fast_bcol", 0, _Lib)
    assert len(hooked) == 1


def test_autotune_never_runs_inside_a_capture(hooked, monkeypatch):
    monkeypatch.setenv("CUGEMM_AUTOTUNE", "1")
    monkeypatch.setattr(_Lib, "capturing_now", True)
    with pytest.raises(serve.CaptureError):
        serve.ready_for(*_records(512, 768, 768), False, None, 0, _Lib)
    assert hooked == []


def test_autotune_skips_what_the_tuner_cannot_make():
    """An operand whose pointer or leading dimension is not 16-byte aligned puts the problem in an
    'unaligned' bucket, which the tuner's fresh operands never fall in: nothing is timed."""
    A, B, C = _records(64, 64, 64, ptr=0x7000_0002)
    p = serve.select.Problem(64, 64, 64, dtypes.FLOAT16, A.layout_class(), B.layout_class(), C.layout_class(), H100)
    assert tuner.autotune(p, 0) is False
    # nor rows 128 bytes apart holding ragged extents: dense operands of 2184 x 2184 x 2184 are ragged
    f16 = dtypes.FLOAT16
    A, B, C = (operand.of_layout(s, f16, "row", 2240, 0x7000_0000 + i * 2**24) for i, s in enumerate([(2184, 2184)] * 3))
    p = serve.select.Problem(2184, 2184, 2184, f16, A.layout_class(), B.layout_class(), C.layout_class(), H100)
    assert tuning.alignment_class(p) == "aligned"
    assert tuner.autotune(p, 0) is False


@pytest.mark.gpu
def test_a_new_bucket_is_timed_once_and_decides(tmp_path, monkeypatch):
    import cupy

    monkeypatch.setenv("CUGEMM_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CUGEMM_AUTOTUNE", "1")
    serve.reload_tuning()
    try:
        M, N, K = 1000, 1496, 712  # a bucket of its own in a fresh cache
        a = cupy.random.standard_normal((M, K), dtype=cupy.float32).astype(cupy.float16)
        w = cupy.random.standard_normal((N, K), dtype=cupy.float32).astype(cupy.float16)
        c = cugemm.matmul(a, w.T)
        ref = a.astype(cupy.float64) @ w.T.astype(cupy.float64)
        assert float(cupy.linalg.norm(c - ref) / cupy.linalg.norm(ref)) < 2e-3
        entries = json.loads((tmp_path / "tuning.json").read_text())["entries"]
        (buckets,) = entries.values()
        (rec,) = buckets.values()
        assert rec["shape"] == [M, N, K] and len(rec["us"]) >= 2
        choice = cugemm.explain(a, w.T)
        assert choice.plan.source == "tuned" and choice.plan.variant.name in rec["us"]
        assert choice.plan.variant.name == min(rec["us"], key=rec["us"].get)
        before = (tmp_path / "tuning.json").stat().st_mtime_ns
        serve.reload_tuning()
        cugemm.matmul(a, w.T)  # the bucket is in the cache: not timed again
        assert (tmp_path / "tuning.json").stat().st_mtime_ns == before
    finally:
        monkeypatch.delenv("CUGEMM_AUTOTUNE")
        monkeypatch.delenv("CUGEMM_CACHE_DIR")
        serve.reload_tuning()


def test_pairs_timed_while_the_gpu_was_slowed_are_timed_again_or_dropped():
    """The tuner's guard (tuner.settled): a pair whose cupy.matmul time is far over the shape's
    fastest is timed again, the try with the smallest baseline kept; one slowed every time is left out."""
    pairs = {"ok": (20.0, 30.0), "glitch": (120.0, 270.0), "stuck": (90.0, 200.0), "near": (25.0, 36.0)}
    tries = {"glitch": iter([(60.0, 150.0), (26.0, 29.0)]), "stuck": iter([(80.0, 180.0), (85.0, 190.0)])}
    asked = []

    def again(name):
        asked.append(name)
        return next(tries[name])

    out = tuner.settled(pairs, again)
    assert out == {"ok": (20.0, 30.0), "glitch": (26.0, 29.0), "near": (25.0, 36.0)}
    assert sorted(asked) == ["glitch", "glitch", "stuck", "stuck"]
    assert tuner.settled({}, again) == {}
