// cugemm/kernels/hgemm_mma/04_stages.cu -- mma.sync HGEMM, rung 4: a multi-stage cp.async pipeline
// in dynamic shared memory, hgemm_mma_m16n8k16_mma2x4_warp4x4x2_stage{2,3,4}.
//
// C = A * B, 16-bit T in and out (half, or __nv_bfloat16), fp32 accumulation, inline PTX mma.sync,
// fragments through ldmatrix (.trans for B) as in rung 3.
//
// What this rung adds over rung 3 (synchronous staging: global -> registers -> shared, two
// barriers, and the loads' latency exposed once per K-tile):
//  1. cp.async (lib/cp_async.cuh): 16-byte global -> shared copies that bypass the registers and
//     run in the background; each K-tile's copies form one commit group.
//  2. STAGES shared buffers (2 to 5, a template argument) in a ring in dynamic shared memory: the
//     copies of K-tile kt + STAGES - 1 are issued at the top of K-tile kt, so STAGES - 1 tiles are
//     in flight while one is computed. cp_async_wait<STAGES - 2> (at most STAGES - 2 younger
//     groups pending: tile kt has landed for this thread) and one __syncthreads per K-tile (it has
//     landed for every thread, and every warp is done with the stage the next copies overwrite,
//     the one tile kt - 1 used). Groups are committed even when empty, past the last K-tile, so
//     the count stays uniform.
//  3. BK = 16 * KSTEPS (warp4x4x2: two mma k steps per K-tile), so a barrier covers more MMAs.
// Shared rows are still padded (PAD = 8 halves), as in rungs 2 and 3; the epilogue is rung 3's.
// Measurements: docs/hgemm_mma.md.
//
// Template parameters: WARPS_M x WARPS_N warps, FRAGS_M x FRAGS_N mma tiles per warp (FRAGS_N
// even), BK (a multiple of 16), STAGES (2..5), PAD halves per shared row (a multiple of 8), T.
//   BM = 16 * FRAGS_M * WARPS_M, BN = 8 * FRAGS_N * WARPS_N.
// Launch: grid = (N / BN, M / BM, 1), block = (32 * WARPS_M * WARPS_N, 1, 1), dynamic shared memory
//   hgemm_mma_stages_smem_bytes (the layout: hgemm_mma_stages_smem below; over 48 KB the caller
//   raises cudaFuncAttributeMaxDynamicSharedMemorySize; cugemm's JIT does).
// Preconditions: M % BM == 0, N % BN == 0, K % BK == 0; a, b, c 16-byte aligned; 32-bit indices;
//   sm_80+.
#include "../lib/cp_async.cuh"
#include "../lib/mma.cuh"

// The dynamic shared memory: a ring of STAGES padded A tiles [BM][BK + PAD], then one of STAGES
// padded B tiles [BK][BN + PAD], 16-bit elements (offsets and sizes in elements, BYTES in bytes).
template <int BM, int BN, int BK, int STAGES, int PAD>
struct hgemm_mma_stages_smem {
  static constexpr int LDA = BK + PAD, LDB = BN + PAD;          // row lengths
  static constexpr int A_STAGE = BM * LDA, B_STAGE = BK * LDB;  // per ring stage
  static constexpr int A = 0, B = A + STAGES * A_STAGE;         // the two rings
  static constexpr int BYTES = (B + STAGES * B_STAGE) * 2;
};

template <int WARPS_M, int WARPS_N, int FRAGS_M, int FRAGS_N, int BK, int STAGES, int PAD, class T>
__device__ constexpr int hgemm_mma_stages_smem_bytes =
    hgemm_mma_stages_smem<16 * FRAGS_M * WARPS_M, 8 * FRAGS_N * WARPS_N, BK, STAGES, PAD>::BYTES;

template <int WARPS_M, int WARPS_N, int FRAGS_M, int FRAGS_N, int BK, int STAGES, int PAD, class T>
__global__ void __launch_bounds__(32 * WARPS_M * WARPS_N)
hgemm_mma_stages(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N,
                 int K) {
  constexpr int NT = 32 * WARPS_M * WARPS_N;
  constexpr int WM = 16 * FRAGS_M, WN = 8 * FRAGS_N;  // warp tile
  constexpr int BM = WM * WARPS_M, BN = WN * WARPS_N;
  constexpr int KSTEPS = BK / 16;
  using Smem = hgemm_mma_stages_smem<BM, BN, BK, STAGES, PAD>;
  constexpr int LDA = Smem::LDA, LDB = Smem::LDB;               // shared row lengths (elements)
  constexpr int A_STAGE = Smem::A_STAGE, B_STAGE = Smem::B_STAGE;  // elements per stage
  constexpr int A_CPR = BK / 8, B_CPR = BN / 8;       // 16-byte chunks per tile row
  constexpr int A_PER = BM * A_CPR / NT, B_PER = BK * B_CPR / NT;  // chunks per thread
  static_assert(sizeof(T) == 2, "16-bit elements");
  static_assert(BK % 16 == 0 && FRAGS_N % 2 == 0, "whole k steps; B fragments in pairs");
  static_assert(STAGES >= 2 && STAGES <= 5, "2 to 5 stages");
  static_assert(PAD % 8 == 0, "padded rows stay 16-byte aligned (cp.async, ldmatrix)");
  static_assert(A_PER * NT == BM * A_CPR && B_PER * NT == BK * B_CPR, "whole chunks per thread");
  extern __shared__ __align__(128) unsigned char smem[];
  T* const sA = reinterpret_cast<T*>(smem) + Smem::A;  // STAGES x [BM][LDA]
  T* const sB = reinterpret_cast<T*>(smem) + Smem::B;  // STAGES x [BK][LDB]

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int wm0 = warp / WARPS_N * WM, wn0 = warp % WARPS_N * WN;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

  // ---- global -> shared: chunk q = tid + i * NT of each tile, cp.async 16 bytes ---------------
  const T* a_src = a + (m0 + tid / A_CPR) * K + tid % A_CPR * 8;
  const T* b_src = b + tid / B_CPR * N + n0 + tid % B_CPR * 8;
  T* const a_dst = sA + tid / A_CPR * LDA + tid % A_CPR * 8;
  T* const b_dst = sB + tid / B_CPR * LDB + tid % B_CPR * 8;
  // the copies of the next K-tile into ring stage s (not committed)
  auto issue = [&](int s) __attribute__((always_inline)) {
#pragma unroll
    for (int i = 0; i < A_PER; ++i)
      cp_async_16(a_dst + s * A_STAGE + i * (NT / A_CPR) * LDA, a_src + i * (NT / A_CPR) * K);
#pragma unroll
    for (int i = 0; i < B_PER; ++i)
      cp_async_16(b_dst + s * B_STAGE + i * (NT / B_CPR) * LDB, b_src + i * (NT / B_CPR) * N);
    a_src += BK;
    b_src += BK * N;
  };

  // ---- shared -> fragments (ldmatrix, as in rung 3) ---------------------------------------------
  const unsigned a_lane = smem_addr(sA + (wm0 + (lane & 15)) * LDA + (lane >> 4) * 8);
  const unsigned b_lane = smem_addr(sB + (lane & 15) * LDB + wn0 + (lane >> 4) * 8);
  float acc[FRAGS_M][FRAGS_N][4] = {};

  const int num_kt = K / BK;
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {  // prologue: K-tiles 0 .. STAGES-2 in flight
    if (s < num_kt) issue(s);
    cp_async_commit();
  }
  int rd = 0, wr = STAGES - 1;  // ring stages: the one computed, the one filled next
  for (int kt = 0; kt < num_kt; ++kt) {
    cp_async_wait<STAGES - 2>();  // K-tile kt has landed (this thread's copies) ...
    __syncthreads();              // ... everyone's, and stage wr (K-tile kt - 1's) is free
    if (kt + STAGES - 1 < num_kt) issue(wr);
    cp_async_commit();
    wr = wr + 1 == STAGES ? 0 : wr + 1;
#pragma unroll
    for (int kk = 0; kk < KSTEPS; ++kk) {
      unsigned fa[FRAGS_M][4], fb[FRAGS_N][2];
#pragma unroll
      for (int i = 0; i < FRAGS_M; ++i)
        ldmatrix_x4(fa[i], a_lane + (rd * A_STAGE + i * 16 * LDA + kk * 16) * 2);
#pragma unroll
      for (int j = 0; j < FRAGS_N; j += 2) {
        unsigned r[4];
        ldmatrix_x4_trans(r, b_lane + (rd * B_STAGE + kk * 16 * LDB + j * 8) * 2);
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
    rd = rd + 1 == STAGES ? 0 : rd + 1;
  }

  store_acc_pairs(c + (m0 + wm0) * N + n0 + wn0, N, acc, lane);
}
