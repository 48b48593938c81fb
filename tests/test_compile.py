"""Every registered variant compiles offline through NVRTC for each arch it claims (sm_80 and sm_90
at least), with zero spill bytes unless the variant documents why. No GPU needed."""
from concurrent.futures import ThreadPoolExecutor

import pytest

import cugemm
from cugemm import jit
from cugemm.registry import variants

JOBS = [(v, arch) for v in variants() for arch in v.archs]


@pytest.fixture(scope="module")
def reports():
    """All compiles at once, two NVRTC programs at a time; (name, arch) -> report or CompileError."""

    def one(job):
        try:
            return jit.compile_offline(*job)
        except cugemm.CompileError as e:
            return e

    with ThreadPoolExecutor(max_workers=2) as pool:
        return {(v.name, arch): r for (v, arch), r in zip(JOBS, pool.map(one, JOBS))}


def test_every_variant_claims_sm80_and_sm90():
    for v in variants():
        assert {"sm_80", "sm_90"} <= set(v.archs) or "sm_90a" in v.archs, v.name


@pytest.mark.parametrize("v,arch", JOBS, ids=[f"{v.name}-{a}" for v, a in JOBS])
def test_compiles_without_spills(reports, v, arch):
    r = reports[(v.name, arch)]
    if isinstance(r, Exception):
        pytest.fail(str(r))
    assert r.cubin_bytes > 0
    assert 0 < r.registers <= 255
    assert v.template in r.lowered_name  # the name expression resolved to a mangled kernel
    assert r.smem_static + r.smem_dynamic <= 227 * 1024
    assert r.smem_static <= 48 * 1024  # the static shared memory limit
    if not v.spills:
        assert r.spill_bytes == 0, f"{v.name} spills on {arch}:\n{r.log}"
        assert r.stack_frame == 0, f"{v.name} has a stack frame on {arch}:\n{r.log}"


def test_threads_fit_the_register_file(reports):
    for (name, arch), r in reports.items():
        if isinstance(r, Exception):
            continue  # reported by test_compiles_without_spills
        v = cugemm.get_variant(name)
        assert v.threads * r.registers <= 65536, f"{name}: one block needs more registers than an SM has"


def test_compile_error_carries_name_and_log(monkeypatch):
    v = cugemm.get_variant("sgemm_naive_f32")
    monkeypatch.setattr(jit, "source", lambda variant: "template <int A, int B> __global__ void "
                        "sgemm_naive_f32(const float* a) { this is not C++; }")
    with pytest.raises(cugemm.CompileError) as e:
        jit.compile_offline(v, "sm_90")
    assert e.value.variant == "sgemm_naive_f32" and e.value.arch == "sm_90"
    assert "error" in e.value.log and "sgemm_naive_f32" in str(e.value)


def test_arch_not_claimed_is_refused():
    with pytest.raises(ValueError, match="claims"):
        cugemm.compile(["sgemm_naive_f32"], arch="sm_75")
    hopper = [v for v in cugemm.variants() if v.archs == ("sm_90a",)]
    if hopper:
        with pytest.raises(ValueError, match="claims sm_90a, not sm_80"):
            cugemm.compile([hopper[0].name], arch="sm_80")
        # under the chip's plain name it compiles for its arch-specific target
        assert cugemm.compile([hopper[0].name], arch="sm_90")[0].arch == "sm_90a"


def test_compile_by_glob_returns_reports():
    reps = cugemm.compile("sgemm_naive_f32", arch="sm_80")
    assert [r.name for r in reps] == ["sgemm_naive_f32"] and reps[0].arch == "sm_80"
    with pytest.raises(KeyError):
        cugemm.compile("no_such_*", arch="sm_80")
