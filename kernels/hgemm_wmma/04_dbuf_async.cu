// cugemm/kernels/hgemm_wmma/04_dbuf_async.cu -- WMMA HGEMM ladder, rung 4 (cp.async, two buffers):
// hgemm_wmma_m16n16k16_mma4x2_warp2x4_dbuf_async, hgemm_wmma_m16n16k16_mma4x4_warp2x2x2_dbuf_async,
// hgemm_wmma_m32n8k16_mma2x4_warp2x4_dbuf_async, each with an _offset (padded) sibling
// (the ladder's story, measurements and what was tried: docs/hgemm_wmma.md)
//
// C = A * B, fp16 row-major in and out, fp32 (or, F16ACC, fp16) accumulation on tensor cores.
//
// What this rung adds over rung 3 (cp.async into one buffer): two shared buffers. While the
// warps run the MMAs of K-tile kt out of buffer kt & 1, the cp.async copies of K-tile kt + 1
// already fill buffer (kt + 1) & 1, and one barrier per K-tile is enough:
//   prologue: issue tile 0 -> buffer 0, wait, barrier
//   tile kt:  issue tile kt+1 -> the other buffer (its last readers finished before the previous
//             barrier); MMAs of tile kt; cp_async_wait<0>() + barrier (tile kt+1 has landed and
//             nobody reads buffer kt & 1 any more).
// (m32n8k16: the B fragments of a warp start every 8 halves, 16-byte but not 32-byte aligned, as
// in the notes; ldmatrix needs only the former.)
//
// Template parameters: WMMA_M x WMMA_N x WMMA_K (fp16 WMMA shape), WARPS_M x WARPS_N warps,
// WARP_TILE_M x WARP_TILE_N fragments per warp, WARP_TILE_K K steps per tile, PAD (halves per
// shared row, a multiple of 8; the _offset siblings use 8), F16ACC.
//   BM = WMMA_M * WARP_TILE_M * WARPS_M, BN = WMMA_N * WARP_TILE_N * WARPS_N,
//   BK = WMMA_K * WARP_TILE_K.
// Preconditions: M % BM == 0, N % BN == 0, K % BK == 0, K >= BK; a, b, c 16-byte aligned;
//   32-bit indices; sm_80+ (cp.async).
// Launch: grid = (N / BN, M / BM, 1), block = (32 * WARPS_M * WARPS_N, 1, 1), static shared
//   memory only (two A and B tiles, reused by the fp32 epilogue).
#include <mma.h>
#include <cuda_fp16.h>

#include "wmma_common.cuh"

template <int WMMA_M, int WMMA_N, int WMMA_K, int WARPS_M, int WARPS_N, int WARP_TILE_M,
          int WARP_TILE_N, int WARP_TILE_K, int PAD, bool F16ACC>
__global__ void __launch_bounds__(32 * WARPS_M * WARPS_N)
hgemm_wmma_dbuf_async(const half* __restrict__ a, const half* __restrict__ b, half* __restrict__ c,
                      int M, int N, int K) {
  using namespace cugemm_wmma;
  static_assert(is_wmma_f16_shape(WMMA_M, WMMA_N, WMMA_K), "not an fp16 WMMA shape");
  static_assert(PAD >= 0 && PAD % 8 == 0, "padding must keep shared rows 16-byte aligned");
  constexpr int NT = 32 * WARPS_M * WARPS_N;
  constexpr int WTM = WARP_TILE_M, WTN = WARP_TILE_N, WTK = WARP_TILE_K;
  constexpr int BM = WMMA_M * WTM * WARPS_M;
  constexpr int BN = WMMA_N * WTN * WARPS_N;
  constexpr int BK = WMMA_K * WTK;
  constexpr int LDA = BK + PAD, LDB = BN + PAD;
  using CopyA = TileCopy<BM, BK, LDA, NT>;
  using CopyB = TileCopy<BK, BN, LDB, NT>;
  constexpr int BUF = BM * LDA + BK * LDB;  // halves per buffer (A tile, then B tile)
  constexpr int TILE_BYTES = 2 * BUF * 2;
  constexpr int EPI_BYTES = F16ACC ? 0 : (NT / 32) * scratch_floats(WMMA_M, WMMA_N, WTN) * 4;
  constexpr int SMEM_BYTES = TILE_BYTES > EPI_BYTES ? TILE_BYTES : EPI_BYTES;
  static_assert(SMEM_BYTES <= 48 * 1024, "static shared memory is capped at 48 KB");
  static_assert((BM * LDA * 2) % 32 == 0 && (BUF * 2) % 32 == 0, "tiles must start 32-byte aligned");
  __shared__ __align__(128) unsigned char smem[SMEM_BYTES];
  half* const s_base = reinterpret_cast<half*>(smem);  // buffer p: A at p*BUF, B at p*BUF + BM*LDA

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
  const int m0 = static_cast<int>(blockIdx.y) * BM, n0 = static_cast<int>(blockIdx.x) * BN;
  const int wm0 = warp_m * WTM * WMMA_M, wn0 = warp_n * WTN * WMMA_N;

  const int a_dst = CopyA::smem_offset(tid), b_dst = BM * LDA + CopyB::smem_offset(tid);
  const half* a_src = a + m0 * K + CopyA::gmem_offset(tid, K);
  const half* b_src = b + n0 + CopyB::gmem_offset(tid, N);
  auto issue = [&](int kt, int buf) __attribute__((always_inline)) {
    CopyA::async(s_base + buf * BUF + a_dst, a_src + kt * BK, K);
    CopyB::async(s_base + buf * BUF + b_dst, b_src + kt * BK * N, N);
    cp_async_commit();
  };

  FragC<WMMA_M, WMMA_N, WMMA_K, F16ACC> acc[WTM][WTN];
#pragma unroll
  for (int i = 0; i < WTM; ++i)
#pragma unroll
    for (int j = 0; j < WTN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  const int num_kt = K / BK;
  issue(0, 0);
  cp_async_wait<0>();
  __syncthreads();

  for (int kt = 0; kt < num_kt; ++kt) {
    const int cur = kt & 1;
    const bool has_next = kt + 1 < num_kt;  // the same in every thread
    if (has_next) issue(kt + 1, cur ^ 1);

    const half* s_a = s_base + cur * BUF;
    const half* s_b = s_a + BM * LDA;
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

    if (has_next) cp_async_wait<0>();
    __syncthreads();  // tile kt+1 visible to all; buffer cur free (and, after the last tile,
                      // the whole smem free for the epilogue)
  }

  float* scratch = reinterpret_cast<float*>(smem) + warp * scratch_floats(WMMA_M, WMMA_N, WTN);
  warp_store_c<WMMA_M, WMMA_N, WMMA_K, WTM, WTN, F16ACC>(c + (m0 + wm0) * N + n0 + wn0, N, acc,
                                                         scratch, lane);
}
