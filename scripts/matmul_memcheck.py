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
    p.add_argument("--torch-shapes", default="8x4096x1024,13x2048x1024,128x2048x1024,512x768x768,1000x776x520",
                   help="x @ W.T with torch tensors (the serving path: planned, then from the plan cache)")
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
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and args.torch_shapes:
        for dt in (torch.float16, torch.bfloat16):
            for M, N, K in (tuple(map(int, s.split("x"))) for s in args.torch_shapes.split(",")):
                for rep in range(2):  # planned, then the serving path on fresh operands
                    x = torch.randn(M, K, device="cuda", dtype=dt)
                    w = torch.randn(N, K, device="cuda", dtype=dt)
                    c = cugemm.matmul(x, w.T)
                    ref = x.double() @ w.double().T
                    err = float((c.double() - ref).norm() / ref.norm())
                    ok = accuracy.within(err, str(dt).split(".")[1], "float32")
                    bad += not ok
                    print("torch", dt, M, N, K, rep, "ok" if ok else "WRONG", f"{err:.2e}",
                          cugemm.explain(x, w.T).plan.variant.name)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
