#!/usr/bin/env python3
"""What a launch costs before any work: x @ W.T on torch tensors at tiny and small shapes, each named
plan of cugemm.matmul beside torch.matmul (cuBLAS), timed with triton.testing.do_bench (L2 flushed,
median), alternating, in one process.

    python3 scripts/floor_probe.py [--shapes 64x128x64,512x768x768] [--variants GLOB,...] [--dtype f16]

At a shape with almost no work (64x128x64) the time is the floor: the launch as the GPU sees it
(cluster scheduling, the shared-memory carve-out, programmatic dependent launch), the prologue
(barrier set-up, tensor-map prefetch, cluster sync) and the first loads from HBM. The difference
between a plan's floor and cuBLAS's is what small products lose whatever their tiles.
Nothing is asserted.
"""
import argparse
import fnmatch
import statistics


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default="64x128x64,512x768x768,384x2304x768")
    p.add_argument("--variants", default="*wg3_tma_store_stage3_bcol,*m64n64k16_persistent_cluster2_tma_store_stage8_bcol,"
                                         "*m64n96k16_small_m_stage10_bcol,*m64n128k16_small_m_cluster2m_stage8_bcol,"
                                         "*m64n32k16_small_m_stage16_bcol")
    p.add_argument("--dtype", default="f16", choices=("f16", "bf16"))
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args(argv)

    import torch
    from triton.testing import do_bench

    import cugemm
    from cugemm.registry import variants

    dt = torch.float16 if args.dtype == "f16" else torch.bfloat16
    globs = args.variants.split(",")
    names = [v.name for v in variants() if v.b_layout == "col" and v.dtype_in == str(dt).split(".")[1]
             and any(fnmatch.fnmatch(v.name, g) for g in globs)]
    for shape in args.shapes.split(","):
        M, N, K = map(int, shape.split("x"))
        x = torch.randn(M, K, device="cuda", dtype=dt)
        w = torch.randn(N, K, device="cuda", dtype=dt) / K ** 0.5
        ref = torch.matmul(x, w.T)
        fns = {"torch.matmul": lambda: torch.matmul(x, w.T), "cugemm.matmul": lambda: cugemm.matmul(x, w.T)}
        for n in names:
            try:
                got = cugemm.matmul(x, w.T, variant=n)
            except ValueError as e:  # a plan whose rules refuse this shape
                print(f"{shape} {n}: refused ({str(e).split('(rule')[0].strip()})")
                continue
            err = float((got.float() - ref.float()).norm() / ref.float().norm())
            if err > 1e-2:
                print(f"{shape} {n}: WRONG (rel err {err:.2e})")
                continue
            fns[n] = (lambda n=n: cugemm.matmul(x, w.T, variant=n))
        times = {k: [] for k in fns}
        for _ in range(args.rounds):
            for k, f in fns.items():
                times[k].append(do_bench(f, warmup=25, rep=100, return_mode="median") * 1e3)
        base = statistics.median(times["torch.matmul"])
        print(f"{args.dtype} {shape}: do_bench median of {args.rounds} rounds, us")
        for k, ts in sorted(times.items(), key=lambda kv: statistics.median(kv[1])):
            t = statistics.median(ts)
            print(f"   {k:70s} {t:8.2f}  {100 * base / t:6.1f}% of torch")


if __name__ == "__main__":
    main()
