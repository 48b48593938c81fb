#!/usr/bin/env python3
"""Training through cugemm.linear: a two-layer MLP trained twice, once with torch.nn.Linear + F.gelu
and once with cugemm.linear (the GELU fused into the first layer's epilogue), from the same initial
weights on the same data; the two loss curves must agree.

    PYTHONPATH=$PWD python3 scripts/mlp_train.py [--steps 100] [--json PATH]

Model: d_in 1024 -> hidden 4096 -> d_out 1024, bias on both layers, GELU (erf form) between, bf16
parameters and activations on CUDA (no fp32 master weights), AdamW(lr 1e-3, torch's other defaults).
torch.manual_seed(0) before the torch model is built (nn.Linear's default init); the cugemm model's
parameters w1, b1, w2, b2 are copies of it. Its forward:
    h = cugemm.linear(x, w1, b1, activation="gelu");  y = cugemm.linear(h, w2, b2)
(autograd through torch.ops.cugemm.linear: the backward is cugemm's too).
Data: a fixed random linear teacher T (1024 x 1024, N(0, 1/1024) entries, drawn after the model):
per step a fresh batch x of 256 x 1024 standard normals from a torch.Generator seeded with --data-seed
(re-seeded for each run, so both see the same batches), target y = x @ T (fp32, then bf16).
Loss: MSE in fp32 of the bf16 output. Both runs also report their first step's gradients, compared
parameter by parameter (relative Frobenius error, informational).
PASS when |loss_torch - loss_cugemm| / loss_torch <= 5e-2 at every step, and each run's loss at the
last step is at most half its loss at step 0. Exit status 0 on PASS, 1 on FAIL (also when a run
raises). --json (default results/judge/mlp_train.json) gets both loss curves, the per-step relative
differences, the gradient check and the verdict.
"""
import argparse
import json
import os
import sys
import time

D_IN, HIDDEN, D_OUT, BATCH = 1024, 4096, 1024, 256
REL_TOL = 5e-2       # per-step |loss_torch - loss_cugemm| / loss_torch
MIN_DECREASE = 2.0   # loss[0] / loss[-1] for each run


def build(torch, dev, dt):
    """The torch model (seeded init), the cugemm model with copies of its weights, and the teacher."""
    import cugemm
    import torch.nn.functional as F
    from torch import nn

    torch.manual_seed(0)

    class TorchMLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(D_IN, HIDDEN)
            self.fc2 = nn.Linear(HIDDEN, D_OUT)

        def forward(self, x):
            return self.fc2(F.gelu(self.fc1(x)))

    class CugemmMLP(nn.Module):
        """The same parameters as TorchMLP's, in F.linear's layout (w: out x in)."""

        def __init__(self, src):
            super().__init__()
            self.w1 = nn.Parameter(src.fc1.weight.detach().clone())
            self.b1 = nn.Parameter(src.fc1.bias.detach().clone())
            self.w2 = nn.Parameter(src.fc2.weight.detach().clone())
            self.b2 = nn.Parameter(src.fc2.bias.detach().clone())

        def forward(self, x):
            h = cugemm.linear(x, self.w1, self.b1, activation="gelu")
            return cugemm.linear(h, self.w2, self.b2)

    ref = TorchMLP().to(device=dev, dtype=dt)
    mine = CugemmMLP(ref)
    teacher = torch.randn(D_IN, D_OUT, device=dev) / D_IN ** 0.5  # fp32, fixed
    return ref, mine, teacher


def train(torch, model, params, teacher, args, dev, dt):
    """AdamW over `steps` fresh batches; returns (losses, step-0 gradients, seconds)."""
    import torch.nn.functional as F

    opt = torch.optim.AdamW(params, lr=args.lr)
    gen = torch.Generator(device=dev)
    gen.manual_seed(args.data_seed)  # the same batches for both runs
    losses, grads0 = [], None
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for step in range(args.steps):
        x32 = torch.randn(BATCH, D_IN, device=dev, generator=gen)
        x, y = x32.to(dt), (x32 @ teacher).to(dt)
        out = model(x)
        loss = F.mse_loss(out.float(), y.float())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if step == 0:
            grads0 = [p.grad.detach().clone() if p.grad is not None else None for p in params]
        opt.step()
        losses.append(loss.item())
    torch.cuda.synchronize()
    return losses, grads0, time.perf_counter() - t0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=100, help="training steps per run (default 100)")
    p.add_argument("--lr", type=float, default=1e-3, help="AdamW learning rate (default 1e-3)")
    p.add_argument("--data-seed", type=int, default=1, help="seed of the batch generator (default 1)")
    p.add_argument("--json", metavar="PATH", default="results/judge/mlp_train.json",
                   help="write both curves here (default results/judge/mlp_train.json; '' for none)")
    args = p.parse_args()

    # the GPU libraries only now: --help and a syntax check need none of them
    import torch

    import cugemm

    dev, dt = torch.device("cuda"), torch.bfloat16
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "cugemm": getattr(cugemm, "__version__", None), "args": dict(vars(args)),
              "model": {"d_in": D_IN, "hidden": HIDDEN, "d_out": D_OUT, "batch": BATCH, "dtype": "bfloat16",
                        "activation": "gelu (erf)", "optimizer": "AdamW"},
              "rel_tol": REL_TOL, "min_decrease": MIN_DECREASE, "pass": False}
    print(f"{report['device']}: torch {report['torch']}, cugemm {report['cugemm']}")
    ok = False
    try:
        ref, mine, teacher = build(torch, dev, dt)
        ref_params = [ref.fc1.weight, ref.fc1.bias, ref.fc2.weight, ref.fc2.bias]
        my_params = [mine.w1, mine.b1, mine.w2, mine.b2]
        names = ["w1", "b1", "w2", "b2"]

        # one forward on a probe batch before training: the two models must already agree
        with torch.no_grad():
            probe = torch.randn(BATCH, D_IN, device=dev, generator=torch.Generator(device=dev).manual_seed(123)).to(dt)
            a, b = ref(probe).float(), mine(probe).float()
            report["forward_max_rel"] = ((a - b).abs().max() / a.abs().max()).item()
        print(f"forward check (max |diff| / max |torch|): {report['forward_max_rel']:.3e}")

        lt, gt, st = train(torch, ref, ref_params, teacher, args, dev, dt)
        print(f"torch  run: loss {lt[0]:.5f} -> {lt[-1]:.5f} in {st:.2f} s")
        lc, gc, sc = train(torch, mine, my_params, teacher, args, dev, dt)
        print(f"cugemm run: loss {lc[0]:.5f} -> {lc[-1]:.5f} in {sc:.2f} s (includes cugemm's first-call compiles)")

        rel = [abs(a - b) / a for a, b in zip(lt, lc)]
        worst = max(range(len(rel)), key=rel.__getitem__)
        grad_err = {}
        for n, g1, g2 in zip(names, gt, gc):
            grad_err[n] = (None if g1 is None or g2 is None else
                           ((g2.float() - g1.float()).norm() / g1.float().norm()).item())
        dec_t, dec_c = lt[0] / lt[-1], lc[0] / lc[-1]
        close = rel[worst] <= REL_TOL
        ok = close and dec_t >= MIN_DECREASE and dec_c >= MIN_DECREASE
        report.update({"loss_torch": lt, "loss_cugemm": lc, "rel_diff": rel, "max_rel_diff": rel[worst],
                       "max_rel_diff_step": worst, "final_loss_torch": lt[-1], "final_loss_cugemm": lc[-1],
                       "decrease_torch": dec_t, "decrease_cugemm": dec_c, "step0_grad_rel_err": grad_err,
                       "seconds_torch": st, "seconds_cugemm": sc, "pass": ok})

        print(f"\n{'step':>5s} {'torch':>10s} {'cugemm':>10s} {'rel diff':>9s}")
        for i in sorted(set(range(0, len(lt), 10)) | {len(lt) - 1, worst}):
            print(f"{i:5d} {lt[i]:10.5f} {lc[i]:10.5f} {rel[i]:9.2e}{'  <- max' if i == worst else ''}")
        print("step-0 gradients, relative Frobenius error cugemm vs torch: "
              + ", ".join(f"{n} {'missing' if e is None else f'{e:.2e}'}" for n, e in grad_err.items()))
        print(f"max relative loss difference {rel[worst]:.3e} at step {worst} (tolerance {REL_TOL}): "
              f"{'ok' if close else 'too large'}")
        print(f"loss decrease step 0 -> {len(lt) - 1}: torch {dec_t:.2f}x, cugemm {dec_c:.2f}x "
              f"(need >= {MIN_DECREASE}x each)")
        print(f"final loss: torch {lt[-1]:.5f}, cugemm {lc[-1]:.5f}")
    except Exception as exc:  # noqa: BLE001 - a crash is a FAIL with its message in the JSON
        import traceback

        traceback.print_exc()
        report["error"] = f"{type(exc).__name__}: {exc}"
        print(f"error: {report['error']}")
        ok = False
    finally:
        if args.json:
            os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
            with open(args.json, "w") as f:
                json.dump(report, f, indent=1)
            print(f"wrote {args.json}")
    print("PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
