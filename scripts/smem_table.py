#!/usr/bin/env python3
"""Write cugemm/tables/smem.json: each kernel's dynamic shared memory as its file declares it
(`<template>_smem_bytes<params>`), read from the PTX NVRTC compiles (offline, no GPU needed).

    python3 scripts/smem_table.py            # compile every variant once, write the table
    python3 scripts/smem_table.py --check    # exit 1 (and list them) where the table is stale

The registry reads the table (cugemm.variant.declared_smem); tests/test_compile.py checks every
entry against the PTX of every arch a variant claims. Run it after changing a kernel's shared-memory
layout or adding a variant.
"""
import argparse
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def declared(v):
    """(name expression of v's declaration, its value in the PTX) or None when it declares none."""
    from cugemm import jit

    if f"{v.template}_smem_bytes" not in jit.source(v):
        return None
    r = jit.compile_offline(v, v.archs[0])
    return v.template_expression(f"{v.template}_smem_bytes"), r.smem_declared


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true", help="compare instead of writing")
    p.add_argument("--jobs", type=int, default=4)
    args = p.parse_args()
    from cugemm import registry, variant

    with ThreadPoolExecutor(args.jobs) as pool:
        found = dict(x for x in pool.map(declared, registry.variants()) if x is not None)
    table = dict(sorted(found.items()))
    if args.check:
        old = json.loads(variant.SMEM_TABLE.read_text())
        stale = sorted(k for k in table.keys() | old.keys() if table.get(k) != old.get(k))
        for k in stale:
            print(f"stale: {k}: table {old.get(k)}, PTX {table.get(k)}")
        sys.exit(1 if stale else 0)
    variant.SMEM_TABLE.write_text(json.dumps(table, indent=0) + "\n")
    print(f"smem_table: {len(table)} declarations written to {variant.SMEM_TABLE}")


if __name__ == "__main__":
    main()
