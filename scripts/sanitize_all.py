#!/usr/bin/env python3
"""Run every registered variant once or twice at small legal shapes, checking each result; meant to
run under compute-sanitizer (memcheck, racecheck):

    compute-sanitizer --tool memcheck --error-exitcode 9 python3 scripts/sanitize_all.py

Shapes: three K tiles (so double-buffered and multistage pipelines wrap around their buffers) over
one block tile (any-shape variants: an odd shape that cuts every tile edge), then a 2x1-tile shape
unless --quick.
Exits 1 if any result is wrong.
"""
import sys

import cupy

import cugemm
from cugemm import accuracy

args = [a for a in sys.argv[1:] if a != "--quick"]
quick = "--quick" in sys.argv  # one shape per variant (racecheck is slow)
pattern = args[0] if args else None
bad = 0
chosen = cugemm.variants(pattern)
for v in chosen:
    if v.any_shape:
        shapes = [(v.tile[0] + 3, v.tile[1] + 5, 3 * max(v.tile[2], 1) + 1)]
    else:
        shapes = [v.tile_shape(1, 1, 3)]
    if not quick:
        shapes.append(v.tile_shape(2, 1, 2))
    for M, N, K in shapes:
        a = cupy.random.standard_normal((M, K), dtype=cupy.float32).astype(v.dtype_in)
        b = cupy.random.standard_normal((K, N), dtype=cupy.float32).astype(v.dtype_in)
        if v.layout == "col":
            a, b = cupy.asfortranarray(a), cupy.asfortranarray(b)
        out = cupy.full((M, N), cupy.nan, dtype=v.dtype_out, order="F" if v.layout == "col" else "C")
        cugemm.run(v, a, b, out=out)
        err, ok = accuracy.check(out, accuracy.reference(a, b), v)
        if not ok:
            bad += 1
            print(f"WRONG {v.name} {M}x{N}x{K}: rel err {err:.2e}")
cupy.cuda.Device().synchronize()
print(f"sanitize_all: {len(chosen)} variants run, {bad} wrong results")
sys.exit(1 if bad else 0)
