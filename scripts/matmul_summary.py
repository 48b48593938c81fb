"""Summarise a `bench --variants matmul` JSON: cugemm.matmul's ratio to cupy.matmul per shape and
the geometric mean (the figure issue 13's targets are stated in).

    python scripts/matmul_summary.py results/matmul_f16_llm.json [...]
"""
from __future__ import annotations

import argparse
import json
import math


def summary(path: str) -> str:
    data = json.load(open(path))
    rows = [r for r in data["rows"] if r["variant"] == "cugemm.matmul"]
    base = {(r["M"], r["N"], r["K"]): r for r in data["rows"] if r["variant"] == "cupy.matmul"}
    lines, ratios = [], []
    for r in rows:
        b = base.get((r["M"], r["N"], r["K"]), {})
        if r.get("pct") and r["status"] in ("ok", "unchecked"):
            ratios.append(r["pct"] / 100.0)
            lines.append(f"  {r['M']}x{r['N']}x{r['K']} {r['dtype']}: {r['tflops']:.1f} TFLOP/s vs cupy.matmul "
                         f"{b.get('tflops') or float('nan'):.1f}: {r['pct']:.1f}%  [{r.get('detail', '')}]")
        else:
            lines.append(f"  {r['M']}x{r['N']}x{r['K']} {r['dtype']}: {r['status']} {r.get('detail', '')}")
    geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios)) if ratios else float("nan")
    head = f"{path}: {len(ratios)}/{len(rows)} shapes timed, geometric mean {100 * geo:.1f}% of cupy.matmul"
    return "\n".join([head] + lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("json", nargs="+")
    for path in p.parse_args(argv).json:
        print(summary(path))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
