// cugemm/kernels/hgemm_wmma/03_async.cu -- WMMA HGEMM ladder, rung 3 (cp.async, one buffer):
// hgemm_wmma_m16n16k16_mma4x2_warp2x4_async and ..._async_offset
// (the ladder's story, measurements and what was tried: docs/hgemm_wmma.md)
//
// C = A * B, fp16 row-major in and out, fp32 (or, F16ACC, fp16) accumulation on tensor cores.
//
// What this rung adds over rung 2 (block tile staged through registers into shared memory):
//  1. The global -> shared copies are cp.async (16 bytes each, cached in L2 only): they write
//     shared memory without passing through registers, and each thread's copies are in flight
//     together; cp_async_wait<0>() + __syncthreads() then publish the tile.
//  2. PAD halves of padding per shared row (the _offset sibling: PAD = 8). With it, the A row
//     stride (BK + 8) and the B row stride (BN + 8) are odd multiples of 16 bytes, so the eight
//     16-byte rows that one ldmatrix phase reads hit eight different bank groups.
//  3. WARP_TILE_K K steps of WMMA_K per staged tile (BK = WMMA_K * WARP_TILE_K).
// Still one buffer: the copies of slice k+1 start only after every warp is done with slice k.
//
// Template parameters: WMMA_M x WMMA_N x WMMA_K (fp16 WMMA shape), WARPS_M x WARPS_N warps,
// WARP_TILE_M x WARP_TILE_N fragments per warp, WARP_TILE_K K steps per tile, PAD (halves, a
// multiple of 8), F16ACC.
//   BM = WMMA_M * WARP_TILE_M * WARPS_M, BN = WMMA_N * WARP_TILE_N * WARPS_N,
//   BK = WMMA_K * WARP_TILE_K.
// Preconditions: M % BM == 0, N % BN == 0, K % BK == 0; a, b, c 16-byte aligned; 32-bit indices;
//   sm_80+ (cp.async).
// Launch: grid = (N / BN, M / BM, 1), block = (32 * WARPS_M * WARPS_N, 1, 1), static shared
//   memory only.
#include <mma.h>
#include <cuda_fp16.h>

#include "wmma_common.cuh"

template <int WMMA_M, int WMMA_N, int WMMA_K, int WARPS_M, int WARPS_N, int WARP_TILE_M,
          int WARP_TILE_N, int WARP_TILE_K, int PAD, bool F16ACC>
__global__ void __launch_bounds__(32 * WARPS_M * WARPS_N)
hgemm_wmma_async(const half* __restrict__ a, const half* __restrict__ b, half* __restrict__ c,
                 int M, int N, int K) {
  using namespace cugemm_wmma;
  static_assert(is_wmma_f16_shape(WMMA_M, WMMA_N, WMMA_K), "not an fp16 WMMA shape");
  static_assert(PAD >= 0 && PAD % 8 == 0, "padding must keep shared rows 16-byte aligned");
  constexpr int NT = 32 * WARPS_M * WARPS_N;
  constexpr int WTM = WARP_TILE_M, WTN = WARP_TILE_N, WTK = WARP_TILE_K;
  constexpr int BM = WMMA_M * WTM * WARPS_M;
  constexpr int BN = WMMA_N * WTN * WARPS_N;
  constexpr int BK = WMMA_K * WTK;
  constexpr int LDA = BK + PAD, LDB = BN + PAD;  // shared row strides (halves)
  using CopyA = TileCopy<BM, BK, LDA, NT>;
  using CopyB = TileCopy<BK, BN, LDB, NT>;
  constexpr int TILE_BYTES = (BM * LDA + BK * LDB) * 2;
  constexpr int EPI_BYTES = F16ACC ? 0 : (NT / 32) * scratch_floats(WMMA_M, WMMA_N, WTN) * 4;
  constexpr int SMEM_BYTES = TILE_BYTES > EPI_BYTES ? TILE_BYTES : EPI_BYTES;
  static_assert(SMEM_BYTES <= 48 * 1024, "static shared memory is capped at 48 KB");
  __shared__ __align__(128) unsigned char smem[SMEM_BYTES];
  half* s_a = reinterpret_cast<half*>(smem);  // s_a[m][k], BM x LDA
  half* s_b = s_a + BM * LDA;                 // s_b[k][n], BK x LDB

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
  const int m0 = static_cast<int>(blockIdx.y) * BM, n0 = static_cast<int>(blockIdx.x) * BN;
  const int wm0 = warp_m * WTM * WMMA_M, wn0 = warp_n * WTN * WMMA_N;

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
    CopyA::async(s_a_dst, a_src + k0, K);
    CopyB::async(s_b_dst, b_src + k0 * N, N);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();

#pragma unroll
    for (int kk = 0; kk < WTK; ++kk) {
      FragA<WMMA_M, WMMA_N, WMMA_K> fa[WTM];
      FragB<WMMA_M, WMMA_N, WMMA_K> fb[WTN];
#pragma unroll
      for (int i = 0; i < WTM; ++i)
        wmma::load_matrix_sync(fa[i], s_a + (wm0 + i * WMMA_M) * LDA + kk * WMMA_K, LDA);
#pragma unroll
      for (int j = 0; j < WTN; ++j)
        wmma::load_matrix_sync(fb[j], s_b + kk * WMMA_K * LDB + wn0 + j * WMMA_N, LDB);
#pragma unroll
      for (int i = 0; i < WTM; ++i)
#pragma unroll
        for (int j = 0; j < WTN; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
    __syncthreads();  // everyone is done with the tile before the next copies land in it
  }

  float* scratch = reinterpret_cast<float*>(smem) + warp * scratch_floats(WMMA_M, WMMA_N, WTN);
  warp_store_c<WMMA_M, WMMA_N, WMMA_K, WTM, WTN, F16ACC>(c + (m0 + wm0) * N + n0 + wn0, N, acc,
                                                         scratch, lane);
}
