// cugemm/kernels/sgemm_tf32/02_mma_m16n8k8_stages.cu: TF32 tensor-core SGEMM through PTX
// mma.sync.m16n8k8 (above the notes: the rung after the WMMA kernel, 01_wmma_m16n16k8_stages.cu).
// Story, measurements and what bounds it: docs/sgemm_tf32.md.
//
// C = A * B, float32 in and out, row-major: A is M x K, B is K x N, C is M x N (overwritten).
// The multiplies are TF32 (tensor cores), the accumulation fp32.
//
// What it adds over 01: ptxas lowers the TF32 wmma m16n16k8 mma_sync to four HMMA.1684 (m16n8k4)
// instructions, whatever the layouts; here the warp issues mma.sync.m16n8k8 itself (one HMMA.1688
// each) on fragments whose layout the PTX ISA specifies (lib/mma.cuh), which also allows what the
// opaque wmma fragments do not:
//  1. A fragments through ldmatrix.x4 (one instruction for a 16 x 8 fp32 tile: its four 8 x 4
//     quarters are four 8 x 16-byte b16 matrices) instead of four scalar loads.
//  2. B fragments as scalar LDS at a per-lane offset plus compile-time immediates (no per-element
//     address arithmetic), two per 8 x 8 tile.
//  3. C straight from the accumulators: each lane holds two adjacent columns of two rows per
//     16 x 8 tile, stored as float2 (a quad of lanes writes 32 contiguous bytes).
// Everything else is the WMMA kernel's: the STAGES-deep cp.async ring of BK-deep K-tiles, fragments
// of k step kk + 1 loaded and rounded (cvt.rna.tf32.f32, as wmma::__float_to_tf32) before the MMAs
// of step kk, padded shared rows, dynamic shared memory, block swizzle.
// Bank conflicts: ldmatrix reads 8 rows of 16 bytes per phase, conflict-free when the As row
// length BK + A_PAD is 4 mod 8 floats; the B loads read 4 k-rows x 8 columns, conflict-free when
// (BN + B_PAD) % 32 is 8 or 24.
//
// Template parameters: WARPS_M x WARPS_N warps, each computing FRAGS_M x FRAGS_N mma tiles of
// 16 x 8 (warp tile WM = 16 * FRAGS_M by WN = 8 * FRAGS_N), BK the K-tile depth (a multiple of 8),
// STAGES (>= 2), A_PAD / B_PAD floats of padding per shared row, SWIZZLE (block swizzle, as in 01),
// ROUND (round the fragments to TF32; without it, `_trunc`, the tensor cores truncate the float32
// bits and the FSETP + IADD pair per element is gone). Derived: BM = WARPS_M * WM, BN = WARPS_N * WN.
// Launch: block = (WARPS_M * WARPS_N * 32, 1, 1); dynamic shared memory
//   sgemm_mma_tf32_stages_smem_bytes<...> (padded_ring.cuh: STAGES * (BM * (BK + A_PAD) + BK * (BN +
//   B_PAD)) * 4 bytes; raise the attribute above 48 KB); grid as in 01: (N / BN, M / BM, 1), or with
//   SWIZZLE (swizzle_stride / BN, M / BM, ceil(N / swizzle_stride)) for a swizzle_stride that is a
//   positive multiple of BN.
// Preconditions (checked by the caller): M % BM == 0, N % BN == 0, K % BK == 0, K >= BK; a, b, c
// 16-byte aligned; M * K, K * N, M * N < 2^31. Needs sm_80+ (cp.async, ldmatrix, mma tf32).
#include "../lib/cp_async.cuh"
#include "../lib/mma.cuh"
#include "../lib/move.cuh"
#include "../lib/pipeline.cuh"
#include "../lib/raster.cuh"
#include "padded_ring.cuh"

template <int WARPS_M, int WARPS_N, int FRAGS_M, int FRAGS_N, int BK, int STAGES, int A_PAD,
          int B_PAD, bool SWIZZLE, bool ROUND>
__device__ constexpr int sgemm_mma_tf32_stages_smem_bytes =
    cugemm_tf32::PaddedRingSmem<16 * FRAGS_M * WARPS_M, 8 * FRAGS_N * WARPS_N, BK, STAGES, A_PAD, B_PAD>::BYTES;

template <int WARPS_M, int WARPS_N, int FRAGS_M, int FRAGS_N, int BK, int STAGES, int A_PAD,
          int B_PAD, bool SWIZZLE, bool ROUND>
__global__ void __launch_bounds__(WARPS_M * WARPS_N * 32, 1)
    sgemm_mma_tf32_stages(const float* __restrict__ a, const float* __restrict__ b,
                          float* __restrict__ c, int M, int N, int K, int swizzle_stride) {
  constexpr int NT = WARPS_M * WARPS_N * 32;  // threads per block
  constexpr int WM = 16 * FRAGS_M;            // warp tile
  constexpr int WN = 8 * FRAGS_N;
  constexpr int BM = WARPS_M * WM;            // block tile
  constexpr int BN = WARPS_N * WN;
  constexpr int KSTEPS = BK / 8;              // mma k steps per K-tile
  using Smem = cugemm_tf32::PaddedRingSmem<BM, BN, BK, STAGES, A_PAD, B_PAD>;
  constexpr int LDA = Smem::LDA;              // shared row lengths (floats)
  constexpr int LDB = Smem::LDB;
  constexpr int A_STAGE = Smem::A_STAGE;      // floats per stage
  constexpr int B_STAGE = Smem::B_STAGE;
  constexpr int A_CPR = BK / 4;               // 16-byte chunks per A tile row
  constexpr int B_CPR = BN / 4;
  constexpr int A_RPP = NT / A_CPR;           // tile rows the block copies per pass
  constexpr int B_RPP = NT / B_CPR;
  constexpr int A_PASSES = BM / A_RPP;
  constexpr int B_PASSES = BK / B_RPP;

  static_assert(WARPS_M >= 1 && WARPS_N >= 1 && FRAGS_M >= 1 && FRAGS_N >= 1, "empty tiles");
  static_assert(NT <= 1024, "too many threads per block");
  static_assert(BK % 8 == 0, "BK must be a multiple of the mma k step (8)");
  static_assert(STAGES >= 2, "the pipeline needs at least two stages");
  static_assert(A_PAD >= 0 && A_PAD % 4 == 0 && B_PAD >= 0 && B_PAD % 4 == 0,
                "padding must keep shared rows 16-byte aligned (cp.async 16, ldmatrix rows)");
  static_assert(NT % A_CPR == 0 && BM % A_RPP == 0, "A tile: whole rows per pass, whole passes");
  static_assert(NT % B_CPR == 0 && BK % B_RPP == 0, "B tile: whole rows per pass, whole passes");

  extern __shared__ __align__(128) float smem[];
  float* const sA = smem + Smem::A;           // STAGES x [BM][LDA]
  float* const sB = smem + Smem::B;           // STAGES x [BK][LDB]

  // SWIZZLE: bands of swizzle_stride / BN tile columns, each walked row by row; the launch grid
  // (swizzle_stride / BN, M / BM, bands) does the dividing (lib/raster.cuh)
  int bx = blockIdx.x;
  if (SWIZZLE) {
    bx = block_tile_column_bands().col;
    if (bx * BN >= N) return;  // the last band is narrower than the stride
  }
  const int m0 = blockIdx.y * BM;
  const int n0 = bx * BN;

  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;
  const int warp_m = warp / WARPS_N;
  const int warp_n = warp % WARPS_N;
  const int g = lane >> 2, t = lane & 3;  // mma fragment coordinates

  // ---- global -> shared (cp.async, 16 bytes), as in 01 -----------------------------------------
  const int a_row = tid / A_CPR, a_col = tid % A_CPR * 4;
  const int b_row = tid / B_CPR, b_col = tid % B_CPR * 4;
  const float* a_next = a + (m0 + a_row) * K + a_col;
  const float* b_next = b + b_row * N + n0 + b_col;
  const int a_pass = A_RPP * K;
  const int b_pass = B_RPP * N;
  float* const a_dst = sA + a_row * LDA + a_col;
  float* const b_dst = sB + b_row * LDB + b_col;
  const int num_kt = K / BK;

  // issue the copies of the next K-tile into ring stage s (does not commit)
  auto issue = [&](int s) __attribute__((always_inline)) {
#pragma unroll
    for (int i = 0; i < A_PASSES; ++i)
      cp_async_16(a_dst + s * A_STAGE + i * A_RPP * LDA, a_next + i * a_pass);
#pragma unroll
    for (int i = 0; i < B_PASSES; ++i)
      cp_async_16(b_dst + s * B_STAGE + i * B_RPP * LDB, b_next + i * b_pass);
    a_next += BK;
    b_next += BK * N;
  };

  // ---- shared -> fragments, rounded to TF32 (ROUND) ----------------------------------------------
  // A: this lane's ldmatrix row address: matrix q = lane / 8 covers rows (q & 1) * 8 .. + 7 and
  // k columns (q >> 1) * 4 .. + 3 of a 16 x 8 tile. B: element (k = t, n = g) of an 8 x 8 tile.
  const float* const a_lane =
      sA + (warp_m * WM + (lane & 7) + ((lane >> 3) & 1) * 8) * LDA + (lane >> 4) * 4;
  const float* const b_lane = sB + t * LDB + warp_n * WN + g;
  unsigned fa[2][FRAGS_M][4];
  unsigned fb[2][FRAGS_N][2];
  float acc[FRAGS_M][FRAGS_N][4];

  // k step kk of ring stage s into fragment set p
  auto load_frags = [&](int s, int kk, int p) __attribute__((always_inline)) {
#pragma unroll
    for (int i = 0; i < FRAGS_M; ++i)
      ldmatrix_x4(fa[p][i], a_lane + s * A_STAGE + i * 16 * LDA + kk * 8);
    const float* bs = b_lane + s * B_STAGE + kk * 8 * LDB;
#pragma unroll
    for (int j = 0; j < FRAGS_N; ++j) {
      fb[p][j][0] = __float_as_uint(bs[j * 8]);
      fb[p][j][1] = __float_as_uint(bs[j * 8 + 4 * LDB]);
    }
    if (ROUND) {
#pragma unroll
      for (int i = 0; i < FRAGS_M; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) fa[p][i][e] = f32_to_tf32(fa[p][i][e]);
#pragma unroll
      for (int j = 0; j < FRAGS_N; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) fb[p][j][e] = f32_to_tf32(fb[p][j][e]);
    }
  };

#pragma unroll
  for (int i = 0; i < FRAGS_M; ++i)
#pragma unroll
    for (int j = 0; j < FRAGS_N; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

  // ---- the pipeline: the cp.async ring of lib/pipeline.cuh, as in 01 -----------------------------
  ring_pipeline<STAGES, KSTEPS>(
      num_kt, issue, load_frags,
      [&](int p) __attribute__((always_inline)) {
#pragma unroll
        for (int i = 0; i < FRAGS_M; ++i)
#pragma unroll
          for (int j = 0; j < FRAGS_N; ++j) mma_m16n8k8_tf32(acc[i][j], fa[p][i], fb[p][j]);
      },
      [&]() __attribute__((always_inline)) {
#pragma unroll
        for (int i = 0; i < FRAGS_M; ++i)
#pragma unroll
          for (int e = 0; e < 4; ++e) fa[0][i][e] = fa[1][i][e];
#pragma unroll
        for (int j = 0; j < FRAGS_N; ++j)
#pragma unroll
          for (int e = 0; e < 2; ++e) fb[0][j][e] = fb[1][j][e];
      });

  // ---- epilogue: accumulators straight to C, float2 per row pair ------------------------------
  // (no pending copies can remain: the last issues were for K-tiles < num_kt, long waited for)
  float* const c_lane = c + (m0 + warp_m * WM + g) * N + n0 + warp_n * WN + 2 * t;
#pragma unroll
  for (int i = 0; i < FRAGS_M; ++i) {
#pragma unroll
    for (int j = 0; j < FRAGS_N; ++j) {
      float* const p = c_lane + i * 16 * N + j * 8;
      store_f32x2(p, make_float2(acc[i][j][0], acc[i][j][1]));
      store_f32x2(p + 8 * N, make_float2(acc[i][j][2], acc[i][j][3]));
    }
  }
}
