#!/usr/bin/env python3
"""cugemm.matmul on a few odd fp16 / bf16 shapes (misaligned rows: the relayout copies, the any-C
kernel launched with programmatic dependent launch), each checked against float64; small enough to
run under compute-sanitizer:

    compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \\
        python3 scripts/matmul_memcheck.py

Exit status 1 if a result is outside cugemm.accuracy's tolerance."""
import argparse
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default="4095x4097x1023,257x131x65,1000x1001x999,3x4097x17")
    args = p.parse_args()
    import cugemm
    from cugemm import accuracy, testing

    bad = 0
    for dt in ("float16", "bfloat16"):
        for M, N, K in (tuple(map(int, s.split("x"))) for s in args.shapes.split(",")):
            a, b = testing.random_operands(dt, M, N, K)
            c = cugemm.matmul(a, b)
            err = accuracy.rel_error(c, accuracy.reference(a, b))
            ok = accuracy.within(err, dt, "float32")
            bad += not ok
            print(dt, M, N, K, "ok" if ok else "WRONG", f"{err:.2e}", str(cugemm.explain(a, b)).splitlines()[0][:90])
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
