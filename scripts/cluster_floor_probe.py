#!/usr/bin/env python3
"""What a thread-block cluster costs a kernel that does nothing: the GPU duration (torch.profiler's CUDA
activity) of near-empty kernels of 384 threads, with and without clusters, large dynamic shared
memory or not, and the cluster barriers the wgmma rungs run at their start and end, one process.

    python3 scripts/cluster_floor_probe.py [--blocks 128] [--smem 200000]

Each kernel writes one word per block (so that it is not empty) and, where named, runs
barrier.cluster arrive/wait once (release/acquire, or relaxed) at the start and at the end.
"""
import argparse
import statistics

SRC = r"""
extern "C" __global__ void __launch_bounds__(384, 1) k_plain(unsigned* out) {
  extern __shared__ char s[];
  if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}
extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(384, 1) k_c2(unsigned* out) {
  extern __shared__ char s[];
  if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}
extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(384, 1) k_c2_sync(unsigned* out) {
  extern __shared__ char s[];
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
  if (threadIdx.x == 0) out[blockIdx.x] = s[0];
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(384, 1) k_c2_relaxed(unsigned* out) {
  extern __shared__ char s[];
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\nbarrier.cluster.wait.aligned;\n" ::: "memory");
  if (threadIdx.x == 0) out[blockIdx.x] = s[0];
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\nbarrier.cluster.wait.aligned;\n" ::: "memory");
}
extern "C" __global__ void __cluster_dims__(4, 1, 1) __launch_bounds__(384, 1) k_c4(unsigned* out) {
  extern __shared__ char s[];
  if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}
"""


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--blocks", type=int, default=128)
    p.add_argument("--smem", type=int, default=200_000)
    args = p.parse_args()
    import cupy
    import torch
    from torch.profiler import ProfilerActivity, profile

    mod = cupy.RawModule(code=SRC, options=("-arch=sm_90a", "-std=c++17"))
    out = cupy.zeros(4096, dtype=cupy.uint32)
    print(torch.cuda.get_device_name())
    for name in ("k_plain", "k_c2", "k_c2_sync", "k_c2_relaxed", "k_c4"):
        f = mod.get_function(name)
        for smem in (1024, args.smem):
            f.max_dynamic_shared_size_bytes = smem

            def run():
                f((args.blocks,), (384,), (out,), shared_mem=smem)

            run()
            cupy.cuda.Device().synchronize()
            per = []
            for _ in range(5):
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    for _ in range(20):
                        run()
                    cupy.cuda.Device().synchronize()
                per.append(sum(e.device_time_total for e in prof.key_averages() if e.device_type.name == "CUDA") / 20)
            print(f"{name:14s} smem {smem:7d}  {statistics.median(per):6.2f} us per launch", flush=True)


if __name__ == "__main__":
    main()
