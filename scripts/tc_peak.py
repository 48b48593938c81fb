#!/usr/bin/env python3
"""Tensor-core instruction ceilings beside cupy.matmul and cugemm's variants, for TF32 and fp16.

Each probe kernel (scripts/tc_peak.cu) issues one MMA instruction form back to back from registers,
over every SM, at several resident-warp counts per SM; the best rate is the ceiling of any GEMM
built on that instruction (a GEMM also has to load its operands). In the same process it times
cupy.matmul (CUPY_TF32=1 for TF32; fp16 in, fp16 out for f16) and the named cugemm variants at one
shape, so every ratio printed comes from one run. The probes' results are checked (all-ones
operands: exact sums).

    python scripts/tc_peak.py [--dtype tf32|f16|all] [--size 4096] [--iters 2048] [--variants NAME ...]

--dtype tf32 (the default): the TF32 probes (wmma, mma.sync m16n8k8 / m16n8k4, wgmma) beside
cupy.matmul TF32 and the TF32 variants. --dtype f16: mma.sync m16n8k16 with fp32 accumulation (the
hgemm_mma family's instruction), with fp16 accumulation (_f16acc), bf16, and the ldmatrix-fed warp
tile loops, beside cupy.matmul fp16 and the fp16 variants. --dtype all: both tables.
A cell is empty where the probe's registers (or shared memory) cannot keep that many warps resident.
"""
import argparse
import os
import sys
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from cugemm import jit, toolkit  # noqa: E402

SOURCE = ROOT / "scripts" / "tc_peak.cu"  # its project includes are inlined by cugemm.jit


class Probe(NamedTuple):
    form: str        # the instruction, as printed
    mmas: int        # MMA instructions per loop trip per issuing unit (warp, or warpgroup)
    flops: int       # FLOPs per MMA instruction
    unit: int        # threads per issuing unit: 32 (a warp) or 128 (a warpgroup)
    k: int           # k depth added to every accumulator element per loop trip
    threads: int     # threads per block
    out: int         # floats each thread writes
    sat: float = float("inf")  # where an accumulator stops growing (fp16: 2^15)


def _tf32(form, acc, k, out):
    return Probe(form, acc, 2 * 16 * 8 * k * (2 if "m16n16" in form else 1), 32, k, 256, out)


# TF32 (--dtype tf32): name expression -> probe
PROBES = {f"peak_wmma_tf32<{acc}>": _tf32("wmma m16n16k8", acc, 8, acc * 8) for acc in (4, 8)}
PROBES.update({f"peak_mma_m16n8k8<{acc}>": _tf32("mma.sync m16n8k8", acc, 8, acc * 4) for acc in (4, 8, 16)})
PROBES.update({f"peak_mma_m16n8k4<{acc}>": _tf32("mma.sync m16n8k4", acc, 4, acc * 4) for acc in (8, 16)})
# sm_90a only: one warpgroup per block, GROUP wgmmas into one accumulator per commit
WGMMA_PROBES = {f"peak_wgmma_tf32<{g}>": Probe("wgmma m64n256k8 (RS)", g, 2 * 64 * 256 * 8, 128, 8 * g, 128, 128)
                for g in (4, 8)}

# fp16 / bf16 (--dtype f16): blocks of 128 threads, so resident warps step by 4
_M16N8K16 = 2 * 16 * 8 * 16
F16_PROBES = {f"peak_mma_f16<{acc}>": Probe("mma.sync m16n8k16 f32 acc", acc, _M16N8K16, 32, 16, 128, acc * 4)
              for acc in (4, 8, 16)}
F16_PROBES.update({f"peak_mma_f16acc<{acc}>": Probe("mma.sync m16n8k16 f16 acc", acc, _M16N8K16, 32, 16, 128,
                                                    acc * 4, sat=2.0 ** 15) for acc in (8, 16)})
F16_PROBES["peak_mma_bf16<8>"] = Probe("mma.sync m16n8k16 bf16, f32 acc", 8, _M16N8K16, 32, 16, 128, 32)
# ldmatrix-fed warp tiles: two k steps of FRAGS_M x FRAGS_N MMAs per trip
F16_PROBES.update({f"peak_mma_ldsm<{fm}, {fn}>": Probe(f"m16n8k16 + ldmatrix, warp {16 * fm}x{8 * fn}",
                                                       2 * fm * fn, _M16N8K16, 32, 32, 128, fm * fn * 4)
                   for fm, fn in ((4, 8), (4, 4), (2, 8))})

WARPS_PER_SM = (4, 8, 16, 32, 64)
F16_WARPS_PER_SM = (4, 8, 12, 16, 32, 64)

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
# the mma.sync HGEMM family's fastest rungs (fp32 accumulation) and the fp16-accumulating one
DEFAULT_F16_VARIANTS = (
    "hgemm_mma_fast",
    "hgemm_mma_m16n8k16_mma2x4_warp4x8x4_stage3_swizzle_bswizzle_rbuf_epi",
    "hgemm_mma_m16n8k16_mma2x4_warp4x8x4_stage3_swizzle_bswizzle_rbuf_epi_f16acc",
)


def source() -> str:
    return jit.inline_includes(SOURCE)


def resident_blocks(fn, threads) -> int:
    """Blocks of `threads` one SM can hold with fn's registers and static shared memory (65536
    registers allocated per warp in multiples of 256, 2048 threads, 32 blocks, 227 KB)."""
    regs = -(-max(fn.num_regs, 1) * 32 // 256) * 256  # per warp
    by_regs = (65536 // regs) // (threads // 32)
    by_smem = (227 * 1024) // fn.shared_size_bytes if fn.shared_size_bytes else 32
    return min(by_regs, by_smem, 2048 // threads, 32)


def run_probes(sms, iters, probes_by_arch, warps_list, scale_iters=False):
    """One row per probe: TFLOP/s at each resident-warp count per SM, the best, and the check.

    scale_iters: a warp runs iters * 64 / warps loop trips (the same work per launch at every warp
    count, so a launch at 4 warps per SM still takes about a millisecond)."""
    import cupy
    import numpy as np

    from cugemm.bench import Timer

    timer = Timer(warmup=2, iters=20)
    rows = []
    for arch, probes in probes_by_arch:
        funcs = jit.load_source(source(), list(probes), arch=arch, what="tc_peak")
        for expr, pr in probes.items():
            fn = funcs[expr]
            fit = resident_blocks(fn, pr.threads)
            rates, ok = [], True
            for warps in warps_list:
                per_sm = warps * 32 // pr.threads
                if per_sm < 1 or per_sm > fit or (pr.unit == 128 and per_sm > 4):
                    rates.append(None)
                    continue
                trips = iters * 64 // warps if scale_iters else iters
                blocks = sms * per_sm
                out = cupy.full(blocks * pr.threads * pr.out, np.nan, dtype=cupy.float32)
                ms = timer.median_ms(lambda: fn((blocks,), (pr.threads,), (out, np.int32(trips))))
                # every accumulator element is the sum of its chain of MMAs of ones
                ok = ok and bool(cupy.all(out == min(trips * pr.k, pr.sat)))
                instr = blocks * pr.threads // pr.unit * trips * pr.mmas
                rates.append(instr * pr.flops / (ms * 1e-3) / 1e12)
            best = max((r for r in rates if r is not None), default=0.0)
            rows.append([pr.form, expr] + [f"{r:.1f}" if r else "" for r in rates]
                        + [best, "ok" if ok else "WRONG"])
    return rows


def run_gemms(size, names, dtype):
    import cupy

    import cugemm
    from cugemm.bench import Timer

    timer = Timer(warmup=2, iters=20)
    dt = cupy.float32 if dtype == "tf32" else cupy.float16
    a = cupy.random.standard_normal((size, size), dtype=cupy.float32).astype(dt)
    b = cupy.random.standard_normal((size, size), dtype=cupy.float32).astype(dt)
    flop = 2.0 * size ** 3
    out = cupy.empty((size, size), dt)

    def tflops(fn):
        return flop / (timer.median_ms(fn) * 1e-3) / 1e12

    label = "cupy.matmul (CUPY_TF32=1)" if dtype == "tf32" else "cupy.matmul fp16"
    rows = [[label, tflops(lambda: cupy.matmul(a, b, out=out))]]
    for name in names:
        rows.append([name, tflops(lambda: cugemm.run(name, a, b, out=out))])
    return rows


def report(title, probes, gemms, warps_list, size):
    from tabulate import tabulate

    cublas = gemms[0][1]
    for r in probes:
        r[-2:] = [f"{r[-2]:.1f}", f"{100 * r[-2] / cublas:.1f}%", r[-1]]
    print(f"\n{title} instruction ceilings: TFLOP/s by resident warps per SM, the best, and the best as % "
          f"of {gemms[0][0]} at {size}^3 ({cublas:.1f} TFLOP/s):")
    print(tabulate(probes, headers=["instruction", "probe"] + [f"{w} warps" for w in warps_list]
                   + ["best", "% cuBLAS", "check"]))
    print(f"\n{title} GEMMs at {size}^3:")
    print(tabulate([[n, f"{t:.1f}", f"{100 * t / cublas:.1f}%"] for n, t in gemms],
                   headers=["GEMM", "TFLOP/s", "% cuBLAS"]))
    return [r[1] for r in probes if r[-1] != "ok"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dtype", choices=("tf32", "f16", "all"), default="tf32")
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--iters", type=int, default=2048,
                   help="loop trips per warp (f16: at 64 warps per SM; fewer warps run proportionally more)")
    p.add_argument("--variants", nargs="*", default=None,
                   help="cugemm variants to time (default: the family's fastest of each dtype)")
    args = p.parse_args()
    if args.dtype != "f16" and os.environ.get("CUPY_TF32") != "1":
        # CuPy reads it once, at import: run again with it set (it only changes fp32 matmuls)
        os.environ["CUPY_TF32"] = "1"
        os.execv(sys.executable, [sys.executable, __file__] + sys.argv[1:])
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    sms = props["multiProcessorCount"]
    print(f"device: {props['name'].decode()} ({sms} SMs), cc {toolkit.device_cc()}")
    bad = []
    if args.dtype in ("tf32", "all"):
        by_arch = [(None, PROBES)] + ([("sm_90a", WGMMA_PROBES)] if toolkit.device_cc() == 90 else [])
        probes = run_probes(sms, args.iters, by_arch, WARPS_PER_SM)
        gemms = run_gemms(args.size, args.variants or list(DEFAULT_VARIANTS), "tf32")
        bad += report("TF32", probes, gemms, WARPS_PER_SM, args.size)
    if args.dtype in ("f16", "all"):
        probes = run_probes(sms, args.iters, [(None, F16_PROBES)], F16_WARPS_PER_SM, scale_iters=True)
        gemms = run_gemms(args.size, args.variants or list(DEFAULT_F16_VARIANTS), "f16")
        bad += report("FP16", probes, gemms, F16_WARPS_PER_SM, args.size)
    if bad:
        print(f"tc_peak: wrong probe results: {bad}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
