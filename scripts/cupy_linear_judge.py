#!/usr/bin/env python3
"""cugemm.matmul against cupy.matmul on CuPy operands over the x @ W.T judge set (B = W.T, a view of
a row-major N x K weight), both timed alternating behind the L2 flush (cugemm.bench.timing):

    python3 scripts/cupy_linear_judge.py [--dtypes f16,bf16] [--json PATH]

The CuPy half of the held-out check whose torch half is scripts/serving_bench.py; bench.py
--sweep linear-judge is the same set with a row-major B.
"""
import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dtypes", default="f16,bf16")
    p.add_argument("--iters", type=int, default=30)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    import cupy

    import cugemm
    from cugemm import accuracy, dtypes, testing
    from cugemm.bench.measure import LINEAR_JUDGE
    from cugemm.bench.timing import Timer

    timer = Timer(warmup=3, iters=args.iters, budget_s=1.0)
    rows = []
    for dname in args.dtypes.split(","):
        dt = dtypes.get(dname)
        ratios = []
        for M, N, K in LINEAR_JUDGE:
            a = testing.random_operands(dt.name, M, 1, K)[0]
            b = testing.random_operands(dt.name, N, 1, K)[0].T
            c = cugemm.matmul(a, b)
            ok = accuracy.within(accuracy.rel_error(c, accuracy.reference(a, b)), dt.name, "float32")
            t, base = timer.measure_pair(lambda: cugemm.matmul(a, b), lambda: cupy.matmul(a, b))
            ratio = 100 * base["median"] / t["median"]
            ratios.append(ratio)
            plan = cugemm.explain(a, b).plan.variant.name
            rows.append(dict(dtype=dt.name, M=M, N=N, K=K, us=1e3 * t["median"], cupy_us=1e3 * base["median"],
                             pct=ratio, plan=plan, correct=ok))
            print(f"{dt.short} {M:>6}x{N:<6}x{K:<6} {1e3 * t['median']:8.1f} us  cupy {1e3 * base['median']:8.1f} us "
                  f"{ratio:6.1f}%  {plan}{'' if ok else '  WRONG'}", flush=True)
        gm = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(f"{dt.short}: geomean {gm:.1f}%, min {min(ratios):.1f}% of cupy.matmul over {len(ratios)} shapes")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
