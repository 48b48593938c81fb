"""Messages that tell the truth, the same way at every entry point (the CLI through subprocess: exit
status and stderr; the API in process):

  --arch / arch=   exactly the chips cugemm compiles for, everything else refused in one line
                   listing them, the same in the CLI and cugemm.compile / compile_plan
  no GPU           one message from one function (device.current, toolkit.gpu_problem): no
                   driver or no device says so, and only a driver that is there and too old is
                   called too old
  rules            check_device reads any arch spelling; an arch-specific variant's refusal names
                   the chips it runs on; offline compiles name the target chip, never "this GPU";
                   shared memory that does not fit is the reason given when it is the reason
  small ones       the families filter, list's M limit, a summary piped into head
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import cugemm
from cugemm import arch, device, registry, toolkit
from cugemm.registry import FAMILIES, variants

ROOT = Path(__file__).resolve().parents[1]
NO_GPU_ENV = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # a GPU machine looks like one without


def cli(*args, env=None, block_cupy=False):
    prelude = "import sys; sys.modules['cupy'] = None; " if block_cupy else ""
    code = prelude + ("import sys, runpy; sys.argv = ['cugemm'] + sys.argv[1:]; "
                      "runpy.run_module('cugemm', run_name='__main__')")
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT,
                          env=env or os.environ)


def one_line(r, code=2) -> str:
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    return lines[0]


# ---- --arch takes exactly the chips cugemm knows ---------------------------------------
def test_known_chips_are_those_some_variant_runs_on():
    runnable = [f"sm_{cc}" for cc in sorted(arch.CHIPS)
                if any(arch.unfit_reason(v, cc) is None for v in variants())]
    assert registry.chips() == runnable
    assert "sm_75" not in runnable and "sm_70" not in runnable  # below every variant's sm_80
    assert {"sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"} <= set(runnable)
    assert registry.arch_specific() == ["sm_90a"]


def test_api_accepts_exactly_the_known_chips():
    known = set(registry.chips())
    for cc in range(10, 200):
        spelt = f"sm_{cc}"
        if spelt in known:
            assert cugemm.compile_plan("sgemm_naive_f32", spelt)[0], spelt
        else:
            with pytest.raises(ValueError) as e:
                cugemm.compile_plan("sgemm_naive_f32", spelt)
            assert all(c in str(e.value) for c in known), str(e.value)
    # every spelling of a known chip, and sm_90a naming the H100's chip
    for spelling in ("sm_89", "sm89", "89", "8.9", 89, (8, 9)):
        assert registry.chip(spelling) == arch.Arch(89, "")
    assert registry.chip("sm_90a") == arch.Arch(90, "")


@pytest.mark.parametrize("bad", ["sm_75", "sm_70", "sm_91", "sm_200", "", "foo", "sm_100a", "8.0a"])
def test_cli_and_api_refuse_the_same_way(bad):
    """One line, exit 2, the list of chips; cugemm.compile raises ValueError with the same text."""
    line = one_line(cli("compile", "--arch", bad, "--variants", "sgemm_naive_f32"))
    for c in registry.chips():
        assert c in line, line
    with pytest.raises(ValueError) as e:
        cugemm.compile("sgemm_naive_f32", arch=bad)
    assert line == f"cugemm: {e.value}"
    with pytest.raises(ValueError):
        cugemm.compile(arch=bad)  # every variant: refused, not "0 compiled, 229 do not apply"
    with pytest.raises(ValueError):
        cugemm.compile_plan(None, bad)


def test_below_every_variant_says_so():
    with pytest.raises(ValueError, match=r"'sm_75' \(T4, RTX 20xx\) is below every cugemm variant "
                       r"\(each needs compute capability >= 8\.0, sm_80\)"):
        cugemm.compile_plan(None, "sm_75")
    with pytest.raises(ValueError, match="arch '' is not an arch"):  # not silently sm_90
        cugemm.compile_plan(None, "")


def test_this_gpus_arch_is_checked_too(monkeypatch):
    """No --arch on a GPU no variant runs on: the refusal says it is this GPU's arch."""
    monkeypatch.setattr(toolkit, "have_gpu", lambda: True)
    monkeypatch.setattr(toolkit, "device_cc", lambda: 75)
    with pytest.raises(ValueError, match=r"^this GPU's arch 'sm_75' \(T4, RTX 20xx\) is below every"):
        cugemm.compile_plan(None)


def test_cli_arch_accepts_every_known_chip():
    supported = toolkit.nvrtc_archs()
    for chip in registry.chips() + registry.arch_specific():
        cc = arch.parse(chip).cc
        if supported and cc not in supported:
            continue  # this NVRTC is older than the chip (see test_nvrtc_too_old_for_a_chip)
        r = cli("compile", "--arch", chip, "--variants", "sgemm_naive_f32", "--no-warm", "--json")
        assert r.returncode == 0, (chip, r.stderr)
        data = json.loads(r.stdout)
        assert data["arch"] == f"sm_{cc}" and [c["arch"] for c in data["compiled"]] == [f"sm_{cc}"]


def test_nvrtc_too_old_for_a_chip(monkeypatch):
    """A known chip this CuPy's NVRTC cannot target is one line naming NVRTC, not its log."""
    from cugemm import jit

    import dataclasses

    monkeypatch.setattr(toolkit, "nvrtc_archs", lambda: (75, 80, 86, 89, 90))
    v = dataclasses.replace(cugemm.get_variant("sgemm_naive_f32"), name="nvrtc_too_old_probe")  # uncached
    with pytest.raises(cugemm.CompileError, match="NVRTC .* does not compile for sm_120"):
        jit.compile_offline(v, "sm_120")


# ---- the no-GPU message ------------------------------------------------------------------
NO_LIB = toolkit.DriverProbe()
STUB = toolkit.DriverProbe("libcuda.so.1", 34, 13000, 0)
NO_DEVICE = toolkit.DriverProbe("libcuda.so.1", 100, 13000, 0)
OLD = toolkit.DriverProbe("libcuda.so.1", 0, 12040, 1)


@pytest.mark.parametrize("probe", [NO_LIB, STUB, NO_DEVICE], ids=["no driver", "stub", "no device"])
def test_no_gpu_is_never_called_an_old_driver(probe, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    # what CuPy's runtime says on a machine with no driver: cudaErrorInsufficientDriver
    msg = toolkit.no_gpu_message(probe, 13020, 35, "cudaErrorInsufficientDriver: CUDA driver version is "
                                 "insufficient for CUDA runtime version")
    assert msg.startswith("no CUDA GPU found: ") and "NVIDIA" in msg
    assert "insufficient" not in msg and "old" not in msg and "upgrade" not in msg
    assert "compile` works without one" in msg


def test_hidden_devices_are_named(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert "CUDA_VISIBLE_DEVICES=''" in toolkit.no_gpu_message(NO_DEVICE, 13020, 100, "no device")


def test_an_old_driver_with_a_gpu_is_named_with_both_versions():
    msg = toolkit.no_gpu_message(OLD, 13020, 35, "cudaErrorInsufficientDriver")
    assert "too old" in msg and "CUDA 12.4" in msg and "CUDA 13.2" in msg and "cugemm[cuda12]" in msg
    assert "no CUDA GPU" not in msg


def test_a_driver_that_does_not_start_is_named():
    broken = toolkit.DriverProbe("libcuda.so.1", 999, 13000, 0, "CUDA_ERROR_UNKNOWN")
    msg = toolkit.no_gpu_message(broken, 13020, 35, "cudaErrorInsufficientDriver: ... insufficient ...")
    assert "did not start (cuInit: CUDA_ERROR_UNKNOWN)" in msg and "insufficient" not in msg
    cuda11 = toolkit.no_gpu_message(OLD._replace(version=11080), 13020, 35, "")
    assert "too old" in cuda11 and "CUDA 11.8" in cuda11 and "cuda11" not in cuda11  # no such extra


def test_the_probe_reads_cupy_then_the_driver(monkeypatch):
    class RuntimeErr(Exception):
        status = 35

    class Runtime:
        @staticmethod
        def getDeviceCount():
            raise RuntimeErr("cudaErrorInsufficientDriver: CUDA driver version is insufficient")

        @staticmethod
        def runtimeGetVersion():
            return 13020

    class Cuda:
        runtime = Runtime

    class FakeCupy:
        cuda = Cuda

    monkeypatch.setattr(toolkit, "probe_driver", lambda: NO_LIB)
    assert toolkit.probe_gpu(FakeCupy).startswith("no CUDA GPU found: no NVIDIA GPU/driver")
    monkeypatch.setattr(toolkit, "probe_driver", lambda: OLD)
    assert "too old" in toolkit.probe_gpu(FakeCupy)


def test_every_api_entry_point_gives_the_one_message(fake, monkeypatch):
    device.forget_gpu_check()
    monkeypatch.setattr(toolkit, "gpu_problem", lambda: "no CUDA GPU found: the probe's answer")
    want = "cugemm: no CUDA GPU found: the probe's answer"
    calls = {
        "run": lambda: cugemm.run("sgemm_naive_f32", fake((4, 4)), fake((4, 4))),
        "matmul": lambda: cugemm.matmul(fake((64, 64), "<f2"), fake((64, 64), "<f2")),
        "tune": lambda: cugemm.tune([(64, 64, 64)]),
        "explain": lambda: cugemm.explain(fake((64, 64), "<f2"), fake((64, 64), "<f2")),
        "device.current": device.current,
    }
    for name, call in calls.items():
        with pytest.raises(RuntimeError) as e:
            call()
        assert str(e.value) == want, name
    from cugemm import bench

    assert bench.main(["--m", "128"]) == 2
    # a wrong input is named before the GPU is asked for
    with pytest.raises(TypeError, match="no element type 'f64'"):
        cugemm.tune([(64, 64, 64)], dtype="f64")


def test_cli_without_a_gpu():
    """On a machine without a GPU (or with its GPUs hidden): one line, exit 2, "no CUDA GPU found",
    never the runtime's "driver version is insufficient", and the same words for every command."""
    said = set()
    for args in (("explain", "64x64x64"), ("tune", "--shapes", "64x64x64"), ("bench",)):
        line = one_line(cli(*args, env=NO_GPU_ENV))
        assert "no CUDA GPU found" in line and "insufficient" not in line and "too old" not in line, line
        said.add(line.split(": ", 1)[1])
    assert len(said) == 1, said


def test_gpu_problem_is_cached(monkeypatch):
    asked = []
    toolkit.forget_gpu_problem()
    monkeypatch.setattr(toolkit, "probe_gpu", lambda cupy: asked.append(1) or "no CUDA GPU found: x")
    try:
        assert toolkit.gpu_problem() == toolkit.gpu_problem() == "no CUDA GPU found: x"
        assert asked == [1] and not toolkit.have_gpu()
    finally:
        toolkit.forget_gpu_problem()  # the real answer, asked again by the next test that needs it


# ---- messages that do not contradict themselves ------------------------------------------
HOPPER = next(v for v in variants() if v.archs == ("sm_90a",))
SMEM_204K = cugemm.get_variant("hgemm_wmma_m16n16k16_mma2x4_warp4x4x4_stage4")


@pytest.mark.parametrize("spelling", [90, "90", "sm_90", "sm90", "sm_90a", "9.0", (9, 0)])
def test_check_device_reads_every_spelling(spelling):
    HOPPER.check_device(spelling)  # an sm_90a cubin runs on every cc 9.0 chip: no refusal
    SMEM_204K.check_device(spelling)


@pytest.mark.parametrize("spelling,cc", [((8, 9), 89), ("sm_89", 89), ("8.9", 89), ("100", 100)])
def test_check_device_names_the_gpu_once(spelling, cc):
    with pytest.raises(RuntimeError) as e:
        HOPPER.check_device(spelling)
    msg = str(e.value)
    assert msg.endswith(f"this GPU is sm_{cc}") and "sm_sm" not in msg and "sm_(" not in msg
    assert "built for sm_90a only" in msg and "run on sm_90 (H100, H200, GH200) alone" in msg


def test_offline_refusals_name_the_target_chip_not_a_gpu():
    for chip in registry.chips():
        _, skipped = cugemm.compile_plan(None, chip)
        for v, why in skipped:
            assert "this GPU" not in why and "GPU" not in why, why
            assert chip in why, why


def test_shared_memory_refusals_say_shared_memory():
    """A rung whose targets follow from its shared memory (204 KB: sm_90 only) is refused on sm_86
    and sm_89 for its shared memory, which is the reason, not for compute capability."""
    for chip in ("sm_86", "sm_89", "sm_80", "sm_120"):
        cc = arch.parse(chip).cc
        for v, why in cugemm.compile_plan(None, chip)[1]:
            if v.smem_dynamic > arch.smem_optin(cc) and not all(arch.parse(a).suffix for a in v.archs):
                assert "shared memory" in why and "compute capability" not in why, why
    with pytest.raises(RuntimeError, match=r"needs 208896 bytes of dynamic shared memory per block; "
                       r"sm_86 allows 101376"):
        SMEM_204K.check_device(86)


def test_without_cupy_the_api_names_the_extra():
    code = ("import sys; sys.modules['cupy'] = None\nimport cugemm\n"
            "try:\n  cugemm.compile('sgemm_naive_f32', arch='sm_80')\n"
            "except ImportError as e:\n  print(type(e).__name__, e)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0 and "cugemm[cuda13]" in r.stdout and "No module named" not in r.stdout, r


# ---- the small ones ----------------------------------------------------------------------
def test_families_filter_refuses_an_unknown_family():
    assert variants(family="sgemm") and set(FAMILIES) == {v.family for v in variants()}
    with pytest.raises(ValueError, match="no variant family 'nosuch'.*sgemm"):
        variants(family="nosuch")
    with pytest.raises(TypeError):
        variants(dtype="f64")
    assert variants("no_such_glob*") == []  # a glob is a pattern: no match is an empty list


def test_list_shows_the_m_limit():
    skinny = [v for v in variants() if v.max_m]
    assert skinny
    r = cli("list", "--variants", skinny[0].name)
    assert r.returncode == 0 and f"M<={skinny[0].max_m}" in r.stdout, r.stdout
    r = cli("list", "--variants", skinny[0].name, "--json")
    assert json.loads(r.stdout)[0]["max_m"] == skinny[0].max_m


def test_matmul_summary_into_head(tmp_path):
    rows = [{"variant": v, "M": m, "N": 64, "K": 64, "dtype": "float16", "status": "ok", "pct": 90.0,
             "tflops": 1.0, "detail": "x"} for m in range(1, 3001) for v in ("cugemm.matmul", "cupy.matmul")]
    (tmp_path / "r.json").write_text(json.dumps({"meta": {}, "rows": rows}))
    r = subprocess.run(f"{sys.executable} {ROOT / 'scripts' / 'matmul_summary.py'} {tmp_path / 'r.json'} | head -1",
                       shell=True, capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.count("\n") == 1 and r.stderr == "", r.stderr
