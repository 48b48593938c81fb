#!/usr/bin/env python3
"""Run the plain product and the fused GELU + bias (x @ W.T) twice each per shape, for a profiler.

    ncu --cache-control none --clock-control none -k regex:hgemm_wgmma_persistent --csv \
        --metrics gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,... \
        python3 scripts/ncu_epilogue.py [--shapes MxNxK,...] [--dtype bf16]

CuPy operands: x = randn(M, K), w = randn(N, K) / sqrt(K), b = 0.1 randn(N); cugemm.matmul(x, w.T) and
cugemm.linear(x, w, b, "gelu") alternate, so the profile holds both kernels of each shape (compiled before
their first launch). results/judge/s42/ncu_epilogue_bf16.csv is such a profile (H100).
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default="4096x11008x4096,16384x3072x768", help="MxNxK,... (default two)")
    p.add_argument("--dtype", default="bf16", help="bf16 or fp16 (default bf16)")
    args = p.parse_args()
    import cupy

    import cugemm
    from cugemm import testing

    dtype = {"bf16": "bfloat16", "fp16": "float16"}[args.dtype]
    for M, N, K in (tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")):
        x = testing.cast(cupy.random.standard_normal((M, K), dtype=cupy.float32), dtype)
        w = testing.cast(cupy.random.standard_normal((N, K), dtype=cupy.float32) / K ** 0.5, dtype)
        b = testing.cast(cupy.random.standard_normal((N,), dtype=cupy.float32) * 0.1, dtype)
        for _ in range(2):
            cugemm.matmul(x, w.T)
            cugemm.linear(x, w, b, "gelu")
        cupy.cuda.Device().synchronize()
        print(f"{M}x{N}x{K} done", flush=True)


if __name__ == "__main__":
    main()
