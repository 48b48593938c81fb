// cugemm/kernels/hgemm_mma/03_ldmatrix.cu -- mma.sync HGEMM, rung 3: fragments through ldmatrix,
// hgemm_mma_m16n8k16_mma2x4_warp4x4_ldmatrix.
//
// C = A * B, 16-bit T in and out (half, or __nv_bfloat16), fp32 accumulation, inline PTX mma.sync.
//
// What this rung adds over rung 2 (the same block and warp tiles, the same synchronous staging):
// the fragments come from shared memory through ldmatrix (lib/mma.cuh), one warp-wide instruction
// per four 8 x 8 matrices of 16-bit elements:
//   A: ldmatrix.x4 per 16 x 16 fragment. Lane l gives the address of row l % 16, k half l / 16 of
//      the fragment (matrices: rows 0-7 / 8-15 x k 0-7 / 8-15); register q of every lane is then
//      exactly a_q of the mma A fragment (4 LDS.32 per lane in rung 2 -> 1 LDSM).
//   B: ldmatrix.x4.trans per pair of 16 x 8 fragments (two adjacent 8-column groups). B is
//      row-major (k rows, n contiguous); .trans transposes each 8 x 8 matrix on its way to the
//      registers, so lane (g, t) receives B[2t][g], B[2t+1][g] packed: the "col" B fragment that
//      rung 2 assembled from two 16-bit loads and a permute per register (8 LDS.U16 + 4 PRMT per
//      lane and pair of fragments -> 1 LDSM.T).
// Lane l addresses k row l % 16, column group l / 16 of the pair.
// Each ldmatrix phase reads 8 rows of 16 bytes; the rows are padded by PAD = 8 halves (A: 48-byte
// rows, B: 272-byte rows) so the 8 rows fall in 8 different 16-byte bank groups.
// Measurements: docs/hgemm_mma.md.
//
// Template parameters: as rung 2 (FRAGS_N even: B fragments load in pairs).
//   BM = 16 * FRAGS_M * WARPS_M, BN = 8 * FRAGS_N * WARPS_N, BK = 16.
// Launch: grid = (N / BN, M / BM, 1), block = (32 * WARPS_M * WARPS_N, 1, 1), static shared memory.
// Preconditions: M % BM == 0, N % BN == 0, K % 16 == 0; a, b, c 16-byte aligned; 32-bit indices;
//   sm_80+.
#include "../lib/mma.cuh"
#include "../lib/move.cuh"

template <int WARPS_M, int WARPS_N, int FRAGS_M, int FRAGS_N, int PAD, class T>
__global__ void __launch_bounds__(32 * WARPS_M * WARPS_N)
hgemm_mma_ldmatrix(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M,
                   int N, int K) {
  constexpr int NT = 32 * WARPS_M * WARPS_N;
  constexpr int WM = 16 * FRAGS_M, WN = 8 * FRAGS_N;  // warp tile
  constexpr int BM = WM * WARPS_M, BN = WN * WARPS_N, BK = 16;
  constexpr int LDA = BK + PAD, LDB = BN + PAD;       // shared row lengths (elements)
  constexpr int A_CHUNKS = BM * BK / 8, B_CHUNKS = BK * BN / 8;  // 16-byte chunks per tile
  static_assert(PAD % 8 == 0, "padded rows stay 16-byte aligned (ldmatrix rows)");
  static_assert(FRAGS_N % 2 == 0, "B fragments load in pairs (ldmatrix.x4.trans)");
  static_assert(A_CHUNKS % NT == 0 && B_CHUNKS % NT == 0, "whole chunks per thread");
  constexpr int A_PER = A_CHUNKS / NT, B_PER = B_CHUNKS / NT;
  __shared__ __align__(16) T sA[BM * LDA];
  __shared__ __align__(16) T sB[BK * LDB];

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int wm0 = warp / WARPS_N * WM, wn0 = warp % WARPS_N * WN;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

  auto a_row = [](int q) { return q / (BK / 8); };
  auto a_col = [](int q) { return q % (BK / 8) * 8; };
  auto b_row = [](int q) { return q / (BN / 8); };
  auto b_col = [](int q) { return q % (BN / 8) * 8; };

  // this lane's ldmatrix row addresses (fragment 0 / pair 0); the others are constant offsets
  const unsigned a_lane = smem_addr(sA + (wm0 + (lane & 15)) * LDA + (lane >> 4) * 8);
  const unsigned b_lane = smem_addr(sB + (lane & 15) * LDB + wn0 + (lane >> 4) * 8);

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
    for (int i = 0; i < FRAGS_M; ++i) ldmatrix_x4(fa[i], a_lane + i * 16 * LDA * sizeof(T));
#pragma unroll
    for (int j = 0; j < FRAGS_N; j += 2) {
      unsigned r[4];
      ldmatrix_x4_trans(r, b_lane + j * 8 * sizeof(T));
      fb[j][0] = r[0];
      fb[j][1] = r[1];
      fb[j + 1][0] = r[2];
      fb[j + 1][1] = r[3];
    }
#pragma unroll
    for (int i = 0; i < FRAGS_M; ++i)
#pragma unroll
      for (int j = 0; j < FRAGS_N; ++j) mma_m16n8k16<T>(acc[i][j], fa[i], fb[j]);
  }

  store_acc_pairs(c + (m0 + wm0) * N + n0 + wn0, N, acc, lane);
}
