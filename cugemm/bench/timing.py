"""Device time of a callable, measured with CuPy events.

Timing rule (DESIGN.md): events around each launch, warm-up first, the median and the p20/p80
spread of many repetitions, the L2 cache flushed before each repetition (a write over a buffer twice
its size), so no repetition starts with its inputs cached. DESIGN.md flushes only where the operands
fit in L2; cugemm flushes before every repetition: its kernels tag the copies of B evict_first
(kernels/lib/core.cuh, l2_policy_stream), and a kernel that does so leaves most of the L2 as the
launch before it left it, so without a flush a product larger than L2 would find the part of B
that the previous repetition (cuBLAS's, in a pair) read last still cached: repetitions would no
longer be independent. Every repetition of every kernel now starts from the same L2: the flush
buffer's dirty lines.

Ratios: `measure_pair` times a kernel and its baseline in alternating repetitions. On a GPU that
runs at its power cap (an H100 or H200 under a large GEMM sits at 700 W, its clock set by what ran
just before), timing the baseline once and then each variant in its own burst lets the order of the
list move a ratio by 5-10%; alternating them gives both the same clock history.
"""
from __future__ import annotations

import math


def percentile(sorted_values, q):
    """Linear-interpolated percentile of an already sorted list (q in 0..100)."""
    if len(sorted_values) == 1:
        return sorted_values[0]
    pos = (len(sorted_values) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


class Timer:
    """Device time of a callable: median, p20 and p80 over repetitions timed with CuPy events."""

    def __init__(self, warmup: int = 5, iters: int = 50, budget_s: float = 1.5):
        import cupy

        self.warmup, self.iters, self.budget_s = warmup, iters, budget_s
        self.l2_bytes = cupy.cuda.Device().attributes.get("L2CacheSize", 50 * 2**20)
        self._flush = cupy.empty(max(2 * self.l2_bytes, 2**20) // 4, dtype=cupy.float32)

    def flush(self):
        self._flush.fill(1.0)

    def measure(self, fn) -> dict:
        """{'median', 'p20', 'p80' (ms), 'n'}; the L2 flushed before each run."""
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
        times = sorted(cupy.cuda.get_elapsed_time(s, e) for s, e in events)
        return {"median": percentile(times, 50), "p20": percentile(times, 20),
                "p80": percentile(times, 80), "n": iters}

    def measure_pair(self, fn, base) -> tuple[dict, dict]:
        """measure() of `fn` and of `base`, their repetitions alternating (fn, base, fn, base, ...)."""
        import cupy

        def once(f, s, e):
            self.flush()
            s.record()
            f()
            e.record()

        warm = [(cupy.cuda.Event(), cupy.cuda.Event()) for _ in range(2)]
        for _ in range(max(1, self.warmup)):
            once(fn, *warm[0])
            once(base, *warm[1])
        warm[1][1].synchronize()
        first = cupy.cuda.get_elapsed_time(*warm[0]) + cupy.cuda.get_elapsed_time(*warm[1])
        iters = max(5, min(self.iters, int(self.budget_s * 1e3 / max(first, 1e-3))))
        events = [[(cupy.cuda.Event(), cupy.cuda.Event()) for _ in range(iters)] for _ in range(2)]
        for i in range(iters):
            once(fn, *events[0][i])
            once(base, *events[1][i])
        events[1][-1][1].synchronize()
        out = []
        for evs in events:
            times = sorted(cupy.cuda.get_elapsed_time(s, e) for s, e in evs)
            out.append({"median": percentile(times, 50), "p20": percentile(times, 20),
                        "p80": percentile(times, 80), "n": iters})
        return out[0], out[1]

    def median_ms(self, fn) -> float:
        return self.measure(fn)["median"]
