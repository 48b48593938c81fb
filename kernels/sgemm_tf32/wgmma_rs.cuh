// cugemm/kernels/sgemm_tf32/wgmma_rs.cuh: the pieces of the TF32 wgmma GEMM shared by
// 03_wgmma_m64nNk8_rs.cu and 04_wgmma_m64n256k8_ws.cu: the register operand's fragments, one
// K-tile's wgmma group, and the C^T epilogue. (The wgmma instructions, descriptors and fences are
// in kernels/lib/wgmma.cuh.)
#pragma once
#include "../lib/mma.cuh"
#include "../lib/wgmma.cuh"

namespace cugemm_wgmma {

// ---- the dynamic shared memory of both rungs ---------------------------------------------------
// Offsets in floats from the 1024-byte-aligned base (align_1024 of the dynamic array): STAGES A
// tiles (BM x 32, 128-byte swizzled: atoms 1024-byte aligned), then STAGES B tiles (32 x LDB, rows
// padded to LDB = BN + 8 floats: LDB % 32 == 8, conflict-free fragment loads). BYTES, the launch's
// dynamic shared memory, adds the 1024 bytes of slack the alignment may skip.
template <int BM, int BN, int STAGES>
struct RsSmem {
  static constexpr int LDB = BN + 8;
  static constexpr int A_STAGE = BM * 32, B_STAGE = 32 * LDB;  // floats per stage
  static constexpr int A = 0;                                  // STAGES x [BM][32], swizzled
  static constexpr int B = A + STAGES * A_STAGE;               // STAGES x [32][LDB]
  static constexpr int BYTES = (B + STAGES * B_STAGE) * 4 + 1024;
};

// ---- the "rs" GEMM pieces shared by 03_wgmma_m64nNk8_rs.cu and 04_wgmma_m64n256k8_ws.cu ---------
// They compute C^T = B^T A^T per warpgroup: the register operand is a 64-column slice of the
// row-major B tile (BK x LDB floats in shared memory), transposed.

// The register fragments of the BK / 8 k steps of a K-tile, rounded to TF32 (cvt.rna).
// b_lane: the B tile at row t = lane % 4, column (slice start) + 16 w + g, w the warp within the
// warpgroup, g = lane / 4: fragment (row n, col k) of the wgmma A operand is B(k, n).
template <int BK, int LDB>
__device__ __forceinline__ void load_bt_fragments(unsigned (&fa)[BK / 8][4], const float* b_lane) {
#pragma unroll
  for (int kk = 0; kk < BK / 8; ++kk) {
    fa[kk][0] = f32_to_tf32(__float_as_uint(b_lane[kk * 8 * LDB]));
    fa[kk][1] = f32_to_tf32(__float_as_uint(b_lane[kk * 8 * LDB + 8]));
    fa[kk][2] = f32_to_tf32(__float_as_uint(b_lane[(kk * 8 + 4) * LDB]));
    fa[kk][3] = f32_to_tf32(__float_as_uint(b_lane[(kk * 8 + 4) * LDB + 8]));
  }
}

// One K-tile of MMAs: the BK / 8 k steps of wgmma m64nNk8 (N = 2 x the accumulator count) with
// the fragments fa and the 128-byte-swizzled shared-memory tile at a_stage (shared-window address),
// issued as one committed group. The operand fences keep the compiler from touching the
// accumulators while the group may be pending; the caller waits (wait_group) before it rewrites fa.
template <int BK, int NACC>
__device__ __forceinline__ void mma_ktile(float (&acc)[NACC], const unsigned (&fa)[BK / 8][4],
                                          unsigned a_stage) {
#pragma unroll
  for (int i = 0; i < NACC; ++i) fence_operand(acc[i]);
  fence();
#pragma unroll
  for (int kk = 0; kk < BK / 8; ++kk) wgmma_tf32_rs(acc, fa[kk], make_desc_sw128(a_stage + kk * 32), 1);
  commit_group();
#pragma unroll
  for (int i = 0; i < NACC; ++i) fence_operand(acc[i]);
}

// Epilogue: the accumulators hold C^T, d[i] being (n = 16 w + g + 8 ((i >> 1) & 1),
// m = 8 (i >> 2) + 2t + (i & 1)) of the warpgroup's 64 x BM slice; c_lane = &C(m0 + 2t, n0 + slice
// start + 16 w + g). 8 lanes of equal t write 32 contiguous bytes of one C row.
// Waits for the warpgroup's last wgmma group first.
template <int BM>
__device__ __forceinline__ void store_ct(float* c_lane, float (&acc)[BM / 2], int N) {
  wait_group<0>();
#pragma unroll
  for (int i = 0; i < BM / 2; ++i) fence_operand(acc[i]);
#pragma unroll
  for (int j = 0; j < BM / 8; ++j) {
    float* const q = c_lane + j * 8 * N;
    q[0] = acc[4 * j + 0];
    q[N] = acc[4 * j + 1];
    q[8] = acc[4 * j + 2];
    q[N + 8] = acc[4 * j + 3];
  }
}

}  // namespace cugemm_wgmma
