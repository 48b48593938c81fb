#!/usr/bin/env python3
"""Time changed kernels against their old source in one process, alternating (old, new, old, ...):

    python3 scripts/ab_kernels.py --old build/old_kernels GLOB [--shapes 4095x4097x1023,...]

--old is a copy of an earlier kernels/ tree (e.g. `git archive REV kernels | tar x -C build/old`).
For each variant matching GLOB, the old kernel is compiled from that tree with the variant's name
expression and launched with exactly the new one's grid, block, shared memory and arguments (the
same operands); both results are checked against the float64 reference. Each shape prints the
median, p20 and p80 of both (CuPy events, L2 flushed before each run, cugemm.bench.timing) and
new/old; the variant is "slower" only when new's p20 is above old's p80.
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("pattern", help="glob(s) over variant names")
    p.add_argument("--old", required=True, help="an earlier kernels/ tree")
    p.add_argument("--shapes", default="4095x4097x1023,2048x2048x2048,8191x8193x4097")
    p.add_argument("--iters", type=int, default=40)
    p.add_argument("--define", action="append", default=[], help="-D switch of the new kernels (NAME=VALUE)")
    args = p.parse_args()
    import cupy

    import cugemm
    from cugemm import accuracy, jit, launch, operand, testing
    from cugemm.bench.timing import Timer

    if args.define:
        jit.set_defines(args.define)
    timer = Timer(warmup=3, iters=args.iters, budget_s=3.0)
    slower = 0
    for v in cugemm.variants(args.pattern):
        old_text = jit.inline_includes(Path(args.old) / v.source)
        arch = "sm_90a" if "sm_90a" in v.archs else None
        old_fn = jit.load_source(old_text, [v.name_expression], arch=arch, what=v.name + " (old)")[v.name_expression]
        if v.smem_dynamic > 48 * 1024:
            old_fn.max_dynamic_shared_size_bytes = v.smem_dynamic
        for shape in args.shapes.split(","):
            M, N, K = (int(x) for x in shape.split("x"))
            try:
                v.check_shape(M, N, K)
            except ValueError:
                continue
            a, b = testing.variant_operands(v, M, N, K)
            outs = [testing.poisoned((M, N), v.dtype_out, v.layout) for _ in range(2)]
            A, B = operand.describe(a, "A", v.name), operand.describe(b, "B", v.name)
            dev = cupy.cuda.runtime.getDevice()
            fn, info, _ = launch.loaded(v, dev)

            def runner(f, out):
                C = operand.describe(out, "out", v.name)
                grid = v.grid(M, N, K, info)
                work = None
                if v.workspace_fn is not None:
                    from cugemm import workspace

                    work = workspace.held("cupy", dev, cupy.cuda.get_current_stream().ptr,
                                          v.workspace_fn(v, M, N, K, info), workspace.cupy_alloc)
                kargs = (a, b, out, cupy.int32(M), cupy.int32(N), cupy.int32(K)) + \
                    v.extra_args(A, B, C, M, N, K, work=work, dev=info)
                return lambda: f(grid, v.block, kargs, shared_mem=v.smem_dynamic)

            new_run, old_run = runner(fn, outs[0]), runner(old_fn, outs[1])
            new_run(), old_run()
            ref = accuracy.reference(a, b)
            errs = [accuracy.check(o, ref, v) for o in outs]
            t_old, t_new = timer.measure_pair(old_run, new_run)
            flop = 2.0 * M * N * K
            worse = t_new["p20"] > t_old["p80"]
            slower += worse
            print(f"{v.name} {M}x{N}x{K}: old {t_old['median'] * 1e3:.1f} us [{t_old['p20'] * 1e3:.1f}, "
                  f"{t_old['p80'] * 1e3:.1f}] {flop / t_old['median'] / 1e9:.0f} TFLOP/s; new {t_new['median'] * 1e3:.1f} "
                  f"us [{t_new['p20'] * 1e3:.1f}, {t_new['p80'] * 1e3:.1f}] {flop / t_new['median'] / 1e9:.0f} TFLOP/s; "
                  f"new/old {t_new['median'] / t_old['median']:.3f}; errors old {errs[1][0]:.1e} new {errs[0][0]:.1e}"
                  f"{' SLOWER' if worse else ''}{'' if errs[0][1] and errs[1][1] else ' WRONG'}", flush=True)
    print(f"ab_kernels: {slower} slower beyond the spread")
    sys.exit(1 if slower else 0)


if __name__ == "__main__":
    main()
