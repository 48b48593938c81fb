// cugemm/kernels/sgemm_tf32/01_wmma_m16n16k8_stages.cu: TF32 tensor-core SGEMM through the WMMA
// API, a multistage cp.async pipeline (seed 003: sgemm_wmma_m16n16k8_mma4x2_warp2x4_stages, its
// _dsmem form and its block swizzle), and the larger-tile rungs above the notes. Story,
// measurements and what bounds it: docs/sgemm_tf32.md.
//
// C = A * B, float32 in and out, row-major: A is M x K, B is K x N, C is M x N (overwritten).
// The multiplies are TF32 (10-bit mantissa, tensor cores, wmma m16n16k8), the accumulation fp32.
//
// What this family adds over the FP32 CUDA-core ladder (sgemm/0*.cu):
//  1. Tensor cores: each warp owns a WM x WN tile of C as FRAGS_M x FRAGS_N wmma accumulator
//     fragments of 16 x 16; the WARPS_M x WARPS_N warps tile the block's BM x BN.
//  2. TF32 in the kernel: A and B stay float32 in global and shared memory; with ROUND every
//     fragment is rounded to TF32 right after its load (wmma::__float_to_tf32, round to nearest),
//     without it (`_trunc`) the tensor cores truncate the float32 bits. The inputs are never modified.
//  3. A STAGES-deep cp.async ring of BK-deep K-tiles (16-byte copies, STAGES - 1 K-tiles in flight,
//     one __syncthreads per K-tile: lib/pipeline.cuh's ring_pipeline).
//  4. The fragments of k step kk + 1 are loaded (and rounded) while the MMAs of step kk run, across
//     the K-tile boundary too.
//  5. Padded shared rows (A_PAD, B_PAD floats): conflict-free fragment loads when (BK + A_PAD) % 8
//     == 4 and (BN + B_PAD) % 32 is 8 or 24. The notes' rungs keep A_PAD = B_PAD = 0.
//  6. DSMEM: the ring in dynamic shared memory, so it may pass the 48 KB static limit; without
//     DSMEM it is a static array (at most 48 KB).
//  7. SWIZZLE: the blocks walk C in bands of swizzle_stride columns, each band row by row
//     (lib/raster.cuh, block_tile_column_bands), for L2 reuse.
//  8. Epilogue through shared memory: each accumulator fragment goes to a per-warp 16 x 20 float
//     scratch (in the ring), then to C as 16-byte stores (wmma stores to global would need 32).
//  9. SHARED_LD: the fragments are loaded with the .shared form of wmma.load (tf32.cuh: 32-bit
//     addresses, LDS) instead of load_matrix_sync's generic one (64-bit addresses, LD).
//
// Template parameters: WARPS_M x WARPS_N warps, FRAGS_M x FRAGS_N wmma fragments per warp, BK the
// K-tile depth (a multiple of 8), STAGES (>= 2), A_PAD / B_PAD, SHARED_LD, DSMEM, SWIZZLE, ROUND.
// Derived: BM = 16 * FRAGS_M * WARPS_M, BN = 16 * FRAGS_N * WARPS_N.
// Launch: block = (WARPS_M * WARPS_N * 32, 1, 1); shared memory (padded_ring.cuh) STAGES * (BM *
//   (BK + A_PAD) + BK * (BN + B_PAD)) * 4, dynamic when DSMEM (sgemm_wmma_tf32_stages_smem_bytes<...>;
//   raise the attribute above 48 KB), else static (and the declared dynamic size is 0).
//   grid, !SWIZZLE: (N / BN, M / BM, 1); swizzle_stride is ignored (pass 0).
//   grid,  SWIZZLE: (swizzle_stride / BN, M / BM, ceil(N / swizzle_stride)), swizzle_stride a
//     positive multiple of BN (cugemm/families/sgemm_tf32.py's rule); blocks past column N return.
// Preconditions (checked by the caller): M % BM == 0, N % BN == 0, K % BK == 0, K >= BK; a, b, c
// 16-byte aligned; M * K, K * N, M * N < 2^31 (32-bit indices). Needs sm_80+ (cp.async, TF32 wmma).
#include <mma.h>

#include "../lib/cp_async.cuh"
#include "../lib/move.cuh"
#include "../lib/pipeline.cuh"
#include "../lib/raster.cuh"
#include "padded_ring.cuh"
#include "tf32.cuh"

// Blocks per SM asked of the register allocator: 2 when the accumulators take at most 64
// registers a thread (8 fragments of 8 floats), else 1 (up to 255 registers).
__host__ __device__ constexpr int wmma_tf32_min_blocks(int frags) { return frags <= 8 ? 2 : 1; }

template <int WARPS_M, int WARPS_N, int FRAGS_M, int FRAGS_N, int BK, int STAGES, int A_PAD,
          int B_PAD, bool SHARED_LD, bool DSMEM, bool SWIZZLE, bool ROUND>
__device__ constexpr int sgemm_wmma_tf32_stages_smem_bytes =
    DSMEM ? cugemm_tf32::PaddedRingSmem<16 * FRAGS_M * WARPS_M, 16 * FRAGS_N * WARPS_N, BK, STAGES, A_PAD,
                                        B_PAD>::BYTES
          : 0;

template <int WARPS_M, int WARPS_N, int FRAGS_M, int FRAGS_N, int BK, int STAGES, int A_PAD,
          int B_PAD, bool SHARED_LD, bool DSMEM, bool SWIZZLE, bool ROUND>
__global__ void __launch_bounds__(WARPS_M * WARPS_N * 32, wmma_tf32_min_blocks(FRAGS_M * FRAGS_N))
    sgemm_wmma_tf32_stages(const float* __restrict__ a, const float* __restrict__ b,
                           float* __restrict__ c, int M, int N, int K, int swizzle_stride) {
  using namespace nvcuda;
  constexpr int NT = WARPS_M * WARPS_N * 32;  // threads per block
  constexpr int WM = 16 * FRAGS_M;            // warp tile
  constexpr int WN = 16 * FRAGS_N;
  constexpr int BM = WARPS_M * WM;            // block tile
  constexpr int BN = WARPS_N * WN;
  constexpr int KSTEPS = BK / 8;              // wmma k steps per K-tile
  using Smem = cugemm_tf32::PaddedRingSmem<BM, BN, BK, STAGES, A_PAD, B_PAD>;
  constexpr int LDA = Smem::LDA;              // shared row lengths (floats)
  constexpr int LDB = Smem::LDB;
  constexpr int A_STAGE = Smem::A_STAGE;      // floats per stage
  constexpr int B_STAGE = Smem::B_STAGE;
  constexpr int SMEM_FLOATS = Smem::FLOATS;
  constexpr int LDC = 16 + 4;                 // epilogue scratch: 16 x 16 fragment, rows padded
  constexpr int SCRATCH = 16 * LDC;           // floats per warp
  // global -> shared copies: 16-byte chunks, consecutive threads along a row
  constexpr int A_CPR = BK / 4;               // chunks per A tile row
  constexpr int B_CPR = BN / 4;               // chunks per B tile row
  constexpr int A_RPP = NT / A_CPR;           // rows of the A tile the block covers per pass
  constexpr int B_RPP = NT / B_CPR;
  constexpr int A_PASSES = BM / A_RPP;
  constexpr int B_PASSES = BK / B_RPP;

  static_assert(WARPS_M >= 1 && WARPS_N >= 1 && FRAGS_M >= 1 && FRAGS_N >= 1, "empty tiles");
  static_assert(NT <= 1024, "too many threads per block");
  static_assert(BK % 8 == 0, "BK must be a multiple of the wmma k step (8)");
  static_assert(STAGES >= 2, "the pipeline needs at least two stages");
  static_assert(A_PAD >= 0 && A_PAD % 4 == 0 && B_PAD >= 0 && B_PAD % 4 == 0,
                "padding must keep shared rows 16-byte aligned (cp.async 16, ldm % 4 == 0)");
  static_assert(NT % A_CPR == 0 && BM % A_RPP == 0, "A tile: whole rows per pass, whole passes");
  static_assert(NT % B_CPR == 0 && BK % B_RPP == 0, "B tile: whole rows per pass, whole passes");
  static_assert(A_STAGE % 8 == 0 && B_STAGE % 8 == 0,
                "stages must start 32-byte aligned (load_matrix_sync)");
  static_assert(WARPS_M * WARPS_N * SCRATCH <= SMEM_FLOATS, "epilogue scratch must fit the ring");
  static_assert(DSMEM || SMEM_FLOATS * 4 <= 48 * 1024, "static shared memory is capped at 48 KB");

  extern __shared__ __align__(128) float smem_dynamic[];
  __shared__ __align__(128) float smem_static[DSMEM ? 8 : SMEM_FLOATS];
  float* const smem = DSMEM ? smem_dynamic : smem_static;
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

  // ---- global -> shared (cp.async, 16 bytes) ---------------------------------------------------
  const int a_row = tid / A_CPR, a_col = tid % A_CPR * 4;
  const int b_row = tid / B_CPR, b_col = tid % B_CPR * 4;
  // K-tiles are issued in order, each once: running source pointers advance one K-tile per issue
  const float* a_next = a + (m0 + a_row) * K + a_col;  // this thread's first chunk of A's K-tile
  const float* b_next = b + b_row * N + n0 + b_col;    // and of B's
  const int a_pass = A_RPP * K;                        // source distance between passes
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
  cugemm_tf32::FragA fa[2][FRAGS_M];
  cugemm_tf32::FragB fb[2][FRAGS_N];
  cugemm_tf32::FragC acc[FRAGS_M][FRAGS_N];

  const float* const a_frag = sA + warp_m * WM * LDA;  // this warp's rows of As
  const float* const b_frag = sB + warp_n * WN;        // this warp's columns of Bs

  // k step kk of ring stage s into fragment set p: load (all fragments first, then round them)
  auto load_frags = [&](int s, int kk, int p) __attribute__((always_inline)) {
#pragma unroll
    for (int i = 0; i < FRAGS_M; ++i) {
      const float* src = a_frag + s * A_STAGE + i * 16 * LDA + kk * 8;
      if (SHARED_LD) cugemm_tf32::load_matrix_sync_shared(fa[p][i], src, LDA);
      else wmma::load_matrix_sync(fa[p][i], src, LDA);
    }
#pragma unroll
    for (int j = 0; j < FRAGS_N; ++j) {
      const float* src = b_frag + s * B_STAGE + kk * 8 * LDB + j * 16;
      if (SHARED_LD) cugemm_tf32::load_matrix_sync_shared(fb[p][j], src, LDB);
      else wmma::load_matrix_sync(fb[p][j], src, LDB);
    }
    if (ROUND) {
#pragma unroll
      for (int i = 0; i < FRAGS_M; ++i) cugemm_tf32::round_to_tf32(fa[p][i]);
#pragma unroll
      for (int j = 0; j < FRAGS_N; ++j) cugemm_tf32::round_to_tf32(fb[p][j]);
    }
  };

#pragma unroll
  for (int i = 0; i < FRAGS_M; ++i)
#pragma unroll
    for (int j = 0; j < FRAGS_N; ++j) wmma::fill_fragment(acc[i][j], 0.f);

  // ---- the pipeline: the cp.async ring of tf32.cuh -----------------------------------------------
  ring_pipeline<STAGES, KSTEPS>(
      num_kt, issue, load_frags,
      [&](int p) __attribute__((always_inline)) {
#pragma unroll
        for (int i = 0; i < FRAGS_M; ++i)
#pragma unroll
          for (int j = 0; j < FRAGS_N; ++j) wmma::mma_sync(acc[i][j], fa[p][i], fb[p][j], acc[i][j]);
      },
      [&]() __attribute__((always_inline)) {
#pragma unroll
        for (int i = 0; i < FRAGS_M; ++i) fa[0][i] = fa[1][i];
#pragma unroll
        for (int j = 0; j < FRAGS_N; ++j) fb[0][j] = fb[1][j];
      });

  // ---- epilogue: fragment -> per-warp shared scratch -> 16-byte stores to C ---------------------
  float* const c_warp = c + (m0 + warp_m * WM) * N + n0 + warp_n * WN;
  cp_async_wait<0>();  // only empty groups can be left, but leave none
  __syncthreads();     // every warp is done with the ring: it becomes the scratch
  float* const scratch = smem + warp * SCRATCH;
#pragma unroll
  for (int i = 0; i < FRAGS_M; ++i) {
#pragma unroll
    for (int j = 0; j < FRAGS_N; ++j) {
      wmma::store_matrix_sync(scratch, acc[i][j], LDC, wmma::mem_row_major);
      __syncwarp();
#pragma unroll
      for (int h = 0; h < 2; ++h) {  // 64 float4s of the 16 x 16 fragment, 2 per lane
        const int r = (lane + 32 * h) >> 2, q = (lane & 3) * 4;
        store_f32x4(c_warp + (i * 16 + r) * N + j * 16 + q, load_f32x4(scratch + r * LDC + q));
      }
      __syncwarp();
    }
  }
}
