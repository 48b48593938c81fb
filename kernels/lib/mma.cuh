// cugemm/kernels/lib/mma.cuh: warp-level tensor-core instructions written in PTX: ldmatrix /
// stmatrix, mma.sync (fp16, bf16, tf32) and the conversions their operands need.
//
// Fragment layouts (PTX ISA "Matrix Fragments for mma.m16n8k16" / "mma.m16n8k8"), g = lane / 4,
// t = lane % 4; each register holds two 16-bit elements (lower column in the low half), or one
// fp32/tf32 element:
//   m16n8k16 (fp16, bf16)  A 16x16 (row): a0 (g, 2t..2t+1), a1 (g+8, 2t..), a2 (g, 2t+8..),
//                          a3 (g+8, 2t+8..);  B 16x8 (k x n, "col"): b0 (k 2t..2t+1, n g),
//                          b1 (k 2t+8.., n g);  C/D 16x8: d0,d1 (g, 2t..2t+1), d2,d3 (g+8, 2t..)
//                          (fp32), or two packed registers of the same pairs (fp16 accumulate).
//   m16n8k8 (tf32)         A: a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4);  B: b0 (t, g),
//                          b1 (t+4, g);  C/D: c0 (g, 2t), c1 (g, 2t+1), c2 (g+8, 2t), c3 (g+8, 2t+1).
// ldmatrix .x4 loads four 8x8 matrices of 16-bit elements (8 rows of 16 bytes each): lanes
// 8q .. 8q+7 give the row addresses of matrix q, and register q of every lane receives the 32 bits
// at (row lane / 4, columns 2 (lane % 4) ..) of matrix q: exactly an A fragment when the four
// matrices are the tile's (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15,
// k 8-15). .trans transposes each 8x8 matrix on the way: a row-major (k x n) B tile then gives the
// "col" B fragment. For 32-bit data each 8x8 b16 matrix is an 8x4 fp32 one.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core.cuh"

// ---- ldmatrix / stmatrix (all 16-byte rows in shared memory, 16-byte aligned) ------------------
CUGEMM_DEVICE void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}
CUGEMM_DEVICE void ldmatrix_x4(unsigned (&r)[4], const void* p) { ldmatrix_x4(r, smem_addr(p)); }
CUGEMM_DEVICE void ldmatrix_x4_trans(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}
// .x2: lanes 0-15 give the row addresses of two matrices
CUGEMM_DEVICE void ldmatrix_x2(unsigned (&r)[2], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(addr)
               : "memory");
}
CUGEMM_DEVICE void ldmatrix_x2_trans(unsigned (&r)[2], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(addr)
               : "memory");
}
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// stmatrix .x4 (sm_90): the inverse of ldmatrix .x4: register q of every lane goes to
// (row lane / 4, columns 2 (lane % 4) ..) of matrix q, whose row addresses lanes 8q .. 8q+7 give.
CUGEMM_DEVICE void stmatrix_x4(unsigned addr, const unsigned (&r)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr),
               "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
               : "memory");
}
// .trans: each 8x8 matrix is stored transposed (register q's pair of row i goes to column i).
CUGEMM_DEVICE void stmatrix_x4_trans(unsigned addr, const unsigned (&r)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr),
               "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
               : "memory");
}
#endif

// Which 16-bit element type T is: the PTX type names differ (.f16 / .bf16), nothing else.
template <class T> struct IsBf16 { static constexpr bool value = false; };
template <> struct IsBf16<__nv_bfloat16> { static constexpr bool value = true; };

// ---- mma.sync ----------------------------------------------------------------------------------
// d += a * b, 16 x 8 x 16, T = half or __nv_bfloat16 inputs, fp32 accumulators
template <class T>
CUGEMM_DEVICE void mma_m16n8k16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]);
template <>
CUGEMM_DEVICE void mma_m16n8k16<half>(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
template <>
CUGEMM_DEVICE void mma_m16n8k16<__nv_bfloat16>(float (&d)[4], const unsigned (&a)[4],
                                               const unsigned (&b)[2]) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// d += a * b, 16 x 8 x 16, fp16 inputs and fp16 accumulators (two packed registers)
CUGEMM_DEVICE void mma_m16n8k16_f16acc(unsigned (&d)[2], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, "
      "{%0, %1};\n"
      : "+r"(d[0]), "+r"(d[1])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// d += a * b, 16 x 8 x 8, TF32 inputs, fp32 accumulators
CUGEMM_DEVICE void mma_m16n8k8_tf32(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// ---- conversions -------------------------------------------------------------------------------
// Two floats rounded (to nearest even) to T = half or __nv_bfloat16, packed in one 32-bit word,
// lo at the lower address: what a 16-bit C element pair or an mma operand register holds.
template <class T>
CUGEMM_DEVICE unsigned pack2(float lo, float hi);
template <>
CUGEMM_DEVICE unsigned pack2<half>(float lo, float hi) {
  const half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const unsigned*>(&h);
}
template <>
CUGEMM_DEVICE unsigned pack2<__nv_bfloat16>(float lo, float hi) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const unsigned*>(&h);
}

// A warp's FM x FN m16n8 fp32 accumulator tiles (acc[i][j][0..3], the mma.sync C fragment) straight
// to a 16-bit T matrix C of row stride ld, tile (i, j) at rows 16 i, columns 8 j from c_warp: lane
// (g, t) writes its two pairs of each tile (rows g and g + 8, columns 2t and 2t + 1) as 4-byte stores.
template <class T, int FM, int FN>
CUGEMM_DEVICE void store_acc_pairs(T* c_warp, int ld, const float (&acc)[FM][FN][4], int lane) {
  T* const c_lane = c_warp + (lane >> 2) * ld + 2 * (lane & 3);
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) {
      T* p = c_lane + i * 16 * ld + j * 8;
      *reinterpret_cast<unsigned*>(p) = pack2<T>(acc[i][j][0], acc[i][j][1]);
      *reinterpret_cast<unsigned*>(p + 8 * ld) = pack2<T>(acc[i][j][2], acc[i][j][3]);
    }
}

// float32 bits -> TF32 bits, round to nearest, ties away from zero (cvt.rna; what
// wmma::__float_to_tf32 does and what cuBLAS TF32 matches)
CUGEMM_DEVICE unsigned f32_to_tf32(unsigned x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(__uint_as_float(x)));
  return r;
}
// the four floats of a 16-byte chunk, each rounded as f32_to_tf32
CUGEMM_DEVICE float4 round_f32x4(float4 v) {
  v.x = __uint_as_float(f32_to_tf32(__float_as_uint(v.x)));
  v.y = __uint_as_float(f32_to_tf32(__float_as_uint(v.y)));
  v.z = __uint_as_float(f32_to_tf32(__float_as_uint(v.z)));
  v.w = __uint_as_float(f32_to_tf32(__float_as_uint(v.w)));
  return v;
}
