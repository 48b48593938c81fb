#!/usr/bin/env python3
"""Where a do_bench (L2-flushed) time goes: the GEMM kernel's own duration with a cold L2 and with a
warm one (torch.profiler's CUDA activity), beside triton.testing.do_bench's figure, for torch.matmul
and cugemm.matmul on x @ W.T, torch tensors, one process.

    python3 scripts/cold_kernel_probe.py [--shapes 1024x768x3072,...] [--dtype f16]

do_bench - cold kernel = what the measurement adds around the kernel (its launch, the event records);
cold - warm kernel = what reading the operands from HBM instead of L2 costs the kernel.
"""
import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SHAPES = "1024x768x3072,512x768x768,2048x2304x768,2048x1024x4096,192x5120x5120,384x2304x768,1024x3072x768"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default=SHAPES)
    p.add_argument("--dtype", default="f16")
    p.add_argument("--variants", default="", help="comma-separated variant names to add (cugemm.matmul variant=)")
    args = p.parse_args()
    import torch
    from torch.profiler import ProfilerActivity, profile
    from triton.testing import do_bench

    import cugemm

    dt = {"f16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
    flush = torch.empty(256 * 2**20, dtype=torch.int8, device="cuda")

    def kernels(fn, cold, n=20):
        """Median duration (us) of the kernels fn launches, per call, with the L2 flushed before each
        call (cold) or not; the flush's own kernel is left out (it runs outside the window)."""
        fn()
        torch.cuda.synchronize()
        per = []
        for _ in range(n):
            if cold:
                flush.zero_()
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                fn()
                torch.cuda.synchronize()
            per.append(sum(e.device_time_total for e in prof.key_averages() if e.device_type.name == "CUDA"))
        return statistics.median(per)

    print(torch.cuda.get_device_name())
    print(f"{'shape':>16s}  {'callable':<58s} {'do_bench':>9s} {'cold':>7s} {'warm':>7s} {'db-cold':>8s} {'cold-warm':>9s}")
    for spec in args.shapes.split(","):
        M, N, K = (int(x) for x in spec.split("x"))
        x = torch.randn(M, K, device="cuda", dtype=dt)
        w = torch.randn(N, K, device="cuda", dtype=dt) / K ** 0.5
        cands = {"torch.matmul": lambda: torch.matmul(x, w.T),
                 f"cugemm ({cugemm.explain(x, w.T).plan.variant.name})": lambda: cugemm.matmul(x, w.T)}
        for n in filter(None, args.variants.split(",")):
            cands[n] = (lambda n=n: cugemm.matmul(x, w.T, variant=n))
        for name, fn in cands.items():
            db = do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e3
            cold, warm = kernels(fn, True), kernels(fn, False)
            print(f"{spec:>16s}  {name[:58]:<58s} {db:9.2f} {cold:7.2f} {warm:7.2f} {db - cold:8.2f} {cold - warm:9.2f}",
                  flush=True)


if __name__ == "__main__":
    main()
