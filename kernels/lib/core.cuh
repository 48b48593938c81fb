// cugemm/kernels/lib/core.cuh: the one macro every device helper uses, and the generic -> shared
// address conversion the PTX wrappers need.
//
// kernels/lib/ is cugemm's shared device library. Every header is self-contained (it includes what
// it uses, so the order of #include lines never matters), holds no host code, and defines each
// helper once; the family folders (kernels/<family>/) include what they use from here. The JIT
// (cugemm/jit.py) pastes project headers into the kernel source in place of their #include
// "..." lines (#pragma once is honoured), so CuPy's disk cache, keyed on the source text, sees
// every edit made here. CUDA's own headers (#include <...>) stay includes.
//
//   core.cuh      CUGEMM_DEVICE, smem_addr, L2 eviction policies (createpolicy)
//   move.cuh      16/8/4-byte vector moves and N-float register-array loads/stores
//   half.cuh      half2 bit casts, N-half register-array loads/stores, the HFMA2 broadcast
//   cp_async.cuh  cp.async (sm_80+): 16-byte (optionally zero-filling) and 4-byte copies, groups
//   pipeline.cuh  the multi-stage cp.async ring over K-tiles (one barrier per K-tile)
//   mma.cuh       ldmatrix / stmatrix and mma.sync (fp16, bf16, tf32), TF32 rounding
//   swizzle.cuh   shared-memory XOR swizzles (the 128-byte TMA/wgmma layout), 1024-byte alignment
//   raster.cuh    grid rasterisation: the order blocks (or persistent tiles) walk C in
//   barrier.cuh   named barriers, mbarriers, async-proxy fences, setmaxnreg (sm_90)
//   tma.cuh       TMA (cp.async.bulk.tensor) loads and stores, the CUtensorMap parameter (sm_90)
//   wgmma.cuh     warpgroup MMA (sm_90a): descriptors, fences, commit/wait, the instructions
#pragma once

#define CUGEMM_DEVICE __device__ __forceinline__

// The 32-bit shared-window address of a pointer into shared memory (what PTX .shared operands take).
CUGEMM_DEVICE unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// ---- programmatic dependent launch (sm_90; PTX "griddepcontrol") -------------------------------
// A kernel launched with the driver's programmatic-stream-serialization attribute (cugemm/pdl.py)
// may start while the kernel before it in the stream still runs: grid_dependency_wait() blocks
// until that kernel has completed and its memory writes are visible, so a kernel calls it before
// its first access to global memory the previous kernel may touch. grid_launch_dependents() lets
// the next such kernel start launching blocks (onto SMs as they free). No-ops below sm_90, and
// when the launch carried no such attribute.
CUGEMM_DEVICE void grid_dependency_wait() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
CUGEMM_DEVICE void grid_launch_dependents() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// ---- L2 eviction priority of a load (sm_80+; PTX "createpolicy", ".L2::cache_hint") --------------
// A policy is an opaque 64-bit register that copies tagged .L2::cache_hint (cp.async, TMA) carry.
// l2_policy_stream(): evict_first, for the operand a GEMM streams (B, the weight of x @ W): the L2
// lines its copies fill are the first of their set to be given up, so the stream of B replaces its
// own earlier lines instead of whatever else the L2 holds. CUGEMM_B_EVICT_FIRST=0 (a compile-time
// switch, default 1) builds it as evict_normal, what an untagged load gets (scripts/define_probe.py
// measures the difference; the reasons and the numbers: docs/kernels_lib.md).
#ifndef CUGEMM_B_EVICT_FIRST
#define CUGEMM_B_EVICT_FIRST 1
#endif
CUGEMM_DEVICE unsigned long long l2_policy_stream() {
  unsigned long long policy;
#if CUGEMM_B_EVICT_FIRST
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
#else
  asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;\n" : "=l"(policy));
#endif
  return policy;
}
