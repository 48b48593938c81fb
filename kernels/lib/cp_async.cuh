// cugemm/kernels/lib/cp_async.cuh: cp.async, global -> shared copies that bypass registers (sm_80+).
#pragma once
#include "core.cuh"

// 16 bytes, cached in L2 only (.cg): for tiles read once per block.
CUGEMM_DEVICE void cp_async_16(void* smem, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(smem)), "l"(gmem));
}
// The same to a shared-window address, reading `bytes` (0 or 16) of gmem and zero-filling the rest
// of the 16: with bytes = 0 nothing is read (gmem may point anywhere, e.g. past the matrix edge)
// and the 16 bytes are zeros. The edge kernels use it for tiles that hang over M, N or K.
CUGEMM_DEVICE void cp_async_16_zfill(unsigned smem, const void* gmem, unsigned bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem), "l"(gmem), "r"(bytes));
}
// The same with an L2 eviction policy (core.cuh: l2_policy_stream) on the lines it reads.
CUGEMM_DEVICE void cp_async_16_zfill(unsigned smem, const void* gmem, unsigned bytes, unsigned long long policy) {
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(smem), "l"(gmem),
               "r"(bytes), "l"(policy));
}
// 4 bytes (.ca, the only form for sizes under 16): used where a tile is transposed on its way
// into shared memory, one element at a time.
CUGEMM_DEVICE void cp_async_4(void* smem, const void* gmem) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(smem_addr(smem)), "l"(gmem));
}
CUGEMM_DEVICE void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Wait until at most N committed groups are still in flight. The memory clobber keeps the compiler
// from moving shared-memory reads of the landed data above the wait.
template <int N>
CUGEMM_DEVICE void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }
// 16 bytes to a shared-window address (smem_addr; what swizzled tiles compute as offsets from a
// stage base), cached in L2 only (.cg).
CUGEMM_DEVICE void cp_async_16(unsigned smem, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem), "l"(gmem));
}
