"""README's results tables are exactly what scripts/readme_results.py makes of the committed JSON
files they cite: nobody typed a figure by hand."""
import json
import os
import re
from pathlib import Path

from cugemm.bench.report import README_BEGIN, README_END, readme_block

ROOT = Path(__file__).resolve().parents[1]


def test_readme_results_match_committed_json():
    text = (ROOT / "README.md").read_text()
    block = text[text.index(README_BEGIN):text.index(README_END) + len(README_END)]
    sources = re.findall(r"\(\[(results/[^\]]+\.json)\]\(", block)
    assert sources, "README's results section cites no JSON file"
    for src in sources:
        data = json.loads((ROOT / src).read_text())
        assert data["meta"]["device"] and data["rows"], src
    cwd = os.getcwd()
    try:
        os.chdir(ROOT)
        assert readme_block(sorted(sources)) == block
    finally:
        os.chdir(cwd)
