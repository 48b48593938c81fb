"""`python -m cugemm bench` / `python bench.py`: the bench's command line."""
from __future__ import annotations

import argparse
import os
import sys

from .measure import DTYPES, MATMUL, SWEEPS, _grid, bench_shape, chosen_variants, parse_shapes, sweep_shapes
from .report import device_line, format_table, metadata, plot, write_csv, write_json
from .timing import Timer


class Progress:
    """A one-line progress bar on a terminal, plain lines otherwise (logs, CI)."""

    def __init__(self, total: int, what: str, stream=None):
        self.total, self.what, self.n = total, what, 0
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()

    def step(self, label: str):
        self.n += 1
        if self.tty:
            width = 30
            done = int(width * self.n / max(self.total, 1))
            self.stream.write(f"\r{self.what} [{'#' * done}{'.' * (width - done)}] {self.n}/{self.total} "
                              f"{label[:60]:60s}")
            if self.n == self.total:
                self.stream.write("\n")
        else:
            self.stream.write(f"{self.what} {self.n}/{self.total}: {label}\n")
        self.stream.flush()


class Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors: `PROG: error: MESSAGE (`PROG --help` shows the usage)`
    on stderr and exit status 2, instead of the usage block. Subparsers inherit it."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (`{self.prog} --help` shows the usage)\n")


def _int_at_least(low: int, what: str):
    """An argparse type: an integer >= low (`what` says which in the refusal)."""

    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value} is {what}")
        return value

    return convert


positive_int = _int_at_least(1, "not a positive integer (1 or more)")
non_negative_int = _int_at_least(0, "negative (0 or more)")


def _baseline(dtype: str) -> str:
    """The baseline a bench of `dtype` times every variant against (its column headed '% cupy.matmul')."""
    return {"tf32": "cupy.matmul (TF32)", "e4m3": "torch._scaled_mm (per-tensor scales of 1, bf16 out)"}.get(
        dtype, "cupy.matmul")


def parser(prog: str = "python -m cugemm bench") -> argparse.ArgumentParser:
    p = Parser(prog=prog, description="Time cugemm variants against cupy.matmul "
                                "(cuBLAS) on the same inputs, in the same run.")
    p.add_argument("--m", type=non_negative_int, nargs="+", default=[4096], help="M values (default 4096)")
    p.add_argument("--n", type=non_negative_int, nargs="+", default=[4096], help="N values (default 4096)")
    p.add_argument("--k", type=non_negative_int, nargs="+", default=[1024], help="K values (default 1024)")
    p.add_argument("--sweep", choices=sorted(SWEEPS), help="a named shape grid instead of --m/--n/--k")
    p.add_argument("--shapes", help="explicit shapes instead of --m/--n/--k: MxNxK,MxNxK,...")
    p.add_argument("--max-size", type=positive_int, default=None, help="drop sweep shapes with a dimension over this")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="f32",
                   help="f32 (default), f16, bf16, tf32 (fp32 inputs, TF32 tensor cores) or e4m3 (the FP8 "
                        "forms, unit scales, against torch._scaled_mm: needs torch)")
    p.add_argument("--variants", default=None, help="glob(s) over variant names, comma-separated; "
                   "'matmul' adds a row for cugemm.matmul (the front door)")
    p.add_argument("--warmup", type=non_negative_int, default=5, help="warm-up launches per variant (default 5)")
    p.add_argument("--iters", type=positive_int, default=50, help="timed repetitions, median taken (default 50)")
    p.add_argument("--no-check", action="store_true", help="skip the correctness check before timing")
    p.add_argument("--json", metavar="PATH", help="write the rows and the run's metadata as JSON")
    p.add_argument("--csv", metavar="PATH", help="write the rows as CSV")
    p.add_argument("--markdown", action="store_true", help="print markdown tables")
    p.add_argument("--plot", metavar="PATH", help="draw TFLOP/s per variant to a PNG (needs matplotlib)")
    return p


def _fail(msg: str) -> int:
    print(f"bench: {msg}", file=sys.stderr)
    return 2


def main(argv=None, prog: str = "python -m cugemm bench") -> int:
    """Exit status: 0 when every row ran (FAIL rows included: they are reported), 1 when a variant's
    result was wrong, 2 for a usage error or a machine that cannot bench (no GPU, no CuPy)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parser(prog).parse_args(argv)
    except SystemExit as e:  # argparse printed its message
        return int(e.code or 0)
    if args.sweep and args.shapes:
        return _fail("give --sweep or --shapes, not both")
    try:
        shapes = (sweep_shapes(args.sweep, args.max_size) if args.sweep
                  else parse_shapes(args.shapes) if args.shapes else _grid(args.m, args.n, args.k))
    except ValueError as e:
        return _fail(str(e))
    if not shapes:
        return _fail("no shapes to run (check --max-size)")
    if any(min(s) < 0 for s in shapes):
        return _fail("shape dimensions must be non-negative")
    chosen = chosen_variants(args.dtype, args.variants)  # every input is checked before the GPU
    if not chosen:
        return _fail(f"no {args.dtype} variant matches {args.variants!r} (python -m cugemm list)")
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            return _fail("--plot needs matplotlib (pip install 'cugemm[plot]')")
    from .. import device

    try:
        device.current()  # the one no-GPU message of every entry point
    except RuntimeError as e:
        return _fail(str(e).removeprefix("cugemm: "))
    tf32_env = os.environ.get("CUPY_TF32", "0") not in ("", "0")
    if args.dtype == "tf32" and not tf32_env:
        # CuPy reads CUPY_TF32 once: run again with it set, so the baseline is cuBLAS TF32
        os.environ["CUPY_TF32"] = "1"
        os.execv(sys.executable, [sys.executable, "-m", "cugemm", "bench"] + argv)
    meta = metadata()
    print(device_line(meta))
    if args.dtype == "f32" and tf32_env:
        print("bench: note: CUPY_TF32 is set, so the cupy.matmul baseline runs in TF32")

    from .. import jit

    progress = Progress(len(chosen), "compile")
    for v in chosen:  # compile (or load from CuPy's cache) up front, so timing starts warm
        if v == MATMUL:  # its candidates compile on its first call, before it is timed
            continue
        progress.step(v.name)
        try:
            jit.get_function(v)
        except Exception:
            pass  # the variant's row reports the error
    timer = Timer(args.warmup, args.iters)
    progress = Progress(len(shapes), "bench")
    all_rows = []
    for M, N, K in shapes:
        progress.step(f"{M}x{N}x{K}")
        rows = bench_shape(M, N, K, args.dtype, timer=timer, check=not args.no_check, chosen=chosen)
        all_rows += rows
        print(f"\nM={M} N={N} K={K} {args.dtype}: median of up to {args.iters} runs, L2 flushed before each, "
              f"baseline {_baseline(args.dtype)}, timed alternating with each "
              "variant; * = best ratio")
        print(format_table(rows, markdown=args.markdown))
        sys.stdout.flush()
    if args.json:
        write_json(args.json, meta, all_rows, argv)
    if args.csv:
        write_csv(args.csv, meta, all_rows)
    if args.plot:
        plot(args.plot, meta, all_rows)
    from .measure import Status

    return 1 if any(r.status is Status.FAIL for r in all_rows) else 0
