"""The command line: python -m cugemm (or the `cugemm` script) list | compile | bench | tune | explain.

list and compile need no GPU. Errors are one line on stderr naming the problem and the fix, with a
non-zero status: 1 when a compile fails, 2 for usage errors (unknown variant, bad arch, ...) and for
a machine that cannot do what was asked (no GPU, no CuPy). Every input is checked before the GPU is
asked for, so a wrong input is reported as such on any machine. With no command, the commands are
listed on stderr and the status is 2.
"""
from __future__ import annotations

import json
import os
import sys

from . import arch, compile_plan, default_arch, registry, variants, warm_cache
from .version import __version__
from .jit import CompileError


def _prog() -> str:
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return "cugemm" if name == "cugemm" else "python -m cugemm"


def _die(msg: str, code: int = 2) -> int:
    print(f"cugemm: {msg}", file=sys.stderr)
    return code


def _message(e: Exception) -> str:
    """An exception's message: a KeyError's own text (str() of a KeyError wraps it in quotes)."""
    if isinstance(e, KeyError) and len(e.args) == 1 and isinstance(e.args[0], str):
        return e.args[0]
    return str(e)


def _rows(args):
    chosen = variants(args.variants)
    if args.variants and not chosen:
        raise LookupError(f"no variant matches {args.variants!r}; `{_prog()} list` shows them all")
    return chosen


def _list(args) -> int:
    chosen = _rows(args)
    if args.json:
        print(json.dumps([dict(name=v.name, aliases=list(v.aliases), family=v.family, dtype_in=v.dtype_in,
                               dtype_out=v.dtype_out, dtype_acc=v.dtype_acc, math=v.math,
                               math_dtype=v.math_dtype, layout=v.layout, tile=list(v.tile),
                               block=list(v.block), multiple_of=list(v.multiple_of), align=v.align,
                               max_m=v.max_m, min_arch=v.min_arch, archs=list(v.archs),
                               smem_dynamic=v.smem_dynamic,
                               cluster=list(v.cluster), name_expression=v.name_expression,
                               source=v.source, seed=v.seed, doc=v.doc) for v in chosen], indent=1))
        return 0
    from tabulate import tabulate

    def shape_rule(v):
        rule = "any" if v.any_shape else "x".join(map(str, v.multiple_of))
        return f"{rule}, M<={v.max_m}" if v.max_m else rule

    if args.wide:
        rows = [[v.name, ", ".join(v.aliases), v.dtype_in, v.dtype_acc, v.math, "x".join(map(str, v.tile)),
                 shape_rule(v), ", ".join(v.archs), v.smem_dynamic, v.doc] for v in chosen]
        head = ["variant", "aliases", "in", "acc", "math", "tile MxNxK", "M,N,K multiple of (M limit)", "archs",
                "dyn smem B", "what it adds"]
    else:
        rows = [[v.name, v.dt_in.short + ("/tf32" if v.math_dtype == "tfloat32" else ""), v.math,
                 "x".join(map(str, v.tile)), shape_rule(v), f"sm_{v.min_arch}"] for v in chosen]
        head = ["variant", "dtype", "math", "tile", "shape rule", "min arch"]
    print(tabulate(rows, headers=head))
    print(f"\n{len(chosen)} variants" + ("" if args.wide else f"; `{_prog()} list --wide` adds aliases, "
                                        "archs, shared memory and what each rung adds"))
    return 0


def _compile(args) -> int:
    # --arch: exactly the chips cugemm compiles for, as cugemm.compile(arch=) (cugemm.arch.chip)
    chip = registry.chip(args.arch) if args.arch is not None else registry.chip(default_arch(), "this GPU's arch")
    _rows(args)
    jobs, skipped = compile_plan(args.variants, str(chip))
    from . import toolkit

    supported = toolkit.nvrtc_archs()  # needs CuPy: after the inputs are checked
    if supported and chip.cc not in supported:
        raise ValueError(f"this CuPy's NVRTC (CUDA {toolkit.nvrtc_version()}) does not compile for {chip}; "
                         f"it compiles for {', '.join(f'sm_{c}' for c in supported)}: install a newer "
                         "CuPy and NVRTC (pip install 'cugemm[cuda13]')")
    from concurrent.futures import ThreadPoolExecutor

    from . import jit

    failures = []

    def one(job):
        try:
            return jit.compile_offline(*job)
        except CompileError as e:
            failures.append(e)
            return None

    with ThreadPoolExecutor(max_workers=max(1, args.workers)) as pool:
        reports = [r for r in pool.map(one, jobs) if r is not None]
    warmed = 0 if failures or args.no_warm else warm_cache(jobs)
    if args.json:
        print(json.dumps({"arch": str(chip), "compiled": [r.as_dict() | {"log": None} for r in reports],
                          "not_applicable": [{"name": v.name, "reason": why} for v, why in skipped],
                          "failed": [{"name": e.variant, "log": e.log} for e in failures]}, indent=1))
    else:
        from tabulate import tabulate

        print(f"NVRTC offline compile for {chip}: {len(reports)} compiled, {len(skipped)} do not apply, "
              f"{len(failures)} failed" + (f"; {warmed} loaded into CuPy's cache for this GPU" if warmed else ""))
        print(tabulate([[r.name, r.arch, r.registers, r.smem_static, r.smem_dynamic, r.stack_frame,
                         r.spill_bytes, f"{r.seconds:.2f}"] for r in reports],
                       headers=["variant", "target", "registers", "static smem B", "dynamic smem B",
                                "stack B", "spill B", "seconds"]))
        if skipped:
            print(f"\nnot for {chip} ({len(skipped)}):")
            for v, why in skipped:
                print(f"  {why}")
    for e in failures:
        print(e, file=sys.stderr)
    return 1 if failures else 0


def _shapes(args) -> list:
    from .bench.measure import parse_shapes, sweep_shapes

    shapes = []
    for name in (args.sets.split(",") if args.sets else []):
        shapes += sweep_shapes(name.strip())
    if args.shapes:
        shapes += parse_shapes(args.shapes)
    if not shapes:
        raise ValueError("give --shapes MxNxK,... and/or --sets " + ",".join(_sweep_names()))
    return shapes


def _sweep_names():
    from .bench.measure import SWEEPS

    return sorted(SWEEPS)


def _layouts(text: str) -> tuple:
    parts = tuple(x.strip() for x in text.split(","))
    if len(parts) != 2 or any(x not in ("row", "col") for x in parts):
        raise ValueError(f"--layouts takes A,B with each 'row' or 'col' (e.g. row,col for x @ W.T), not {text!r}")
    return parts


_MATMUL_DTYPES = ("f16", "bf16", "f32", "tf32")


def _matmul_dtype(text: str):
    """The element type of a --dtype that cugemm.matmul multiplies (f16, bf16, f32, tf32)."""
    from . import dtypes

    try:
        return dtypes.get(text)
    except TypeError:
        raise ValueError(f"--dtype {text!r} is not a type cugemm.matmul multiplies: "
                         f"{', '.join(_MATMUL_DTYPES)}") from None


def _variants_glob(text):
    """--variants of tune: a glob that matches some variant, or None."""
    if text is not None and not variants(text):
        raise LookupError(f"no variant matches {text!r}; `{_prog()} list` shows them all")
    return text


def _tune(args) -> int:
    from . import tuner, tuning

    # every input is checked here, before tuner.tune asks for the GPU
    if args.batched:
        from .bench.measure import batched_shapes

        shapes = batched_shapes(",".join(x for x in (args.sets, args.shapes) if x) or "batched")
    else:
        shapes = _shapes(args)
    layouts = _layouts(args.layouts)
    dts = [_matmul_dtype(d).name for d in args.dtype]
    _variants_glob(args.variants)

    def log(row):
        batch = f"{row['batch']}x" if "batch" in row else ""
        print(f"{batch}{row['M']}x{row['N']}x{row['K']} {row['dtype']} {row['variant']}: {row['us']:.1f} us, "
              f"{row['pct']:.1f}% of cupy.matmul [{row['plan']}]", flush=True)

    failed = 0
    for dt in dts:
        if args.batched:
            rows = tuner.tune_batched(shapes, dt, layouts=layouts, variants=args.variants, path=args.path,
                                      ship=args.ship, log=log)
        else:
            rows = tuner.tune(shapes, dt, layouts=layouts, variants=args.variants, path=args.path, ship=args.ship,
                              log=log, plans=args.plans or tuner.TUNE_PLANS)
        for r in rows:
            if r["status"] != "ok":
                print(f"{r['M']}x{r['N']}x{r['K']} {r['dtype']} {r['variant']}: {r['status']} "
                      f"{r.get('detail', '')}{r.get('rel_err', '')}", flush=True)
                failed += r["status"] == "FAIL"
    target = args.path or ("the shipped table" if args.ship else tuning.cache_path())
    print(f"tuning written to {target}")
    return 1 if failed else 0


def _explain(args) -> int:
    from . import device, serve, tuner
    from .bench.measure import parse_shapes

    shapes = parse_shapes(args.shape)  # the inputs first: a wrong one is reported on any machine
    if len(shapes) != 1:
        raise ValueError(f"explain takes one shape MxNxK, not {args.shape!r}")
    (M, N, K), = shapes
    dt = _matmul_dtype(args.dtype)
    layouts = _layouts(args.layouts)
    device.current()
    tf32 = dt.name == "tfloat32"
    a, b = tuner.random_operands("float32" if tf32 else dt.name, M, N, K, *layouts)
    print(serve.explain(a, b, allow_tf32=tf32))
    return 0


_COMMANDS = (
    ("list", "the registered variants, in ladder order (no GPU needed)"),
    ("compile", "compile offline through NVRTC and print the ptxas report (no GPU needed)"),
    ("bench", "time variants against cupy.matmul (needs a GPU)"),
    ("tune", "time matmul's candidates on this GPU and write its tuning cache (needs a GPU)"),
    ("explain", "which variant cugemm.matmul picks for a shape, and why (needs a GPU)"),
)


def _commands() -> str:
    """What `python -m cugemm` alone prints: the commands, one line each."""
    width = max(len(c) for c, _ in _COMMANDS)
    lines = [f"usage: {_prog()} COMMAND [options]", "commands:"]
    lines += [f"  {c:<{width}}  {what}" for c, what in _COMMANDS]
    lines.append(f"`{_prog()} COMMAND --help` shows a command's options; `{_prog()} --help` all of this")
    return "\n".join(lines)


def main(argv=None) -> int:
    from .bench.cli import Parser, positive_int

    p = Parser(prog=_prog(), description="cugemm: a JIT-compiled zoo of CUDA GEMM kernels")
    p.add_argument("--version", action="version", version=f"cugemm {__version__}")
    sub = p.add_subparsers(dest="cmd", metavar="{list,compile,bench,tune,explain}")
    pl = sub.add_parser("list", help="the registered variants, in ladder order (no GPU needed)")
    pl.add_argument("--variants", default=None, help="glob(s) over names, comma-separated")
    pl.add_argument("--wide", action="store_true", help="all columns (aliases, archs, smem, doc)")
    pl.add_argument("--json", action="store_true", help="every field, as JSON")
    pc = sub.add_parser("compile", help="compile offline through NVRTC and print the ptxas report "
                        "(no GPU needed; on a GPU it also warms cugemm.run's cache)")
    pc.add_argument("--arch", default=None,
                    help="the chip, spelt sm_89, sm89, 89 or 8.9 (default: this GPU, else sm_90); one of "
                         + ", ".join(registry.chips()) + " (sm_90a names sm_90)")
    pc.add_argument("--variants", default=None, help="glob(s) over names, comma-separated")
    pc.add_argument("--workers", type=positive_int, default=2, help="parallel NVRTC compiles (default 2)")
    pc.add_argument("--no-warm", action="store_true",
                    help="on a GPU machine, do not also load the variants through CuPy (its disk cache "
                         "is what makes cugemm.run's first call fast)")
    pc.add_argument("--json", action="store_true")
    sub.add_parser("bench", help="time variants against cupy.matmul (needs a GPU; bench --help)",
                   add_help=False)
    pt = sub.add_parser("tune", help="time matmul's candidates on this GPU and write the tuning cache "
                        "that cugemm.matmul reads (needs a GPU)")
    pt.add_argument("--shapes", default=None, help="MxNxK,MxNxK,...")
    pt.add_argument("--sets", default=None, help="named shape sets, comma-separated (bench --sweep names)")
    pt.add_argument("--dtype", nargs="+", default=["f16"], help="f16 bf16 f32 tf32 (default f16)")
    pt.add_argument("--layouts", default="row,row", help="A,B layouts: row or col each (default row,row)")
    pt.add_argument("--variants", default=None, help="glob(s) limiting the candidates")
    pt.add_argument("--path", default=None, help="write here instead of the user cache")
    pt.add_argument("--ship", action="store_true", help="write a shipped table (cugemm/tables/) instead")
    pt.add_argument("--batched", action="store_true",
                    help="time the batched forms on batches BxMxNxK (--shapes, or --sets: default the 'batched' set)")
    pt.add_argument("--plans", type=int, default=None,
                    help="plans timed per shape: the model's best N and matmul's own best N (default 6)")
    pe = sub.add_parser("explain", help="which variant cugemm.matmul picks for a shape, and why (needs a GPU)")
    pe.add_argument("shape", help="MxNxK")
    pe.add_argument("--dtype", default="f16", help="f16, bf16, f32 or tf32 (default f16)")
    pe.add_argument("--layouts", default="row,row", help="A,B layouts: row or col each (default row,row)")
    args, rest = p.parse_known_args(argv)
    if args.cmd is None:
        if rest:
            p.error(f"unrecognized arguments: {' '.join(rest)}")
        print(_commands(), file=sys.stderr)
        return 2
    if args.cmd == "bench":
        from .bench import main as bench_main

        return bench_main(rest, prog=f"{_prog()} bench")
    if rest:
        p.error(f"unrecognized arguments: {' '.join(rest)}")
    try:
        return {"list": _list, "compile": _compile, "tune": _tune, "explain": _explain}[args.cmd](args)
    except (LookupError, ValueError, FileNotFoundError, TypeError) as e:
        return _die(_message(e))
    except RuntimeError as e:  # no GPU, no CuPy
        return _die(str(e).removeprefix("cugemm: "))
    except ImportError as e:
        msg = str(e)
        return _die(msg if "cugemm[" in msg else
                    f"{msg}: compiling needs CuPy's NVRTC: pip install 'cugemm[cuda13]' (or '[cuda12]')")


def console() -> int:
    """The `cugemm` script: main() with a quiet exit when stdout is closed early (`| head`)."""
    try:
        code = main()
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(console())
