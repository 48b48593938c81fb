#!/usr/bin/env python3
"""Seconds from import to the first finished cugemm.run of one variant in a fresh process: run it
twice with the same CUPY_CACHE_DIR to see a cold compile (NVRTC) and a warm one (CuPy disk cache)."""
import sys
import time

t0 = time.perf_counter()
import cupy  # noqa: E402

import cugemm  # noqa: E402

name = sys.argv[1] if len(sys.argv) > 1 else "sgemm_warp_tile"
a = cupy.random.standard_normal((512, 512), dtype=cupy.float32)
b = cupy.random.standard_normal((512, 512), dtype=cupy.float32)
cupy.cuda.Device().synchronize()
t1 = time.perf_counter()
cugemm.run(name, a, b)
cupy.cuda.Device().synchronize()
t2 = time.perf_counter()
cugemm.run(name, a, b)
cupy.cuda.Device().synchronize()
t3 = time.perf_counter()
print(f"{name}: import+setup {t1 - t0:.2f} s, first run {t2 - t1:.3f} s, second run {1e3 * (t3 - t2):.2f} ms")
