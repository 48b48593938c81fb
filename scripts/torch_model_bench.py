"""Tokens/s of a GPT-2-small-like decoder with torch's nn.Linear vs cugemm (cugemm.torch_op.route_linears).

One model (12 layers, d_model 768, 12 heads, MLP 3072, vocab 50257, LayerNorm, tanh GELU, causal
scaled_dot_product_attention; every product with a weight is an nn.Linear) is built in bf16 and
deep-copied; the copy has its nn.Linear modules routed to cugemm (same weights). Measured:

Linears carry no bias unless --bias (GPT-2's own layers have them; the shapes are GPT-2 small's).

  prefill   forward of (batch, seq) tokens, eager under inference_mode, batch 1 and 8 at seq 1024
  decode    forward of (batch, 1) tokens (KV-less: one position, as the M <= 16 products of a decode
            step), captured in a CUDA graph for each model and replayed

Each row times the two models alternately with CUDA events (`--iters` calls a sample, `--reps`
samples each, medians) and reports tokens/s and cugemm's ratio; the logits of the two models are
compared (max abs and relative Frobenius difference; bf16 rounding makes ~1e-2 normal).

    python scripts/torch_model_bench.py                      # needs a CUDA GPU, torch and cugemm
    python scripts/torch_model_bench.py --json run.json --reps 20
"""
from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--d-model", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--mlp", type=int, default=3072)
    p.add_argument("--vocab", type=int, default=50257)
    p.add_argument("--seq", type=int, default=1024, help="prefill sequence length (default 1024)")
    p.add_argument("--prefill-batches", default="1,8", help="comma-separated batch sizes (default 1,8)")
    p.add_argument("--decode-batches", default="8,16", help="comma-separated batch sizes of 1-token passes")
    p.add_argument("--dtype", choices=["bf16", "fp16"], default="bf16")
    p.add_argument("--tied", action="store_true", help="tie the lm head to the token embedding")
    p.add_argument("--bias", action="store_true",
                   help="give the attention and MLP linears biases, as GPT-2 has (default: none, as LLaMA-style "
                        "models; stock nn.Linear fuses a bias into cuBLASLt's epilogue, cugemm adds it in a "
                        "second kernel until it has fused epilogues)")
    p.add_argument("--reps", type=int, default=10, help="samples per model and row (default 10)")
    p.add_argument("--iters", type=int, default=0, help="calls per sample (default: 3 prefill, 50 decode)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    return p.parse_args(argv)


def build(args, torch, device="cuda"):
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            d = args.d_model
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            bias = args.bias
            self.qkv, self.proj = nn.Linear(d, 3 * d, bias=bias), nn.Linear(d, d, bias=bias)
            self.fc, self.out = nn.Linear(d, args.mlp, bias=bias), nn.Linear(args.mlp, d, bias=bias)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = (t.view(B, T, args.heads, C // args.heads).transpose(1, 2)
                       for t in self.qkv(self.ln1(x)).split(C, dim=2))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
            return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(args.vocab, args.d_model)
            self.wpe = nn.Embedding(max(args.seq, 1), args.d_model)
            self.blocks = nn.ModuleList(Block() for _ in range(args.layers))
            self.ln_f = nn.LayerNorm(args.d_model)
            self.lm_head = nn.Linear(args.d_model, args.vocab, bias=False)
            if args.tied:
                self.lm_head.weight = self.wte.weight

        def forward(self, idx):
            x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
            for blk in self.blocks:
                x = blk(x)
            return self.lm_head(self.ln_f(x))

    torch.manual_seed(args.seed)
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    return GPT().to(device, dtype).eval()


def timed_pair(torch, fns, iters, reps):
    """Median ms per call of each of two callables, sampled alternately (iters calls a sample)."""
    samples = [[], []]
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    for r in range(reps):
        for i in ((0, 1) if r % 2 == 0 else (1, 0)):
            ev[0].record()
            for _ in range(iters):
                fns[i]()
            ev[1].record()
            ev[1].synchronize()
            samples[i].append(ev[0].elapsed_time(ev[1]) / iters)
    return [statistics.median(s) for s in samples]


def diff(torch, x, ref):
    x, ref = x.float(), ref.float()
    return {"max_abs": (x - ref).abs().max().item(),
            "rel_fro": ((x - ref).norm() / ref.norm()).item()}


def graphed(torch, model, idx):
    """(replay, static output) of model(idx) captured in a CUDA graph after an eager warm-up on a
    side stream (cugemm plans each problem on its first, eager, call)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s), torch.inference_mode():
        for _ in range(3):
            model(idx)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.inference_mode(), torch.cuda.graph(g):
        out = model(idx)
    return g.replay, out


def main(argv=None) -> int:
    args = parse_args(argv)
    import torch

    import cugemm.torch_op as top

    if not torch.cuda.is_available():
        print("torch_model_bench: no CUDA GPU", file=sys.stderr)
        return 2
    stock = build(args, torch)
    routed = copy.deepcopy(stock)
    n = top.route_linears(routed)
    models = (stock, routed)
    print(f"{torch.cuda.get_device_name()}  torch {torch.__version__}  {args.dtype}  "
          f"{sum(p.numel() for p in stock.parameters()) / 1e6:.1f}M parameters  {n} nn.Linear routed to cugemm, biases {'on' if args.bias else 'off'}")
    rows, logits = [], {}

    def record(kind, batch, seq, ms):
        tok = batch * seq
        row = {"pass": kind, "batch": batch, "seq": seq, "stock_ms": ms[0], "cugemm_ms": ms[1],
               "stock_tok_s": tok / ms[0] * 1e3, "cugemm_tok_s": tok / ms[1] * 1e3, "ratio": ms[0] / ms[1]}
        rows.append(row)
        print(f"{kind:8s} {batch:>5d} {seq:>5d} {row['stock_tok_s']:>14,.0f} {row['cugemm_tok_s']:>14,.0f} "
              f"{row['ratio']:>7.3f}", flush=True)

    print(f"{'pass':8s} {'batch':>5s} {'seq':>5s} {'stock tok/s':>14s} {'cugemm tok/s':>14s} {'ratio':>7s}")
    g = torch.Generator(device="cuda").manual_seed(args.seed)
    for batch in (int(b) for b in args.prefill_batches.split(",") if b):
        idx = torch.randint(0, args.vocab, (batch, args.seq), device="cuda", generator=g)
        with torch.inference_mode():
            outs = [m(idx) for m in models]       # warm-up: cugemm plans and loads each problem
            torch.cuda.synchronize()
            logits[f"prefill_b{batch}"] = diff(torch, outs[1], outs[0])
            del outs
            ms = timed_pair(torch, [lambda m=m: m(idx) for m in models], args.iters or 3, args.reps)
        record("prefill", batch, args.seq, ms)
    for batch in (int(b) for b in args.decode_batches.split(",") if b):
        idx = torch.randint(0, args.vocab, (batch, 1), device="cuda", generator=g)
        replays, outs = zip(*(graphed(torch, m, idx) for m in models))
        for r in replays:
            r()
        torch.cuda.synchronize()
        with torch.inference_mode():
            eager = routed(idx)
        torch.cuda.synchronize()
        logits[f"decode_b{batch}"] = diff(torch, outs[1], outs[0])
        logits[f"decode_b{batch}"]["graph_vs_eager_equal"] = bool(torch.equal(outs[1], eager))
        ms = timed_pair(torch, list(replays), args.iters or 50, args.reps)
        record("decode", batch, 1, ms)
    print("logits, cugemm vs stock:")
    for k, v in logits.items():
        extra = "" if "graph_vs_eager_equal" not in v else f"  graph == eager cugemm: {v['graph_vs_eager_equal']}"
        flag = "ok" if v["rel_fro"] < 1.5e-2 else "LARGE"
        print(f"  {k:12s} max abs {v['max_abs']:.4g}  rel {v['rel_fro']:.3g} ({flag}){extra}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "time": time.time(),
                       "args": vars(args), "routed": n, "rows": rows, "logits": logits}, f, indent=1)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
