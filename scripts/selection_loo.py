#!/usr/bin/env python3
"""How well cugemm.matmul's measured estimates choose where nobody measured: leave one bucket out.

    python3 scripts/selection_loo.py [--table cugemm/tables/h100.json] [--gpu "NVIDIA H200"]

For every bucket of the shipped table with two or more timed plans, the bucket is hidden, the
remaining table estimates each of its plans at the bucket's shape (tuning.Measured, as matmul
does), and the plan with the best estimate is compared with the bucket's own measurements: the
regret is its measured time over the best measured time. Prints, per group (element type and
layouts), the buckets, how often the best plan was picked, and the regret's geometric mean, 90th
percentile and worst. No GPU needed.
"""
import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def problem(group: str, shape, device):
    """The select.Problem of a bucket's shape: dense, 16-byte-aligned operands of its group."""
    from cugemm import dtypes, select
    from cugemm.operand import Layout

    dt, layouts, _, *batched = group.split("|")  # ('...|batched': a batch in one launch, as its stacked rows)
    tf32 = dt.endswith("+tf32")
    la, lb = layouts.split(",")
    M, N, K = shape
    lay = lambda layout, rows, cols: Layout(layout, cols if layout == "row" else rows, 16)  # noqa: E731
    return select.Problem(M, N, K, dtypes.get(dt.replace("+tf32", "")), lay(la, M, K), lay(lb, K, N),
                          lay("row", M, N), device, tf32, batched=batched == ["batched"])


def regrets(entries: dict, device) -> dict:
    """{group: [regret, ...]} over the buckets of `entries` (left out one at a time)."""
    from cugemm import registry, tuning

    out: dict = {}
    for key, rec in entries.items():
        group = key.rsplit("|", 1)[0]
        if len(rec["us"]) < 2 or group.endswith("unaligned"):
            continue
        rest = tuning.Measured(tuning.Table({k: r for k, r in entries.items() if k != key}, "table"))
        p = problem(group, rec["shape"], device)
        est = {}
        for name in rec["us"]:
            hit = rest(registry.get_variant(name), p)
            if hit is not None:
                est[name] = hit[0]
        if est:
            chosen = min(est, key=est.get)
            out.setdefault(group, []).append(rec["us"][chosen] / min(rec["us"].values()))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--table", default=str(Path(__file__).resolve().parents[1] / "cugemm" / "tables" / "h100.json"))
    p.add_argument("--gpu", default="NVIDIA H200", help="the GPU record's name (132 SMs, sm_90)")
    args = p.parse_args()
    from cugemm.device import Device

    entries = json.loads(Path(args.table).read_text())["entries"]
    for group, r in sorted(regrets(entries, Device(90, 132, 232448, args.gpu)).items()):
        r.sort()
        gm = math.exp(sum(map(math.log, r)) / len(r))
        print(f"{group:<32} {len(r):4d} buckets, best picked {sum(x == 1.0 for x in r):4d}, regret geomean "
              f"{gm:.4f}, p90 {r[int(0.9 * len(r))]:.3f}, worst {r[-1]:.3f}")


if __name__ == "__main__":
    main()
