#!/usr/bin/env python3
"""Regenerate README's results section from bench JSON files (committed under results/).

    python scripts/readme_results.py results/f16.json results/f32.json ...

The section between the results markers in README.md is replaced by one table per JSON file;
tests/test_readme_results.py checks that README and the committed JSON files agree.
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cugemm.bench.report import README_BEGIN, README_END, readme_block  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("json", nargs="+", help="bench result files (python bench.py ... --json PATH)")
    paths = sorted(p.parse_args().json)
    readme = Path(__file__).resolve().parents[1] / "README.md"
    text = readme.read_text()
    start, end = text.index(README_BEGIN), text.index(README_END) + len(README_END)
    readme.write_text(text[:start] + readme_block(paths) + text[end:])
    print(f"README.md results section: {len(paths)} table(s) from {', '.join(paths)}")


if __name__ == "__main__":
    main()
