#!/usr/bin/env python3
"""TF32 tensor-core instruction ceilings beside cupy.matmul TF32 and cugemm's TF32 variants.

Each probe kernel (scripts/tc_peak.cu) issues one MMA instruction form back to back from registers,
over every SM, at several resident-warp counts per SM; the best rate is the ceiling of any GEMM
built on that instruction (a GEMM also has to load its operands). In the same process it times
cupy.matmul with CUPY_TF32=1 and the named cugemm variants at one shape, so every ratio printed
comes from one run. The probes' results are checked (all-ones operands: exact sums).

    python scripts/tc_peak.py [--size 4096] [--iters 2048] [--variants NAME ...]
"""
import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from cugemm import jit, toolkit  # noqa: E402

SOURCE = ROOT / "scripts" / "tc_peak.cu"  # its project includes are inlined by cugemm.jit

# name expression -> (instruction, MMAs per loop trip, FLOPs per MMA, threads per issuing unit, k)
PROBES = {f"peak_wmma_tf32<{acc}>": ("wmma m16n16k8", acc, 2 * 16 * 16 * 8, 32, 8) for acc in (4, 8)}
PROBES.update({f"peak_mma_m16n8k8<{acc}>": ("mma.sync m16n8k8", acc, 2 * 16 * 8 * 8, 32, 8)
               for acc in (4, 8, 16)})
PROBES.update({f"peak_mma_m16n8k4<{acc}>": ("mma.sync m16n8k4", acc, 2 * 16 * 8 * 4, 32, 4)
               for acc in (8, 16)})
# sm_90a only: one warpgroup per block, GROUP wgmmas into one accumulator per commit
WGMMA_PROBES = {f"peak_wgmma_tf32<{g}>": ("wgmma m64n256k8 (RS)", g, 2 * 64 * 256 * 8, 128, 8)
                for g in (4, 8)}
WARPS_PER_SM = (4, 8, 16, 32, 64)

DEFAULT_VARIANTS = (
    "sgemm_wmma_m16n16k8_mma2x4_warp4x4x4_stage3_offset_dsmem",
    "sgemm_wmma_m16n16k8_mma2x4_warp4x4x4_stage3_offset_dsmem_trunc",
    "sgemm_mma_m16n8k8_mma2x4_warp4x8x4_stage3_offset_dsmem",
    "sgemm_mma_m16n8k8_mma2x4_warp4x8x4_stage3_offset_dsmem_trunc",
    "sgemm_wgmma_m64n256k8_rs_wg2_stage4",
    "sgemm_wgmma_m64n256k8_rs_wg2_stage4_trunc",
    "sgemm_wgmma_m64n256k8_rs_ws_stage4",
    "sgemm_wgmma_m64n256k8_rs_ws_stage4_trunc",
)


def source() -> str:
    return jit.inline_includes(SOURCE)


def run_probes(sms, iters):
    """One row per probe: TFLOP/s at each resident-warp count per SM, the best, and the check."""
    import cupy
    import numpy as np

    from cugemm.bench import Timer

    timer = Timer(warmup=2, iters=20)
    mods = [(jit.load_source(source(), list(PROBES), what="tc_peak"), PROBES)]
    if toolkit.device_cc() == 90:
        mods.append((jit.load_source(source(), list(WGMMA_PROBES), arch="sm_90a", what="tc_peak"),
                     WGMMA_PROBES))
    rows = []
    for funcs, probes in mods:
        for expr, (form, acc, flops, unit, k) in probes.items():
            fn = funcs[expr]
            threads = 128 if unit == 128 else 256
            # accumulator floats each thread writes out
            per_thread = 128 if unit == 128 else (acc * 8 if "wmma" in form else acc * 4)
            # every accumulator element is the sum of its chain of k-deep MMAs of ones
            chain = iters * k * (acc if unit == 128 else 1)
            rates, ok = [], True
            for warps in WARPS_PER_SM:
                per_sm = warps * 32 // threads
                if per_sm < 1 or (unit == 128 and per_sm > 4):  # wgmma: 158 registers x 128 threads
                    rates.append(None)
                    continue
                blocks = sms * per_sm
                out = cupy.full(blocks * threads * per_thread, np.nan, dtype=cupy.float32)
                ms = timer.median_ms(lambda: fn((blocks,), (threads,), (out, np.int32(iters))))
                ok = ok and bool(cupy.all(out == chain))
                instr = blocks * threads // unit * iters * acc
                rates.append(instr * flops / (ms * 1e-3) / 1e12)
            best = max(r for r in rates if r is not None)
            rows.append([form, expr] + [f"{r:.1f}" if r else "" for r in rates]
                        + [best, "ok" if ok else "WRONG"])
    return rows


def run_gemms(size, names):
    import cupy

    import cugemm
    from cugemm.bench import Timer

    timer = Timer(warmup=2, iters=20)
    operands = 3 * size * size * 4  # the bench's L2 rule: flushed only if A, B and C fit in L2
    a = cupy.random.standard_normal((size, size), dtype=cupy.float32)
    b = cupy.random.standard_normal((size, size), dtype=cupy.float32)
    flop = 2.0 * size ** 3
    out = cupy.empty((size, size), cupy.float32)
    def tflops(fn):
        return flop / (timer.median_ms(fn, operands) * 1e-3) / 1e12

    rows = [["cupy.matmul (CUPY_TF32=1)", tflops(lambda: cupy.matmul(a, b, out=out))]]
    for name in names:
        rows.append([name, tflops(lambda: cugemm.run(name, a, b, out=out))])
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--iters", type=int, default=2048)
    p.add_argument("--variants", nargs="*", default=list(DEFAULT_VARIANTS))
    args = p.parse_args()
    if os.environ.get("CUPY_TF32") != "1":  # CuPy reads it once, at import: run again with it set
        os.environ["CUPY_TF32"] = "1"
        os.execv(sys.executable, [sys.executable, __file__] + sys.argv[1:])
    import cupy
    from tabulate import tabulate

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    sms = props["multiProcessorCount"]
    print(f"device: {props['name'].decode()} ({sms} SMs), cc {toolkit.device_cc()}")
    probes = run_probes(sms, args.iters)
    gemms = run_gemms(args.size, args.variants)
    cublas = gemms[0][1]
    for r in probes:
        r[-2:] = [f"{r[-2]:.1f}", f"{100 * r[-2] / cublas:.1f}%", r[-1]]
    print("\nInstruction ceilings: TFLOP/s by resident warps per SM, the best, and the best as % of "
          f"cupy.matmul TF32 at {args.size}^3:")
    print(tabulate(probes, headers=["instruction", "probe"] + [f"{w} warps" for w in WARPS_PER_SM]
                   + ["best", "% cuBLAS", "check"]))
    print(f"\nGEMMs at {args.size}^3:")
    print(tabulate([[n, f"{t:.1f}", f"{100 * t / cublas:.1f}%"] for n, t in gemms],
                   headers=["GEMM", "TFLOP/s", "% cuBLAS"]))
    bad = [r[1] for r in probes if r[-1] != "ok"]
    if bad:
        print(f"tc_peak: wrong probe results: {bad}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
