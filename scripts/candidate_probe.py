#!/usr/bin/env python3
"""Every plan cugemm.matmul could run for x @ W.T products, timed behind the bench's L2 flush beside
cupy.matmul (cuBLAS) in one process: which kernel is fastest where matmul loses, and how far the
selection's estimate is from the measured time.

    python3 scripts/candidate_probe.py [--shapes 384x2304x768,...] [--dtypes f16,bf16] [--variants GLOB]

For each shape, the problem's plans (select.select: its candidates, or --variants) are each run
once, checked against the float64 reference, then timed (cugemm.bench.timing.Timer.measure_pair,
alternating with cupy.matmul on the same operands); rows sorted by time, the chosen plan marked.
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

LOSING = "384x2304x768,1024x768x3072,2048x2304x768,16x768x3072,192x5120x5120,512x768x768,1x2304x768"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default=LOSING)
    p.add_argument("--dtypes", default="f16,bf16")
    p.add_argument("--variants", default=None, help="glob(s): these plans instead of matmul's candidates")
    p.add_argument("--iters", type=int, default=40)
    args = p.parse_args()
    import cupy

    from cugemm import accuracy, device, dtypes, operand, select, serve, testing
    from cugemm.bench.timing import Timer

    timer = Timer(warmup=3, iters=args.iters, budget_s=1.0)
    dev_id = device.current()
    for dname in args.dtypes.split(","):
        dt = dtypes.get(dname)
        for spec in args.shapes.split(","):
            M, N, K = (int(x) for x in spec.split("x"))
            a = testing.random_operands(dt.name, M, 1, K)[0]
            w = testing.random_operands(dt.name, N, 1, K)[0]
            b = w.T  # B = W.T: column-major K x N
            out = testing.poisoned((M, N), dt.name)
            ref = accuracy.reference(a, b)
            A, B, C = (operand.describe(x, n, "probe") for x, n in ((a, "A"), (b, "B"), (out, "out")))
            prob = serve.problem_of(A, B, C, False, dev_id)
            choice = select.select(prob, serve.measured(dev_id), args.variants)
            rows = []
            for plan in choice.ranked:
                o = testing.poisoned((M, N), dt.name)
                try:
                    serve.execute(plan, a, b, o)
                    err = accuracy.rel_error(o, ref)
                    ok = accuracy.within(err, plan.variant.math_dtype, plan.variant.dtype_acc)
                    t, tb = timer.measure_pair(lambda: serve.execute(plan, a, b, o), lambda: cupy.matmul(a, b))
                except Exception as e:  # a plan that cannot run here is reported
                    print(f"  {plan.variant.name}: {type(e).__name__}: {str(e)[:100]}")
                    continue
                rows.append((t["median"] * 1e3, tb["median"] * 1e3, plan, ok))
            rows.sort(key=lambda r: r[0])
            print(f"{dt.name} {M}x{N}x{K} (x @ W.T): chosen {choice.plan.variant.name if choice.plan else None}", flush=True)
            for us, base, plan, ok in rows:
                mark = "*" if plan is choice.plan else " "
                print(f" {mark} {plan.variant.name:<66} {us:7.2f} us  {100 * base / us:6.1f}% of cupy  "
                      f"est {plan.est_us:7.2f} ({plan.source}){'' if ok else ' WRONG'}", flush=True)


if __name__ == "__main__":
    main()
