#!/usr/bin/env python3
"""Run every registered variant once or twice at small legal shapes, checking each result; meant to
run under compute-sanitizer (memcheck, racecheck):

    compute-sanitizer --tool memcheck --error-exitcode 9 python3 scripts/sanitize_all.py

Shapes: three K tiles (so double-buffered and multistage pipelines wrap around their buffers) over
1x1 and 2x1 block tiles; any-shape variants also get an odd shape that cuts every tile edge.
Exits 1 if any result is wrong.
"""
import sys

import cupy

import cugemm
from cugemm import accuracy

pattern = sys.argv[1] if len(sys.argv) > 1 else None
bad = 0
chosen = cugemm.variants(pattern)
for v in chosen:
    shapes = [v.tile_shape(1, 1, 3), v.tile_shape(2, 1, 2)]
    if v.any_shape:
        shapes.append((v.tile[0] + 3, v.tile[1] + 5, 3 * max(v.tile[2], 1) + 1))
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
