#!/usr/bin/env python3
"""Steady-state host overhead of cugemm.run against cupy.matmul on a small product.

Each call is made N times back to back after a warm-up. `host` is the wall time per call taken
before the final synchronize: the Python and launch cost. `kernel` is one call's GPU time (CuPy
events, median). Where the kernel is the longer, the launches queue up ahead of the GPU; the host
figure stays the host's own as long as N calls fit in the launch queue (about a thousand), and the
row says so.

    python scripts/host_overhead.py [--variant NAME] [--size S] [--n 500]
"""
import argparse
import time


def per_call_us(fn, n):
    import cupy

    for _ in range(50):
        fn()
    cupy.cuda.Device().synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    cupy.cuda.Device().synchronize()
    return (t1 - t0) / n * 1e6


def gpu_us(fn):
    import cupy

    from cugemm.bench.timing import percentile

    times = []
    for _ in range(50):
        s, e = cupy.cuda.Event(), cupy.cuda.Event()
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(cupy.cuda.get_elapsed_time(s, e) * 1e3)
    return percentile(sorted(times), 50)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, default=256, help="M = N = K, rounded up to the variant's rules")
    p.add_argument("--variant", default="sgemm_warp_tile")
    p.add_argument("--n", type=int, default=500)
    args = p.parse_args()
    import cupy

    import cugemm
    from cugemm import testing

    v = cugemm.get_variant(args.variant)
    M, N, K = (-(-args.size // m) * m for m in v.multiple_of)
    a, b = testing.random_operands(v.dtype_in, M, N, K, v.layout)
    out = cupy.empty((M, N), dtype=v.dt_out.numpy, order="F" if v.layout == "col" else "C")
    base_out = cupy.empty((M, N), dtype=a.dtype)
    rows = [
        ("cugemm.run(name, a, b)", lambda: cugemm.run(v.name, a, b)),
        ("cugemm.run(name, a, b, out=out)", lambda: cugemm.run(v.name, a, b, out=out)),
        ("cupy.matmul(a, b)", lambda: cupy.matmul(a, b)),
        ("cupy.matmul(a, b, out=out)", lambda: cupy.matmul(a, b, out=base_out)),
    ]
    print(f"host overhead at {M}x{N}x{K} {v.dtype_in}, variant {v.name}, {args.n} calls each")
    for name, fn in rows:
        host, gpu = per_call_us(fn, args.n), gpu_us(fn)
        note = "" if gpu < host else "  (the launches queued ahead of the GPU)"
        print(f"  {name:34s} host {host:7.1f} us/call   kernel {gpu:7.1f} us{note}")


if __name__ == "__main__":
    main()
