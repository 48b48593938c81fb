#!/usr/bin/env python3
"""Rung 7's ping-pong forms beside their cooperative siblings on x @ W.T, plain and with a fused
epilogue, timed behind the bench's L2 flush alternating with cupy.matmul in one process.

    python3 scripts/pingpong_probe.py [--shapes MxNxK,...] [--dtypes f16,bf16] [--bases NAME,...]
                                      [--fused NAME,...] [--specs ACT:BIAS,...] [--check-only]

--bases: cooperative rung-7 forms (fp16 names; `_bf16` is added for bf16), each timed with its
registered ping-pong sibling (`persistent` -> `persistent_pingpong`; --sibling staged: its STAGED
form, `tma_store_stageS` -> `tma_staged_stageS'`). --fused: bases whose fused
members (lib/epilogue.cuh) are timed, cooperative and ping-pong, for each --specs composition
(activation:bias, e.g. gelu:col, :col for the bias alone). Every result is checked against the float64
reference (epilogue.reference for the fused ones; WRONG marks a miss) before it is timed
(cugemm.bench.timing.Timer.measure_pair); cugemm.matmul's own plan is timed first. Plain forms launch
through cugemm.launch.launch, fused members through cugemm.epilogue.execute with their base named. --check-only: run and
check each form once, no timing (for compute-sanitizer or Nsight Compute). results/judge/s43/ holds
its runs (pp_probe.txt, pp_specs.txt, pp_fused_fit.txt).
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

COOP = "hgemm_wgmma_m64n128k16_persistent_cluster2_tma_store_stage6_bcol"


def sibling(name: str, kind: str = "pingpong") -> str:
    """The registered ping-pong (or, kind 'staged', STAGED) form of a cooperative rung-7 form."""
    if kind == "staged":
        from cugemm import epilogue, registry

        sv = epilogue.staged_sibling(registry.get_variant(name))
        if sv is None:
            raise SystemExit(f"pingpong_probe: {name} has no STAGED form (128 x 128 / 192 / 256, clusters of 2)")
        return sv.name
    return name.replace("_persistent_", "_persistent_pingpong_", 1)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default="16384x3072x768,2048x3072x768,2048x2304x768,1024x3072x768")
    p.add_argument("--dtypes", default="f16,bf16")
    p.add_argument("--bases", default=COOP + ",hgemm_wgmma_m64n128k16_persistent_tma_store_stage6_bcol")
    p.add_argument("--fused", default=COOP)
    p.add_argument("--specs", default="gelu:col", help="activation:bias compositions of the fused members")
    p.add_argument("--iters", type=int, default=40)
    p.add_argument("--sibling", choices=("pingpong", "staged"), default="pingpong",
                   help="the sibling timed beside each base: the ping-pong form, or the STAGED one")
    p.add_argument("--check-only", action="store_true")
    args = p.parse_args()
    import cupy
    import numpy as np

    import cugemm
    from cugemm import accuracy, device, dtypes, epilogue, launch, operand, registry, serve, testing
    from cugemm.bench.timing import Timer

    timer = Timer(warmup=3, iters=args.iters, budget_s=1.0)
    dev = device.current()
    lib = serve.library("cupy")
    for dn in args.dtypes.split(","):
        dt = dtypes.get(dn)
        bf = "_bf16" if dt.name == "bfloat16" else ""
        forms = []  # (variant, (base name, spec) of a fused member, or (None, None))
        for n in filter(None, args.bases.split(",")):
            forms += [(registry.get_variant(x + bf), (None, None)) for x in (n, sibling(n, args.sibling))]
        for n in filter(None, args.fused.split(",")):
            for text in args.specs.split(","):
                act, bias_kind = text.split(":")
                spec = epilogue.Spec(act or None, bias_kind)
                forms += [(epilogue.variant(registry.get_variant(x), spec), (x, spec))
                          for x in (n + bf, sibling(n + bf, args.sibling))]
        for shape in args.shapes.split(","):
            M, N, K = (int(x) for x in shape.split("x"))
            a = testing.random_operands(dt.name, M, 1, K)[0]
            w = testing.random_operands(dt.name, N, 1, K)[0]
            bias = testing.random_operands(dt.name, 1, 1, N)[0].reshape(N)
            b = w.T
            ref = accuracy.reference(a, b)
            A, B = operand.describe(a, "A", "probe"), operand.describe(b, "B", "probe")
            rows = []
            if not args.check_only:
                mm_out = cupy.empty((M, N), a.dtype)
                t, tb = timer.measure_pair(lambda: cugemm.matmul(a, b, out=mm_out), lambda: cupy.matmul(a, b))
                rows.append((t["median"] * 1e3, tb["median"] * 1e3, "cugemm.matmul", True))
            for v, (base, spec) in forms:
                v.check_shape(M, N, K)
                launch.check_operands(v, A, B)
                out = testing.poisoned((M, N), dt.name)
                O = operand.describe(out, "out", v.name)
                if spec is None:
                    def run(v=v, out=out, O=O):
                        launch.launch(v, a, b, out, A, B, O, M, N, K, dev)
                else:  # the fused member of `base`, as cugemm.linear runs it (its plan with that base only)
                    def run(base=base, spec=spec, out=out, O=O):
                        return epilogue.execute(lib, A, B, O, a, b, out, spec, bias, base=base)

                r = run()
                cupy.cuda.Device().synchronize()
                if spec is not None and (r is None or r.plan.variant.name != v.name):
                    sys.exit(f"pingpong_probe: {v.name} did not run fused")
                want = ref if spec is None else cupy.asarray(epilogue.reference(
                    cupy.asnumpy(ref), spec, bias=cupy.asnumpy(bias).astype(np.float64))[0])
                ok = bool(accuracy.within(accuracy.rel_error(out, want), v.math_dtype, v.dtype_acc))
                if args.check_only:
                    rows.append((0.0, 0.0, v.name, ok))
                    continue
                t, tb = timer.measure_pair(run, lambda: cupy.matmul(a, b))
                rows.append((t["median"] * 1e3, tb["median"] * 1e3, v.name, ok))
            print(f"{dt.name} {M}x{N}x{K} x @ W.T", flush=True)
            for us, cupy_us, name, ok in rows:
                pct = f"{100 * cupy_us / us:6.1f}%" if us else ""
                print(f"  {name:<92} {us:8.2f} us  cupy {cupy_us:8.2f}  {pct}{'' if ok else ' WRONG'}", flush=True)


if __name__ == "__main__":
    main()
