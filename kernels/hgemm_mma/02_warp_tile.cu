// cugemm/kernels/hgemm_mma/02_warp_tile.cu -- mma.sync HGEMM, rung 2: block and warp tiling,
// hgemm_mma_m16n8k16_mma2x4_warp4x4.
//
// C = A * B, 16-bit T in and out (half, or __nv_bfloat16), fp32 accumulation, inline PTX mma.sync.
//
// What this rung adds over rung 1 (one warp, operands from global memory):
//  1. Block tiling: WARPS_M x WARPS_N warps share a BM x BK tile of A and a BK x BN tile of B in
//     shared memory (BK = 16, one mma k step), so each global element is read by one thread per
//     block instead of once per warp: 16-byte global loads into registers, 16-byte shared stores,
//     two barriers per K-tile (one before overwriting the tiles, one before reading them).
//  2. Warp tiling: each warp computes FRAGS_M x FRAGS_N mma tiles of 16 x 8 (warp4x4: 64 x 32),
//     so an A fragment is reused FRAGS_N times and a B fragment FRAGS_M times per k step
//     (FRAGS_M * FRAGS_N mmas for FRAGS_M + FRAGS_N fragment loads; rung 1: 1 for 1 + 1).
// Fragments are still read with ordinary shared loads, element pairs at the PTX fragment
// positions (lib/mma.cuh): A one 32-bit LDS per register (row g, k 2t..2t+1); B, row-major in
// shared memory, two 16-bit LDS per register (k 2t and 2t+1 of column g are rows apart), packed.
// Shared rows are padded by PAD halves: with PAD = 8 the A rows (BK + 8 = 24 halves = 12 words)
// put the 32 lanes' (g, t) words in 32 distinct banks, and the B reads (4 k rows x 8 columns) too.
// Measurements: docs/hgemm_mma.md.
//
// Template parameters: WARPS_M x WARPS_N warps, FRAGS_M x FRAGS_N mma tiles per warp, PAD halves
// of padding per shared row, T (half or __nv_bfloat16).
//   BM = 16 * FRAGS_M * WARPS_M, BN = 8 * FRAGS_N * WARPS_N, BK = 16.
// Launch: grid = (N / BN, M / BM, 1), block = (32 * WARPS_M * WARPS_N, 1, 1), static shared memory.
// Preconditions: M % BM == 0, N % BN == 0, K % 16 == 0; a, b, c 16-byte aligned; 32-bit indices;
//   sm_80+.
#include "../lib/mma.cuh"
#include "../lib/move.cuh"

template <int WARPS_M, int WARPS_N, int FRAGS_M, int FRAGS_N, int PAD, class T>
__global__ void __launch_bounds__(32 * WARPS_M * WARPS_N)
hgemm_mma_warp_tile(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M,
                    int N, int K) {
  constexpr int NT = 32 * WARPS_M * WARPS_N;
  constexpr int WM = 16 * FRAGS_M, WN = 8 * FRAGS_N;  // warp tile
  constexpr int BM = WM * WARPS_M, BN = WN * WARPS_N, BK = 16;
  constexpr int LDA = BK + PAD, LDB = BN + PAD;       // shared row lengths (elements)
  constexpr int A_CHUNKS = BM * BK / 8, B_CHUNKS = BK * BN / 8;  // 16-byte chunks per tile
  static_assert(PAD % 8 == 0, "padded rows stay 16-byte aligned");
  static_assert(A_CHUNKS % NT == 0 && B_CHUNKS % NT == 0, "whole chunks per thread");
  constexpr int A_PER = A_CHUNKS / NT, B_PER = B_CHUNKS / NT;
  __shared__ __align__(16) T sA[BM * LDA];
  __shared__ __align__(16) T sB[BK * LDB];

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int wm0 = warp / WARPS_N * WM, wn0 = warp % WARPS_N * WN;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

  // chunk q = tid + i * NT of a tile: A row q / (BK / 8), column (q % (BK / 8)) * 8; B likewise
  auto a_row = [](int q) { return q / (BK / 8); };
  auto a_col = [](int q) { return q % (BK / 8) * 8; };
  auto b_row = [](int q) { return q / (BN / 8); };
  auto b_col = [](int q) { return q % (BN / 8) * 8; };

  auto u32 = [](const T* p) { return *reinterpret_cast<const unsigned*>(p); };
  auto b16 = [](const T* p) { return static_cast<unsigned>(*reinterpret_cast<const unsigned short*>(p)); };

  float acc[FRAGS_M][FRAGS_N][4] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    uint4 ra[A_PER], rb[B_PER];
#pragma unroll
    for (int i = 0; i < A_PER; ++i) {
      const int q = tid + i * NT;
      ra[i] = *reinterpret_cast<const uint4*>(a + (m0 + a_row(q)) * K + k0 + a_col(q));
    }
#pragma unroll
    for (int i = 0; i < B_PER; ++i) {
      const int q = tid + i * NT;
      rb[i] = *reinterpret_cast<const uint4*>(b + (k0 + b_row(q)) * N + n0 + b_col(q));
    }
    __syncthreads();  // every warp is done reading the previous tiles
#pragma unroll
    for (int i = 0; i < A_PER; ++i) {
      const int q = tid + i * NT;
      *reinterpret_cast<uint4*>(sA + a_row(q) * LDA + a_col(q)) = ra[i];
    }
#pragma unroll
    for (int i = 0; i < B_PER; ++i) {
      const int q = tid + i * NT;
      *reinterpret_cast<uint4*>(sB + b_row(q) * LDB + b_col(q)) = rb[i];
    }
    __syncthreads();  // the tiles are complete

    unsigned fa[FRAGS_M][4], fb[FRAGS_N][2];
#pragma unroll
    for (int i = 0; i < FRAGS_M; ++i) {
      const T* p = sA + (wm0 + i * 16 + g) * LDA + 2 * t;
      fa[i][0] = u32(p);
      fa[i][1] = u32(p + 8 * LDA);
      fa[i][2] = u32(p + 8);
      fa[i][3] = u32(p + 8 * LDA + 8);
    }
#pragma unroll
    for (int j = 0; j < FRAGS_N; ++j) {
      const T* p = sB + 2 * t * LDB + wn0 + j * 8 + g;
      fb[j][0] = b16(p) | b16(p + LDB) << 16;
      fb[j][1] = b16(p + 8 * LDB) | b16(p + 9 * LDB) << 16;
    }
#pragma unroll
    for (int i = 0; i < FRAGS_M; ++i)
#pragma unroll
      for (int j = 0; j < FRAGS_N; ++j) mma_m16n8k16<T>(acc[i][j], fa[i], fb[j]);
  }

  // C straight from the accumulators: one 32-bit store per lane and row (rows g and g + 8)
  store_acc_pairs(c + (m0 + wm0) * N + n0 + wn0, N, acc, lane);
}
