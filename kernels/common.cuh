// cugemm/kernels/common.cuh: device helpers shared by every kernel family, one place each.
//
// The JIT (cugemm/jit.py) pastes this file into each kernel source in place of its
// `#include "../common.cuh"` line, so CuPy's disk cache (keyed on the source text) sees every
// edit made here. Keep it free of host code and of any #include of a CUDA header.
#pragma once

#define CUGEMM_DEVICE __device__ __forceinline__

// ---- 16-byte vector access ---------------------------------------------------------------
// The address must be 16-byte aligned; callers guarantee it through their shape rules
// (row lengths that are multiples of 4 floats, tile offsets that are multiples of 4).
CUGEMM_DEVICE float4 load_f32x4(const float* p) { return *reinterpret_cast<const float4*>(p); }
CUGEMM_DEVICE void store_f32x4(float* p, const float4& v) { *reinterpret_cast<float4*>(p) = v; }
CUGEMM_DEVICE float2 load_f32x2(const float* p) { return *reinterpret_cast<const float2*>(p); }
CUGEMM_DEVICE void store_f32x2(float* p, const float2& v) { *reinterpret_cast<float2*>(p) = v; }

// ---- N contiguous floats between memory and a register array --------------------------------
// load_f32xN / store_f32xN use the widest access N allows: float4 if N % 4 == 0, else float2 if
// N % 2 == 0, else scalars; the memory address must be aligned to that width. N is a template
// constant, so only one branch survives, and once inlined and unrolled every index into the
// register array `r` is a compile-time constant (it stays in registers, never local memory).
template <int N>
CUGEMM_DEVICE void load_f32xN(float* r, const float* p) {
  if (N % 4 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 4) {
      const float4 v = load_f32x4(p + i);
      r[i] = v.x; r[i + 1] = v.y; r[i + 2] = v.z; r[i + 3] = v.w;
    }
  } else if (N % 2 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 2) {
      const float2 v = load_f32x2(p + i);
      r[i] = v.x; r[i + 1] = v.y;
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) r[i] = p[i];
  }
}
template <int N>
CUGEMM_DEVICE void store_f32xN(float* p, const float* r) {
  if (N % 4 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 4) {
      float4 v;
      v.x = r[i]; v.y = r[i + 1]; v.z = r[i + 2]; v.w = r[i + 3];
      store_f32x4(p + i, v);
    }
  } else if (N % 2 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 2) {
      float2 v;
      v.x = r[i]; v.y = r[i + 1];
      store_f32x2(p + i, v);
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) p[i] = r[i];
  }
}

// ---- raw 16- and 8-byte moves, for any element type (8 halves, 4 floats, ...) ------------------
// Both addresses must be aligned to the width.
CUGEMM_DEVICE void copy_16B(void* dst, const void* src) {
  *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
}
CUGEMM_DEVICE void copy_8B(void* dst, const void* src) {
  *reinterpret_cast<uint2*>(dst) = *reinterpret_cast<const uint2*>(src);
}

// ---- cp.async: global -> shared copies that bypass registers (sm_80+) -------------------------
CUGEMM_DEVICE unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// 16 bytes, cached in L2 only (.cg): for tiles read once per block.
CUGEMM_DEVICE void cp_async_16(void* smem, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(smem)), "l"(gmem));
}
// 4 bytes (.ca, the only form for sizes under 16): used where a tile is transposed on its way
// into shared memory, one element at a time.
CUGEMM_DEVICE void cp_async_4(void* smem, const void* gmem) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(smem_addr(smem)), "l"(gmem));
}
CUGEMM_DEVICE void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Wait until at most N committed groups are still in flight.
template <int N>
CUGEMM_DEVICE void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }
