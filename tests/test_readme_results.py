"""README's generated tables are exactly what scripts/readme_results.py makes of the committed JSON
files they cite (nobody typed a figure by hand), and the documented regenerate command,
`python scripts/readme_results.py results/*.json`, leaves README as it is."""
import importlib.util
import json
import re
import shutil
from pathlib import Path

from cugemm.bench.report import README_BEGIN, README_END, readme_block

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("readme_results", ROOT / "scripts" / "readme_results.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _section(text, begin, end):
    return text[text.index(begin):text.index(end) + len(end)]


def test_readme_results_match_committed_json():
    text = (ROOT / "README.md").read_text()
    block = _section(text, README_BEGIN, README_END)
    sources = re.findall(r"\(\[(results/[^\]]+\.json)\]\(", block)
    assert sources, "README's results section cites no JSON file"
    for src in sources:
        data = json.loads((ROOT / src).read_text())
        assert data["meta"]["device"] and data["rows"], src
    assert readme_block(sorted(sources), root=str(ROOT)) == block


def test_matmul_tables_match_committed_json():
    rr = _script()
    text = (ROOT / "README.md").read_text()
    block = _section(text, rr.MATMUL_BEGIN, rr.MATMUL_END)
    cited = re.findall(r"^\*\*(matmul_[^*]+\.json)\*\*", block, flags=re.M)
    files = rr.sort_files(sorted(ROOT.glob("results/*.json")))
    assert cited == [Path(p).name for p in files["matmul"]] and cited


def test_regenerate_command_leaves_readme_unchanged(tmp_path, monkeypatch):
    """The command README documents, on the committed results, run into a copy of README."""
    rr = _script()
    readme = tmp_path / "README.md"
    shutil.copy(ROOT / "README.md", readme)
    monkeypatch.chdir(ROOT)
    paths = sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("results/*.json"))  # the shell's results/*.json
    assert rr.main(paths + ["--readme", str(readme)]) == 0
    assert readme.read_text() == (ROOT / "README.md").read_text()
    # the same from another directory, with absolute paths
    monkeypatch.chdir(tmp_path)
    assert rr.main([str(ROOT / p) for p in paths] + ["--readme", str(readme)]) == 0
    assert readme.read_text() == (ROOT / "README.md").read_text()


def test_files_are_sorted_by_what_they_hold():
    rr = _script()
    files = rr.sort_files(sorted(ROOT.glob("results/*.json")))
    assert all(Path(p).name.startswith("matmul_") for p in files["matmul"])
    assert "results/f16.json" in files["results"] and "results/sweep_hgemm.json" in files[None]
    assert "results/torch_model.json" in files[None] and "results/serving_host.json" in files[None]
    assert rr.kind({"meta": {}, "rows": [], "command": "python bench.py --dtype f16 --variants matmul,hgemm*"}) \
        == "matmul"
    assert rr.kind({"meta": {}, "rows": [], "command": "python bench.py --sweep square"}) is None
    assert rr.kind({"device": "x", "rows": []}) is None
