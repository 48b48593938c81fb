// cugemm/kernels/hgemm_wmma/05_rbuf_async.cu -- WMMA HGEMM ladder, rung 5 (register-double-buffered
// fragments): hgemm_wmma_m16n16k16_mma4x2_warp2x4x2_rbuf_async, ..._offset, ..._dbuf,
// ..._dbuf_offset
// (the ladder's story, measurements and what was tried: docs/hgemm_wmma.md)
//
// C = A * B, fp16 row-major in and out, fp32 (or, F16ACC, fp16) accumulation on tensor cores.
//
// What this rung adds over rungs 3 and 4 (cp.async into one or two shared buffers, fragments
// loaded right before the MMAs that use them): two sets of fragments in registers. The A and B
// fragments of K step kk + 1 are loaded (ldmatrix) before the MMAs of step kk in program order,
// into the other set, so the loads of one step can overlap the MMAs of the previous one.
//  STAGES = 1 (rbuf_async, _offset): one shared buffer, as rung 3; the fragment prefetch works
//    inside a K-tile (WARP_TILE_K = 2 steps of 16: BK = 32).
//  STAGES = 2 (_dbuf, _dbuf_offset): two shared buffers, as rung 4, and the prefetch also crosses
//    K-tiles: at the last step of tile kt the block waits for tile kt+1 (cp_async_wait<0>() +
//    barrier), loads its first fragments, and only then runs that last step's MMAs.
//
// Template parameters: WMMA_M x WMMA_N x WMMA_K (fp16 WMMA shape), WARPS_M x WARPS_N warps,
// WARP_TILE_M x WARP_TILE_N fragments per warp, WARP_TILE_K K steps per tile (even when
// STAGES = 2, so that every tile starts on fragment set 0), STAGES = 1 or 2 shared buffers,
// PAD (halves per shared row, multiple of 8), F16ACC.
//   BM = WMMA_M * WARP_TILE_M * WARPS_M, BN = WMMA_N * WARP_TILE_N * WARPS_N,
//   BK = WMMA_K * WARP_TILE_K.
// Preconditions: M % BM == 0, N % BN == 0, K % BK == 0, K >= BK; a, b, c 16-byte aligned;
//   32-bit indices; sm_80+ (cp.async).
// Launch: grid = (N / BN, M / BM, 1), block = (32 * WARPS_M * WARPS_N, 1, 1), static shared
//   memory only.
#include <mma.h>
#include <cuda_fp16.h>

#include "wmma_common.cuh"

template <int WMMA_M, int WMMA_N, int WMMA_K, int WARPS_M, int WARPS_N, int WARP_TILE_M,
          int WARP_TILE_N, int WARP_TILE_K, int STAGES, int PAD, bool F16ACC>
__global__ void __launch_bounds__(32 * WARPS_M * WARPS_N)
hgemm_wmma_rbuf_async(const half* __restrict__ a, const half* __restrict__ b, half* __restrict__ c,
                      int M, int N, int K) {
  using namespace cugemm_wmma;
  static_assert(is_wmma_f16_shape(WMMA_M, WMMA_N, WMMA_K), "not an fp16 WMMA shape");
  static_assert(PAD >= 0 && PAD % 8 == 0, "padding must keep shared rows 16-byte aligned");
  static_assert(STAGES == 1 || STAGES == 2, "one or two shared buffers");
  static_assert(STAGES == 1 || WARP_TILE_K % 2 == 0, "with two buffers a tile has an even number "
                                                     "of K steps (it starts on fragment set 0)");
  constexpr int NT = 32 * WARPS_M * WARPS_N;
  constexpr int WTM = WARP_TILE_M, WTN = WARP_TILE_N, WTK = WARP_TILE_K;
  constexpr int BM = WMMA_M * WTM * WARPS_M;
  constexpr int BN = WMMA_N * WTN * WARPS_N;
  constexpr int BK = WMMA_K * WTK;
  constexpr int LDA = BK + PAD, LDB = BN + PAD;
  using CopyA = TileCopy<BM, BK, LDA, NT>;
  using CopyB = TileCopy<BK, BN, LDB, NT>;
  constexpr int BUF = BM * LDA + BK * LDB;
  constexpr int TILE_BYTES = STAGES * BUF * 2;
  constexpr int EPI_BYTES = F16ACC ? 0 : (NT / 32) * scratch_floats(WMMA_M, WMMA_N, WTN) * 4;
  constexpr int SMEM_BYTES = TILE_BYTES > EPI_BYTES ? TILE_BYTES : EPI_BYTES;
  static_assert(SMEM_BYTES <= 48 * 1024, "static shared memory is capped at 48 KB");
  static_assert((BM * LDA * 2) % 32 == 0 && (BUF * 2) % 32 == 0, "tiles must start 32-byte aligned");
  __shared__ __align__(128) unsigned char smem[SMEM_BYTES];
  half* const s_base = reinterpret_cast<half*>(smem);

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

  FragA<WMMA_M, WMMA_N, WMMA_K> fa[2][WTM];  // fragment set p holds one K step
  FragB<WMMA_M, WMMA_N, WMMA_K> fb[2][WTN];
  // K step kk of buffer buf -> fragment set p
  auto load_frags = [&](int buf, int kk, int p) __attribute__((always_inline)) {
    const half* s_a = s_base + buf * BUF;
    const half* s_b = s_a + BM * LDA;
#pragma unroll
    for (int i = 0; i < WTM; ++i)
      wmma::load_matrix_sync(fa[p][i], s_a + (wm0 + i * WMMA_M) * LDA + kk * WMMA_K, LDA);
#pragma unroll
    for (int j = 0; j < WTN; ++j)
      wmma::load_matrix_sync(fb[p][j], s_b + kk * WMMA_K * LDB + wn0 + j * WMMA_N, LDB);
  };

  FragC<WMMA_M, WMMA_N, WMMA_K, F16ACC> acc[WTM][WTN];
#pragma unroll
  for (int i = 0; i < WTM; ++i)
#pragma unroll
    for (int j = 0; j < WTN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
  auto mma = [&](int p) __attribute__((always_inline)) {
#pragma unroll
    for (int i = 0; i < WTM; ++i)
#pragma unroll
      for (int j = 0; j < WTN; ++j) wmma::mma_sync(acc[i][j], fa[p][i], fb[p][j], acc[i][j]);
  };

  const int num_kt = K / BK;
  if constexpr (STAGES == 1) {
    for (int kt = 0; kt < num_kt; ++kt) {
      issue(kt, 0);
      cp_async_wait<0>();
      __syncthreads();
      load_frags(0, 0, 0);
#pragma unroll
      for (int kk = 0; kk < WTK; ++kk) {
        if (kk + 1 < WTK) load_frags(0, kk + 1, (kk + 1) & 1);  // next step, under these MMAs
        mma(kk & 1);
      }
      __syncthreads();  // the tile is read out before the next copies land in it
    }
  } else {
    issue(0, 0);
    cp_async_wait<0>();
    __syncthreads();
    load_frags(0, 0, 0);
    for (int kt = 0; kt < num_kt; ++kt) {
      const int cur = kt & 1;
      const bool has_next = kt + 1 < num_kt;  // the same in every thread
      // buffer cur ^ 1 was last read before the previous tile's barrier
      if (has_next) issue(kt + 1, cur ^ 1);
#pragma unroll
      for (int kk = 0; kk < WTK; ++kk) {
        const int p = kk & 1;  // WTK is even: set 0 at every tile start
        if (kk + 1 < WTK) {
          load_frags(cur, kk + 1, p ^ 1);
        } else if (has_next) {
          // every fragment of buffer cur is loaded: wait for tile kt+1 and fetch its first step
          cp_async_wait<0>();
          __syncthreads();
          load_frags(cur ^ 1, 0, p ^ 1);
        }
        mma(p);
      }
    }
    __syncthreads();  // every warp is done with the shared tiles before the epilogue reuses them
  }

  float* scratch = reinterpret_cast<float*>(smem) + warp * scratch_floats(WMMA_M, WMMA_N, WTN);
  warp_store_c<WMMA_M, WMMA_N, WMMA_K, WTM, WTN, F16ACC>(c + (m0 + wm0) * N + n0 + wn0, N, acc,
                                                         scratch, lane);
}
