"""Compile (and load through CuPy, filling its disk cache) the fused-epilogue members the GPU tests
run: every composition on the two bases tests/test_gpu_epilogue.py names, NVRTC programs in parallel.
Run before `pytest tests/test_gpu_epilogue.py` on a fresh GPU machine (scripts/device_check.sh epilogue)."""
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from cugemm import epilogue, jit, registry

BASES = ("hgemm_wgmma_m64n128k16_persistent_cluster2_tma_store_stage6_bcol",
         "hgemm_wgmma_m64n128k16_persistent_cluster2_tma_store_stage6_bcol_bf16")


def main(workers: int = 16) -> None:
    t = time.time()
    vs = [epilogue.variant(registry.get_variant(b), s) for b in BASES for s in epilogue.specs()]
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(jit.get_function, vs))
    print(f"warm_epilogue: {len(vs)} fused members loaded in {time.time() - t:.1f} s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 16)
