#!/usr/bin/env python3
"""Issue 27's FP8 bench: cugemm.scaled_matmul against torch._scaled_mm (cuBLASLt) in one process,
torch tensors, e4m3 operands, bf16 out.

    python3 scripts/fp8_bench.py [--shapes 4096x4096x4096,...] [--json PATH] [--rounds 3]

Per shape (B is the transposed view of an (N, K) weight, the layout torch._scaled_mm asks for):
TFLOP/s by triton.testing.do_bench (L2 flushed), median of `rounds` rounds that alternate the
contenders, for
  torch tensor / torch row      torch._scaled_mm, per-tensor and rowwise scales (use_fast_accum=False,
                                its default: promoted accumulation)
  torch tensor fast             torch._scaled_mm per-tensor with use_fast_accum=True
  cugemm tensor / row / block   cugemm.scaled_matmul (rung 3: partial sums promoted every 128 k),
                                block: 1 x 128 scales of A, 128 x 128 of B
  cugemm tensor fast / row fast rungs 1-2 (use_fast_accum=True: K summed in the tensor cores)
  torch bf16                    torch.matmul of the same values in bf16 (the anchor of the issue's table)
Ratios: cugemm / torch of the same mode and accumulation. Odd shapes (4095x4097x1023, 1000x7777x2049)
are timed beside their aligned neighbours (4096x4096x1024, 1000x7776x2048: multiples of 16) in
cugemm's per-tensor mode, with the operands as cugemm.quantize_fp8 makes them (rows padded to
128-byte multiples: read in place) and as dense rows of K bytes (copied with zero padding); torch refuses them. Accuracy (--accuracy, default on): relative Frobenius
error against the float64 product of the dequantised operands, cugemm and torch._scaled_mm on the same
inputs, bf16 and fp32 out, per mode, and DeepGEMM's difference 1 - 2 sum(xy) / sum(x^2 + y^2) of the
block mode's result against the bf16 product of the unquantised inputs. Inputs: normal values
quantised by cugemm.quantize_fp8 (never zeros). Nothing is asserted: exit status 0 whatever the
ratios.
"""
import argparse
import json

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 14336, 4096), (128, 7168, 16384)]
ODD = [((4095, 4097, 1023), (4096, 4096, 1024)), ((1000, 7777, 2049), (1000, 7776, 2048))]


def parse_shapes(text):
    return [tuple(int(x) for x in s.split("x")) for s in text.split(",") if s]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default="", help="MxNxK,... instead of the issue's shapes")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", default="")
    ap.add_argument("--no-accuracy", action="store_true")
    ap.add_argument("--no-odd", action="store_true")
    ap.add_argument("--contenders", default="", help="only these contenders (comma-separated labels)")
    ap.add_argument("--kernels", action="store_true", help="also print the kernels torch._scaled_mm runs (profiler)")
    args = ap.parse_args()

    import statistics

    import torch
    from triton.testing import do_bench

    import cugemm
    from cugemm import scaled

    dev = torch.device("cuda")
    torch.manual_seed(0)
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": [], "odd": [],
              "accuracy": []}
    bf = torch.bfloat16

    def operands(M, N, K):
        x = torch.randn(M, K, device=dev)
        w = torch.randn(N, K, device=dev)
        return x, w

    def contenders(M, N, K):
        x, w = operands(M, N, K)
        qa, sa = cugemm.quantize_fp8(x)            # per-tensor
        qw, sw = cugemm.quantize_fp8(w)
        _, sar = cugemm.quantize_fp8(x, "row")     # rowwise scales (same q up to scale: timing only)
        _, swr = cugemm.quantize_fp8(w, "row")
        qab, sab = cugemm.quantize_fp8(x, (1, 128))
        qwb, swb = cugemm.quantize_fp8(w, (128, 128))
        b, bb = qw.t(), qwb.t()
        sa1, sb1 = sa.reshape(1), sw.reshape(1)
        swr_t = swr.t()  # (1, N)
        xb, wbt = x.to(bf), w.to(bf).t()
        c = {
            "torch tensor": lambda: torch._scaled_mm(qa, b, sa1, sb1, out_dtype=bf),
            "cugemm tensor": lambda: cugemm.scaled_matmul(qa, b, sa, sw, check_scales=False),
            "torch row": lambda: torch._scaled_mm(qa, b, sar, swr_t, out_dtype=bf),
            "cugemm row": lambda: cugemm.scaled_matmul(qa, b, sar, swr_t, check_scales=False),
            "cugemm block": lambda: cugemm.scaled_matmul(qab, bb, sab, swb.t(), check_scales=False),
            "torch tensor fast": lambda: torch._scaled_mm(qa, b, sa1, sb1, out_dtype=bf, use_fast_accum=True),
            "cugemm tensor fast": lambda: cugemm.scaled_matmul(qa, b, sa, sw, use_fast_accum=True, check_scales=False),
            "torch row fast": lambda: torch._scaled_mm(qa, b, sar, swr_t, out_dtype=bf, use_fast_accum=True),
            "cugemm row fast": lambda: cugemm.scaled_matmul(qa, b, sar, swr_t, use_fast_accum=True,
                                                            check_scales=False),
            "torch bf16": lambda: torch.matmul(xb, wbt),
        }
        if args.contenders:
            keep = set(args.contenders.split(","))
            c = {k: f for k, f in c.items() if k in keep}
        return c

    def time_all(fns):
        out = {k: [] for k in fns}
        for _ in range(args.rounds):
            for k, f in fns.items():
                try:
                    out[k].append(do_bench(f, warmup=10, rep=60))
                except Exception as e:  # torch refuses some shapes
                    out[k].append(float("nan"))
                    print(f"  {k}: {type(e).__name__}: {str(e)[:100]}")
        return {k: statistics.median(v) for k, v in out.items()}

    shapes = parse_shapes(args.shapes) or SHAPES
    if args.kernels:  # what cuBLASLt runs for each mode, at the first shape
        from torch.profiler import ProfilerActivity, profile

        M, N, K = shapes[0]
        fns = contenders(M, N, K)
        for label in ("torch tensor", "torch row", "torch tensor fast"):
            fns[label]()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                fns[label]()
                torch.cuda.synchronize()
            names = sorted({e.name for e in prof.events() if e.device_type.name == "CUDA"})
            report.setdefault("torch_kernels", {})[label] = names
            print(f"{label} at {M}x{N}x{K}: {names}")
    for M, N, K in shapes:
        ms = time_all(contenders(M, N, K))
        tf = {k: 2 * M * N * K / v / 1e9 for k, v in ms.items()}
        row = {"M": M, "N": N, "K": K, "tflops": tf}
        for mode in ("tensor", "row", "tensor fast", "row fast"):
            if f"cugemm {mode}" in tf and f"torch {mode}" in tf:
                row[f"ratio {mode}"] = 100 * tf[f"cugemm {mode}"] / tf[f"torch {mode}"]
        if "cugemm block" in tf and "cugemm tensor" in tf:
            row["block / tensor"] = 100 * tf["cugemm block"] / tf["cugemm tensor"]
        sms = torch.cuda.get_device_properties(dev).multi_processor_count
        e4 = "float8_e4m3fn"
        row["cugemm variants"] = {m: scaled.choose(m, M, N, K, e4, e4, "bfloat16", sms, fast)
                                  for m, fast in (("tensor", False), ("row", False), ("block", False),
                                                  ("tensor", True))}
        report["rows"].append(row)
        print(f"{M}x{N}x{K}: " + " | ".join(f"{k} {v:.0f}" for k, v in tf.items()))
        print("   cugemm runs " + ", ".join(sorted(set(row["cugemm variants"].values()))))
        print("   " + " | ".join(f"{k} {v:.1f}%" for k, v in row.items() if k.startswith(("ratio", "block"))), flush=True)

    if not args.no_odd:
        def dense(q):  # an 8-bit array's values in dense rows (through its bytes)
            return q.view(torch.uint8).contiguous().view(q.dtype)

        for odd, near in ODD:
            res = {}
            for label, (M, N, K) in (("odd", odd), ("aligned", near)):
                x, w = operands(M, N, K)
                qa, sa = cugemm.quantize_fp8(x)
                qw, sw = cugemm.quantize_fp8(w)
                fns = {label: lambda: cugemm.scaled_matmul(qa, qw.t(), sa, sw, check_scales=False)}
                if label == "odd":  # the same values in dense rows of K bytes: copied with zero padding
                    da, dw = dense(qa), dense(qw)
                    fns["odd dense"] = lambda: cugemm.scaled_matmul(da, dw.t(), sa, sw, check_scales=False)
                for k, v in time_all(fns).items():
                    res[k] = 2 * M * N * K / v / 1e9
            ratio = 100 * res["odd"] / res["aligned"]
            report["odd"].append({"odd": odd, "aligned": near, "tflops": res, "ratio": ratio,
                                  "ratio_dense": 100 * res["odd dense"] / res["aligned"]})
            print(f"odd {'x'.join(map(str, odd))}: {res['odd']:.0f} TFLOP/s (quantize_fp8's padded rows), "
                  f"{res['odd dense']:.0f} (dense rows, copied); aligned {'x'.join(map(str, near))}: "
                  f"{res['aligned']:.0f} -> {ratio:.1f}% / {100 * res['odd dense'] / res['aligned']:.1f}%", flush=True)

    if not args.no_accuracy:
        from cugemm.quantize import to_float64

        for M, N, K in [(2048, 2048, 4096), (1024, 2048, 16384), (4095, 4097, 1023)]:
            x, w = operands(M, N, K)
            for mode, (ba, bw) in (("tensor", ("tensor", "tensor")), ("row", ("row", "row")),
                                   ("block", ((1, 128), (128, 128)))):
                qa, sa = cugemm.quantize_fp8(x, ba)
                qw, sw = cugemm.quantize_fp8(w, bw)
                A = to_float64(qa) * (sa.double() if mode != "block" else
                                      sa.double().repeat_interleave(128, 1)[:, :K])
                W = to_float64(qw) * (sw.double() if mode != "block" else
                                      sw.double().repeat_interleave(128, 0)[:N].repeat_interleave(128, 1)[:, :K])
                ref = A @ W.t()
                sb = sw.t() if mode != "tensor" else sw
                for out in (bf, torch.float32):
                    entry = {"M": M, "N": N, "K": K, "mode": mode, "out": str(out)}
                    c = cugemm.scaled_matmul(qa, qw.t(), sa, sb, out_dtype=out)
                    entry["cugemm"] = ((c.double() - ref).norm() / ref.norm()).item()
                    if mode != "block":
                        cf = cugemm.scaled_matmul(qa, qw.t(), sa, sb, out_dtype=out, use_fast_accum=True)
                        entry["cugemm fast"] = ((cf.double() - ref).norm() / ref.norm()).item()
                    try:
                        sa_t = sa.reshape(1) if mode == "tensor" else sa
                        if mode == "block":  # torch wants both scale grids outer-dim-major
                            sa_t, sb_t = sa.t().contiguous().t(), sb.t().contiguous().t()
                        else:
                            sb_t = sb.reshape(1) if mode == "tensor" else sb
                        t = torch._scaled_mm(qa, qw.t(), sa_t, sb_t, out_dtype=out)
                        entry["torch"] = ((t.double() - ref).norm() / ref.norm()).item()
                        if mode != "block":
                            tf_ = torch._scaled_mm(qa, qw.t(), sa_t, sb_t, out_dtype=out, use_fast_accum=True)
                            entry["torch fast"] = ((tf_.double() - ref).norm() / ref.norm()).item()
                    except Exception as e:
                        entry["torch"] = f"{type(e).__name__}: {str(e)[:80]}"
                    if mode == "block" and out == bf:
                        y = (x.to(bf) @ w.to(bf).t()).double()
                        cd = c.double()
                        entry["deepgemm_diff"] = (1 - 2 * (cd * y).sum() / (cd * cd + y * y).sum()).item()
                    report["accuracy"].append(entry)
                    print("accuracy " + ", ".join(f"{k} {v:.3e}" if isinstance(v, float) else f"{k} {v}"
                                                  for k, v in entry.items()), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
