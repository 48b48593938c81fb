"""python -m cugemm list | compile | bench  (list and compile need no GPU)."""
from __future__ import annotations

import argparse
import json
import sys

from . import compile as compile_variants
from . import default_arch, variants
from .jit import CompileError


def _list(args) -> int:
    rows = [dict(name=v.name, aliases=list(v.aliases), family=v.family, dtype_in=v.dtype_in,
                 dtype_out=v.dtype_out, dtype_acc=v.dtype_acc, math=v.math, layout=v.layout,
                 tile=list(v.tile), block=list(v.block), multiple_of=list(v.multiple_of),
                 min_arch=v.min_arch, archs=list(v.archs), name_expression=v.name_expression,
                 source=v.source, seed=v.seed, doc=v.doc)
            for v in variants(args.variants)]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    from tabulate import tabulate

    print(tabulate([[r["name"], ", ".join(r["aliases"]), r["dtype_in"], r["dtype_acc"], r["math"],
                     "x".join(map(str, r["tile"])),
                     "any" if r["multiple_of"] == [1, 1, 1] else "x".join(map(str, r["multiple_of"])),
                     f"sm_{r['min_arch']}", r["doc"]] for r in rows],
                   headers=["variant", "aliases", "in", "acc", "math", "tile MxNxK", "M,N,K multiple of",
                            "min arch", "what it adds"]))
    return 0


def _compile(args) -> int:
    arch = args.arch or default_arch()
    try:
        reports = compile_variants(args.variants, arch=args.arch, workers=args.workers)
    except CompileError as e:
        print(e, file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps([r.as_dict() | {"log": None} for r in reports], indent=1))
        return 0
    from tabulate import tabulate

    print(f"NVRTC offline compile, target {arch}")
    print(tabulate([[r.name, r.arch, r.registers, r.smem_static, r.smem_dynamic, r.stack_frame,
                     r.spill_bytes, f"{r.seconds:.2f}"] for r in reports],
                   headers=["variant", "arch", "registers", "static smem B", "dynamic smem B",
                            "stack B", "spill B", "seconds"]))
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m cugemm")
    sub = p.add_subparsers(dest="cmd", required=True)
    pl = sub.add_parser("list", help="the registered variants, in ladder order")
    pl.add_argument("--variants", default=None, help="glob(s) over names, comma-separated")
    pl.add_argument("--json", action="store_true")
    pc = sub.add_parser("compile", help="compile offline through NVRTC and print the ptxas report")
    pc.add_argument("--arch", default=None, help="sm_80, sm_90, sm_90a... (default: this GPU, else sm_90)")
    pc.add_argument("--variants", default=None, help="glob(s) over names, comma-separated")
    pc.add_argument("--workers", type=int, default=2, help="parallel NVRTC compiles (default 2)")
    pc.add_argument("--json", action="store_true")
    sub.add_parser("bench", help="time variants against cupy.matmul (same flags as bench.py)",
                   add_help=False)
    args, rest = p.parse_known_args(argv)
    if args.cmd == "bench":
        from .bench import main as bench_main

        return bench_main(rest)
    if rest:
        p.error(f"unrecognized arguments: {' '.join(rest)}")
    return {"list": _list, "compile": _compile}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
