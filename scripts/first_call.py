#!/usr/bin/env python3
"""Seconds from import to the first finished cugemm.run of one variant in a fresh process: run it
twice with the same CUPY_CACHE_DIR to see a cold compile (NVRTC) and a warm one (CuPy disk cache).

    CUPY_CACHE_DIR=$(mktemp -d) python scripts/first_call.py [VARIANT]
"""
import argparse
import time


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("variant", nargs="?", default="sgemm_warp_tile")
    args = p.parse_args()
    t0 = time.perf_counter()
    import cupy

    import cugemm
    from cugemm import testing

    v = cugemm.get_variant(args.variant)
    a, b = testing.random_operands(v.dtype_in, *v.tile_shape(4, 4, 4), v.layout)
    cupy.cuda.Device().synchronize()
    t1 = time.perf_counter()
    cugemm.run(v, a, b)
    cupy.cuda.Device().synchronize()
    t2 = time.perf_counter()
    cugemm.run(v, a, b)
    cupy.cuda.Device().synchronize()
    t3 = time.perf_counter()
    print(f"{v.name}: import+setup {t1 - t0:.2f} s, first run {t2 - t1:.3f} s, second run {1e3 * (t3 - t2):.2f} ms")


if __name__ == "__main__":
    main()
