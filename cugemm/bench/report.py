"""Reporting bench rows: the console/markdown table, the result files (JSON, CSV) with the run's
metadata, the plot, and README's results section generated from committed JSON files."""
from __future__ import annotations

import csv
import datetime
import json
import math
import os

from .measure import Row, Status

COLUMNS = ["variant", "ms", "p20-p80 ms", "TFLOP/s", "% cupy.matmul", "rel err", "status"]


def _fmt(x, fmt):
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def table_rows(rows: list[Row]) -> list[list[str]]:
    return [[r.variant + (" *" if r.fastest else ""), _fmt(r.ms, ".3f"),
             f"{r.p20_ms:.3f}-{r.p80_ms:.3f}" if r.p20_ms is not None else "",
             _fmt(r.tflops, ".1f"), _fmt(r.pct, ".1f"),
             _fmt(r.rel_err, ".1e") if r.rel_err is not None else "", r.label] for r in rows]


def format_table(rows: list[Row], markdown: bool = False) -> str:
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


def write_json(path: str, meta: dict, rows: list[Row], argv: list[str]):
    with open(path, "w") as f:
        json.dump({"meta": meta, "command": "python bench.py " + " ".join(argv),
                   "rows": [r.as_dict() for r in rows]}, f, indent=1)


def read_json(path: str) -> tuple[dict, list[Row]]:
    """(the file's whole record, its rows as Row objects)."""
    with open(path) as f:
        data = json.load(f)
    return data, [Row.from_dict(r) for r in data["rows"]]


def write_csv(path: str, meta: dict, rows: list[Row]):
    dicts = [r.as_dict() for r in rows]
    keys = list(dicts[0].keys()) + list(meta.keys())
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        for d in dicts:
            w.writerow({**d, **meta})


PLOT_TOP = 8  # variants drawn in colour, with a legend entry, in a sweep plot


def plot(path: str, meta: dict, rows: list[Row]):
    """TFLOP/s per variant across the shapes, cupy.matmul as a thick black line (one shape: bars)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shapes = list(dict.fromkeys((r.M, r.N, r.K) for r in rows))
    names = list(dict.fromkeys(r.variant for r in rows))
    value = {(r.variant, r.M, r.N, r.K): r.tflops for r in rows if r.tflops and r.timed}
    title = f"cugemm {rows[0].dtype} on {meta['device']} ({meta['date']})"
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


# ---- README results ----------------------------------------------------------------------------
README_BEGIN = "<!-- results:begin (generated by scripts/readme_results.py; do not edit by hand) -->"
README_END = "<!-- results:end -->"


BASELINE_LABEL = "cupy.matmul, timed alone"  # the baseline row of the README tables
RATIO_NOTE = ("In every table below, a variant's % is the median of `cupy.matmul` over the median of the "
              "variant, the two timed alternating on the same inputs (`cugemm.bench.timing.measure_pair`); "
              f"the `{BASELINE_LABEL}` row is cuBLAS timed on its own, at the higher clock it gets alone, "
              "so a variant's TFLOP/s over that row's is not its %.")


def untimed_cell(r: Row) -> str:
    """A table cell for a row with no time, saying why: "rejected: M=4096 is over 16" for a shape rule
    (ValueError, raised before any launch), "error: <type>: <message>" for anything else that raised,
    "FAIL" (with the relative error) for a wrong result. The message is cut at its rule or first
    sentence, without the variant's name, and to 60 characters."""
    if r.status is Status.FAIL:
        ok = r.rel_err is not None and math.isfinite(r.rel_err)
        return "FAIL" + (f" (rel err {r.rel_err:.1e})" if ok else "")
    if r.status is not Status.ERROR:
        return r.label
    kind, sep, msg = (r.detail or "error").partition(": ")
    if not (sep and kind.isidentifier()):
        kind, msg = "", r.detail or "error"
    if msg.startswith(r.variant + ": "):
        msg = msg[len(r.variant) + 2:]
    msg = msg.split(" (rule:")[0].split(". ")[0].strip().replace("|", "\\|")
    msg = msg if len(msg) <= 60 else msg[:59].rstrip() + "..."
    return f"rejected: {msg}" if kind == "ValueError" else f"error: {kind + ': ' if kind else ''}{msg}"


def results_markdown(data: dict, rows: list[Row], source: str) -> str:
    """One markdown table from a bench JSON file: a row per variant, TFLOP/s and % of cupy.matmul per
    shape, the fastest per shape in bold, failures named."""
    meta = data["meta"]
    shapes = list(dict.fromkeys((r.M, r.N, r.K) for r in rows))
    names = list(dict.fromkeys(r.variant for r in rows))
    by = {(r.variant, r.M, r.N, r.K): r for r in rows}
    dtype = rows[0].dtype if rows else "?"
    head = ["variant"] + [f"{m}x{n}x{k} TFLOP/s (% cuBLAS)" for m, n, k in shapes]
    lines = [f"**{dtype}** on {meta['device']} ({meta['compute_capability']}), driver CUDA "
             f"{meta['driver_cuda']}, CuPy {meta['cupy']}, {meta['date']}: `{data['command']}` "
             f"([{source}]({source}))", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for n in names:
        cells = []
        label = BASELINE_LABEL if n == "cupy.matmul" else n
        for s in shapes:
            r = by.get((n, *s))
            if r is None:
                cells.append("")
            elif not r.timed or r.tflops is None:
                cells.append(untimed_cell(r))
            else:
                cell = f"{r.tflops:.1f} ({r.pct:.0f}%)"
                cells.append(f"**{cell}**" if r.fastest else cell)
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# families whose ladder README shows rung by rung, with each rung's gain over the one above it
LADDER_FAMILIES = ("hgemm_mma", "hgemm_wgmma")


def ladder_markdown(rows: list[Row], prefix: str) -> str:
    """The rungs of one family (variants named prefix...) in ladder order: TFLOP/s, % of cupy.matmul
    and the gain over the rung listed above it, per shape."""
    shapes = list(dict.fromkeys((r.M, r.N, r.K) for r in rows))
    names = [n for n in dict.fromkeys(r.variant for r in rows) if n.startswith(prefix)]
    if not names:
        return ""
    by = {(r.variant, r.M, r.N, r.K): r for r in rows}
    head = ["rung"] + [f"{m}x{n}x{k}: TFLOP/s (% cuBLAS), gain" for m, n, k in shapes]
    lines = [f"Ladder of `{prefix}` ({rows[0].dtype}), each rung against the one above it:", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    prev = {}
    for n in names:
        cells = []
        for s in shapes:
            r = by.get((n, *s))
            if r is None or not r.timed:
                cells.append(untimed_cell(r) if r else "")
                continue
            gain = f", {100 * (r.tflops / prev[s] - 1):+.0f}%" if s in prev else ""
            cells.append(f"{r.tflops:.1f} ({r.pct:.0f}%){gain}")
            prev[s] = r.tflops
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def readme_block(paths: list[str], root: str | None = None) -> str:
    """README's results section: RATIO_NOTE, then a table per bench JSON file (paths as README cites
    them, read relative to `root` if given) and the ladders of the full benches."""
    parts = [RATIO_NOTE]
    for p in paths:
        data, rows = read_json(os.path.join(root, p) if root else p)
        parts.append(results_markdown(data, rows, p))
        if "--variants" not in data["command"]:  # the ladders of the full benches
            parts += [t for t in (ladder_markdown(rows, f) for f in LADDER_FAMILIES) if t]
    return README_BEGIN + "\n" + "\n\n".join(parts) + "\n" + README_END
