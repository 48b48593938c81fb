"""What README states about the code and the committed results holds (no GPU needed): which GPU
the figures come from and what each GPU generation gets from cugemm.matmul, the mma.sync figures it
quotes, tables whose ratio column agrees with their TFLOP/s columns (or says at the table why it
cannot), no bare exception names in table cells, a quick start whose bench names its dtype, and no
path that is not in the repository."""
import contextlib
import io
import json
import math
import re
from pathlib import Path

import pytest

from cugemm import arch, tuning
from cugemm.bench import Row, Status, cli, report
from cugemm.registry import variants

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
FLAT = " ".join(README.split())  # README with line breaks and indentation folded to single spaces


def _json(name):
    return json.loads((ROOT / "results" / name).read_text())


def _pct(data, variant, shape):
    [r] = [r for r in data["rows"] if r["variant"] == variant and (r["M"], r["N"], r["K"]) == shape]
    return r["pct"]


def _gpu_paragraph():
    start = README.index("Which GPU the figures and the choices assume")
    return " ".join(README[start:README.index("How it runs a product", start)].split())


# ---- which GPU ---------------------------------------------------------------------------------------


def test_readme_names_the_gpus_and_drivers_of_its_figures():
    para = _gpu_paragraph()
    for name in ("matmul_f16_llm.json", "f16.json", "mma_f16.json"):
        meta = _json(name)["meta"]
        assert meta["device"] in para and f"driver CUDA {meta['driver_cuda']}" in para, name
        assert meta["date"][:10] in para and meta["compute_capability"] in para, name
    for name in ("torch_model.json", "serving_ratios.json"):
        assert _json(name)["device"] in para, name  # the H200 of "From torch"


def test_readme_says_which_gpus_the_shipped_table_serves():
    para = _gpu_paragraph()
    assert set(tuning.SHIPPED.values()) == {"h100.json"} and "`cugemm/tables/h100.json`" in para
    for model in tuning.SHIPPED:
        assert model in para.split("**Hopper")[1].split("**Ampere")[0], model
    assert tuning.shipped_path("NVIDIA H100 80GB HBM3").name == "h100.json"
    assert tuning.shipped_path("NVIDIA A100-SXM4-80GB") is None and tuning.shipped_path("NVIDIA L40S") is None


def _chips(text):
    return {int(c) for c in re.findall(r"sm_(\d+)", text)}


def test_readme_says_what_each_gpu_generation_gets():
    """The chip lists and rung names of README's GPU paragraph against the registry's own rules."""
    para = _gpu_paragraph()
    others = para.split("**Ampere")[1]
    named = _chips(others.split("**")[0])
    assert named == {cc for cc in arch.CHIPS if cc >= 80 and cc != 90}, "a chip of sm_80 and up is not named"
    wide = "hgemm_mma_m16n8k16_mma2x4_warp4x8x4_stage3_swizzle_bswizzle_rbuf_epi_edge"
    narrow = wide.replace("_mma2x4_", "_mma2x2_")
    assert f"`{wide}`" in others and "`_mma2x2_`" in others
    big = _chips(re.search(r"144 KiB of shared memory \(([^)]*)\)", others).group(1))
    small = _chips(re.search(r"on the 99 KiB chips \(([^)]*)\)", others).group(1))
    assert big | small == named and not big & small
    for prefix in ("hgemm", "bgemm"):
        w, n = (variants(x.replace("hgemm", prefix, 1))[0] for x in (wide, narrow))
        for cc in named:
            assert (arch.unfit_reason(w, cc) is None) == (cc in big), (w.name, cc)
            assert arch.unfit_reason(n, cc) is None, (n.name, cc)
    # no wgmma rung runs off Hopper, and the Hopper one runs there
    wgmma = [v for v in variants() if "wgmma" in v.name]
    assert wgmma and all(arch.unfit_reason(v, cc) for v in wgmma for cc in named)
    assert any(arch.unfit_reason(v, 90) is None for v in wgmma)
    # TF32: the mma.sync m16n8k8 rung exactly on the 144 KiB chips
    tf32 = variants("sgemm_mma_m16n8k8_mma2x4_warp4x8x4_stage3_offset_dsmem_swizzle")[0]
    assert "m16n8k8 rung on the 144 KiB chips" in others
    assert {cc for cc in named if arch.unfit_reason(tf32, cc) is None} == big


def test_readme_quotes_the_mma_sync_figures_as_recorded():
    para = _gpu_paragraph()
    s1, s4, s8 = (4096, 4096, 1024), (4096, 4096, 4096), (8192, 8192, 8192)
    rung = "m16n8k16_mma2x4_warp4x8x4_stage3_swizzle_bswizzle_rbuf_epi"
    f16, bf16 = _json("mma_f16.json"), _json("mma_bf16.json")
    quoted = []

    def pcts(data, name, shapes):
        vals = [round(_pct(data, name, s)) for s in shapes]
        quoted.extend(_pct(data, name, s) for s in shapes)
        return " / ".join(map(str, vals)) + "%"

    assert (f"{pcts(f16, 'hgemm_mma_' + rung, (s1, s4, s8))} of `cupy.matmul` in fp16 and "
            f"{pcts(bf16, 'bgemm_mma_' + rung, (s1, s4, s8))} in bf16") in para
    for data in (f16, bf16):
        assert data["meta"]["device"] == "NVIDIA H100 80GB HBM3" and data["meta"]["date"][:16] in para
    e16, eb16 = _json("f16.json"), _json("bf16.json")
    edge = rung + "_edge"
    assert (f"`_edge` rung itself at {pcts(e16, 'hgemm_mma_' + edge, (s1, s4))} (fp16) and "
            f"{pcts(eb16, 'bgemm_mma_' + edge, (s1, s4))} (bf16)") in para
    narrow = edge.replace("_mma2x4_", "_mma2x2_")
    assert (f"sibling at {pcts(e16, 'hgemm_mma_' + narrow, (s1, s4))} and "
            f"{pcts(eb16, 'bgemm_mma_' + narrow, (s1, s4))}") in para
    lo, hi = 100 / max(quoted), 100 / min(quoted)
    assert f"take {lo:.1f}-{hi:.1f} times cuBLAS's time" in para


# ---- the tables --------------------------------------------------------------------------------------


def _matmul_rows():
    begin = README.index("<!-- matmul:begin")
    block = README[begin:README.index("<!-- matmul:end -->", begin)]
    rows = re.findall(r"^\| (\d+x\d+x\d+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+)% \|", block, flags=re.M)
    return block, rows


def _decimals(s):
    return len(s.split(".")[1]) if "." in s else 0


def test_matmul_tables_ratio_agrees_with_their_tflops():
    block, rows = _matmul_rows()
    assert len(rows) >= 100
    assert block.count("| cupy.matmul TFLOP/s, same pairs |") == block.count("geometric mean")
    assert "both TFLOP/s columns are the medians of those pairs" in block
    for shape, a, b, ratio in rows:
        got, want = 100 * float(a) / float(b), float(ratio)
        # what rounding the two TFLOP/s figures (and the ratio) to the digits shown can move the ratio by
        slack = want * (0.5 * 10 ** -_decimals(a) / float(a) + 0.5 * 10 ** -_decimals(b) / float(b)) * 1.01 + 0.051
        assert abs(got - want) <= slack, (shape, a, b, ratio)
        assert abs(got - want) < 1.0, (shape, a, b, ratio)


def test_results_tables_say_at_the_table_what_their_percent_is():
    """Each % there is against cuBLAS in the variant's own alternating pairs, not the baseline row:
    the baseline row says it was timed alone and the section opens with the note."""
    block = README[README.index(report.README_BEGIN):README.index(report.README_END)]
    assert block.split("\n")[1] == report.RATIO_NOTE
    tables = [t for t in block.split("\n\n") if t.startswith("| variant")]
    assert tables and all(f"| {report.BASELINE_LABEL} |" in t for t in tables)
    assert "\n| cupy.matmul |" not in block


def _cells():
    for line in README.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            yield from (c.strip() for c in line.strip().strip("|").split("|"))


def test_no_table_cell_is_a_bare_exception_name():
    bare = [c for c in _cells() if re.fullmatch(r"\**[A-Z]\w*(Error|Exception)\**", c)]
    assert not bare, bare[:5]


def test_untimed_cells_give_the_reason():
    def row(status, detail="", rel_err=None):
        return Row(variant="v", M=4096, N=8, K=8, dtype="f16", status=status, detail=detail, rel_err=rel_err)

    detail = ("ValueError: v: M=4096 is over 16 (rule: M <= 16, a kernel for skinny products; use a "
              "variant for general shapes)")
    assert report.untimed_cell(row(Status.ERROR, detail)) == "rejected: M=4096 is over 16"
    assert report.untimed_cell(row(Status.ERROR, "ValueError: v: M=4095 is not a multiple of 128 (rule: "
                                   "M % 128 == 0, from its BM tile. Pad")) == "rejected: M=4095 is not a multiple of 128"
    assert report.untimed_cell(row(Status.ERROR, "CUDADriverError: out | of memory")) == \
        "error: CUDADriverError: out \\| of memory"
    assert report.untimed_cell(row(Status.ERROR, "KeyError: no")) == "error: KeyError: no"
    assert report.untimed_cell(row(Status.FAIL, rel_err=0.25)) == "FAIL (rel err 2.5e-01)"
    assert report.untimed_cell(row(Status.FAIL, rel_err=math.nan)) == "FAIL"
    assert len(report.untimed_cell(row(Status.ERROR, "RuntimeError: " + "x" * 200))) <= 90


# ---- quick start, paths ----------------------------------------------------------------------------


def _help(argv):
    out = io.StringIO()
    from cugemm.__main__ import main

    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        main(argv)
    return " ".join(out.getvalue().split())


def test_quick_start_bench_names_its_dtype():
    quick = README[README.index("## Quick start"):README.index("```python", README.index("## Quick start"))]
    benches = [line for line in quick.splitlines() if re.search(r"cugemm bench|bench\.py", line.split("#")[0])]
    assert benches and all("--dtype" in line.split("#")[0] for line in benches)
    # and the defaults the comment states are the command line's
    assert cli.parser().get_default("dtype") == "f32"
    assert "bench's --dtype defaults to f32, tune's and explain's to f16" in " ".join(quick.split())
    for cmd in ("tune", "explain"):
        assert re.search(r"\(default:? f16\)", _help([cmd, "--help"])), cmd


PATH_RE = re.compile(r"(?<![\w/.~$-])((?:\.ci|cugemm|kernels|scripts|tests|results|shared|build)/[\w./*<>-]*)")


def test_readme_cites_no_path_outside_the_repository():
    missing = []
    for m in PATH_RE.finditer(README):
        path = m.group(1).split("::")[0].rstrip(".")
        if "<" in path:  # a pattern: cugemm/tables/<model>.json
            path = re.sub(r"<[^>]*>", "*", path)
        if not (list(ROOT.glob(path)) if "*" in path else (ROOT / path).exists()):
            missing.append(path)
    assert not missing, missing
    assert "shared/seeds" not in README
