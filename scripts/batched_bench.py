#!/usr/bin/env python3
"""Issue 26's batched bench: cugemm.matmul on attention-shaped batches against torch.bmm, and on
broadcast batches against torch.matmul, torch tensors, one process.

    python3 scripts/batched_bench.py [--dtypes f16,bf16[,tf32]] [--json PATH] [--rounds 5]

Shapes (BATCHED below; none of them is in a tuning set: the batched forms are ranked by their 2-D
twins' table): batch 8-256, M and N 64-4096, K 64-256, B row-major (p @ v-like) or a transposed
view (q @ k.transpose(-1, -2)). Operands: standard normal, B scaled by 1 / sqrt(K). cugemm's result
must match torch's (relative Frobenius error below the dtype's tolerance). Timings, as in
scripts/serving_bench.py: (a) back to back without a flush, medians of alternating blocks of calls
timed with CUDA events; (b) triton.testing.do_bench (L2 flushed between calls), median of 3
alternating rounds. ratio = torch us / cugemm us * 100. Acceptance per dtype: geometric mean >=
100% in (a) and (b) over BATCHED, no shape below 90%; BROADCAST at >= 100% of torch.matmul.
tf32: float32 operands with TF32 allowed on both sides (torch.backends.cuda.matmul.allow_tf32,
cugemm.matmul(..., allow_tf32=True)). Nothing is asserted: the exit status is 0 whatever the verdicts.
"""
import argparse
import json
import math

DTYPES = {"f16": "float16", "bf16": "bfloat16", "tf32": "float32"}
# (batch, M, N, K, B transposed view): attention-shaped batches
BATCHED = [
    (64, 512, 512, 64, False), (32, 1024, 1024, 128, False), (8, 4096, 4096, 128, False),
    (256, 128, 128, 64, False), (128, 256, 256, 128, True), (96, 1024, 1024, 64, True),
    (48, 2048, 2048, 128, True), (16, 4096, 4096, 64, True), (128, 1024, 128, 256, False),
    (64, 4096, 64, 256, False), (200, 576, 576, 96, True), (24, 3000, 3000, 80, True),
]
# (A's batch, B's batch, M, N, K): broadcast batches (one operand shared, or broadcast along a dim)
BROADCAST = [((1,), (64,), 1024, 512, 128), ((8, 16), (16,), 512, 512, 64), ((32,), (1,), 2048, 256, 96)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dtypes", default="f16,bf16")
    ap.add_argument("--rounds", type=int, default=5, help="alternating blocks per back-to-back timing")
    ap.add_argument("--json", default="", help="write the rows here")
    ap.add_argument("--probe", action="store_true",
                    help="also time every batched form on each bmm shape (variant=) and the 2-D product of the "
                         "stacked rows (torch.matmul, and cugemm.matmul in 128 x 128 tiles), do_bench only: "
                         "diagnosis, not the verdict")
    args = ap.parse_args()

    import torch

    import cugemm
    from cugemm import accuracy
    from serving_bench import back_to_back, do_bench_pair

    try:
        from triton.testing import do_bench
    except ImportError:
        do_bench = None
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    report = {"device": torch.cuda.get_device_name(), "rows": []}
    for key in args.dtypes.split(","):
        dt = getattr(torch, DTYPES[key])
        tf32 = key == "tf32"
        torch.backends.cuda.matmul.allow_tf32 = tf32
        math_dtype = "tfloat32" if tf32 else DTYPES[key]
        cases = [("bmm", (b,), (b,), M, N, K, tr) for b, M, N, K, tr in BATCHED]
        cases += [("broadcast", ba, bb, M, N, K, False) for ba, bb, M, N, K in BROADCAST]
        print(f"\n{key}: batch x (M x N x K)        B      torch us  cugemm us  ratio (a)   torch us  cugemm us  ratio (b)"
              "  TFLOP/s (b)  err")
        groups = {}
        for kind, ba, bb, M, N, K, tr in cases:
            a = torch.randn(*ba, M, K, device="cuda", dtype=dt)
            if tr:
                b = (torch.randn(*bb, N, K, device="cuda", dtype=dt) / math.sqrt(K)).transpose(-1, -2)
            else:
                b = torch.randn(*bb, K, N, device="cuda", dtype=dt) / math.sqrt(K)
            if kind == "bmm":
                f_torch = lambda a=a, b=b: torch.bmm(a, b)  # noqa: E731
            else:
                f_torch = lambda a=a, b=b: torch.matmul(a, b)  # noqa: E731
            f_cugemm = lambda a=a, b=b: cugemm.matmul(a, b, allow_tf32=tf32)  # noqa: E731
            ref, got = torch.matmul(a.double(), b.double()), f_cugemm()
            err = float((got.double() - ref).norm() / ref.norm())
            ok = accuracy.within(err, math_dtype, "float32")
            ta, ca, _ = back_to_back(f_torch, f_cugemm, args.rounds)
            tb, cb = do_bench_pair(do_bench, f_torch, f_cugemm) if do_bench else (math.nan, math.nan)
            count = math.prod(torch.broadcast_shapes(tuple(ba), tuple(bb)))
            flops = 2.0 * count * M * N * K
            row = dict(dtype=key, kind=kind, a_batch=list(ba), b_batch=list(bb), M=M, N=N, K=K, b_transposed=tr,
                       torch_a_us=ta, cugemm_a_us=ca, ratio_a=100 * ta / ca, torch_b_us=tb, cugemm_b_us=cb,
                       ratio_b=100 * tb / cb, tflops_b=flops / cb / 1e6, err=err, correct=ok,
                       plan=cugemm.explain(a, b, allow_tf32=tf32).plan.variant.name)
            if args.probe and kind == "bmm" and do_bench and not tf32:
                from cugemm import batched

                forms = batched.forms(cugemm.get_variant(row["plan"]).dt_in, "row", "col" if tr else "row")
                row["forms_us"] = {f: do_bench(lambda f=f: cugemm.matmul(a, b, variant=f), warmup=25, rep=100,
                                               return_mode="median") * 1e3 for f in forms}
                a2, b2 = a.reshape(-1, K), b[0]
                row["stacked_torch_us"] = do_bench(lambda: torch.matmul(a2, b2), warmup=25, rep=100,
                                                   return_mode="median") * 1e3
                twin = "hgemm_wgmma_m64n128k16_persistent_tma_store_stage6" + ("_bcol" if tr else "") + \
                    ("_bf16" if key == "bf16" else "")
                row["stacked_cugemm_us"] = do_bench(lambda: cugemm.matmul(a2, b2, variant=twin), warmup=25, rep=100,
                                                    return_mode="median") * 1e3
                print("    probe: " + ", ".join(f"{f.split('k16_persistent')[1][:-8]} {t:.1f}"
                                                for f, t in row["forms_us"].items())
                      + f"; stacked 2-D: torch {row['stacked_torch_us']:.1f}, cugemm 128x128 {row['stacked_cugemm_us']:.1f}")
            report["rows"].append(row)
            groups.setdefault(kind, []).append(row)
            shape = f"{'x'.join(map(str, ba))}|{'x'.join(map(str, bb))} x ({M}x{N}x{K})"
            print(f"  {shape:30s} {'k.T' if tr else 'row':5s} {ta:9.1f} {ca:10.1f} {row['ratio_a']:9.1f}%"
                  f" {tb:10.1f} {cb:10.1f} {row['ratio_b']:9.1f}% {row['tflops_b']:11.1f}  {err:.1e}"
                  f"{'' if ok else '  WRONG'}")
        for kind, rows in groups.items():
            for part in ("a", "b"):
                r = [x[f"ratio_{part}"] for x in rows]
                gm = math.exp(sum(math.log(x) for x in r) / len(r))
                floor = 90 if kind == "bmm" else 100
                ok = gm >= 100 and min(r) >= floor and all(x["correct"] for x in rows)
                print(f"{key} {kind} ({part}): geomean {gm:.1f}%, min {min(r):.1f}%, "
                      f"{sum(not x['correct'] for x in rows)} wrong of {len(rows)}: {'PASS' if ok else 'FAIL'}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
