"""Timing and reporting: every chosen variant against cupy.matmul (cuBLAS), in the same run.

Timing rule (DESIGN.md): CuPy events around each launch, warm-up first, the median of many
repetitions, the L2 cache flushed before each repetition (a write over a buffer twice its size) so
no repetition starts with its inputs already in L2. Inputs are random normal, never zeros. The
figure that counts is the ratio to cupy.matmul on the same inputs in the same run.
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys

from . import accuracy, toolkit
from .registry import variants

# --dtype: (input dtype, math dtype). tf32 runs float32 inputs through TF32 tensor-core variants,
# against cupy.matmul with CUPY_TF32=1 (which CuPy reads once, at import: main() re-executes itself
# with it set). f32's baseline is plain FP32 cupy.matmul.
DTYPES = {"f32": ("float32", "float32"), "f16": ("float16", "float16"), "tf32": ("float32", "tfloat32")}


class Timer:
    """Median device time of a callable, L2 flushed before every repetition."""

    def __init__(self, warmup: int = 5, iters: int = 50, budget_s: float = 1.5):
        import cupy

        self.warmup, self.iters, self.budget_s = warmup, iters, budget_s
        l2 = cupy.cuda.Device().attributes.get("L2CacheSize", 50 * 2**20)
        self._flush = cupy.empty(max(2 * l2, 2**20) // 4, dtype=cupy.float32)

    def flush(self):
        self._flush.fill(1.0)

    def median_ms(self, fn) -> float:
        import cupy

        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        for _ in range(max(1, self.warmup)):
            self.flush()
            start.record()
            fn()
            end.record()
        end.synchronize()
        first = cupy.cuda.get_elapsed_time(start, end)
        # slow kernels (the naive rungs) get fewer repetitions, never fewer than 5
        iters = max(5, min(self.iters, int(self.budget_s * 1e3 / max(first, 1e-3))))
        events = [(cupy.cuda.Event(), cupy.cuda.Event()) for _ in range(iters)]
        for s, e in events:
            self.flush()
            s.record()
            fn()
            e.record()
        events[-1][1].synchronize()
        return statistics.median(cupy.cuda.get_elapsed_time(s, e) for s, e in events)


def bench_shape(M: int, N: int, K: int, dtype: str = "f32", pattern: str | None = None,
                warmup: int = 5, iters: int = 50, timer: Timer | None = None) -> list[dict]:
    """Time cupy.matmul and every matching variant on one MxNxK shape; one dict per row.

    dtype is a key of DTYPES. Each variant gets the inputs in its own layout (column-major variants
    get Fortran-ordered copies of the same values), and a NaN-poisoned output checked against the
    float64 reference before it is timed.
    """
    import cupy

    from .launch import run

    dtype_in, math_dtype = DTYPES[dtype]
    timer = timer or Timer(warmup, iters)
    flop = 2.0 * M * N * K
    a = cupy.random.standard_normal((M, K), dtype=cupy.float32).astype(dtype_in)
    b = cupy.random.standard_normal((K, N), dtype=cupy.float32).astype(dtype_in)
    ref = accuracy.reference(a, b)
    operands = {"row": (a, b)}
    rows = []

    def row(name, fn, dtype_out, dtype_acc, order="C", status_if_ok="ok"):
        out = cupy.full((M, N), cupy.nan, dtype=dtype_out, order=order)
        try:
            fn(out)
            err = accuracy.rel_error(out, ref)
            status = status_if_ok if accuracy.within(err, math_dtype, dtype_acc) else "WRONG"
            ms = timer.median_ms(lambda: fn(out))
        except Exception as e:  # a failing variant shows its reason and the others go on
            msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            rows.append(dict(variant=name, ms=None, tflops=None, pct=None, rel_err=None,
                             status=f"{type(e).__name__}: {msg}"[:160]))
            return
        rows.append(dict(variant=name, ms=ms, tflops=flop / ms / 1e9, pct=None, rel_err=err, status=status))

    row("cupy.matmul", lambda out: cupy.matmul(a, b, out=out), dtype_in, "float32", status_if_ok="baseline")
    for v in variants(pattern, dtype=dtype_in, math_dtype=math_dtype):
        if v.layout not in operands:
            operands[v.layout] = (cupy.asfortranarray(a), cupy.asfortranarray(b))
        va, vb = operands[v.layout]
        row(v.name, lambda out, v=v, va=va, vb=vb: run(v, va, vb, out), v.dtype_out, v.dtype_acc,
            order="F" if v.layout == "col" else "C")
    base = rows[0]["ms"]
    for r in rows:
        if r["ms"] and base:
            r["pct"] = 100.0 * base / r["ms"]
    return rows


def format_table(rows: list[dict]) -> str:
    from tabulate import tabulate

    def f(x, fmt):
        return "" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)

    body = [[r["variant"], f(r["ms"], ".3f"), f(r["tflops"], ".1f"), f(r["pct"], ".1f"),
             f(r["rel_err"], ".1e") if r["rel_err"] is not None else "", r["status"]] for r in rows]
    return tabulate(body, headers=["variant", "ms", "TFLOP/s", "% cupy.matmul", "rel err", "status"],
                    disable_numparse=True)


def device_line() -> str:
    import cupy

    dev = cupy.cuda.Device()
    props = cupy.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    return (f"{name} (sm_{dev.compute_capability}, {props['multiProcessorCount']} SMs), "
            f"CuPy {cupy.__version__}, CUDA runtime {cupy.cuda.runtime.runtimeGetVersion()}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="bench.py", description=__doc__.splitlines()[0])
    p.add_argument("--m", type=int, nargs="+", default=[4096], help="M values (default 4096)")
    p.add_argument("--n", type=int, nargs="+", default=[4096], help="N values (default 4096)")
    p.add_argument("--k", type=int, nargs="+", default=[1024], help="K values (default 1024)")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="f32", help="input dtype (default f32)")
    p.add_argument("--variants", default=None, help="glob(s) over variant names, comma-separated")
    p.add_argument("--warmup", type=int, default=5, help="warm-up launches per variant (default 5)")
    p.add_argument("--iters", type=int, default=50, help="timed repetitions, median taken (default 50)")
    args = p.parse_args(argv)
    if not toolkit.have_gpu():
        print("bench: no CUDA GPU found; the bench needs one (`python -m cugemm compile` does not)")
        return 2
    dtype_in, math_dtype = DTYPES[args.dtype]
    tf32_env = os.environ.get("CUPY_TF32", "0") not in ("", "0")
    if args.dtype == "tf32" and not tf32_env:
        # CuPy reads CUPY_TF32 once: run again with it set, so the baseline is cuBLAS TF32
        os.environ["CUPY_TF32"] = "1"
        os.execv(sys.executable, [sys.executable, "-m", "cugemm", "bench"] + list(argv if argv is not None
                                                                                   else sys.argv[1:]))
    if args.dtype == "f32" and tf32_env:
        print("bench: note: CUPY_TF32 is set, so the cupy.matmul baseline runs in TF32")
    if not variants(args.variants, dtype=dtype_in, math_dtype=math_dtype):
        print(f"bench: no {args.dtype} variant matches {args.variants!r}")
        return 2
    print(device_line())
    timer = Timer(args.warmup, args.iters)
    for M in args.m:
        for N in args.n:
            for K in args.k:
                rows = bench_shape(M, N, K, args.dtype, args.variants, timer=timer)
                print(f"\nM={M} N={N} K={K} {args.dtype}: median of up to {args.iters} runs, L2 flushed, "
                      f"baseline cupy.matmul{' (TF32)' if args.dtype == 'tf32' else ''}")
                print(format_table(rows))
                sys.stdout.flush()
    return 0
