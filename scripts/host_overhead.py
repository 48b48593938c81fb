#!/usr/bin/env python3
"""Steady-state host overhead of cugemm.run against cupy.matmul at a small size (default 256^3).

Both are called N times back to back after a warm-up; the figure is host wall time per call, taken
before the final synchronize (launches are asynchronous, so this is the Python + launch cost while
the GPU keeps up), and the total including the synchronize."""
import argparse
import time

import cupy

import cugemm


def per_call_us(fn, n):
    for _ in range(50):
        fn()
    cupy.cuda.Device().synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    cupy.cuda.Device().synchronize()
    t2 = time.perf_counter()
    return (t1 - t0) / n * 1e6, (t2 - t0) / n * 1e6


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--size", type=int, default=256)
    p.add_argument("--variant", default="sgemm_warp_tile")
    p.add_argument("--n", type=int, default=500)
    args = p.parse_args()
    s = args.size
    a = cupy.random.standard_normal((s, s), dtype=cupy.float32)
    b = cupy.random.standard_normal((s, s), dtype=cupy.float32)
    out = cupy.empty((s, s), cupy.float32)
    rows = [
        ("cugemm.run(name, a, b)", lambda: cugemm.run(args.variant, a, b)),
        ("cugemm.run(name, a, b, out=out)", lambda: cugemm.run(args.variant, a, b, out=out)),
        ("cupy.matmul(a, b)", lambda: cupy.matmul(a, b)),
        ("cupy.matmul(a, b, out=out)", lambda: cupy.matmul(a, b, out=out)),
    ]
    print(f"host overhead at {s}x{s}x{s}, variant {args.variant}, {args.n} calls each")
    for name, fn in rows:
        host, total = per_call_us(fn, args.n)
        print(f"  {name:34s} host {host:7.1f} us/call   with sync {total:7.1f} us/call")


if __name__ == "__main__":
    main()
