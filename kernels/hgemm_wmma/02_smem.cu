// cugemm/kernels/hgemm_wmma/02_smem.cu -- WMMA HGEMM ladder, rung 2 (block tiles staged in shared
// memory): hgemm_wmma_m16n16k16_mma4x2 and hgemm_wmma_m16n16k16_mma4x2_warp2x4
// (the ladder's story, measurements and what was tried: docs/hgemm_wmma.md)
//
// C = A * B, fp16 row-major in and out, fp32 (or, F16ACC, fp16) accumulation on tensor cores.
//
// What this rung adds over rung 1 (one warp per 16x16 tile, fragments from global memory):
//  1. Tile MMA (mma4x2): a block of WARPS_M x WARPS_N warps owns a BM x BN tile of C. Per K step
//     of BK = WMMA_K the block copies the BM x BK slice of A and the BK x BN slice of B into shared
//     memory once (plain 16/8/4-byte loads and stores through registers, coalesced), and every warp
//     loads its fragments from there.
//  2. Warp tiles (warp2x4): each warp computes WARP_TILE_M x WARP_TILE_N fragments of C, so one
//     A fragment is reused across WARP_TILE_N MMAs and one B fragment across WARP_TILE_M.
// Two barriers per K step (after the copy; before the next copy overwrites the tile). Shared rows
// are unpadded, as in the notes.
//
// Template parameters: WMMA_M x WMMA_N x WMMA_K (fp16 WMMA shape), WARPS_M x WARPS_N warps,
// WARP_TILE_M x WARP_TILE_N fragments per warp, F16ACC.
//   BM = WMMA_M * WARP_TILE_M * WARPS_M, BN = WMMA_N * WARP_TILE_N * WARPS_N, BK = WMMA_K.
// Preconditions: M % BM == 0, N % BN == 0, K % BK == 0; a, b, c 16-byte aligned; 32-bit indices.
// Launch: grid = (N / BN, M / BM, 1), block = (32 * WARPS_M * WARPS_N, 1, 1), static shared
//   memory only: max(the A and B tiles, the fp32 epilogue scratch).
#include <mma.h>
#include <cuda_fp16.h>

#include "wmma_common.cuh"

template <int WMMA_M, int WMMA_N, int WMMA_K, int WARPS_M, int WARPS_N, int WARP_TILE_M,
          int WARP_TILE_N, bool F16ACC>
__global__ void __launch_bounds__(32 * WARPS_M * WARPS_N)
hgemm_wmma_smem(const half* __restrict__ a, const half* __restrict__ b, half* __restrict__ c,
                int M, int N, int K) {
  using namespace cugemm_wmma;
  static_assert(is_wmma_f16_shape(WMMA_M, WMMA_N, WMMA_K), "not an fp16 WMMA shape");
  constexpr int NT = 32 * WARPS_M * WARPS_N;
  constexpr int WTM = WARP_TILE_M, WTN = WARP_TILE_N;
  constexpr int BM = WMMA_M * WTM * WARPS_M;
  constexpr int BN = WMMA_N * WTN * WARPS_N;
  constexpr int BK = WMMA_K;
  using CopyA = TileCopy<BM, BK, BK, NT>;  // A slice: BM rows of BK halves
  using CopyB = TileCopy<BK, BN, BN, NT>;  // B slice: BK rows of BN halves
  constexpr int TILE_BYTES = (BM * BK + BK * BN) * 2;
  constexpr int EPI_BYTES = F16ACC ? 0 : (NT / 32) * scratch_floats(WMMA_M, WMMA_N, WTN) * 4;
  constexpr int SMEM_BYTES = TILE_BYTES > EPI_BYTES ? TILE_BYTES : EPI_BYTES;
  static_assert(SMEM_BYTES <= 48 * 1024, "static shared memory is capped at 48 KB");
  __shared__ __align__(128) unsigned char smem[SMEM_BYTES];
  half* s_a = reinterpret_cast<half*>(smem);  // s_a[m][k], BM x BK
  half* s_b = s_a + BM * BK;                  // s_b[k][n], BK x BN

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
  const int m0 = static_cast<int>(blockIdx.y) * BM, n0 = static_cast<int>(blockIdx.x) * BN;
  const int wm0 = warp_m * WTM * WMMA_M, wn0 = warp_n * WTN * WMMA_N;  // warp tile in the block

  half* s_a_dst = s_a + CopyA::smem_offset(tid);
  half* s_b_dst = s_b + CopyB::smem_offset(tid);
  const half* a_src = a + m0 * K + CopyA::gmem_offset(tid, K);
  const half* b_src = b + n0 + CopyB::gmem_offset(tid, N);

  FragC<WMMA_M, WMMA_N, WMMA_K, F16ACC> acc[WTM][WTN];
#pragma unroll
  for (int i = 0; i < WTM; ++i)
#pragma unroll
    for (int j = 0; j < WTN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  for (int k0 = 0; k0 < K; k0 += BK) {
    CopyA::sync(s_a_dst, a_src + k0, K);
    CopyB::sync(s_b_dst, b_src + k0 * N, N);
    __syncthreads();

    FragA<WMMA_M, WMMA_N, WMMA_K> fa[WTM];
    FragB<WMMA_M, WMMA_N, WMMA_K> fb[WTN];
#pragma unroll
    for (int i = 0; i < WTM; ++i) wmma::load_matrix_sync(fa[i], s_a + (wm0 + i * WMMA_M) * BK, BK);
#pragma unroll
    for (int j = 0; j < WTN; ++j) wmma::load_matrix_sync(fb[j], s_b + wn0 + j * WMMA_N, BN);
#pragma unroll
    for (int i = 0; i < WTM; ++i)
#pragma unroll
      for (int j = 0; j < WTN; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    __syncthreads();  // everyone is done with the tiles before the next copy
  }

  // The last barrier of the loop freed the tiles: the fp32 epilogue reuses them as scratch.
  float* scratch = reinterpret_cast<float*>(smem) + warp * scratch_floats(WMMA_M, WMMA_N, WTN);
  warp_store_c<WMMA_M, WMMA_N, WMMA_K, WTM, WTN, F16ACC>(c + (m0 + wm0) * N + n0 + wn0, N, acc,
                                                         scratch, lane);
}
