#!/usr/bin/env python3
"""Compare two bench result files of the same variants (e.g. before and after a refactor, each run
against cupy.matmul in its own process): per variant and shape, the % of cupy.matmul in each and
whether the new median lies within the old run's p20-p80 spread (widened by the baselines' drift).

    python scripts/compare_runs.py OLD.json NEW.json
Exit status 1 when a variant is slower than the old run beyond that spread.
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cugemm.bench.report import read_json  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("old")
    p.add_argument("new")
    args = p.parse_args()
    (_, old), (_, new) = read_json(args.old), read_json(args.new)
    by = {(r.variant, r.M, r.N, r.K): r for r in old}
    slower = 0
    for r in new:
        o = by.get((r.variant, r.M, r.N, r.K))
        if o is None or not (r.timed and o.timed):
            continue
        if r.variant == "cupy.matmul":
            print(f"{'cupy.matmul':60s} {o.tflops:7.1f} -> {r.tflops:7.1f} TFLOP/s (the baselines)")
            continue
        # the new median may be slower by the old run's spread above its median, plus 1%
        bound = o.p80_ms * 1.01
        verdict = "faster" if r.ms < o.p20_ms * 0.99 else "same" if r.ms <= bound else "SLOWER"
        slower += verdict == "SLOWER"
        print(f"{r.variant:60s} {o.pct:6.1f}% -> {r.pct:6.1f}% of cupy.matmul, "
              f"{o.ms:.4f} [{o.p20_ms:.4f}, {o.p80_ms:.4f}] -> {r.ms:.4f} ms  {verdict}")
    print(f"compare_runs: {slower} slower beyond the spread")
    sys.exit(1 if slower else 0)


if __name__ == "__main__":
    main()
