#!/usr/bin/env python3
"""Registered and not-yet-registered kernel forms on x @ W.T products, timed behind the bench's L2
flush beside cupy.matmul (cuBLAS) in one process, or profiled one launch each under Nsight Compute.

    python3 scripts/form_probe.py [--shapes 1024x768x3072,...] [--dtype f16] [--variants GLOB,...]
                                  [--extra small_m:BN:STAGES:CLUSTER:m|n,...] [--define NAME=VALUE]
                                  [--ncu]

--variants: registered variants (globs; those that cannot take the shape are skipped). --extra: rung
10 (08_small_m.cu) `_bcol` forms built here from the registered 64 x BN form's fields with another
STAGES and CLUSTER (clusters along M sharing B: m, along N sharing A: n); their shared memory is what
the kernel file declares (hgemm_wgmma_small_m_smem_bytes, read from an offline compile). Each form is
checked against the float64 reference, then timed (cugemm.bench.timing.Timer.measure_pair, alternating
with cupy.matmul on the same operands). --ncu:
each form runs once after a warm-up between cudaProfilerStart / Stop, the bench's L2 flush before
(run under `ncu --profile-from-start off --cache-control none`).
"""
import argparse
import dataclasses
import fnmatch
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def small_m_form(spec: str, dtype: str):
    """A rung-10 `_bcol` Variant from 'small_m:BN:STAGES:CLUSTER:m|n'."""
    from cugemm import jit, registry

    _, bn, stages, cluster, side = spec.split(":")
    bn, stages, cluster, along_m = int(bn), int(stages), int(cluster), side == "m"
    bf = "_bf16" if dtype == "bf16" else ""
    base = next(v for v in registry.variants("hgemm_wgmma_m64n*_small_m*_bcol" + bf)
                if v.param_dict["BN"] == bn)
    params = tuple((k, {"STAGES": stages, "CLUSTER": cluster, "ALONG_M": along_m}.get(k, val))
                   for k, val in base.params)
    c = f"_cluster{cluster}{side}" if cluster > 1 else ""
    v = dataclasses.replace(base, name=f"probe_m64n{bn}k16_small_m{c}_stage{stages}_bcol{bf}", params=params,
                            cluster=(cluster, 1, 1))
    # its shared memory as the kernel file declares it (the registry's table holds registered forms only)
    return dataclasses.replace(v, smem_dynamic=jit.compile_offline(v, "sm_90a").smem_declared)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default="1024x768x3072,192x5120x5120,512x768x768")
    p.add_argument("--dtype", default="f16")
    p.add_argument("--variants", default="", help="registered variants, comma-separated globs")
    p.add_argument("--extra", default="", help="comma-separated small_m:BN:STAGES:CLUSTER:m|n")
    p.add_argument("--define", action="append", default=[])
    p.add_argument("--iters", type=int, default=40)
    p.add_argument("--ncu", action="store_true")
    args = p.parse_args()
    import cupy

    from cugemm import accuracy, device, dtypes, jit, launch, operand, registry, testing
    from cugemm.bench.timing import Timer

    if args.define:
        jit.set_defines(args.define)
    timer = Timer(warmup=3, iters=args.iters, budget_s=1.0)
    dt = dtypes.get(args.dtype)
    dev = device.current()
    globs = [g for g in args.variants.split(",") if g]
    forms = [v for v in registry.variants() if v.dtype_in == dt.name and any(fnmatch.fnmatch(v.name, g) for g in globs)]
    forms += [small_m_form(s, args.dtype) for s in args.extra.split(",") if s]
    tag = " ".join(args.define) or "defaults"
    for spec in args.shapes.split(","):
        M, N, K = (int(x) for x in spec.split("x"))
        a = testing.random_operands(dt.name, M, 1, K)[0]
        w = testing.random_operands(dt.name, N, 1, K)[0]
        b = w.T
        ref = accuracy.reference(a, b)
        A, B = operand.describe(a, "A", "probe"), operand.describe(b, "B", "probe")
        rows = []
        for v in forms:
            try:
                v.check_shape(M, N, K)
                launch.check_operands(v, A, B)
            except (ValueError, TypeError):
                continue
            out = testing.poisoned((M, N), dt.name)
            O = operand.describe(out, "out", v.name)
            run = lambda v=v, out=out, O=O: launch.launch(v, a, b, out, A, B, O, M, N, K, dev)  # noqa: E731
            try:
                run()
                cupy.cuda.Device().synchronize()
            except Exception as e:
                print(f"  {v.name}: {type(e).__name__}: {str(e)[:160]}", flush=True)
                continue
            err = accuracy.rel_error(out, ref)
            ok = accuracy.within(err, v.math_dtype, v.dtype_acc)
            if args.ncu:
                rows.append((v.name, run, ok))
                continue
            t, tb = timer.measure_pair(run, lambda: cupy.matmul(a, b))
            rows.append((t["median"] * 1e3, tb["median"] * 1e3, v.name, ok))
        if args.ncu:
            from profile_shapes import profiled

            for f in [lambda: cupy.matmul(a, b)] + [r[1] for r in rows]:
                for _ in range(3):
                    f()
                profiled(f, Timer().flush)
            print(f"{spec} ({tag}): profiled cupy.matmul, " + ", ".join(
                r[0] + ("" if r[2] else " WRONG") for r in rows), flush=True)
            continue
        rows.sort()
        print(f"{dt.name} {M}x{N}x{K} x @ W.T ({tag})", flush=True)
        for us, base, name, ok in rows:
            print(f"  {name:<62} {us:7.2f} us  cupy {base:7.2f}  {100 * base / us:6.1f}%"
                  f"{'' if ok else ' WRONG'}", flush=True)


if __name__ == "__main__":
    main()
