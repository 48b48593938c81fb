#!/usr/bin/env python3
"""What a K split costs: the split-K rung (hgemm_wgmma_*_splitk_*) at forced split counts beside
torch.matmul (cuBLAS), x @ W.T on torch tensors, triton.testing.do_bench (L2 flushed, median).

    python3 scripts/splitk_probe.py [--shapes 1024x768x3072,1024x1024x1024] [--splits 1,2,3,4] [--dtype f16]

For each shape and split count S, cugemm.splitk.plan is made to return S for the tail tiles (every
tile when they are fewer than the SMs) and each split-K variant runs through cugemm.matmul(variant=);
the result is checked against torch.matmul. The times against S = 1 are the split's fixed cost
(partial stores, counters, the last slice's reduction) beside what it saves in waves.
Nothing is asserted.
"""
import argparse
import statistics


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default="1024x768x3072,1024x1024x1024")
    p.add_argument("--splits", default="1,2,3,4")
    p.add_argument("--dtype", default="f16", choices=("f16", "bf16"))
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args(argv)

    import torch
    from triton.testing import do_bench

    import cugemm
    from cugemm import device, serve, splitk
    from cugemm.ints import cdiv
    from cugemm.registry import get_variant, variants

    dt = torch.float16 if args.dtype == "f16" else torch.bfloat16
    names = [v.name for v in variants() if v.template == "hgemm_wgmma_splitk" and v.b_layout == "col"
             and v.dtype_in == str(dt).split(".")[1]]
    real_plan = splitk.plan
    for shape in args.shapes.split(","):
        M, N, K = map(int, shape.split("x"))
        x = torch.randn(M, K, device="cuda", dtype=dt)
        w = torch.randn(N, K, device="cuda", dtype=dt) / K ** 0.5
        ref = torch.matmul(x, w.T).float()
        rows = [("torch.matmul", statistics.median(
            do_bench(lambda: torch.matmul(x, w.T), warmup=25, rep=100, return_mode="median") * 1e3
            for _ in range(args.rounds)))]
        for name in names:
            for S in map(int, args.splits.split(",")):
                def forced(M_, N_, K_, bn, sms, S=S):
                    T = cdiv(M_, splitk.BM) * cdiv(N_, bn)
                    dp = T // sms * sms if T >= sms else 0
                    s = max(1, min(S, cdiv(K_, splitk.BK) // splitk.MIN_KT_PER_SLICE, sms // max(1, T - dp)))
                    dp = T if s == 1 else dp
                    return dp, s, max(1, min(dp + (T - dp) * s, sms))
                splitk.plan = forced
                splitk._PLANS.clear()
                serve.reload_tuning()
                try:
                    got = cugemm.matmul(x, w.T, variant=name).float()
                    err = float((got - ref).norm() / ref.norm())
                    t = statistics.median(do_bench(lambda: cugemm.matmul(x, w.T, variant=name), warmup=25, rep=100,
                                                   return_mode="median") * 1e3 for _ in range(args.rounds))
                    used = forced(M, N, K, get_variant(name).tile[1], device.get().sms)[1]
                    rows.append((f"{name} S={used}{' WRONG' if err > 1e-2 else ''}", t))
                finally:
                    splitk.plan = real_plan
                    splitk._PLANS.clear()
                    serve.reload_tuning()
        base = rows[0][1]
        print(f"{args.dtype} {shape}: do_bench, median of {args.rounds} rounds, us")
        for label, t in rows:
            print(f"   {label:70s} {t:8.2f}  {100 * base / t:6.1f}% of torch")


if __name__ == "__main__":
    main()
