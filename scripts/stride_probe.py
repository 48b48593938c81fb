#!/usr/bin/env python3
"""What a leading dimension costs the Hopper kernels: each shape timed with its operands in place
(leading dimension = the row length) and with A's, B's or C's rows (or all three) padded to a
multiple of 128 bytes (or of 32 bytes: `all32`), beside cupy.matmul on the same views, L2 flushed
before each run.

    python3 scripts/stride_probe.py [--shapes 2184x2184x2184,...] [--dtype f16] [--variants A,B,...]
                                    [--pads none,A,B,C,all,all32]

Every operand is row-major (A M x K, B K x N, C M x N); a padded operand is a view of a wider
buffer, so the kernel reads the same values from rows further apart. Each plan must run in place
(no copy), or its row says so.
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SHAPES = "2184x2184x2184,1944x1944x1944,2728x2728x2728,4096x4104x1024"
VARIANTS = ",".join("hgemm_wgmma_m64n" + s for s in (
    "192k16_persistent_tma_store_stage4", "256k16_persistent_cluster2_tma_store_stage4",
    "128k16_persistent_cluster2_tma_store_stage6", "256k16_bt_persistent_stage4",
    "192k16_persistent_wg3_tma_store_stage3", "256k16_persistent_cluster2_anyc_stage3"))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default=SHAPES)
    p.add_argument("--dtype", default="f16")
    p.add_argument("--variants", default=VARIANTS)
    p.add_argument("--pads", default="none,A,B,C,all,all32")
    p.add_argument("--iters", type=int, default=30)
    args = p.parse_args()
    import cupy

    from cugemm import accuracy, device, dtypes, operand, select, serve, testing
    from cugemm.bench.timing import Timer
    from cugemm.ints import round_up

    timer = Timer(warmup=3, iters=args.iters, budget_s=1.0)
    dev_id = device.current()
    dt = dtypes.get(args.dtype)
    size = dt.itemsize
    for spec in args.shapes.split(","):
        M, N, K = (int(x) for x in spec.split("x"))
        a0, b0 = testing.random_operands(dt.name, M, N, K)[:2]
        ref = accuracy.reference(a0, b0)
        flops = 2.0 * M * N * K
        print(f"{dt.name} {M}x{N}x{K} (row bytes A {K * size}, B/C {N * size})", flush=True)
        for pad in args.pads.split(","):
            unit = 32 // size if pad == "all32" else 128 // size
            lda, ldb, ldc = (round_up(x, unit) if pad in (w, "all", "all32") else x
                             for x, w in ((K, "A"), (N, "B"), (N, "C")))
            a = cupy.zeros((M, lda), dt.numpy)[:, :K]
            b = cupy.zeros((K, ldb), dt.numpy)[:, :N]
            a[...] = a0
            b[...] = b0
            base = timer.measure(lambda: cupy.matmul(a, b))["median"] * 1e3
            print(f"  pad {pad:5s} ld A {lda} B {ldb} C {ldc}: cupy.matmul {base:7.2f} us "
                  f"({flops / base / 1e6:5.0f} TFLOP/s)", flush=True)
            for name in args.variants.split(","):
                o = testing.poisoned((M, ldc), dt.name)[:, :N]
                A, B, C = (operand.describe(x, n, "probe") for x, n in ((a, "A"), (b, "B"), (o, "out")))
                prob = serve.problem_of(A, B, C, False, dev_id)
                choice = select.select(prob, serve.measured(dev_id), [name])
                plan = choice.plan
                if plan is None:
                    print(f"    {name:62s} refused: {choice.refused[0][1] if choice.refused else '?'}")
                    continue
                try:
                    serve.execute(plan, a, b, o)
                    err = accuracy.rel_error(o, ref)
                    ok = accuracy.within(err, plan.variant.math_dtype, plan.variant.dtype_acc)
                    us = timer.measure(lambda: serve.execute(plan, a, b, o))["median"] * 1e3
                except Exception as e:  # a plan that cannot run here is reported
                    print(f"    {name:62s} {type(e).__name__}: {str(e)[:100]}")
                    continue
                how = "in place" if not plan.copies else plan.describe()
                print(f"    {name:62s} {us:7.2f} us {100 * base / us:6.1f}% of cupy "
                      f"{'' if ok else 'WRONG '}{how}", flush=True)


if __name__ == "__main__":
    main()
