"""Summarise a `bench --variants matmul` JSON: cugemm.matmul's ratio to cupy.matmul per shape and
the geometric mean (the figure matmul's targets are stated in).

    python scripts/matmul_summary.py results/matmul_f16_llm.json [...]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys


def _tf(x: float) -> str:
    """TFLOP/s, 2 decimals under 10: the ratio of two figures shown is the ratio shown, to rounding."""
    return f"{x:.2f}" if x < 10 else f"{x:.1f}"


def markdown(paths) -> str:
    """One markdown table per file: shape, cugemm.matmul's TFLOP/s and cupy.matmul's in the same
    alternating pairs (the median of cupy.matmul's repetitions there: cugemm's TFLOP/s / the ratio,
    exactly; the baseline row timed alone ran at another clock), the ratio of the two medians, the
    variant matmul chose; the device, date and geometric mean in the heading line."""
    out = []
    for path in paths:
        data = json.load(open(path))
        meta = data.get("meta", {})
        rows = [r for r in data["rows"] if r["variant"] == "cugemm.matmul"]
        ratios = [r["pct"] / 100.0 for r in rows if r.get("pct") and r["status"] in ("ok", "unchecked")]
        geo = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else float("nan")
        dtype = rows[0]["dtype"] if rows else "?"
        out.append(f"**{path.rsplit('/', 1)[-1]}** ({dtype}, {meta.get('device', '?')}, {meta.get('date', '?')}): "
                   f"geometric mean **{100 * geo:.1f}%** of cupy.matmul over {len(ratios)} shapes\n")
        out.append("| M x N x K | cugemm.matmul TFLOP/s | cupy.matmul TFLOP/s, same pairs | ratio | chosen |")
        out.append("|---|---|---|---|---|")
        for r in rows:
            ok = r.get("pct") and r["status"] in ("ok", "unchecked")
            out.append(f"| {r['M']}x{r['N']}x{r['K']} | {_tf(r['tflops'])} | {_tf(r['tflops'] * 100 / r['pct'])} | "
                       f"{r['pct']:.1f}% | {r.get('detail', '').split(';')[0]} |" if ok else
                       f"| {r['M']}x{r['N']}x{r['K']} | {r['status']} | | | "
                       f"{r.get('detail', '').replace('|', '/')} |")
        out.append("")
    return "\n".join(out)


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
    p.add_argument("--markdown", action="store_true", help="markdown tables (for the README)")
    args = p.parse_args(argv)
    if args.markdown:
        print(markdown(args.json))
        return 0
    for path in args.json:
        print(summary(path))
    return 0


def console(argv=None) -> int:
    """main() with a quiet exit when stdout is closed early (`| head`), as the cugemm script."""
    try:
        code = main(argv)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's own flush at exit finds no pipe to break
        return 0


if __name__ == "__main__":
    raise SystemExit(console())
