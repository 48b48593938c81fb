#!/usr/bin/env python3
"""Issue 22's acceptance bench: cugemm.matmul as a drop-in for torch.matmul in serving.

    python3 scripts/serving_bench.py [--parts host,ratios] [--json PATH] [--dtypes f16,bf16]

host    Host time per call on a plan-cache hit (2-D fp16, --host-shapes): torch.matmul(x, w.T) and
        cugemm.matmul(x, w.T) on torch tensors; cupy.matmul and cugemm.matmul on CuPy arrays with
        b = w.T and with a row-major b. Everything runs on the legacy default stream (torch's
        default current stream, CuPy's default stream). Per round and callable: 50 warm-up calls
        and a synchronize; a torch.cuda._sleep of --sleep-ms (longer if the warm-up says N calls
        could outlast it) is enqueued, then N calls are timed with time.perf_counter() before the
        synchronize, so the GPU never drains the launch queue and the time is the host's own
        (a row is flagged 'drained' if the sleep had ended when the clock stopped). Then the
        stream time: CUDA events around N back-to-back calls without the sleep, divided by N
        (where the host is the slower, its overhead shows up here). --repeats rounds run every
        callable in turn (A, B, C, ... A, B, C, ...); median and min are reported. Acceptance:
        cugemm host <= torch.matmul host (same shape), printed as PASS/FAIL.
ratios  x @ W.T on torch tensors over the judge shapes (cugemm.bench.measure.LINEAR_JUDGE: no tuning table was fitted to them),
        x (M x K), w (N x K) / sqrt(K). cugemm's result must match torch.matmul's (relative
        Frobenius error < 1e-2). Then (a) back to back, no flush: 7 rounds alternating torch and
        cugemm, CUDA events around a block of n calls (n: the block takes >= 2 ms, n >= 10),
        per-call = elapsed / n, medians; (b) triton.testing.do_bench(warmup=25, rep=100, median;
        it flushes the L2 between calls), 3 rounds alternating, median of rounds (skipped without
        triton). ratio = torch us / cugemm us * 100 (> 100: cugemm faster). Acceptance per dtype:
        geometric mean >= 100% for (a) and (b), no shape below 90%, every result correct.
Nothing is asserted: the exit status is 0 whatever the verdicts.
"""
import argparse
import json
import math
import statistics
import time

DTYPES = {"f16": "float16", "bf16": "bfloat16"}


def parse_shapes(text):
    return [tuple(int(v) for v in s.lower().split("x")) for s in text.split(",") if s]


def verdict(ok):
    return "PASS" if ok else "FAIL"


def drained_note(rounds):
    return f"  (sleep ended early in {rounds} rounds: host time not the host's own)" if rounds else ""


# ---- host time per call ---------------------------------------------------------------------------

def sleep_cycles_per_ms():
    """torch.cuda._sleep's cycles per millisecond on this GPU (measured: 10M cycles with events)."""
    import torch

    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(1_000_000)  # warm-up
    s.record()
    torch.cuda._sleep(10_000_000)
    e.record()
    e.synchronize()
    return 10_000_000 / s.elapsed_time(e)


def host_round(fn, n, sleep_ms, cycles_per_ms):
    """(host us/call behind a GPU sleep, whether the sleep had ended, stream us/call without it)."""
    import torch

    for _ in range(25):
        fn()
    t0 = time.perf_counter()
    for _ in range(25):
        fn()
    warm = (time.perf_counter() - t0) / 25
    torch.cuda.synchronize()
    sleep_ms = min(max(sleep_ms, 3e3 * warm * n), 2000)  # the sleep must outlast the N timed calls
    done = torch.cuda.Event()
    torch.cuda._sleep(int(sleep_ms * cycles_per_ms))
    done.record()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    host = (time.perf_counter() - t0) / n * 1e6
    drained = done.query()
    torch.cuda.synchronize()
    return host, drained, block_us(fn, n)


def host_part(args, report):
    import cupy
    import torch

    import cugemm

    streams = {"torch": torch.cuda.current_stream().cuda_stream, "cupy": cupy.cuda.get_current_stream().ptr}
    if any(streams.values()):
        print(f"warning: not on the legacy default stream: {streams} (the sleep may not hold the calls back)")
    cpm = sleep_cycles_per_ms()
    report["host_meta"] = {"streams": streams, "sleep_cycles_per_ms": cpm, "n": args.n, "repeats": args.repeats}
    rows = report["host"] = []
    print(f"\n== host time per call (plan-cache hit, fp16, N={args.n}, {args.repeats} rounds; us)")
    print(f"{'shape':>16s}  {'callable':28s} {'host med':>8s} {'host min':>8s} {'stream':>7s} "
          f"{'/torch':>7s} {'/base':>7s}  acceptance")
    for M, N, K in args.host_shapes:
        x = torch.randn(M, K, device="cuda", dtype=torch.float16)
        w = torch.randn(N, K, device="cuda", dtype=torch.float16) / K ** 0.5
        a, wc = cupy.asarray(x), cupy.asarray(w)
        b_row = cupy.ascontiguousarray(wc.T)
        calls = [  # (name, callable, baseline name)
            ("torch.matmul(x, w.T)", lambda: torch.matmul(x, w.T), None),
            ("cugemm.matmul(x, w.T)", lambda: cugemm.matmul(x, w.T), "torch.matmul(x, w.T)"),
            ("cupy.matmul(a, w.T)", lambda: cupy.matmul(a, wc.T), None),
            ("cugemm.matmul(a, w.T)", lambda: cugemm.matmul(a, wc.T), "cupy.matmul(a, w.T)"),
            ("cupy.matmul(a, b_row)", lambda: cupy.matmul(a, b_row), None),
            ("cugemm.matmul(a, b_row)", lambda: cugemm.matmul(a, b_row), "cupy.matmul(a, b_row)"),
        ]
        for _, fn, _ in calls:  # plan (and compile) once, outside the rounds
            fn()
        torch.cuda.synchronize()
        res = {name: {"host": [], "stream": [], "drained": 0} for name, _, _ in calls}
        for _ in range(args.repeats):
            for name, fn, _ in calls:
                h, drained, st = host_round(fn, args.n, args.sleep_ms, cpm)
                res[name]["host"].append(h)
                res[name]["stream"].append(st)
                res[name]["drained"] += drained
        med = {name: statistics.median(r["host"]) for name, r in res.items()}
        for name, _, base in calls:
            r = res[name]
            row = {"M": M, "N": N, "K": K, "callable": name, "host_median_us": med[name],
                   "host_min_us": min(r["host"]), "stream_median_us": statistics.median(r["stream"]),
                   "host_us": r["host"], "stream_us": r["stream"], "drained_rounds": r["drained"],
                   "vs_torch": med[name] / med["torch.matmul(x, w.T)"]}
            if base is not None:
                row["vs_baseline"] = med[name] / med[base]
            if name.startswith("cugemm"):
                row["pass"] = row["vs_torch"] <= 1.0
            rows.append(row)
            vb = f"{row['vs_baseline']:7.3f}" if base else "      -"
            print(f"{f'{M}x{N}x{K}':>16s}  {name:28s} {row['host_median_us']:8.2f} {row['host_min_us']:8.2f} "
                  f"{row['stream_median_us']:7.2f} {row['vs_torch']:7.3f} "
                  f"{vb}  "
                  f"{verdict(row['pass']) if 'pass' in row else '':4s}{drained_note(r['drained'])}", flush=True)
    torch_rows = [r for r in rows if r["callable"] == "cugemm.matmul(x, w.T)"]
    ok = all(r["pass"] for r in torch_rows)
    report["host_pass"] = ok
    print(f"host acceptance (cugemm.matmul(x, w.T) host <= torch.matmul(x, w.T) host, every shape): {verdict(ok)}")


# ---- kernel-time ratios over the judge set --------------------------------------------------------

def block_us(fn, n):
    import torch

    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(n):
        fn()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) * 1e3 / n


def back_to_back(f_torch, f_cugemm, rounds):
    """(a): per-call us of each, medians of `rounds` alternating blocks of n calls (>= 2 ms, n >= 10)."""
    est = min(block_us(f, 10) for f in (f_torch, f_cugemm) for _ in range(2))
    n = max(10, min(10_000, math.ceil(2000 / max(est, 1e-3))))
    tt, tc = [], []
    for _ in range(rounds):
        tt.append(block_us(f_torch, n))
        tc.append(block_us(f_cugemm, n))
    return statistics.median(tt), statistics.median(tc), n


def do_bench_pair(do_bench, f_torch, f_cugemm, rounds=3):
    """(b): triton do_bench medians (us), alternating over `rounds`, median of rounds."""
    tt, tc = [], []
    for _ in range(rounds):
        tt.append(do_bench(f_torch, warmup=25, rep=100, return_mode="median") * 1e3)
        tc.append(do_bench(f_cugemm, warmup=25, rep=100, return_mode="median") * 1e3)
    return statistics.median(tt), statistics.median(tc)


def ratios_part(args, report):
    import torch

    import cugemm

    try:
        from triton.testing import do_bench
    except Exception as exc:  # noqa: BLE001 - any import failure means: no (b)
        do_bench = None
        print(f"note: triton not importable ({type(exc).__name__}: {exc}); do_bench ratios (b) skipped")
    rows = report["ratios"] = []
    summary = report["ratios_summary"] = {}
    print(f"\n== x @ W.T over {len(args.shapes)} shapes; (a) back to back, no flush, {args.rounds} rounds; "
          f"(b) triton do_bench median, L2 flushed; ratio = torch / cugemm %")
    print(f"{'dtype':5s} {'MxNxK':>16s} {'torch a':>9s} {'cugemm a':>9s} {'ratio a':>7s} {'torch b':>9s} "
          f"{'cugemm b':>9s} {'ratio b':>7s} {'err':>8s}  plan")
    for dn in args.dtypes:
        dt = getattr(torch, DTYPES[dn])
        for M, N, K in args.shapes:
            row = {"dtype": dn, "M": M, "N": N, "K": K}
            rows.append(row)
            x = torch.randn(M, K, device="cuda", dtype=dt)
            w = torch.randn(N, K, device="cuda", dtype=dt) / K ** 0.5
            try:
                row["plan"] = cugemm.explain(x, w.T).plan.variant.name
            except Exception as exc:  # noqa: BLE001
                row["plan"] = f"? ({type(exc).__name__})"
            try:
                ref, got = torch.matmul(x, w.T).float(), cugemm.matmul(x, w.T).float()
                row["err"] = ((got - ref).norm() / ref.norm()).item()
                del ref, got
            except Exception as exc:  # noqa: BLE001 - recorded, the shape fails
                row["error"] = f"{type(exc).__name__}: {exc}"
                print(f"{dn:5s} {f'{M}x{N}x{K}':>16s}  cugemm.matmul failed: {row['error']}", flush=True)
                continue
            row["correct"] = row["err"] < 1e-2

            def f_torch():
                return torch.matmul(x, w.T)

            def f_cugemm():
                return cugemm.matmul(x, w.T)

            row["torch_a_us"], row["cugemm_a_us"], row["block_n"] = back_to_back(f_torch, f_cugemm, args.rounds)
            row["ratio_a"] = 100 * row["torch_a_us"] / row["cugemm_a_us"]
            cols = f"{'-':>9s} {'-':>9s} {'-':>7s}"
            if do_bench is not None:
                row["torch_b_us"], row["cugemm_b_us"] = do_bench_pair(do_bench, f_torch, f_cugemm)
                row["ratio_b"] = 100 * row["torch_b_us"] / row["cugemm_b_us"]
                cols = f"{row['torch_b_us']:9.1f} {row['cugemm_b_us']:9.1f} {row['ratio_b']:7.1f}"
            print(f"{dn:5s} {f'{M}x{N}x{K}':>16s} {row['torch_a_us']:9.1f} {row['cugemm_a_us']:9.1f} "
                  f"{row['ratio_a']:7.1f} {cols} {row['err']:8.1e}  "
                  f"{row['plan']}{'' if row['correct'] else '  WRONG RESULT'}", flush=True)
        mine = [r for r in rows if r["dtype"] == dn]
        s = summary[dn] = {"shapes": len(mine), "failed": sum("error" in r or not r["correct"] for r in mine)}
        ok = s["failed"] == 0
        for kind in ("a", "b") if do_bench is not None else ("a",):
            rs = [r[f"ratio_{kind}"] for r in mine if f"ratio_{kind}" in r]
            if not rs:
                ok = False
                continue
            s[f"geomean_{kind}"], s[f"min_{kind}"] = statistics.geometric_mean(rs), min(rs)
            ok = ok and s[f"geomean_{kind}"] >= 100 and s[f"min_{kind}"] >= 90
        s["pass"] = ok
        parts = "; ".join(f"({k}) geomean {s[f'geomean_{k}']:.1f}%, min {s[f'min_{k}']:.1f}%"
                          for k in ("a", "b") if f"geomean_{k}" in s)
        print(f"{dn}: {parts}; {s['failed']} failed of {s['shapes']}: {verdict(ok)}"
              f"{'' if do_bench is not None else ' (without (b))'}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--parts", default="host,ratios", help="comma-separated: host, ratios (default both)")
    p.add_argument("--json", metavar="PATH", help="write every measurement here")
    p.add_argument("--host-shapes", default="16x3072x768,2048x3072x768", help="MxNxK,... for the host part")
    p.add_argument("--n", type=int, default=200, help="calls per timed host block (default 200)")
    p.add_argument("--repeats", type=int, default=7, help="host rounds (default 7)")
    p.add_argument("--sleep-ms", type=float, default=30.0, help="GPU sleep ahead of the host-timed calls")
    p.add_argument("--shapes", default="judge", help="'judge' or MxNxK,... for the ratios part")
    p.add_argument("--dtypes", default="f16,bf16", help="comma-separated: f16, bf16")
    p.add_argument("--rounds", type=int, default=7, help="back-to-back rounds for ratio (a) (default 7)")
    args = p.parse_args()
    parts = set(args.parts.split(","))
    if parts - {"host", "ratios"}:
        p.error(f"unknown parts: {sorted(parts - {'host', 'ratios'})}")
    args.dtypes = args.dtypes.split(",")
    if set(args.dtypes) - set(DTYPES):
        p.error(f"--dtypes: one of {sorted(DTYPES)}")
    args.host_shapes = parse_shapes(args.host_shapes)
    if args.shapes == "judge":
        from cugemm.bench.measure import LINEAR_JUDGE

        args.shapes = list(LINEAR_JUDGE)
    else:
        args.shapes = parse_shapes(args.shapes)

    import cupy
    import torch

    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cupy": cupy.__version__,
              "args": {k: v for k, v in vars(args).items()}}
    try:
        import triton
        report["triton"] = triton.__version__
    except Exception:  # noqa: BLE001
        report["triton"] = None
    print(f"{report['device']}: torch {report['torch']}, cupy {report['cupy']}, triton {report['triton']}")
    try:
        if "host" in parts:
            host_part(args, report)
        if "ratios" in parts:
            ratios_part(args, report)
    finally:
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=1)
            print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
