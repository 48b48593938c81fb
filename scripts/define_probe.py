#!/usr/bin/env python3
"""What a compile-time switch of the kernels does to cugemm.matmul, measured in one process.

The kernels are built once per pass with -D<DEFINE>=<mode> and each shape is benched
(cugemm.bench.measure.bench_shape, cugemm.matmul alternating with cupy.matmul, checked against
float64 first) once per pass; passes 1, 0, 1 show a drift of the GPU's clock between passes as a
difference between the two 1 columns. The switch (default 1, what ships):
  CUGEMM_B_EVICT_FIRST (kernels/lib/core.cuh): 1 tags the copies of B evict_first in the L2, 0
    evict_normal (the same as untagged).
Any other -D switch of a kernel can be passed the same way (--define NAME); with --modes 1 and the
default switch, the script is a plain same-process bench of cugemm.matmul on --shapes.

    python scripts/define_probe.py [--define CUGEMM_B_EVICT_FIRST] [--dtype f16] [--shapes 64x4096x4096,...]
                                   [--modes 1,0,1] [--json PATH]

What CUGEMM_B_EVICT_FIRST measured: docs/kernels_lib.md.
"""
import argparse
import json


def _build(define: str, flag: int):
    """Make every later kernel load compile with -D<define>=flag."""
    from cugemm import jit

    jit.set_defines([f"{define}={flag}"])


def main():
    from cugemm.bench.measure import MATMUL, bench_shape, parse_shapes

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dtype", default="f16")
    p.add_argument("--shapes", default="1x4096x4096,16x4096x4096,64x4096x4096,128x4096x4096,256x4096x4096,"
                   "512x4096x4096,64x11008x4096,256x11008x4096,64x4096x11008,16x8192x8192,1024x1024x1024")
    p.add_argument("--define", default="CUGEMM_B_EVICT_FIRST", help="the compile-time switch (a -D name)")
    p.add_argument("--modes", default="1,0,1", help="the switch's values (0, 1), one pass each")
    p.add_argument("--json")
    args = p.parse_args()
    shapes = parse_shapes(args.shapes)
    results = {}
    modes = [int(x) for x in args.modes.split(",")]
    for i, flag in enumerate(modes):
        _build(args.define, flag)
        for M, N, K in shapes:
            row = bench_shape(M, N, K, args.dtype, chosen=[MATMUL])[-1]
            results.setdefault(f"{M}x{N}x{K}", []).append((flag, row.pct, row.ms * 1e3 if row.ms else None,
                                                           row.status.value, row.detail))
    print(f"{'shape':>18} " + " ".join(f"{'mode ' + str(f) + ' %':>9}" for f in modes) + "   us each   variant")
    for shape, r in results.items():
        st = sorted({x[3] for x in r})
        print(f"{shape:>18} " + " ".join(f"{x[1]:9.1f}" if x[1] else f"{'-':>9}" for x in r) + "   "
              + "/".join(f"{x[2]:.1f}" if x[2] else "-" for x in r) + f"   {r[0][4]} {st}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
