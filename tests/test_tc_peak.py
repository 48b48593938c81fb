"""scripts/tc_peak.cu (the tensor-core instruction-ceiling probes) compiles through NVRTC with no
spills: the TF32 and fp16 / bf16 MMA probes for sm_80 and sm_90, the wgmma probe for sm_90a (and
only there); the probes' SASS issues the instruction they are named for, as many per loop trip as
the script counts. No GPU needed."""
import importlib.util
import re
from pathlib import Path

import pytest

import cugemm
from cugemm import jit

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("tc_peak", ROOT / "scripts" / "tc_peak.py")
tc_peak = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tc_peak)


def compile_probes(names, arch):
    """{name expression: report} through cugemm's public standalone-source compile."""
    return {r.name: r for r in cugemm.compile_source(tc_peak.SOURCE, names, arch)}


ALL_MMA = {**tc_peak.PROBES, **tc_peak.F16_PROBES}


@pytest.mark.parametrize("arch,probes", [("sm_80", ALL_MMA), ("sm_90", ALL_MMA),
                                         ("sm_90a", {**ALL_MMA, **tc_peak.WGMMA_PROBES})])
def test_probes_compile_without_spills(arch, probes):
    reports = compile_probes(list(probes), arch)
    assert set(reports) == set(probes)
    for name, r in reports.items():
        assert r.registers > 0, r.log
        assert r.spill_bytes == 0 and r.stack_frame == 0, (name, r.log)


def test_wgmma_probe_is_sm90a_only():
    # without sm_90a the wgmma probe is compiled out, so naming it is an error
    with pytest.raises(cugemm.CompileError):
        compile_probes(list(tc_peak.WGMMA_PROBES), "sm_90")


def test_probe_table_is_consistent():
    for expr, pr in {**tc_peak.PROBES, **tc_peak.WGMMA_PROBES}.items():
        assert f"<{pr.mmas}>" in expr and pr.flops > 0 and pr.unit in (32, 128) and pr.k % 4 == 0, expr
    for expr, pr in tc_peak.F16_PROBES.items():
        assert pr.threads == 128 and pr.unit == 32 and pr.flops == 2 * 16 * 8 * 16, expr
        m = re.search(r"<(\d+)(?:, (\d+))?>", expr)
        if m.group(2):  # peak_mma_ldsm<FRAGS_M, FRAGS_N>: two k steps per trip
            fm, fn = int(m.group(1)), int(m.group(2))
            assert pr.mmas == 2 * fm * fn and pr.k == 32 and pr.out == 4 * fm * fn, expr
        else:
            assert pr.mmas == int(m.group(1)) and pr.k == 16 and pr.out == 4 * pr.mmas, expr
        assert (pr.sat == 2.0 ** 15) == ("f16acc" in expr), expr
    assert all(w % 4 == 0 for w in tc_peak.F16_WARPS_PER_SM) and 8 in tc_peak.F16_WARPS_PER_SM
    from cugemm.registry import get_variant
    for name in tc_peak.DEFAULT_VARIANTS:
        assert get_variant(name).family == "sgemm_tf32", name  # registered TF32 variants
    for name in tc_peak.DEFAULT_F16_VARIANTS:
        v = get_variant(name)
        assert v.family == "hgemm_mma" and v.dtype_in == "float16", name


# SASS opcode of each fp16 / bf16 probe's instruction
_F16_SASS = {"peak_mma_f16<": "HMMA.16816.F32", "peak_mma_f16acc<": "HMMA.16816.F16",
             "peak_mma_bf16<": "HMMA.16816.F32.BF16", "peak_mma_ldsm<": "HMMA.16816.F32"}


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_f16_probes_issue_their_instruction(arch):
    """Every fp16 probe's loop issues its m16n8k16 form, a whole number of trips' worth (nothing was
    merged away); the ldmatrix probe issues (FRAGS_M + FRAGS_N / 2) LDSM per k step of MMAs, none hoisted."""
    names = list(tc_peak.F16_PROBES)
    reports = compile_probes(names, arch)
    try:
        sass = jit.disassemble(next(iter(reports.values())).cubin)
    except RuntimeError as e:  # no cuobjdump on this machine
        pytest.skip(str(e))
    funcs = {}
    for part in sass.split("Function : ")[1:]:
        funcs[part.split()[0]] = re.findall(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)", part)
    for expr, pr in tc_peak.F16_PROBES.items():
        base = expr.split("<")[0]
        args = [int(x) for x in re.findall(r"\d+", expr.split("<")[1])]
        mangled = [k for k in funcs if re.fullmatch(rf"_Z\d+{base}I" + "".join(f"Li{a}E" for a in args) + r"EvPfi", k)]
        assert len(mangled) == 1, (expr, list(funcs))
        ops = funcs[mangled[0]]
        want = _F16_SASS[base + "<"]
        hmma = [o for o in ops if o.startswith("HMMA")]
        assert hmma and all(o == want for o in hmma), (expr, set(hmma))
        per_step = args[0] * args[1] if base == "peak_mma_ldsm" else pr.mmas
        assert len(hmma) % per_step == 0 and len(hmma) >= pr.mmas, (expr, len(hmma))
        if base == "peak_mma_ldsm":
            ldsm = [o for o in ops if o.startswith("LDSM")]
            per_kstep = args[0] + args[1] // 2
            assert len(ldsm) >= per_kstep * (len(hmma) // per_step), (expr, len(ldsm), len(hmma))
