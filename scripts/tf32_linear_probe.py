#!/usr/bin/env python3
"""float32 x @ W.T with TF32 allowed: cugemm.matmul (the TF32 rung's `_bcol` forms read W in place)
against torch.matmul with torch.backends.cuda.matmul.allow_tf32, torch tensors, one process,
triton.testing.do_bench (L2 flushed), median of 3 alternating rounds; ratio = torch us / cugemm us.

    python3 scripts/tf32_linear_probe.py [--shapes MxNxK,...]

A diagnosis, not a verdict: nothing is asserted (exit 0), the error against float64 is printed.
"""
import argparse

SHAPES = "4096x4096x4096,2048x3072x768,8192x4096x4096,512x11008x4096,1024x768x3072,128x4096x4096"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default=SHAPES)
    args = ap.parse_args()

    import torch
    from triton.testing import do_bench

    import cugemm
    from serving_bench import do_bench_pair

    torch.backends.cuda.matmul.allow_tf32 = True
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print(f"{'M x N x K':>18}  torch us  cugemm us   ratio  plan  err")
    for s in args.shapes.split(","):
        M, N, K = map(int, s.split("x"))
        x = torch.randn(M, K, device="cuda")
        w = torch.randn(N, K, device="cuda") / K ** 0.5
        f_t = lambda: torch.matmul(x, w.T)  # noqa: E731
        f_c = lambda: cugemm.matmul(x, w.T, allow_tf32=True)  # noqa: E731
        ref = torch.matmul(x.double(), w.double().T)
        err = float((f_c().double() - ref).norm() / ref.norm())
        t, c = do_bench_pair(do_bench, f_t, f_c)
        plan = cugemm.explain(x, w.T, allow_tf32=True).plan.variant.name
        print(f"{s:>18} {t:9.1f} {c:10.1f} {100 * t / c:6.1f}%  {plan}  {err:.1e}")


if __name__ == "__main__":
    main()
