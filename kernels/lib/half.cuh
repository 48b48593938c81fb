// cugemm/kernels/lib/half.cuh: fp16 (half / half2) helpers for the CUDA-core and WMMA HGEMM kernels.
#pragma once
#include <cuda_fp16.h>

#include "core.cuh"

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
// N % 4 == 0, else 4; the memory address must be aligned to that width. N is a template constant,
// so once inlined every index into r is a compile-time constant (registers, never local memory).
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
// while selector-free ones alternate with the MMA pipe (HFMA2.MMA): a loss in a GEMM's inner loop
// (docs/kernels_lib.md; kernels/hgemm/08_warp_tile.cu, DUP_A).
CUGEMM_DEVICE half2 bcast_f16(const half2* r, int i) {
  return (i & 1) ? __high2half2(r[i / 2]) : __low2half2(r[i / 2]);
}
