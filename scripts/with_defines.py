#!/usr/bin/env python3
"""Run another script of this directory with every kernel built with -D switches, in one process.

    python3 scripts/with_defines.py NAME=VALUE[,NAME=VALUE...] scripts/serving_bench.py --parts ratios ...

The switches go to cugemm.jit.set_defines before the script runs (e.g. CUGEMM_B_EVICT_FIRST=0,
kernels/lib/core.cuh), so any bench or probe can be run on both builds of a switch; alternate the
builds across processes to see the run-to-run drift (docs/hgemm_wgmma.md has such an A/B).
"""
import argparse
import runpy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("defines", help="NAME=VALUE[,NAME=VALUE...]: the -D switches of every kernel build")
    p.add_argument("script", help="the script to run (its path)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")
    args = p.parse_args()
    from cugemm import jit

    jit.set_defines([d for d in args.defines.split(",") if d])
    sys.argv = [args.script] + args.args
    sys.path.insert(0, str(Path(args.script).resolve().parent))
    runpy.run_path(args.script, run_name="__main__")


if __name__ == "__main__":
    main()
