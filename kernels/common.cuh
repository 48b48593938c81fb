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
// Wait until at most N committed groups are still in flight. The memory clobber keeps the compiler
// from moving shared-memory reads of the landed data above the wait.
template <int N>
CUGEMM_DEVICE void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

// ---- half / half2 ----------------------------------------------------------------------------
// Helpers for the fp16 kernels. They name half and half2, so they exist only where the kernel
// source has included <cuda_fp16.h> before this file (its include guard is __CUDA_FP16_H__);
// kernels of other dtypes see none of them.
#ifdef __CUDA_FP16_H__
// Bit casts between a 32-bit word and a half2 (low half = .x = the lower address in memory).
CUGEMM_DEVICE half2 u32_as_half2(unsigned u) {
  half2 h;
  memcpy(&h, &u, sizeof(h));
  return h;
}
CUGEMM_DEVICE unsigned half2_as_u32(const half2& h) {
  unsigned u;
  memcpy(&u, &h, sizeof(u));
  return u;
}

// N contiguous halves (N even) between memory and a register array of N/2 half2, r[j] holding
// elements 2j (.x) and 2j+1 (.y). The widest access N allows: 16 bytes if N % 8 == 0, 8 bytes if
// N % 4 == 0, else 4; the memory address must be aligned to that width. As with load_f32xN, N is
// a template constant, so once inlined every index into r is a compile-time constant.
template <int N>
CUGEMM_DEVICE void load_f16xN(half2* r, const half* p) {
  static_assert(N % 2 == 0, "halves move in pairs (half2)");
  if (N % 8 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 8) {
      const uint4 v = *reinterpret_cast<const uint4*>(p + i);
      r[i / 2 + 0] = u32_as_half2(v.x);
      r[i / 2 + 1] = u32_as_half2(v.y);
      r[i / 2 + 2] = u32_as_half2(v.z);
      r[i / 2 + 3] = u32_as_half2(v.w);
    }
  } else if (N % 4 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 4) {
      const uint2 v = *reinterpret_cast<const uint2*>(p + i);
      r[i / 2 + 0] = u32_as_half2(v.x);
      r[i / 2 + 1] = u32_as_half2(v.y);
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; i += 2) r[i / 2] = *reinterpret_cast<const half2*>(p + i);
  }
}
template <int N>
CUGEMM_DEVICE void store_f16xN(half* p, const half2* r) {
  static_assert(N % 2 == 0, "halves move in pairs (half2)");
  if (N % 8 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 8)
      *reinterpret_cast<uint4*>(p + i) =
          make_uint4(half2_as_u32(r[i / 2 + 0]), half2_as_u32(r[i / 2 + 1]),
                     half2_as_u32(r[i / 2 + 2]), half2_as_u32(r[i / 2 + 3]));
  } else if (N % 4 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 4)
      *reinterpret_cast<uint2*>(p + i) =
          make_uint2(half2_as_u32(r[i / 2 + 0]), half2_as_u32(r[i / 2 + 1]));
  } else {
#pragma unroll
    for (int i = 0; i < N; i += 2) *reinterpret_cast<half2*>(p + i) = r[i / 2];
  }
}

// Element i of a register array of half2 (i even: .x, i odd: .y) broadcast to both lanes, the
// multiplier of a packed a[i] * (b0, b1) product. ptxas folds it into the HFMA2 operand (a .H0_H0
// or .H1_H1 selector), so it costs no instruction; but such an HFMA2 issues to the FMA pipe only,
// while selector-free ones alternate with the MMA pipe (HFMA2.MMA), about 1.35x the throughput in
// a GEMM on sm_90 (see kernels/hgemm/08_warp_tile.cu, DUP_A).
CUGEMM_DEVICE half2 bcast_f16(const half2* r, int i) {
  return (i & 1) ? __high2half2(r[i / 2]) : __low2half2(r[i / 2]);
}
#endif  // __CUDA_FP16_H__
