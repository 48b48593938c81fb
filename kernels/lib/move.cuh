// cugemm/kernels/lib/move.cuh: vector moves between memory and registers, for any element type.
#pragma once
#include "core.cuh"

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

// ---- raw 16-, 8- and 4-byte moves, for any element type (8 halves, 4 floats, ...) -------------
// Both addresses must be aligned to the width.
CUGEMM_DEVICE void copy_16B(void* dst, const void* src) {
  *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
}
CUGEMM_DEVICE void copy_8B(void* dst, const void* src) {
  *reinterpret_cast<uint2*>(dst) = *reinterpret_cast<const uint2*>(src);
}
CUGEMM_DEVICE void copy_4B(void* dst, const void* src) {
  *reinterpret_cast<unsigned*>(dst) = *reinterpret_cast<const unsigned*>(src);
}

// One 16-byte global store (st.global.v4.b32; `p` 16-byte aligned). Written out in PTX because
// NVVM split a uint4 assignment into four 4-byte stores (partial-sector writes) in the WMMA
// epilogue (docs/kernels_lib.md).
CUGEMM_DEVICE void st_global_16B(void* p, unsigned x, unsigned y, unsigned z, unsigned w) {
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"l"(__cvta_generic_to_global(p)),
               "r"(x), "r"(y), "r"(z), "r"(w));
}

// 16 bytes from shared memory (a shared-window address, 16-byte aligned) to global memory (`p`
// 16-byte aligned): ld.shared.v4 then st_global_16B, the last step of the epilogues that stage C
// through shared memory.
CUGEMM_DEVICE void copy_shared_to_global_16B(void* p, unsigned smem_addr) {
  unsigned x, y, z, w;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(x), "=r"(y), "=r"(z), "=r"(w)
               : "r"(smem_addr)
               : "memory");
  st_global_16B(p, x, y, z, w);
}
