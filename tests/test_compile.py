"""Every registered variant compiles offline through NVRTC for every chip it can run on (sm_80,
sm_89 and sm_90 here: as sm_90a for Hopper-only variants) with zero spill bytes unless the variant
documents why, and declares the dynamic shared memory its registry record says. No GPU needed.

CI runs this file a second time with CUGEMM_CUDA_SEARCH=pip: the pip wheels of the cuda13 extra
alone must be enough."""
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

import cugemm
from cugemm import arch, jit, testing
from cugemm.registry import variants

CHIPS = ("sm_80", "sm_89", "sm_90")
PLANS = {chip: cugemm.compile_plan(None, chip) for chip in CHIPS}
JOBS = sorted({(v.name, target) for jobs, _ in PLANS.values() for v, target in jobs})


@pytest.fixture(scope="module")
def reports():
    """All compiles at once, two NVRTC programs at a time; (name, target) -> report or CompileError."""

    def one(job):
        try:
            return jit.compile_offline(cugemm.get_variant(job[0]), job[1])
        except cugemm.CompileError as e:
            return e

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(JOBS, pool.map(one, JOBS)))


def test_every_claimed_arch_is_compiled():
    for v in variants():
        for a in v.archs:
            assert (v.name, a) in JOBS, (v.name, a)
        assert {"sm_80", "sm_90"} & set(v.archs) or "sm_90a" in v.archs, v.name


def test_plans_follow_the_chips():
    jobs89, skipped89 = PLANS["sm_89"]
    assert all(t == "sm_89" for _, t in jobs89)  # sm_80 variants compile as sm_89 code there
    for v, why in skipped89:  # 99 KB of shared memory per block, no wgmma
        assert v.smem_dynamic > 99 * 1024 or v.archs == ("sm_90a",), v.name
        assert "sm_89" in why
    jobs90, skipped90 = PLANS["sm_90"]
    assert not skipped90 and len(jobs90) == len(variants())
    assert {t for v, t in jobs90 if v.archs == ("sm_90a",)} <= {"sm_90a"}
    jobs80, skipped80 = PLANS["sm_80"]
    assert all(v.archs == ("sm_90a",) or v.smem_dynamic > 163 * 1024 for v, _ in skipped80)


@pytest.mark.parametrize("name,target", JOBS, ids=[f"{n}-{t}" for n, t in JOBS])
def test_compiles_without_spills(reports, name, target):
    v = cugemm.get_variant(name)
    r = reports[(name, target)]
    if isinstance(r, Exception):
        pytest.fail(str(r))
    assert r.cubin_bytes > 0 and r.cubin[:4] == b"\x7fELF"
    assert 0 < r.registers <= 255
    assert v.template in r.lowered_name  # the name expression resolved to a mangled kernel
    assert r.smem_static + r.smem_dynamic <= arch.smem_optin(arch.parse(target).cc)
    assert r.smem_static <= 48 * 1024  # the static shared memory limit
    if not v.spills:
        assert r.spill_bytes == 0, f"{v.name} spills on {target}:\n{r.log}"
        assert r.stack_frame == 0, f"{v.name} has a stack frame on {target}:\n{r.log}"


def test_declared_shared_memory_matches_the_registry(reports):
    """A kernel file declares its dynamic shared memory once (<template>_smem_bytes<params>); the
    registry's number is that declaration as read from the compiled PTX (cugemm/tables/smem.json,
    written by scripts/smem_table.py): every entry agrees with the PTX, and every kernel using dynamic
    shared memory declares it. A failure here means the table is stale: run scripts/smem_table.py."""
    checked = 0
    for (name, target), r in reports.items():
        if isinstance(r, Exception):
            continue
        v = cugemm.get_variant(name)
        if v.smem_dynamic or r.smem_declared is not None:
            assert r.smem_declared == v.smem_dynamic, (name, r.smem_declared, v.smem_dynamic)
            checked += 1
    assert checked > 0


def test_threads_fit_the_register_file(reports):
    for (name, target), r in reports.items():
        if isinstance(r, Exception):
            continue  # reported by test_compiles_without_spills
        v = cugemm.get_variant(name)
        assert v.threads * r.registers <= 65536, f"{name}: one block needs more registers than an SM has"


# one cubin per wgmma mainloop: the operand and output types change no wgmma group
_TYPE_PARAMS = {"TA", "TB", "TC", "T"}
WGMMA_LOOPS = sorted({(v.template, tuple(kv for kv in v.params if kv[0] not in _TYPE_PARAMS)): v.name
                      for v in sorted(variants(), key=lambda v: v.name, reverse=True) if v.math == "wgmma"}.values())


@pytest.mark.parametrize("name", WGMMA_LOOPS)
def test_wgmma_groups_are_not_serialised(reports, name):
    """ptxas serialises every wgmma of a kernel (a wait after each, "C7514: wgmma.mma_async
    instructions are serialized", which NVRTC's log does not show) when it cannot prove that no
    ordinary instruction touches the accumulators of one in flight, e.g. a partial sum read after a
    wait_group 1 in a later trip of a loop than the one that issued it (kernels/fp8_wgmma/
    02_promoted.cu). In the SASS each GMMA then ends its own group (gsb0): the kernels issue at least
    two wgmmas per group, so at most half of them may."""
    from cugemm import toolkit

    if toolkit.find_tool("cuobjdump") is None or toolkit.find_tool("nvdisasm") is None:
        pytest.skip("no cuobjdump / nvdisasm: in the CUDA toolkit or the test extra's wheels")
    v = cugemm.get_variant(name)
    r = reports[(name, "sm_90a")]
    if isinstance(r, Exception):
        pytest.fail(str(r))
    ends, gmma = testing.gmma_group_ends(jit.disassemble(r.cubin))
    assert gmma, f"{v.name}: no GMMA in the SASS"
    assert 2 * ends <= gmma, f"{v.name}: {ends} of its {gmma} GMMAs end a group: serialised by ptxas"


# one cubin per cluster kernel file and cluster shape
CLUSTER_KERNELS = sorted({(v.source, v.cluster): v.name for v in sorted(variants(), key=lambda v: v.name)
                          if v.cluster != (1, 1, 1) and "sm_90a" in v.archs}.values())


@pytest.mark.parametrize("name", CLUSTER_KERNELS)
def test_cluster_kernels_pay_no_gpu_scope_fence(reports, name):
    """A cluster kernel synchronises its blocks with a relaxed cluster barrier at the start (the
    mbarrier inits are published by fence.mbarrier_init) and a producer tail at the end
    (lib/barrier.cuh, drain_ring), not with barrier.cluster.arrive.release, whose cluster-scope
    release is a MEMBAR.ALL.GPU costing ~0.7 us a barrier on an H100 (docs/kernels_lib.md)."""
    from cugemm import toolkit

    if toolkit.find_tool("cuobjdump") is None or toolkit.find_tool("nvdisasm") is None:
        pytest.skip("no cuobjdump / nvdisasm: in the CUDA toolkit or the test extra's wheels")
    r = reports[(name, "sm_90a")]
    if isinstance(r, Exception):
        pytest.fail(str(r))
    sass = jit.disassemble(r.cubin)
    assert "UCGABAR_ARV" in sass, f"{name}: no cluster barrier at all"
    assert "MEMBAR.ALL.GPU" not in sass, f"{name}: a GPU-scope fence (a release cluster barrier?)"


def test_compile_error_carries_name_and_log(monkeypatch):
    v = cugemm.get_variant("sgemm_naive_f32")
    monkeypatch.setattr(jit, "source", lambda variant: "template <int A, int B> __global__ void "
                        "sgemm_naive_f32(const float* a) { this is not C++; }")
    with pytest.raises(cugemm.CompileError) as e:
        jit.compile_offline(v, "sm_90")
    assert e.value.variant == "sgemm_naive_f32" and e.value.arch == "sm_90"
    assert "error" in e.value.log and "sgemm_naive_f32" in str(e.value)


def test_unfit_chips_are_refused_or_skipped():
    hopper = [v for v in variants() if v.archs == ("sm_90a",)]
    assert hopper
    with pytest.raises(ValueError, match="built for sm_90a only"):
        cugemm.compile([hopper[0].name], arch="sm_80")
    with pytest.raises(ValueError, match="needs compute capability"):
        cugemm.compile(["sgemm_naive_f32"], arch="sm_75")
    # under the chip's plain name a Hopper-only variant compiles for its arch-specific target
    assert cugemm.compile([hopper[0].name], arch="sm_90")[0].arch == "sm_90a"
    # chosen by glob, variants that cannot run on the chip are skipped, not an error
    reps = cugemm.compile(hopper[0].name + ",sgemm_naive_f32", arch="8.9")
    assert [(r.name, r.arch) for r in reps] == [("sgemm_naive_f32", "sm_89")]


def test_compile_by_glob_returns_reports():
    reps = cugemm.compile("sgemm_naive_f32", arch="sm_80")
    assert [r.name for r in reps] == ["sgemm_naive_f32"] and reps[0].arch == "sm_80"
    with pytest.raises(KeyError):
        cugemm.compile("no_such_*", arch="sm_80")


def test_compile_source_and_disassembly():
    text = "template <int A> __global__ void probe(float* x) { x[threadIdx.x] *= A; }"
    (r,) = cugemm.compile_source(text, ["probe<3>"], "sm_90")
    assert r.name == "probe<3>" and r.registers > 0 and r.spill_bytes == 0
    try:
        sass = jit.disassemble(r.cubin)
    except RuntimeError as e:
        pytest.skip(str(e))
    assert "FMUL" in sass and "sm_90" in sass


@pytest.mark.parametrize("chip", ["sm_80", "sm89", "9.0"])
def test_cli_compile_exits_0_and_lists_what_does_not_apply(chip):
    glob = "sgemm_naive_f32,hgemm_wmma_fast,sgemm_wgmma_m64n256k8_rs_ws_stage4"
    r = subprocess.run([sys.executable, "-m", "cugemm", "compile", "--arch", chip, "--variants", glob],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    target = str(arch.parse(chip))
    assert re.search(rf"^sgemm_naive_f32\s+{target}\s", r.stdout, re.M), r.stdout
    if target != "sm_90":
        assert "not for" in r.stdout and "sgemm_wgmma_m64n256k8_rs_ws_stage4" in r.stdout
    else:
        assert "sm_90a" in r.stdout and "not for" not in r.stdout


def test_compile_offline_honours_set_defines():
    """A -D switch set by jit.set_defines (the probes' A/B builds) reaches compile_offline's build: its
    report cache is keyed by the options too, not only by the source."""
    v = cugemm.get_variant("hgemm_skinny_splitk_m16_n64k128_stage4_bcol")
    try:
        shipped = jit.compile_offline(v, "sm_90")
        jit.set_defines(["CUGEMM_B_EVICT_FIRST=0"])  # lib/core.cuh: B's copies untagged
        switched = jit.compile_offline(v, "sm_90")
        assert switched.cubin != shipped.cubin
        jit.set_defines(())
        assert jit.compile_offline(v, "sm_90") is shipped  # the default build's report, from the cache
    finally:
        jit.set_defines(())
