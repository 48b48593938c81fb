// cugemm/kernels/lib/tma.cuh: the Tensor Memory Accelerator (sm_90): bulk tensor copies between
// global and shared memory described by a tensor map (CUtensorMap) built on the host
// (cugemm/tma.py: cuTensorMapEncodeTiled) and passed by value as a kernel parameter:
//
//   __global__ void k(const __grid_constant__ TensorMap tmap_a, ...)
//
// A load names the map, the box's first coordinates (innermost dimension first) and an mbarrier;
// the copy engine fetches the box (zero-filling what lies outside the tensor), writes it into
// shared memory in the map's swizzle layout and completes `bytes` transaction bytes on the
// mbarrier, so the consumers wait on the barrier, not on the copy. PTX ISA: "cp.async.bulk.tensor".
#pragma once
#include "core.cuh"

// CUtensorMap as the driver lays it out: 128 opaque bytes, 64-byte aligned. (cuda.h, which
// declares it, is a host header NVRTC cannot include.)
struct alignas(64) TensorMap {
  unsigned long long opaque[16];
};

// Fetch the tensor map into the constant cache ahead of its first use (one thread, at kernel start).
CUGEMM_DEVICE void tma_prefetch_map(const TensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(map)) : "memory");
}

// 2-D box at coordinates (c0 inner, c1 outer) -> shared memory at `dst`, completing on `bar`.
CUGEMM_DEVICE void tma_load_2d(void* dst, const TensorMap* map, unsigned long long* bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];\n" ::"r"(smem_addr(dst)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(smem_addr(bar)), "r"(c0), "r"(c1)
      : "memory");
}
// The same box delivered to the same shared-memory offset (and mbarrier offset) in every block of
// the cluster whose bit is set in `cta_mask`: one global read feeds several blocks.
CUGEMM_DEVICE void tma_load_2d_multicast(void* dst, const TensorMap* map, unsigned long long* bar,
                                         int c0, int c1, unsigned short cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4}], [%2], %5;\n" ::"r"(smem_addr(dst)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(smem_addr(bar)), "r"(c0), "r"(c1),
      "h"(cta_mask)
      : "memory");
}

// The two loads above with an L2 eviction policy (core.cuh: l2_policy_stream) on what they read.
CUGEMM_DEVICE void tma_load_2d(void* dst, const TensorMap* map, unsigned long long* bar, int c0, int c1,
                               unsigned long long policy) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%3, %4}], [%2], %5;\n" ::"r"(smem_addr(dst)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "l"(policy)
      : "memory");
}
CUGEMM_DEVICE void tma_load_2d_multicast(void* dst, const TensorMap* map, unsigned long long* bar, int c0, int c1,
                                         unsigned short cta_mask, unsigned long long policy) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      ".L2::cache_hint [%0], [%1, {%3, %4}], [%2], %5, %6;\n" ::"r"(smem_addr(dst)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "h"(cta_mask),
      "l"(policy)
      : "memory");
}

// ---- 3-D boxes: the same copies with a third coordinate c2 (a batch of matrices; the box is one
// matrix deep). Rung 7's batched form (04_persistent.cu) addresses batch z of A, B and C with them,
// the TF32 batched form (05_tf32.cu) A and B.
CUGEMM_DEVICE void tma_load_3d(void* dst, const TensorMap* map, unsigned long long* bar, int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5}], [%2];\n" ::"r"(smem_addr(dst)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}
CUGEMM_DEVICE void tma_load_3d(void* dst, const TensorMap* map, unsigned long long* bar, int c0, int c1, int c2,
                               unsigned long long policy) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%3, %4, %5}], [%2], %6;\n" ::"r"(smem_addr(dst)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2), "l"(policy)
      : "memory");
}
CUGEMM_DEVICE void tma_load_3d_multicast(void* dst, const TensorMap* map, unsigned long long* bar, int c0, int c1,
                                         int c2, unsigned short cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4, %5}], [%2], %6;\n" ::"r"(smem_addr(dst)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2),
      "h"(cta_mask)
      : "memory");
}
CUGEMM_DEVICE void tma_load_3d_multicast(void* dst, const TensorMap* map, unsigned long long* bar, int c0, int c1,
                                         int c2, unsigned short cta_mask, unsigned long long policy) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      ".L2::cache_hint [%0], [%1, {%3, %4, %5}], [%2], %6, %7;\n" ::"r"(smem_addr(dst)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2),
      "h"(cta_mask), "l"(policy)
      : "memory");
}
CUGEMM_DEVICE void tma_store_3d(const TensorMap* map, const void* src, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];\n" ::"l"(
                   reinterpret_cast<unsigned long long>(map)),
               "r"(smem_addr(src)), "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}

// 2-D box of shared memory at `src` -> global at coordinates (c0, c1); the part of the box outside
// the tensor is not written. The writing threads fence (fence_proxy_async_shared) and sync first.
CUGEMM_DEVICE void tma_store_2d(const TensorMap* map, const void* src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(
                   reinterpret_cast<unsigned long long>(map)),
               "r"(smem_addr(src)), "r"(c0), "r"(c1)
               : "memory");
}
CUGEMM_DEVICE void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Wait until at most N committed store groups still read their shared-memory source.
template <int N>
CUGEMM_DEVICE void tma_store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
// Wait until at most N committed store groups are still pending at all (their global writes done,
// not only their shared-memory reads): before the kernel exits with stores in flight.
template <int N>
CUGEMM_DEVICE void tma_store_wait() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}

// ---- bulk (non-tensor) copies (sm_90) ----------------------------------------------------------
// `bytes` (a multiple of 16; both addresses 16-byte aligned) contiguous bytes of global memory at
// `src` -> shared memory at `dst`, completing `bytes` transaction bytes on `bar` (the issuing
// thread arms it first with mbarrier_arrive_expect_tx). PTX ISA: "cp.async.bulk".
CUGEMM_DEVICE void bulk_load(void* dst, const void* src, unsigned bytes, unsigned long long* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
          smem_addr(dst)),
      "l"(reinterpret_cast<unsigned long long>(src)), "r"(bytes), "r"(smem_addr(bar))
      : "memory");
}
