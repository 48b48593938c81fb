#!/usr/bin/env python3
"""The fused-epilogue bench: cugemm.linear / cugemm.gemm against torch's unfused and fused calls, in
one process, torch tensors.

    PYTHONPATH=$PWD python3 scripts/epilogue_bench.py [--dtypes bf16,fp16] [--rounds 3] [--quick]
                                                      [--shapes MxNxK,...] [--host] [--json PATH]

Operands per shape (M x N x K of the linear layer y = x @ W.T; fresh per shape and dtype, never
zeros): x = randn(M, K), w = randn(N, K) / sqrt(K) (so x @ W.T has unit variance: the GELU sees both
of its regions), b = 0.1 randn(N), c = 0.5 randn(M, N).
Contenders (all timed; the four ratios below pair them):
  torch   x @ w.T                                  cugemm  cugemm.matmul(x, w.T)
  torch   F.linear(x, w, b)                        cugemm  cugemm.linear(x, w, b)
  torch   F.gelu(F.linear(x, w, b))  (two kernels) cugemm  cugemm.linear(x, w, b, activation="gelu")
  torch   torch._addmm_activation(b, x, w.T, use_gelu=True)  (cuBLASLt's GELU_BIAS epilogue, one kernel;
          note: its GELU is the tanh form, cugemm's "gelu" the erf form)
  torch   torch.addmm(c, x, w.T)  (beta = 1)       cugemm  cugemm.gemm(x, w.T, c, beta=1.0)
Timing: triton.testing.do_bench(warmup=25, rep=100, return_mode="median"; it flushes the L2 before
every call), --rounds rounds, each round running every contender once in the order above (torch and
cugemm alternating); a contender's time is the median of its rounds, in us.
Ratios per shape (torch us / cugemm us * 100: > 100% means cugemm is faster), with the targets the
geometric mean over the shapes of a dtype is held to:
  gelu_vs_unfused     F.gelu(F.linear) / cugemm.linear(gelu)          target >= 110%
  gelu_vs_addmm_act   torch._addmm_activation / cugemm.linear(gelu)   target >= 100%
  bias_vs_linear      F.linear / cugemm.linear(bias)                  target >= 100%
  gemm_vs_addmm       torch.addmm / cugemm.gemm(beta=1)               target >= 100%
  matmul_vs_torch     x @ w.T / cugemm.matmul                         (no target: the plain product)
  fused_overhead      cugemm.linear(gelu) / cugemm.matmul, a time ratio  target <= 1.03
Correctness: every cugemm result against torch's own result of the same call in the same dtype
(matmul / x @ w.T, linear / F.linear, linear gelu / F.gelu(F.linear), gemm / addmm): max |diff| over
max |reference| must be < 2e-2. A failure (wrong result or an exception) is printed and counted,
never fatal: a contender that raised is not timed and its ratios are left out.
--host: host time per call at one small shape (--host-shape, default 16x4096x4096, the first of
--dtypes): per round and callable, 50 warm-up calls, torch.cuda.synchronize(), then 200 back-to-back
calls between time.perf_counter() stamps with a torch.cuda.synchronize() before the second (so where
the GPU is the slower, its time shows), divided by 200; --host-rounds rounds alternating the
callables, median and min. Callables: F.gelu(F.linear), torch._addmm_activation, cugemm.linear(gelu).
Output: a per-shape progress line, then per dtype a table of times (us) and a table of ratios, the
geometric means with PASS/FAIL against the targets; --json (default results/judge/epilogue.json)
gets every time (rounds and medians), ratio, error, failure, the summaries and the host part, with
the device name and the torch / triton / cupy / cugemm versions. Nothing is asserted: the exit
status is 0 whatever the verdicts.
"""
import argparse
import json
import os
import statistics
import time

DTYPES = {"bf16": "bfloat16", "fp16": "float16"}

# (M, N, K, where the layer comes from): y = x @ W.T with x (M, K) tokens x features, W (N, K).
# The first three are the issue's; the rest are public model dimensions, M (tokens) 512 to 16384.
SHAPES = [
    (4096, 11008, 4096, "Llama-2-7B MLP up/gate (issue)"),
    (8192, 4096, 4096, "Llama-2-7B attention q/k/v/o (issue)"),
    (2048, 3072, 768, "GPT-2 small MLP c_fc (issue)"),
    (512, 4096, 4096, "Llama-2-7B attention, 512 tokens"),
    (4096, 4096, 4096, "Llama-2-7B attention q/k/v/o"),
    (2048, 8192, 2048, "Llama-3.2-1B MLP up/gate"),
    (8192, 14336, 4096, "Mistral-7B / Llama-3-8B MLP up/gate"),
    (4096, 4096, 14336, "Mistral-7B / Llama-3-8B MLP down"),
    (1024, 18944, 3584, "Qwen2-7B MLP up/gate"),
    (2048, 8960, 1536, "Qwen2-1.5B MLP up/gate"),
    (16384, 3072, 768, "GPT-2 small MLP c_fc, 16k tokens"),
    (16384, 768, 3072, "GPT-2 small MLP c_proj, 16k tokens"),
]
QUICK = [(2048, 3072, 768), (4096, 11008, 4096)]

# Contenders in timing order (torch and cugemm alternating): key -> (label, library).
CONTENDERS = {
    "torch_mm": ("x @ w.T", "torch"),
    "cugemm_mm": ("cugemm.matmul(x, w.T)", "cugemm"),
    "torch_linear": ("F.linear(x, w, b)", "torch"),
    "cugemm_linear": ("cugemm.linear(x, w, b)", "cugemm"),
    "torch_gelu": ("F.gelu(F.linear(x, w, b))", "torch"),
    "torch_addmm_act": ("torch._addmm_activation(b, x, w.T, use_gelu=True)", "torch"),
    "cugemm_gelu": ("cugemm.linear(x, w, b, activation='gelu')", "cugemm"),
    "torch_addmm": ("torch.addmm(c, x, w.T)", "torch"),
    "cugemm_gemm": ("cugemm.gemm(x, w.T, c, beta=1.0)", "cugemm"),
}
SHORT = {"torch_mm": "x@w.T", "cugemm_mm": "cg.matmul", "torch_linear": "F.linear", "cugemm_linear": "cg.linear",
         "torch_gelu": "gelu(F.lin)", "torch_addmm_act": "addmm_act", "cugemm_gelu": "cg.lin gelu",
         "torch_addmm": "addmm", "cugemm_gemm": "cg.gemm"}
# The cugemm result each is checked against: the torch call of the same semantics.
REFERENCE = {"cugemm_mm": "torch_mm", "cugemm_linear": "torch_linear", "cugemm_gelu": "torch_gelu",
             "cugemm_gemm": "torch_addmm"}
# ratio name -> (numerator key, denominator key, kind, comparison, target). "pct": torch / cugemm * 100;
# "time": cugemm / cugemm (a plain quotient of times).
RATIOS = {
    "gelu_vs_unfused": ("torch_gelu", "cugemm_gelu", "pct", ">=", 110.0),
    "gelu_vs_addmm_act": ("torch_addmm_act", "cugemm_gelu", "pct", ">=", 100.0),
    "bias_vs_linear": ("torch_linear", "cugemm_linear", "pct", ">=", 100.0),
    "gemm_vs_addmm": ("torch_addmm", "cugemm_gemm", "pct", ">=", 100.0),
    "matmul_vs_torch": ("torch_mm", "cugemm_mm", "pct", None, None),
    "fused_overhead": ("cugemm_gelu", "cugemm_mm", "time", "<=", 1.03),
}
RTOL = 2e-2  # max |cugemm - torch| / max |torch|


def parse_shapes(text):
    return [tuple(int(v) for v in s.lower().split("x")) for s in text.split(",") if s]


def verdict(ok):
    return "PASS" if ok else "FAIL"


def fmt_ratio(name, v):
    if v is None:
        return "-"
    return f"{v:.3f}" if RATIOS[name][2] == "time" else f"{v:.1f}%"


# ---- one shape ------------------------------------------------------------------------------------

def make_calls(x, w, b, c):
    """The contenders' callables on one set of operands (keys of CONTENDERS)."""
    import torch
    import torch.nn.functional as F

    import cugemm

    wt = w.T  # the (K, N) view of the weight: x @ W.T reads W where it lies
    return {
        "torch_mm": lambda: x @ wt,
        "cugemm_mm": lambda: cugemm.matmul(x, wt),
        "torch_linear": lambda: F.linear(x, w, b),
        "cugemm_linear": lambda: cugemm.linear(x, w, b),
        "torch_gelu": lambda: F.gelu(F.linear(x, w, b)),
        "torch_addmm_act": lambda: torch._addmm_activation(b, x, wt, use_gelu=True),
        "cugemm_gelu": lambda: cugemm.linear(x, w, b, activation="gelu"),
        "torch_addmm": lambda: torch.addmm(c, x, wt),
        "cugemm_gemm": lambda: cugemm.gemm(x, wt, c, beta=1.0),
    }


def check(calls, row, failures):
    """Run every contender once (this also compiles and plans cugemm's kernels); compare each cugemm
    result with its torch reference. Returns the keys that ran (a key that raised is dropped)."""
    import torch

    tag = f"{row['dtype']} {row['M']}x{row['N']}x{row['K']}"
    outs, ok = {}, []
    for key, fn in calls.items():
        try:
            outs[key] = fn()
            torch.cuda.synchronize()
            ok.append(key)
        except Exception as exc:  # noqa: BLE001 - recorded; the contender is not timed
            msg = f"{type(exc).__name__}: {str(exc)[:300]}"
            row["exceptions"][key] = msg
            if CONTENDERS[key][1] == "cugemm":
                failures.append(f"{tag} {CONTENDERS[key][0]} raised {msg}")
                print(f"  FAILURE {failures[-1]}", flush=True)
            else:
                print(f"  note: {tag} {CONTENDERS[key][0]} raised {msg} (not timed)", flush=True)
    for key, ref_key in REFERENCE.items():
        if key not in outs or ref_key not in outs:
            continue
        got, ref = outs[key], outs[ref_key]
        if tuple(got.shape) != tuple(ref.shape) or got.dtype != ref.dtype:
            err = float("inf")
        else:
            ref32 = ref.float()
            err = ((got.float() - ref32).abs().max() / ref32.abs().max()).item()
        row["errors"][key] = err
        if not err < RTOL:  # also catches NaN
            failures.append(f"{tag} {CONTENDERS[key][0]}: max|diff|/max|ref| = {err:.3e} "
                            f"(against {CONTENDERS[ref_key][0]}; shape {tuple(got.shape)}, dtype {got.dtype})")
            row["wrong"].append(key)
            print(f"  FAILURE {failures[-1]}", flush=True)
    del outs
    return ok


def time_shape(do_bench, calls, keys, rounds, row, failures):
    """Median over `rounds` of do_bench medians (us), the contenders alternating within a round."""
    tag = f"{row['dtype']} {row['M']}x{row['N']}x{row['K']}"
    times = {k: [] for k in keys}
    for _ in range(rounds):
        for k in keys:
            if k not in times:  # dropped in an earlier round
                continue
            try:
                times[k].append(do_bench(calls[k], warmup=25, rep=100, return_mode="median") * 1e3)
            except Exception as exc:  # noqa: BLE001
                msg = f"{type(exc).__name__}: {str(exc)[:300]}"
                row["exceptions"][k] = msg
                del times[k]
                if CONTENDERS[k][1] == "cugemm":
                    failures.append(f"{tag} {CONTENDERS[k][0]} raised while timed: {msg}")
                    print(f"  FAILURE {failures[-1]}", flush=True)
    row["us_rounds"] = times
    row["us"] = {k: statistics.median(v) for k, v in times.items() if v}


def ratios_of(us):
    out = {}
    for name, (num, den, kind, _, _) in RATIOS.items():
        if num in us and den in us:
            out[name] = us[num] / us[den] * (100.0 if kind == "pct" else 1.0)
    return out


def bench_part(args, report):
    import torch
    from triton.testing import do_bench

    rows = report["rows"] = []
    failures = report["failures"] = []
    summary = report["summary"] = {}
    print(f"\n== {len(args.shapes)} shapes x {len(args.dtypes)} dtypes; triton do_bench median (L2 flushed), "
          f"{args.rounds} rounds alternating; ratio = torch / cugemm (> 100%: cugemm faster)", flush=True)
    for dn in args.dtypes:
        dt = getattr(torch, DTYPES[dn])
        for M, N, K, model in args.shapes:
            row = {"dtype": dn, "M": M, "N": N, "K": K, "model": model, "errors": {}, "wrong": [],
                   "exceptions": {}}
            rows.append(row)
            # fresh operands per shape and dtype; small scales, never zeros
            x = torch.randn(M, K, device="cuda", dtype=dt)
            w = torch.randn(N, K, device="cuda", dtype=dt) * K ** -0.5
            b = torch.randn(N, device="cuda", dtype=dt) * 0.1
            c = torch.randn(M, N, device="cuda", dtype=dt) * 0.5
            calls = make_calls(x, w, b, c)
            keys = check(calls, row, failures)
            time_shape(do_bench, calls, keys, args.rounds, row, failures)
            row["ratios"] = ratios_of(row["us"])
            r = row["ratios"]
            print(f"{dn:4s} {f'{M}x{N}x{K}':>17s}  gelu/unfused {fmt_ratio('gelu_vs_unfused', r.get('gelu_vs_unfused'))}"
                  f"  gelu/addmm_act {fmt_ratio('gelu_vs_addmm_act', r.get('gelu_vs_addmm_act'))}"
                  f"  bias {fmt_ratio('bias_vs_linear', r.get('bias_vs_linear'))}"
                  f"  gemm {fmt_ratio('gemm_vs_addmm', r.get('gemm_vs_addmm'))}"
                  f"  matmul {fmt_ratio('matmul_vs_torch', r.get('matmul_vs_torch'))}"
                  f"  overhead {fmt_ratio('fused_overhead', r.get('fused_overhead'))}"
                  f"{'  WRONG: ' + ','.join(row['wrong']) if row['wrong'] else ''}", flush=True)
            del calls, x, w, b, c
        summary[dn] = summarize([r for r in rows if r["dtype"] == dn])
    torch.cuda.empty_cache()
    print_tables(rows, summary, args.dtypes)
    print(f"\ncorrectness failures: {len(failures)}")
    for f in failures:
        print(f"  {f}")


def summarize(mine):
    """Geometric mean, min and max of each ratio over one dtype's shapes, and the verdicts."""
    s = {"shapes": len(mine), "failures": sum(len(r["wrong"]) + sum(CONTENDERS[k][1] == "cugemm"
                                                                   for k in r["exceptions"]) for r in mine),
         "geomean": {}, "min": {}, "max": {}, "pass": {}, "n": {}}
    for name, (_, _, _, op, target) in RATIOS.items():
        vs = [r["ratios"][name] for r in mine if name in r["ratios"]]
        s["n"][name] = len(vs)
        if not vs:
            continue
        g = s["geomean"][name] = statistics.geometric_mean(vs)
        s["min"][name], s["max"][name] = min(vs), max(vs)
        if op is not None:  # a ratio measured on fewer shapes than the dtype has fails
            s["pass"][name] = (g >= target if op == ">=" else g <= target) and len(vs) == len(mine)
    return s


def print_tables(rows, summary, dtypes):
    from tabulate import tabulate

    for dn in dtypes:
        mine = [r for r in rows if r["dtype"] == dn]
        print(f"\n== {dn}: times (us, median of rounds)")
        head = ["M x N x K", "layer"] + [SHORT[k] for k in CONTENDERS]
        print(tabulate([[f"{r['M']}x{r['N']}x{r['K']}", r["model"]]
                        + [f"{r['us'][k]:.1f}" if k in r["us"] else "-" for k in CONTENDERS] for r in mine],
                       headers=head, disable_numparse=True))
        print(f"\n== {dn}: ratios (torch / cugemm %, overhead = cugemm.linear(gelu) / cugemm.matmul)")
        head = ["M x N x K"] + list(RATIOS) + ["max err", "ok"]
        table = []
        for r in mine:
            errs = list(r["errors"].values())
            ok = not r["wrong"] and not any(CONTENDERS[k][1] == "cugemm" for k in r["exceptions"])
            table.append([f"{r['M']}x{r['N']}x{r['K']}"] + [fmt_ratio(n, r["ratios"].get(n)) for n in RATIOS]
                         + [f"{max(errs):.1e}" if errs else "-", "yes" if ok else "NO"])
        s = summary[dn]
        table.append(["geomean"] + [fmt_ratio(n, s["geomean"].get(n)) for n in RATIOS] + ["", ""])
        table.append(["min"] + [fmt_ratio(n, s["min"].get(n)) for n in RATIOS] + ["", ""])
        table.append(["max"] + [fmt_ratio(n, s["max"].get(n)) for n in RATIOS] + ["", ""])
        print(tabulate(table, headers=head, disable_numparse=True))
        for name, (_, _, _, op, target) in RATIOS.items():
            if op is None or name not in s["geomean"]:
                if op is not None:
                    print(f"{dn} {name}: no measurement: FAIL")
                continue
            tgt = f"{target:.0f}%" if RATIOS[name][2] == "pct" else f"{target}"
            print(f"{dn} {name}: geomean {fmt_ratio(name, s['geomean'][name])} (target {op} {tgt}; "
                  f"{s['n'][name]} of {s['shapes']} shapes): {verdict(s['pass'][name])}")
        print(f"{dn}: {s['failures']} correctness failures over {s['shapes']} shapes")


# ---- host time per call ---------------------------------------------------------------------------

def host_part(args, report):
    import torch
    import torch.nn.functional as F

    import cugemm

    M, N, K = args.host_shape
    dn = args.dtypes[0]
    dt = getattr(torch, DTYPES[dn])
    x = torch.randn(M, K, device="cuda", dtype=dt)
    w = torch.randn(N, K, device="cuda", dtype=dt) * K ** -0.5
    b = torch.randn(N, device="cuda", dtype=dt) * 0.1
    wt = w.T
    calls = {
        "F.gelu(F.linear(x, w, b))": lambda: F.gelu(F.linear(x, w, b)),
        "torch._addmm_activation(b, x, w.T, use_gelu=True)": lambda: torch._addmm_activation(b, x, wt, use_gelu=True),
        "cugemm.linear(x, w, b, activation='gelu')": lambda: cugemm.linear(x, w, b, activation="gelu"),
    }
    n, warm = args.host_n, 50
    res = {k: [] for k in calls}
    host = report["host"] = {"dtype": dn, "M": M, "N": N, "K": K, "calls_per_round": n, "warmup": warm,
                             "rounds": args.host_rounds, "us_rounds": res}
    for k, fn in list(calls.items()):  # compile and plan outside the rounds
        try:
            fn()
            torch.cuda.synchronize()
        except Exception as exc:  # noqa: BLE001
            host.setdefault("exceptions", {})[k] = f"{type(exc).__name__}: {str(exc)[:300]}"
            print(f"host: {k} raised {host['exceptions'][k]}")
            del calls[k], res[k]
    for _ in range(args.host_rounds):
        for k, fn in calls.items():
            for _ in range(warm):
                fn()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            torch.cuda.synchronize()
            res[k].append((time.perf_counter() - t0) / n * 1e6)
    host["us_median"] = {k: statistics.median(v) for k, v in res.items()}
    host["us_min"] = {k: min(v) for k, v in res.items()}
    cg = "cugemm.linear(x, w, b, activation='gelu')"
    if cg in host["us_median"]:
        host["torch_over_cugemm"] = {k: v / host["us_median"][cg] for k, v in host["us_median"].items() if k != cg}
    from tabulate import tabulate

    print(f"\n== host time per call, {dn} {M}x{N}x{K}: {n} back-to-back calls between synchronizes, "
          f"{args.host_rounds} rounds (us)")
    print(tabulate([[k, f"{host['us_median'][k]:.2f}", f"{host['us_min'][k]:.2f}",
                     f"{host.get('torch_over_cugemm', {}).get(k, 1.0 if k == cg else float('nan')):.3f}"]
                    for k in host["us_median"]],
                   headers=["call", "median", "min", "/ cugemm"], disable_numparse=True))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dtypes", default="bf16,fp16", help="comma-separated: bf16, fp16 (default both)")
    p.add_argument("--rounds", type=int, default=3, help="do_bench rounds per contender (default 3)")
    p.add_argument("--json", metavar="PATH", default="results/judge/epilogue.json",
                   help="write every measurement here (default results/judge/epilogue.json; '' for none)")
    p.add_argument("--quick", action="store_true", help=f"only {', '.join('x'.join(map(str, s)) for s in QUICK)}")
    p.add_argument("--shapes", default="", help="MxNxK,... instead of the built-in layer shapes")
    p.add_argument("--host", action="store_true", help="also time the host per call (see above)")
    p.add_argument("--host-only", action="store_true", help="only the host part")
    p.add_argument("--host-shape", default="16x4096x4096", help="MxNxK of the host part (default 16x4096x4096)")
    p.add_argument("--host-n", type=int, default=200, help="timed calls per host round (default 200)")
    p.add_argument("--host-rounds", type=int, default=5, help="host rounds (default 5)")
    args = p.parse_args()
    args.dtypes = [d for d in args.dtypes.split(",") if d]
    if not args.dtypes or set(args.dtypes) - set(DTYPES):
        p.error(f"--dtypes: comma-separated, of {sorted(DTYPES)}")
    if args.shapes:
        args.shapes = [(M, N, K, "") for M, N, K in parse_shapes(args.shapes)]
    elif args.quick:
        args.shapes = [s for s in SHAPES if s[:3] in QUICK]
    else:
        args.shapes = list(SHAPES)
    (args.host_shape,) = parse_shapes(args.host_shape)

    # the GPU libraries only now: --help and a syntax check need none of them
    import torch

    import cugemm

    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "cugemm": getattr(cugemm, "__version__", None), "args": dict(vars(args)),
              "rtol": RTOL, "targets": {n: {"op": op, "target": t} for n, (_, _, _, op, t) in RATIOS.items() if op},
              "contenders": {k: label for k, (label, _) in CONTENDERS.items()}}
    for mod in ("triton", "cupy"):
        try:
            report[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001
            report[mod] = None
    print(f"{report['device']}: torch {report['torch']}, triton {report['triton']}, cupy {report['cupy']}, "
          f"cugemm {report['cugemm']}")
    try:
        if not args.host_only:
            bench_part(args, report)
        if args.host or args.host_only:
            host_part(args, report)
    finally:
        if args.json:
            os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
            with open(args.json, "w") as f:
                json.dump(report, f, indent=1)
            print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
