#!/usr/bin/env python3
"""Issue 26's grouped bench: cugemm.grouped_matmul against torch._grouped_mm on mixture-of-experts
shapes, torch tensors, one process.

    python3 scripts/grouped_bench.py [--set judge|tune] [--probe] [--tf32] [--json PATH]

Cases (experts, tokens per expert or 'uneven:<seed>:<lo>:<hi>:<mean>', N, K, B layout): 'judge', the
acceptance set (none of it in 'tune', the set grouped.choose's rule was fitted on), with the
Qwen3-30B-A3B up-projection (128 experts x 512 tokens, N 1536, K 2048); B is (G, K, N) row-major
('row') or the transposed view of expert weights stored (G, N, K) ('col'). Uneven groups: sizes drawn
uniformly in [lo, hi] then scaled to the mean (so the total is known), with one empty group.
torch._grouped_mm takes bf16 only: fp16 is timed against cugemm's own bf16 (do_bench, alternating
with it; acceptance: within 5%, bf16 us / fp16 us >= 95%); the control beside it, "cuBLAS's", is the
same ratio for torch.matmul on the stacked 2-D product (A times expert 0's B) in both types. Timings: (a) back to back, medians of alternating blocks timed with CUDA events; (b)
triton.testing.do_bench (L2 flushed), median of 3 alternating rounds; ratio = torch us / cugemm us
* 100. Host: host microseconds per call of cugemm and of torch._grouped_mm (Python wall time of
200 calls issued behind a GPU sleep). "cupy (b)": cugemm with CuPy views of the same operands
against torch's time. Every result is checked against torch's (relative error within cugemm.accuracy's
tolerance) before timing. --probe: every grouped form on each case (do_bench), for fitting the
rule. Nothing is asserted: exit status 0 whatever the verdicts.
"""
import argparse
import json
import math

# (experts, tokens per expert, N, K, B layout)
JUDGE = [
    (8, 512, 4096, 7168, "col"), (64, 128, 2048, 7168, "col"), (32, 256, 4096, 4096, "row"),
    (128, 512, 1536, 2048, "col"),  # Qwen3-30B-A3B up-projection (gate and up: N 2 x 768)
    (16, "uneven:1:16:2048:700", 2048, 1024, "col"), (64, "uneven:2:16:600:160", 1024, 4096, "row"),
    (8, "uneven:3:100:2048:1200", 7168, 2048, "col"), (128, "uneven:4:16:64:32", 2048, 7168, "col"),
]
TUNE = [
    (16, 1024, 2048, 2048, "col"), (32, 64, 4096, 2048, "col"), (64, 384, 1024, 4096, "row"),
    (8, 2048, 1536, 1536, "col"), (128, 32, 4096, 1024, "row"), (48, 768, 2816, 2048, "col"),
    (24, "uneven:9:16:1500:600", 3072, 1536, "col"), (96, "uneven:8:16:300:96", 1536, 5120, "row"),
    (48, "uneven:11:16:500:200", 2048, 3072, "row"), (32, 192, 3072, 2048, "col"),
    (64, "uneven:12:32:400:256", 1536, 4096, "col"), (16, 160, 4096, 4096, "row"), (40, 320, 1024, 5120, "row"),
    (64, "uneven:13:16:400:140", 2048, 2048, "col"), (32, "uneven:14:16:400:175", 3072, 4096, "row"),
]


def sizes_of(G, tokens):
    import numpy as np

    if isinstance(tokens, int):
        return [tokens] * G
    _, seed, lo, hi, mean = tokens.split(":")
    rng = np.random.default_rng(int(seed))
    raw = rng.uniform(int(lo), int(hi), size=G)
    s = np.maximum(np.round(raw * (int(mean) * G / raw.sum())), 0).astype(int)
    s[G // 2] = 0  # one empty group
    return [int(x) for x in s]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", default="judge", choices=("judge", "tune"))
    ap.add_argument("--cases", default="", help="only these cases of the set (indices, comma-separated)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--probe", action="store_true", help="also time every grouped form (do_bench)")
    ap.add_argument("--json", default="")
    ap.add_argument("--tf32", action="store_true",
                    help="instead: float32 with allow_tf32 (the TF32 grouped form) against a loop of torch.matmul "
                         "over the groups with TF32 allowed, and against cugemm's bf16 (do_bench)")
    args = ap.parse_args()
    if args.tf32:
        return tf32_part(args)

    import numpy as np
    import torch

    import cugemm
    from cugemm import accuracy, grouped
    from serving_bench import back_to_back, do_bench_pair
    from serving_probe import us_per_call as host_us
    from triton.testing import do_bench

    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    report = {"device": torch.cuda.get_device_name(), "set": args.set, "rows": []}
    cases = JUDGE if args.set == "judge" else TUNE
    if args.cases:
        cases = [cases[int(i)] for i in args.cases.split(",")]
    print("G x tokens         N     K   B    | bf16: torch us  cugemm us  (a)%   torch us  cugemm us  (b)%  TFLOP/s"
          " | fp16 cugemm us (b)  fp16/bf16  cuBLAS's  cupy (b)% | host us: cugemm torch  err")
    verdicts = {"a": [], "b": [], "fp16": [], "cupy": [], "host": []}
    for G, tokens, N, K, lay in cases:
        sizes = sizes_of(G, tokens)
        rows = sum(sizes)
        offs = torch.tensor(np.cumsum(sizes), dtype=torch.int32, device="cuda")
        ops, res = {}, {}
        for dt in (torch.bfloat16, torch.float16):
            a = torch.randn(rows, K, device="cuda", dtype=dt)
            if lay == "col":
                b = (torch.randn(G, N, K, device="cuda", dtype=dt) / math.sqrt(K)).transpose(1, 2)
            else:
                b = torch.randn(G, K, N, device="cuda", dtype=dt) / math.sqrt(K)
            ops[dt] = (a, b)
            got = cugemm.grouped_matmul(a, b, offs)
            if dt is torch.bfloat16:
                ref = torch._grouped_mm(a, b, offs=offs).double()
            else:
                ref = torch.cat([a[s:e].double() @ b[g].double() for g, (s, e) in
                                 enumerate(zip([0] + offs.tolist()[:-1], offs.tolist()))])
            err = float((got.double() - ref).norm() / ref.norm())
            res[dt] = dict(err=err, ok=accuracy.within(err, str(dt).replace("torch.", ""), "float32"))
        f_t = lambda a=ops[torch.bfloat16][0], b=ops[torch.bfloat16][1]: torch._grouped_mm(a, b, offs=offs)  # noqa: E731
        f_bf, f_hf = (lambda a=ops[d][0], b=ops[d][1]: cugemm.grouped_matmul(a, b, offs)  # noqa: E731
                      for d in (torch.bfloat16, torch.float16))
        ta, ca, _ = back_to_back(f_t, f_bf, args.rounds)
        tb, cb = do_bench_pair(do_bench, f_t, f_bf)
        cb2, hb = do_bench_pair(do_bench, f_bf, f_hf)  # fp16 against bf16, alternating
        # the control: cuBLAS on the stacked 2-D product (A by expert 0's B), bf16 against fp16
        x_bf, x_hf = (lambda a=ops[d][0], b=ops[d][1][0]: torch.matmul(a, b)  # noqa: E731
                      for d in (torch.bfloat16, torch.float16))
        xb, xh = do_bench_pair(do_bench, x_bf, x_hf)
        # CuPy operands (the same memory): cugemm's own path for CuPy callers, against torch's time
        import cupy

        cu = [cupy.from_dlpack(x) for x in (*ops[torch.bfloat16], offs)]
        f_cu = lambda: cugemm.grouped_matmul(*cu)  # noqa: E731
        tb2, cub = do_bench_pair(do_bench, f_t, f_cu)
        host, host_t = host_us(f_bf), host_us(f_t)
        probe = {}
        if args.probe:
            a, b = ops[torch.bfloat16]
            for name in grouped.forms("bfloat16", lay, G):
                fv = lambda a=a, b=b, name=name: cugemm.grouped_matmul(a, b, offs, variant=name)  # noqa: E731
                probe[name] = do_bench(fv, warmup=25, rep=100) * 1e3
        flops = 2.0 * rows * N * K
        ra, rb, fp16_ratio, cublas_ratio = ta / ca * 100, tb / cb * 100, cb2 / hb * 100, xb / xh * 100
        rcu = tb2 / cub * 100
        verdicts["cupy"].append(rcu)
        verdicts["host"].append(host / host_t)
        verdicts["a"].append(ra)
        verdicts["b"].append(rb)
        verdicts["fp16"].append(fp16_ratio)
        ok = res[torch.bfloat16]["ok"] and res[torch.float16]["ok"]
        label = f"{G}x{tokens if isinstance(tokens, int) else 'uneven'}"
        print(f"{label:<14} {N:>5} {K:>5} {lay:<4} | {ta:>9.1f} {ca:>10.1f} {ra:>6.1f} {tb:>9.1f} "
              f"{cb:>10.1f} {rb:>6.1f} {flops / cb / 1e6:>7.0f} | {hb:>12.1f} {fp16_ratio:>10.1f} {cublas_ratio:>9.1f} | "
              f"{rcu:>6.1f} | {host:>5.1f} {host_t:>5.1f} {res[torch.bfloat16]['err']:.1e}{'' if ok else ' WRONG'}")
        for name, us in sorted(probe.items(), key=lambda x: x[1]):
            print(f"    bf16 {name:<72} {us:>9.1f} us")
        report["rows"].append({"G": G, "tokens": tokens, "sizes": sizes, "N": N, "K": K, "b": lay,
                               "torch_a_us": ta, "cugemm_a_us": ca, "torch_b_us": tb, "cugemm_b_us": cb,
                               "bf16_vs_fp16_b_us": [cb2, hb], "cublas_bf16_vs_fp16_b_us": [xb, xh], "cupy_vs_torch_b_us": [cub, tb2],
                               "host_us": host, "torch_host_us": host_t, "probe_us": probe,
                               "err": {str(k): v for k, v in res.items()}})
    gm = lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs))  # noqa: E731
    print(f"\nbf16 vs torch._grouped_mm: (a) geomean {gm(verdicts['a']):.1f}% min {min(verdicts['a']):.1f}%, "
          f"(b) geomean {gm(verdicts['b']):.1f}% min {min(verdicts['b']):.1f}% -> "
          f"{'PASS' if min(verdicts['b']) >= 100 else 'FAIL'} (every shape >= 100%, do_bench)")
    print(f"CuPy operands vs torch._grouped_mm (b): geomean {gm(verdicts['cupy']):.1f}% min {min(verdicts['cupy']):.1f}%")
    print(f"host time per call, cugemm / torch._grouped_mm: max {max(verdicts['host']):.2f} -> "
          f"{'PASS' if max(verdicts['host']) <= 1 else 'FAIL'} (cugemm's at or under torch's, every shape)")
    print(f"fp16 time vs bf16 (b): min {min(verdicts['fp16']):.1f}% -> "
          f"{'PASS' if min(verdicts['fp16']) >= 95 else 'FAIL'} (within 5%)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1, default=str)


def tf32_part(args):
    """float32 grouped products (TF32): cugemm.grouped_matmul(allow_tf32=True) against the Python
    loop of per-group torch.matmul a user writes without it (TF32 allowed), and against cugemm's bf16
    on the same shape; do_bench, alternating. A report, not a verdict."""
    import numpy as np
    import torch

    import cugemm
    from cugemm import accuracy, grouped
    from serving_bench import do_bench_pair
    from triton.testing import do_bench

    torch.backends.cuda.matmul.allow_tf32 = True
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    cases = JUDGE if args.set == "judge" else TUNE
    if args.cases:
        cases = [cases[int(i)] for i in args.cases.split(",")]
    print("G x tokens         N     K   B    | tf32 us  loop us  tf32/loop  TFLOP/s | bf16 us  bf16/tf32  err")
    rows_out = []
    for G, tokens, N, K, lay in cases:
        sizes = sizes_of(G, tokens)
        rows = sum(sizes)
        ends = np.cumsum(sizes).tolist()
        offs = torch.tensor(ends, dtype=torch.int32, device="cuda")
        ops = {}
        for dt in (torch.float32, torch.bfloat16):
            a = torch.randn(rows, K, device="cuda", dtype=dt)
            b = ((torch.randn(G, N, K, device="cuda", dtype=dt) / math.sqrt(K)).transpose(1, 2) if lay == "col"
                 else torch.randn(G, K, N, device="cuda", dtype=dt) / math.sqrt(K))
            ops[dt] = (a, b)
        a, b = ops[torch.float32]
        bounds = list(zip([0] + ends[:-1], ends))

        def loop(a=a, b=b):
            return torch.cat([a[s:e] @ b[g] for g, (s, e) in enumerate(bounds)])

        f_tf = lambda: cugemm.grouped_matmul(a, b, offs, allow_tf32=True)  # noqa: E731
        f_bf = lambda: cugemm.grouped_matmul(*ops[torch.bfloat16], offs)  # noqa: E731
        ref = torch.cat([a[s:e].double() @ b[g].double() for g, (s, e) in enumerate(bounds)])
        err = float((f_tf().double() - ref).norm() / ref.norm())
        ok = accuracy.within(err, "tfloat32", "float32")
        tl, tt = do_bench_pair(do_bench, loop, f_tf)
        tb, tt2 = do_bench_pair(do_bench, f_bf, f_tf)
        probe = {}
        if args.probe:  # every TF32 grouped form of this layout
            for name in grouped.forms("float32", lay, G):
                fv = lambda name=name: cugemm.grouped_matmul(a, b, offs, variant=name, allow_tf32=True)  # noqa: E731
                probe[name] = do_bench(fv, warmup=25, rep=100) * 1e3
        label = f"{G}x{tokens if isinstance(tokens, int) else 'uneven'}"
        print(f"{label:<14} {N:>5} {K:>5} {lay:<4} | {tt:>7.1f} {tl:>8.1f} {tl / tt * 100:>9.1f}% "
              f"{2.0 * rows * N * K / tt / 1e6:>7.0f} | {tb:>7.1f} {tb / tt2 * 100:>8.1f}%  {err:.1e}{'' if ok else ' WRONG'}")
        for name, us in sorted(probe.items(), key=lambda x: x[1]):
            print(f"    tf32 {name:<64} {us:>9.1f} us")
        rows_out.append(dict(G=G, tokens=tokens, N=N, K=K, b=lay, tf32_us=tt, loop_us=tl, bf16_us=tb, err=err,
                             plan=grouped.choose(rows, G, N, K, "float32", lay), probe_us=probe))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "tf32": rows_out}, f, indent=1, default=str)


if __name__ == "__main__":
    main()
