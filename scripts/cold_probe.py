#!/usr/bin/env python3
"""One x @ W.T launch each of torch.matmul (cuBLAS) and cugemm.matmul behind the bench's L2 flush, for
Nsight Compute (the cold-L2 loss of small products):

    ncu --profile-from-start off --cache-control none --clock-control none \\
        --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__grid_size,launch__block_size \\
        python3 scripts/cold_probe.py 384x2304x768 1024x768x3072
"""
import argparse


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("shapes", nargs="*", default=["384x2304x768"], help="MxNxK (x @ W.T, bf16)")
    args = p.parse_args()
    import torch

    import cugemm

    flush = torch.empty(2 * 50 * 2**20 // 4 * 2, dtype=torch.float32, device="cuda")  # 200 MB: 4x the L2
    for spec in args.shapes:
        M, N, K = map(int, spec.split("x"))
        x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
        for fn in (lambda: torch.matmul(x, w.T), lambda: cugemm.matmul(x, w.T)):
            fn()
            torch.cuda.synchronize()
            flush.fill_(1.0)
            torch.cuda.synchronize()
            torch.cuda.cudart().cudaProfilerStart()
            fn()
            torch.cuda.synchronize()
            torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    main()
