"""Compile (and load through CuPy, filling its disk cache) the fused-epilogue members the GPU tests
run: every composition on the two bases tests/test_gpu_epilogue.py names (and the covering ones on
its other bases: 64-row, ANY_C, mma.sync, ping-pong, STAGED), NVRTC programs in parallel.
Run before `pytest tests/test_gpu_epilogue.py` on a fresh GPU machine (scripts/device_check.sh epilogue)."""
import argparse
import time
from concurrent.futures import ThreadPoolExecutor


def _imports():
    from cugemm import epilogue, jit, registry

    return epilogue, jit, registry

BASES = ("hgemm_wgmma_m64n128k16_persistent_cluster2_tma_store_stage6_bcol",
         "hgemm_wgmma_m64n128k16_persistent_cluster2_tma_store_stage6_bcol_bf16")
SMALL_M = ("hgemm_wgmma_m64n64k16_small_m_stage12_bcol", "hgemm_wgmma_m64n64k16_small_m_stage12_bcol_bf16",
           "hgemm_wgmma_m64n256k16_persistent_cluster2_anyc_stage3_bcol",
           "hgemm_wgmma_m64n256k16_persistent_cluster2_anyc_stage3_bcol_bf16",  # the ANY_C form
           "hgemm_mma_m16n8k16_mma2x4_warp4x8x4_stage3_swizzle_bswizzle_rbuf_epi_edge",  # the mma.sync rung
           "bgemm_mma_m16n8k16_mma2x4_warp4x8x4_stage3_swizzle_bswizzle_rbuf_epi_edge",
           "hgemm_wgmma_m64n128k16_persistent_pingpong_cluster2_tma_store_stage6_bcol",  # the ping-pong form
           "hgemm_wgmma_m64n128k16_persistent_pingpong_cluster2_tma_store_stage6_bcol_bf16",
           "hgemm_wgmma_m64n256k16_persistent_cluster2_tma_staged_stage3_bcol",  # the STAGED forms
           "hgemm_wgmma_m64n256k16_persistent_cluster2_tma_staged_stage3_bcol_bf16",
           "hgemm_wgmma_m64n128k16_persistent_cluster2_tma_staged_stage6_bcol",
           "hgemm_wgmma_m64n128k16_persistent_cluster2_tma_staged_stage6_bcol_bf16")


def main(workers: int = 16, match: str = "") -> None:
    epilogue, jit, registry = _imports()
    t = time.time()
    vs = [epilogue.variant(registry.get_variant(b), s) for b in BASES for s in epilogue.specs()]
    vs += [epilogue.variant(registry.get_variant(b), s) for b in SMALL_M for s in epilogue.COVER
           if epilogue.capable(registry.get_variant(b))]  # (ping-pong: NVRTC 13 on)
    vs = [v for v in vs if match in v.name]
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(jit.get_function, vs))
    print(f"warm_epilogue: {len(vs)} fused members loaded in {time.time() - t:.1f} s")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workers", nargs="?", type=int, default=16, help="parallel NVRTC compiles (default 16)")
    ap.add_argument("--match", default="", help="only the members whose name contains this")
    a = ap.parse_args()
    main(a.workers, a.match)
