"""Timing and reporting: every chosen variant against cupy.matmul (cuBLAS), in the same run.

Timing rule (DESIGN.md): CuPy events around each launch, warm-up first, the median and the p20/p80
spread of many repetitions, the L2 cache flushed before each repetition (a write over a buffer
twice its size) when the operands fit in L2, so no repetition starts with its inputs cached.
Inputs are random normal, never zeros. Each variant's result is checked against the float64
reference (output poisoned with NaN first) before it is timed; a wrong result is FAIL and never
ranked. The figure that counts is the ratio to cupy.matmul on the same inputs in the same run.
"""
from __future__ import annotations

import argparse
import csv
import datetime
import json
import math
import os
import sys

import numpy as np

from . import accuracy, toolkit
from .registry import variants

# --dtype: (input dtype, math dtype). tf32 runs float32 inputs through TF32 tensor-core variants,
# against cupy.matmul with CUPY_TF32=1 (which CuPy reads once, at import: main() re-executes itself
# with it set). f32's baseline is plain FP32 cupy.matmul.
DTYPES = {"f32": ("float32", "float32"), "f16": ("float16", "float16"), "tf32": ("float32", "tfloat32")}


def _grid(ms, ns, ks):
    return [(m, n, k) for m in ms for n in ns for k in ks]


# Named shape grids (--sweep). Each takes the size cap (--max-size) and returns (M, N, K) tuples.
SWEEPS = {
    # seed 004's grid: M, N in {1024, 2048, 4096}, K in {256, 512, 1024}
    "seed-hgemm": lambda cap: _grid((1024, 2048, 4096), (1024, 2048, 4096), (256, 512, 1024)),
    # seed 003's grid: M, N in {4096, 8192, 16384}, K in {2048, 4096, 8192}
    "seed-sgemm": lambda cap: _grid((4096, 8192, 16384), (4096, 8192, 16384), (2048, 4096, 8192)),
    # square products from 256 to 8192
    "square": lambda cap: [(s, s, s) for s in (256, 512, 1024, 2048, 4096, 8192)],
}


def sweep_shapes(name: str, max_size: int | None = None) -> list[tuple]:
    """The shapes of a named sweep, dropping those with a dimension over max_size."""
    if name not in SWEEPS:
        raise KeyError(f"unknown sweep {name!r}; known: {', '.join(SWEEPS)}")
    return [s for s in SWEEPS[name](max_size) if max_size is None or max(s) <= max_size]


def parse_shapes(text: str) -> list[tuple]:
    """'4096x4096x1024,128x256x64' -> [(4096, 4096, 1024), (128, 256, 64)]."""
    out = []
    for part in text.split(","):
        dims = part.strip().lower().split("x")
        if len(dims) != 3 or not all(d.isdigit() for d in dims):
            raise ValueError(f"shape {part.strip()!r} is not MxNxK (e.g. 4096x4096x1024)")
        out.append(tuple(int(d) for d in dims))
    return out


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


def _percentile(sorted_values, q):
    """Linear-interpolated percentile of an already sorted list (q in 0..100)."""
    if len(sorted_values) == 1:
        return sorted_values[0]
    pos = (len(sorted_values) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


class Timer:
    """Device time of a callable: median, p20 and p80 over repetitions timed with CuPy events."""

    def __init__(self, warmup: int = 5, iters: int = 50, budget_s: float = 1.5):
        import cupy

        self.warmup, self.iters, self.budget_s = warmup, iters, budget_s
        self.l2_bytes = cupy.cuda.Device().attributes.get("L2CacheSize", 50 * 2**20)
        self._flush = cupy.empty(max(2 * self.l2_bytes, 2**20) // 4, dtype=cupy.float32)

    def flush(self):
        self._flush.fill(1.0)

    def measure(self, fn, operand_bytes: int = 0) -> dict:
        """{'median', 'p20', 'p80' (ms), 'n'}; L2 flushed before each run if operand_bytes fit in it."""
        import cupy

        flush = operand_bytes <= self.l2_bytes
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        for _ in range(max(1, self.warmup)):
            if flush:
                self.flush()
            start.record()
            fn()
            end.record()
        end.synchronize()
        first = cupy.cuda.get_elapsed_time(start, end)
        # slow kernels (the naive rungs) get fewer repetitions, never fewer than 5
        iters = max(5, min(self.iters, int(self.budget_s * 1e3 / max(first, 1e-3))))
        events = [(cupy.cuda.Event(), cupy.cuda.Event()) for _ in range(iters)]
        for s, e in events:
            if flush:
                self.flush()
            s.record()
            fn()
            e.record()
        events[-1][1].synchronize()
        times = sorted(cupy.cuda.get_elapsed_time(s, e) for s, e in events)
        return {"median": _percentile(times, 50), "p20": _percentile(times, 20),
                "p80": _percentile(times, 80), "n": iters, "l2_flushed": flush}

    def median_ms(self, fn, operand_bytes: int = 0) -> float:
        return self.measure(fn, operand_bytes)["median"]


def bench_shape(M: int, N: int, K: int, dtype: str = "f32", pattern: str | None = None,
                warmup: int = 5, iters: int = 50, timer: Timer | None = None, check: bool = True,
                chosen=None) -> list[dict]:
    """Time cupy.matmul and every matching variant on one MxNxK shape; one dict per row.

    dtype is a key of DTYPES. Each variant gets the inputs in its own layout (column-major variants
    get Fortran-ordered copies of the same values) and, unless check=False, a NaN-poisoned output
    checked against the float64 reference before it is timed. A variant whose shape rules reject
    the shape gets a row saying so.
    """
    import cupy

    from .launch import run

    dtype_in, math_dtype = DTYPES[dtype]
    timer = timer or Timer(warmup, iters)
    flop = 2.0 * M * N * K
    a = cupy.random.standard_normal((M, K), dtype=cupy.float32).astype(dtype_in)
    b = cupy.random.standard_normal((K, N), dtype=cupy.float32).astype(dtype_in)
    ref = accuracy.reference(a, b) if check else None
    operands = {"row": (a, b)}
    rows = []

    def row(name, fn, dtype_out, dtype_acc, order="C", baseline=False):
        out = cupy.full((M, N), cupy.nan, dtype=dtype_out, order=order)
        r = dict(variant=name, M=M, N=N, K=K, dtype=dtype, ms=None, p20_ms=None, p80_ms=None,
                 tflops=None, pct=None, rel_err=None, status="", fastest=False)
        try:
            fn(out)
            if check:
                r["rel_err"] = accuracy.rel_error(out, ref)
                ok = accuracy.within(r["rel_err"], math_dtype, dtype_acc)
                r["status"] = ("baseline" if baseline else "ok") if ok else "FAIL"
            else:
                r["status"] = "baseline" if baseline else "unchecked"
            nbytes = a.nbytes + b.nbytes + out.nbytes
            t = timer.measure(lambda: fn(out), nbytes)
            r.update(ms=t["median"], p20_ms=t["p20"], p80_ms=t["p80"], tflops=flop / t["median"] / 1e9)
        except Exception as e:  # a failing variant shows its reason and the others go on
            msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            r["status"] = f"{type(e).__name__}: {msg}"[:160]
        rows.append(r)

    row("cupy.matmul", lambda out: cupy.matmul(a, b, out=out), dtype_in, "float32", baseline=True)
    for v in (chosen if chosen is not None else variants(pattern, dtype=dtype_in, math_dtype=math_dtype)):
        if v.layout not in operands:
            operands[v.layout] = (cupy.asfortranarray(a), cupy.asfortranarray(b))
        va, vb = operands[v.layout]
        row(v.name, lambda out, v=v, va=va, vb=vb: run(v, va, vb, out), v.dtype_out, v.dtype_acc,
            order="F" if v.layout == "col" else "C")
    base = rows[0]["ms"]
    for r in rows:
        if r["ms"] and base:
            r["pct"] = 100.0 * base / r["ms"]
    ranked = [r for r in rows[1:] if r["ms"] and r["status"] in ("ok", "unchecked")]
    if ranked:
        max(ranked, key=lambda r: r["tflops"])["fastest"] = True
    return rows


# ---- output ----------------------------------------------------------------------------------
COLUMNS = ["variant", "ms", "p20-p80 ms", "TFLOP/s", "% cupy.matmul", "rel err", "status"]


def _fmt(x, fmt):
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def table_rows(rows: list[dict]) -> list[list[str]]:
    return [[r["variant"] + (" *" if r["fastest"] else ""), _fmt(r["ms"], ".3f"),
             f"{r['p20_ms']:.3f}-{r['p80_ms']:.3f}" if r["p20_ms"] is not None else "",
             _fmt(r["tflops"], ".1f"), _fmt(r["pct"], ".1f"),
             _fmt(r["rel_err"], ".1e") if r["rel_err"] is not None else "", r["status"]] for r in rows]


def format_table(rows: list[dict], markdown: bool = False) -> str:
    from tabulate import tabulate

    return tabulate(table_rows(rows), headers=COLUMNS, disable_numparse=True,
                    tablefmt="github" if markdown else "simple")


def metadata() -> dict:
    """Device, driver, CUDA, CuPy and date: stored with every result file."""
    import cupy

    dev = cupy.cuda.Device()
    props = cupy.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    drv = cupy.cuda.runtime.driverGetVersion()
    rt = cupy.cuda.runtime.runtimeGetVersion()
    return {"device": name, "compute_capability": f"sm_{dev.compute_capability}",
            "sms": props["multiProcessorCount"], "driver_cuda": f"{drv // 1000}.{drv % 1000 // 10}",
            "cuda_runtime": f"{rt // 1000}.{rt % 1000 // 10}", "cupy": cupy.__version__,
            "cupy_tf32": os.environ.get("CUPY_TF32", ""),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def device_line(meta: dict) -> str:
    return (f"{meta['device']} ({meta['compute_capability']}, {meta['sms']} SMs), driver CUDA "
            f"{meta['driver_cuda']}, runtime {meta['cuda_runtime']}, CuPy {meta['cupy']}, {meta['date']}")


def write_json(path: str, meta: dict, rows: list[dict], argv: list[str]):
    with open(path, "w") as f:
        json.dump({"meta": meta, "command": "python bench.py " + " ".join(argv), "rows": rows}, f, indent=1)


def write_csv(path: str, meta: dict, rows: list[dict]):
    keys = list(rows[0].keys()) + list(meta.keys())
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow({**r, **meta})


PLOT_TOP = 8  # variants drawn in colour, with a legend entry, in a sweep plot


def plot(path: str, meta: dict, rows: list[dict]):
    """TFLOP/s per variant across the shapes, cupy.matmul as a thick black line (one shape: bars)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shapes = list(dict.fromkeys((r["M"], r["N"], r["K"]) for r in rows))
    names = list(dict.fromkeys(r["variant"] for r in rows))
    value = {(r["variant"], r["M"], r["N"], r["K"]): r["tflops"] for r in rows
             if r["tflops"] and r["status"] in ("ok", "baseline", "unchecked")}
    title = f"cugemm {rows[0]['dtype']} on {meta['device']} ({meta['date']})"
    if len(shapes) == 1:
        s = shapes[0]
        pairs = sorted(((value[(n, *s)], n) for n in names if (n, *s) in value))
        fig, ax = plt.subplots(figsize=(10, 0.32 * len(pairs) + 1.5))
        ax.barh([n for _, n in pairs], [v for v, _ in pairs],
                color=["black" if n == "cupy.matmul" else "tab:blue" for _, n in pairs])
        ax.set_xlabel("TFLOP/s")
        ax.set_title(f"{title}\nM={s[0]} N={s[1]} K={s[2]}", fontsize=10)
    else:
        fig, ax = plt.subplots(figsize=(max(10, 0.45 * len(shapes) + 4), 7))
        x = range(len(shapes))

        # the TOP fastest variants (by mean TFLOP/s over the sweep) in colour with a legend; the
        # rest as thin grey lines, so the picture stays readable with dozens of variants
        def mean(n):
            vals = [value[(n, *s)] for s in shapes if (n, *s) in value]
            return sum(vals) / len(vals) if vals else None

        ranked = sorted((n for n in names if n != "cupy.matmul" and mean(n) is not None), key=mean,
                        reverse=True)
        top, rest = ranked[:PLOT_TOP], ranked[PLOT_TOP:]
        for i, n in enumerate(rest):
            ys = [value.get((n, *s), float("nan")) for s in shapes]
            ax.plot(x, ys, color="0.75", lw=0.8, zorder=1,
                    label=f"{len(rest)} other variants" if i == 0 else None)
        cmap = plt.get_cmap("tab10")
        for i, n in enumerate(top):
            ys = [value.get((n, *s), float("nan")) for s in shapes]
            ax.plot(x, ys, marker="o", ms=3, lw=1.6, color=cmap(i % 10), zorder=2, label=n)
        ys = [value.get(("cupy.matmul", *s), float("nan")) for s in shapes]
        ax.plot(x, ys, color="black", lw=3, zorder=3, label="cupy.matmul (cuBLAS)")
        ax.set_xticks(list(x))
        ax.set_xticklabels([f"{m}x{n}x{k}" for m, n, k in shapes], rotation=60, ha="right", fontsize=7)
        ax.set_ylabel("TFLOP/s")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ---- command line ----------------------------------------------------------------------------
def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench.py", description=__doc__.splitlines()[0])
    p.add_argument("--m", type=int, nargs="+", default=[4096], help="M values (default 4096)")
    p.add_argument("--n", type=int, nargs="+", default=[4096], help="N values (default 4096)")
    p.add_argument("--k", type=int, nargs="+", default=[1024], help="K values (default 1024)")
    p.add_argument("--sweep", choices=sorted(SWEEPS), help="a named shape grid instead of --m/--n/--k")
    p.add_argument("--shapes", help="explicit shapes instead of --m/--n/--k: MxNxK,MxNxK,...")
    p.add_argument("--max-size", type=int, default=None, help="drop sweep shapes with a dimension over this")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="f32", help="f32 (default), f16 or tf32")
    p.add_argument("--variants", default=None, help="glob(s) over variant names, comma-separated")
    p.add_argument("--warmup", type=int, default=5, help="warm-up launches per variant (default 5)")
    p.add_argument("--iters", type=int, default=50, help="timed repetitions, median taken (default 50)")
    p.add_argument("--no-check", action="store_true", help="skip the correctness check before timing")
    p.add_argument("--json", metavar="PATH", help="write the rows and the run's metadata as JSON")
    p.add_argument("--csv", metavar="PATH", help="write the rows as CSV")
    p.add_argument("--markdown", action="store_true", help="print markdown tables")
    p.add_argument("--plot", metavar="PATH", help="draw TFLOP/s per variant to a PNG (needs matplotlib)")
    return p


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    if args.sweep and args.shapes:
        print("bench: give --sweep or --shapes, not both")
        return 2
    shapes = (sweep_shapes(args.sweep, args.max_size) if args.sweep
              else parse_shapes(args.shapes) if args.shapes else _grid(args.m, args.n, args.k))
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print("bench: --plot needs matplotlib (pip install 'cugemm[plot]')")
            return 2
    if not toolkit.have_gpu():
        print("bench: no CUDA GPU found; the bench needs one (`python -m cugemm compile` does not)")
        return 2
    dtype_in, math_dtype = DTYPES[args.dtype]
    tf32_env = os.environ.get("CUPY_TF32", "0") not in ("", "0")
    if args.dtype == "tf32" and not tf32_env:
        # CuPy reads CUPY_TF32 once: run again with it set, so the baseline is cuBLAS TF32
        os.environ["CUPY_TF32"] = "1"
        os.execv(sys.executable, [sys.executable, "-m", "cugemm", "bench"] + argv)
    chosen = variants(args.variants, dtype=dtype_in, math_dtype=math_dtype)
    if not chosen:
        print(f"bench: no {args.dtype} variant matches {args.variants!r}")
        return 2
    meta = metadata()
    print(device_line(meta))
    if args.dtype == "f32" and tf32_env:
        print("bench: note: CUPY_TF32 is set, so the cupy.matmul baseline runs in TF32")

    from . import jit

    progress = Progress(len(chosen), "compile")
    for v in chosen:  # compile (or load from CuPy's cache) up front, so timing starts warm
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
        nbytes = (M * K + K * N + M * N) * np.dtype(dtype_in).itemsize
        print(f"\nM={M} N={N} K={K} {args.dtype}: median of up to {args.iters} runs"
              f"{', L2 flushed' if nbytes <= timer.l2_bytes else ''}, "
              f"baseline cupy.matmul{' (TF32)' if args.dtype == 'tf32' else ''}; * = fastest")
        print(format_table(rows, markdown=args.markdown))
        sys.stdout.flush()
    if args.json:
        write_json(args.json, meta, all_rows, argv)
    if args.csv:
        write_csv(args.csv, meta, all_rows)
    if args.plot:
        plot(args.plot, meta, all_rows)
    return 0


# ---- README results ----------------------------------------------------------------------------
README_BEGIN = "<!-- results:begin (generated by scripts/readme_results.py; do not edit by hand) -->"
README_END = "<!-- results:end -->"


def results_markdown(data: dict, source: str) -> str:
    """One markdown table from a bench JSON file: a row per variant, TFLOP/s and % of cupy.matmul per
    shape, the fastest per shape in bold, failures named."""
    meta, rows = data["meta"], data["rows"]
    shapes = list(dict.fromkeys((r["M"], r["N"], r["K"]) for r in rows))
    names = list(dict.fromkeys(r["variant"] for r in rows))
    by = {(r["variant"], r["M"], r["N"], r["K"]): r for r in rows}
    dtype = rows[0]["dtype"] if rows else "?"
    head = ["variant"] + [f"{m}x{n}x{k} TFLOP/s (% cuBLAS)" for m, n, k in shapes]
    lines = [f"**{dtype}** on {meta['device']} ({meta['compute_capability']}), driver CUDA "
             f"{meta['driver_cuda']}, CuPy {meta['cupy']}, {meta['date']}: `{data['command']}` "
             f"([{source}]({source}))", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for n in names:
        cells = []
        for s in shapes:
            r = by.get((n, *s))
            if r is None:
                cells.append("")
            elif r["tflops"] is None or r["status"] not in ("ok", "baseline", "unchecked"):
                cells.append(r["status"].split(":")[0] if r["status"] else "")
            else:
                cell = f"{r['tflops']:.1f} ({r['pct']:.0f}%)"
                cells.append(f"**{cell}**" if r.get("fastest") else cell)
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def readme_block(paths: list[str]) -> str:
    parts = []
    for p in paths:
        with open(p) as f:
            parts.append(results_markdown(json.load(f), p))
    return README_BEGIN + "\n" + "\n\n".join(parts) + "\n" + README_END
