#!/usr/bin/env python3
"""SM clock and board power while a product runs back to back: is a fused epilogue's cost its
instructions or the clock they pull down?

    PYTHONPATH=$PWD python3 scripts/power_probe.py [--shapes MxNxK,...] [--dtype bf16] [--seconds 1.5]
                                                   [--bases NAME,...] [--specs ACT:BIAS,...]

Per shape (x @ W.T, torch operands, x = randn(M, K), w = randn(N, K) / sqrt(K), b = 0.1 randn(N)),
each contender runs back to back for --seconds (no L2 flush: the steady state a model's layer sees),
timed by two CUDA events around the loop, while a thread samples the SM clock, the board power and
the clock-limit reasons through NVML (pynvml; the samples of the loop's first 0.3 s are dropped), and the
board energy a call comes from NVML's total-energy counter read around the loop (without pynvml: times only). Contenders: torch x @ w.T, torch._addmm_activation,
cugemm.matmul, cugemm.linear (bias; bias + GELU), and each --bases form with each --specs composition
run through cugemm.epilogue.execute with that base named (CuPy views of the same tensors; ':col'
is the bias alone, 'none:none' the plain product through the same path). The contenders alternate
in --rounds rounds (--only: the contenders whose name matches); a line per (round, contender): us a
call, median MHz, median W, the reasons seen, mJ a call.
--once: each cugemm contender runs twice, untimed, no sampler (for Nsight Compute). Nothing is asserted.
"""
import argparse
import re
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


class Sampler:
    """NVML samples (t, sm MHz, W, reasons) every ~10 ms on a daemon thread, and NVML's total-energy counter
    (mJ since the driver loaded). Without pynvml there are neither: the times alone."""

    def __init__(self):
        self.samples, self.energy, self._read, self.how = [], None, None, "none (no pynvml: times only)"
        try:
            import pynvml

            pynvml.nvmlInit()
            h = pynvml.nvmlDeviceGetHandleByIndex(0)
        except Exception:  # noqa: BLE001 - no NVML: time only
            return

        def read():
            return (pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
                    pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0,
                    pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(h))
        self._read, self.how = read, "pynvml"
        try:
            pynvml.nvmlDeviceGetTotalEnergyConsumption(h)
            self.energy = lambda: pynvml.nvmlDeviceGetTotalEnergyConsumption(h)
        except Exception:  # noqa: BLE001 - a GPU without the counter: no energy column
            pass

    def start(self):
        if self._read is None:
            return

        def loop():
            while True:
                self.samples.append((time.monotonic(), *self._read()))
                time.sleep(0.01)
        threading.Thread(target=loop, daemon=True).start()

    def window(self, t0, t1):
        s = [x for x in self.samples if t0 <= x[0] <= t1]
        if not s:
            return float("nan"), float("nan"), 0, 0
        why = 0
        for x in s:
            why |= int(x[3])
        return statistics.median(x[1] for x in s), statistics.median(x[2] for x in s), why, len(s)


REASONS = {0x1: "idle", 0x2: "app", 0x4: "swpower", 0x8: "hwslow", 0x20: "swthermal", 0x40: "hwthermal",
           0x80: "hwpower", 0x100: "display"}


def reasons(bits):
    return "+".join(v for k, v in REASONS.items() if bits & k) or "-"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default="8192x14336x4096,12288x4096x1024,16384x3072x768")
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--seconds", type=float, default=1.5)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--bases", default="")
    p.add_argument("--specs", default="none:none,:col,gelu:col")
    p.add_argument("--only", default="", help="a regular expression: the contenders whose name it finds")
    p.add_argument("--once", action="store_true", help="run each cugemm contender twice, untimed (for ncu)")
    args = p.parse_args()
    import cupy
    import torch

    import cugemm
    from cugemm import device, epilogue, launch, operand, registry, serve

    sampler = Sampler()
    if not args.once:
        sampler.start()
    tdt = {"bf16": torch.bfloat16, "fp16": torch.float16}[args.dtype]
    lib = serve.library("cupy")
    print(f"{torch.cuda.get_device_name()}  sampler: {sampler.how}", flush=True)
    for shape in args.shapes.split(","):
        M, N, K = (int(x) for x in shape.split("x"))
        g = torch.Generator(device="cuda").manual_seed(0)
        x = torch.randn(M, K, device="cuda", dtype=tdt, generator=g)
        w = (torch.randn(N, K, device="cuda", generator=g) / K ** 0.5).to(tdt)
        b = (0.1 * torch.randn(N, device="cuda", generator=g)).to(tdt)
        wt = w.t()
        calls = {
            "torch x@w.T": lambda: x @ wt,
            "torch addmm_act": lambda: torch._addmm_activation(b, x, wt, use_gelu=True),
            "cugemm.matmul": lambda: cugemm.matmul(x, wt),
            "cugemm.linear bias": lambda: cugemm.linear(x, w, b),
            "cugemm.linear gelu": lambda: cugemm.linear(x, w, b, activation="gelu"),
        }
        ca, cb, cbias = cupy.from_dlpack(x), cupy.from_dlpack(w).T, cupy.from_dlpack(b)
        A, B = operand.describe(ca, "A", "probe"), operand.describe(cb, "B", "probe")
        for base in filter(None, args.bases.split(",")):
            for text in args.specs.split(","):
                act, bias_kind = text.split(":")
                if act == "none":
                    spec = None
                else:
                    spec = epilogue.Spec(act or None, bias_kind)
                out = cupy.empty((M, N), ca.dtype)
                O = operand.describe(out, "out", "probe")
                if spec is None:
                    v = registry.get_variant(base)

                    def run(v=v, out=out, O=O):
                        launch.launch(v, ca, cb, out, A, B, O, M, N, K, device.current())
                else:
                    def run(base=base, spec=spec, out=out, O=O):
                        r = epilogue.execute(lib, A, B, O, ca, cb, out, spec, cbias, base=base)
                        assert r is not None and r.plan.variant.name.startswith(base), base
                calls[f"{base} {text}"] = run
        if args.only:
            calls = {k: f for k, f in calls.items() if re.search(args.only, k)}
        if args.once:
            for name, f in calls.items():
                if not name.startswith("torch"):
                    f()
                    f()
            torch.cuda.synchronize()
            print(f"{M}x{N}x{K}: {', '.join(n for n in calls if not n.startswith('torch'))}", flush=True)
            continue
        for f in calls.values():
            for _ in range(5):
                f()
        torch.cuda.synchronize()
        print(f"== {args.dtype} {M}x{N}x{K}", flush=True)
        for rnd in range(args.rounds):
            for name, f in calls.items():
                t = time.monotonic()
                n0 = 0
                while time.monotonic() - t < 0.1:  # size the loop
                    f()
                    n0 += 1
                torch.cuda.synchronize()
                dt0 = (time.monotonic() - t) / n0
                n = max(20, int(args.seconds / dt0))
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                t0 = time.monotonic()
                j0 = sampler.energy() if sampler.energy else None
                e0.record()
                for _ in range(n):
                    f()
                e1.record()
                e1.synchronize()
                t1 = time.monotonic()
                us = e0.elapsed_time(e1) * 1e3 / n
                # board energy a call (mJ; the loop's host-side tail and the counter's granularity included)
                mj = (sampler.energy() - j0) / n if j0 is not None else float("nan")
                mhz, watts, why, ns = sampler.window(t0 + 0.3, t1)
                print(f"  r{rnd} {name:<96} {us:9.2f} us  {mhz:6.0f} MHz  {watts:6.1f} W  {reasons(why):<20} "
                      f"{mj:7.3f} mJ  ({n} calls, {ns} samples)", flush=True)
                time.sleep(0.2)


if __name__ == "__main__":
    main()
