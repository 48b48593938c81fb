"""scripts/tc_peak.cu (the TF32 instruction-ceiling probes) compiles through NVRTC with no spills:
the MMA probes for sm_80 and sm_90, the wgmma probe for sm_90a (and only there). No GPU needed."""
import importlib.util
from pathlib import Path

import pytest

import cugemm

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("tc_peak", ROOT / "scripts" / "tc_peak.py")
tc_peak = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tc_peak)


def compile_probes(names, arch):
    """{name expression: report} through cugemm's public standalone-source compile."""
    return {r.name: r for r in cugemm.compile_source(tc_peak.SOURCE, names, arch)}


@pytest.mark.parametrize("arch,probes", [("sm_80", tc_peak.PROBES), ("sm_90", tc_peak.PROBES),
                                         ("sm_90a", {**tc_peak.PROBES, **tc_peak.WGMMA_PROBES})])
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
    for expr, (form, acc, flops, unit, k) in {**tc_peak.PROBES, **tc_peak.WGMMA_PROBES}.items():
        assert f"<{acc}>" in expr and flops > 0 and unit in (32, 128) and k in (4, 8), expr
    from cugemm.registry import get_variant
    for name in tc_peak.DEFAULT_VARIANTS:
        assert get_variant(name).family == "sgemm_tf32", name  # registered TF32 variants
