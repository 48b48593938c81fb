#!/usr/bin/env python3
"""Where cugemm.matmul's time goes on products that run a copy plan (odd shapes).

For each shape MxNxK (dense row-major random operands), one block of lines:
  plan          the chosen variant and its copies
  cupy / matmul cupy.matmul and cugemm.matmul, one call between CUDA events (median), and the ratio
                matmul / cupy (the target: at most 1/3 of cupy.matmul's time)
  copy          the plan's copies alone: the one relayout launch (events), and the bytes it moves
                (sources read + copies written) over that time
  kernel        the GEMM kernel alone on copies made beforehand (events)
  host          wall time of one cugemm.matmul call on the host (20 calls, no sync between them)
  rate          20 back-to-back cugemm.matmul calls between two events / 20: the GPU-bound time
  cupy copy     a plain CuPy copy of the bytes of A and of B (a reference for the copy kernel)

    python scripts/copy_plan_probe.py 4095x4097x1023 1023x1025x4095 [--dtype f16|bf16|f32]
"""
import argparse
import statistics
import time


def event_us(fn, n=30, warmup=5):
    """Median time of one fn() call between two CUDA events, in microseconds."""
    import cupy

    for _ in range(warmup):
        fn()
    s, e = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for _ in range(n):
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(cupy.cuda.get_elapsed_time(s, e) * 1e3)
    return statistics.median(times)


def batch_us(fn, calls=20, n=10):
    """Median over n trials of (`calls` back-to-back fn() calls between two events) / calls."""
    return event_us(lambda: [fn() for _ in range(calls)], n=n, warmup=1) / calls


def host_us(fn, calls=20, n=10):
    """Median host wall time of one fn() call (calls in a row, synchronised only after them)."""
    import cupy

    out = []
    for _ in range(n):
        cupy.cuda.Device().synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        out.append((time.perf_counter() - t0) / calls * 1e6)
    cupy.cuda.Device().synchronize()
    return statistics.median(out)


def probe(shape: str, dtype: str) -> None:
    import cupy

    import cugemm
    from cugemm import launch, operand, relayout, testing

    M, N, K = map(int, shape.lower().split("x"))
    a, b = testing.random_operands(dtype, M, N, K)
    plan = cugemm.explain(a, b).plan
    v = plan.variant
    Mp, Np, Kp = plan.dims
    print(f"{shape} {dtype}: {v.name}: {plan.describe()}")
    base = cupy.empty((M, N), dtype=a.dtype)
    t_cupy = event_us(lambda: cupy.matmul(a, b, out=base))
    t_mm = event_us(lambda: cugemm.matmul(a, b))
    print(f"  cupy.matmul {t_cupy:8.1f} us   cugemm.matmul {t_mm:8.1f} us   matmul/cupy {t_mm / t_cupy:.2f} "
          f"(target <= 0.33)")
    dev = cupy.cuda.runtime.getDevice()
    if plan.copy_a or plan.copy_b:
        stage = relayout.stage_for(plan, operand.describe(a, 'A', 'probe'), operand.describe(b, 'B', 'probe'), dev)
        mem = cupy.cuda.alloc(stage.nbytes)
        ca, cb = (a if plan.copy_a else None), (b if plan.copy_b else None)
        t_copy = event_us(lambda: stage.copy_cupy(ca, cb, mem))
        moved = 0
        for x, job in ((ca, stage.jobs[0]["a"]), (cb, stage.jobs[0]["b"])):
            if x is not None:
                moved += x.size * x.itemsize + int(job["rows_p"]) * int(job["chunks"]) * 16
        how = "kernel" if stage.fn is not None else "CuPy"
        print(f"  copy (one {how} launch, grid {stage.grid}, by kernel {stage.by_kernel}, by CuPy "
              f"{stage.by_array}) {t_copy:8.1f} us   {moved / t_copy / 1e3:7.1f} GB/s")
    a2, b2 = relayout.copies_cupy(plan, a, b)
    out = cupy.empty((M, N), dtype=a.dtype)
    c = cupy.empty((Mp, plan.ld_c), dtype=a.dtype)[:, :Np] if plan.via_c else out
    A, B, C = (launch.describe(x, w, v.name) for x, w in ((a2, "A"), (b2, "B"), (c, "out")))
    t_kernel = event_us(lambda: launch.launch(v, a2, b2, c, A, B, C, Mp, Np, Kp))
    print(f"  kernel {t_kernel:8.1f} us   ({2e-6 * M * N * K / t_kernel:.0f} TFLOP/s on the problem's flops)")
    t_host = host_us(lambda: cugemm.matmul(a, b))
    t_rate = batch_us(lambda: cugemm.matmul(a, b))
    t_rate_cupy = batch_us(lambda: cupy.matmul(a, b, out=base))
    print(f"  host {t_host:8.1f} us/call   rate {t_rate:8.1f} us/call (cupy.matmul {t_rate_cupy:.1f}, "
          f"matmul/cupy {t_rate / t_rate_cupy:.2f})")
    for name, x in (("A", a), ("B", b)):
        flat = cupy.empty(x.size, dtype=x.dtype)
        src = x.ravel()
        t = event_us(lambda: flat.__setitem__(slice(None), src))
        print(f"  cupy copy of {name}'s {x.size * x.itemsize / 1e6:.1f} MB {t:8.1f} us")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("shapes", nargs="+", help="MxNxK")
    p.add_argument("--dtype", default="f16", help="f16 (default), bf16, f32")
    args = p.parse_args()
    from cugemm import dtypes

    dt = dtypes.get(args.dtype).name
    for shape in args.shapes:
        probe(shape, dt)


if __name__ == "__main__":
    main()
