#!/usr/bin/env python3
"""Which kernels cuBLAS runs (torch.matmul, torch.profiler's CUDA activity) for row-major fp16/bf16
products with their rows as they are and padded to 128 bytes, with their times: what the library we
race does where our TMA kernels slow down (ragged rows, cugemm.tuning).

    python3 scripts/cublas_kernels.py [--shapes 2184x2184x2184,...] [--dtype f16] [--bt]

--bt: B as the transposed view of a row-major (N, K) weight (x @ W.T) instead of a row-major (K, N).
"""
import argparse


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default="2184x2184x2184,2728x2728x2728,1944x1944x1944,4096x4096x1000")
    p.add_argument("--dtype", default="f16")
    p.add_argument("--bt", action="store_true")
    args = p.parse_args()
    import torch
    from torch.profiler import ProfilerActivity, profile

    dt = {"f16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
    for spec in args.shapes.split(","):
        M, N, K = (int(x) for x in spec.split("x"))
        for pad in (False, True):
            up = (lambda x: -(-x // 64) * 64) if pad else (lambda x: x)
            a = torch.randn(M, up(K), device="cuda", dtype=dt)[:, :K]
            if args.bt:
                b = torch.randn(N, up(K), device="cuda", dtype=dt)[:, :K].T
            else:
                b = torch.randn(K, up(N), device="cuda", dtype=dt)[:, :N]
            for _ in range(3):
                torch.matmul(a, b)
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(10):
                    torch.matmul(a, b)
                torch.cuda.synchronize()
            rows = [e for e in prof.key_averages() if e.device_type.name == "CUDA"]
            print(f"{M}x{N}x{K} {'rows 128-byte aligned' if pad else 'rows as they are'}:")
            for e in rows:
                us = e.device_time_total / max(1, e.count)
                print(f"    {us:8.2f} us x{e.count:3d}  {e.key[:150]}")


if __name__ == "__main__":
    main()
