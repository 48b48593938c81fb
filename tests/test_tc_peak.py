"""scripts/tc_peak.cu (the TF32 instruction-ceiling probes) compiles through NVRTC with no spills:
the MMA probes for sm_80 and sm_90, the wgmma probe for sm_90a (and only there). No GPU needed."""
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("tc_peak", ROOT / "scripts" / "tc_peak.py")
tc_peak = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tc_peak)


def compile_probes(names, arch):
    from cupy.cuda import nvrtc

    prog = nvrtc.createProgram(tc_peak.source(), "tc_peak.cu", [], [])
    try:
        for name in names:
            nvrtc.addNameExpression(prog, name)
        try:
            nvrtc.compileProgram(prog, list(tc_peak.options()) + [f"-arch={arch}", "-Xptxas=-v"])
        except nvrtc.NVRTCError:
            raise AssertionError(nvrtc.getProgramLog(prog)) from None
        return nvrtc.getProgramLog(prog), [nvrtc.getLoweredName(prog, n) for n in names]
    finally:
        nvrtc.destroyProgram(prog)


def ptxas_reports(log):
    """function name -> its ptxas report lines"""
    out, name = {}, None
    for line in log.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            name = m.group(1)
            out[name] = []
        elif name:
            out[name].append(line)
    return out


@pytest.mark.parametrize("arch,probes", [("sm_80", tc_peak.PROBES), ("sm_90", tc_peak.PROBES),
                                         ("sm_90a", {**tc_peak.PROBES, **tc_peak.WGMMA_PROBES})])
def test_probes_compile_without_spills(arch, probes):
    log, lowered = compile_probes(list(probes), arch)
    reports = ptxas_reports(log)
    assert set(lowered) <= set(reports), (lowered, list(reports))
    for name in lowered:
        text = "\n".join(reports[name])
        assert re.search(r"Used \d+ registers", text), text
        assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in text, (name, text)


def test_wgmma_probe_is_sm90a_only():
    # without sm_90a the wgmma probe is compiled out, so naming it is an error
    with pytest.raises(AssertionError):
        compile_probes(list(tc_peak.WGMMA_PROBES), "sm_90")


def test_probe_table_is_consistent():
    for expr, (form, acc, flops, unit, k) in {**tc_peak.PROBES, **tc_peak.WGMMA_PROBES}.items():
        assert f"<{acc}>" in expr and flops > 0 and unit in (32, 128) and k in (4, 8), expr
    from cugemm.registry import get_variant
    for name in tc_peak.DEFAULT_VARIANTS:
        assert get_variant(name).family == "sgemm_tf32", name  # registered TF32 variants
