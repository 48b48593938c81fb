// cugemm/kernels/sgemm_cm/05_64_opt.cu -- column-major SGEMM ladder (seed 001),
// rung 5: sgemm_cm_64_opt
// (the ladder's story, measurements and what was tried: docs/sgemm_cm.md)
//
// C = A * B, all column-major (Fortran order) fp32: A is MxK with leading dimension M (A(m, k) at
// a[m + k*M]), B is KxN with leading dimension K (B(k, n) at b[k + n*K]), C is MxN with leading
// dimension M (C(m, n) at c[m + n*M]). C is overwritten.
//
// What this rung adds over rung 4 (64 tile): vector loads and a transposed B tile, so that both
// operands of an outer product lie along a shared-memory row.
//  * A slice: float4 global loads, BM/4 threads per column of BM floats, stored unchanged as
//    float4s into s_a[k][m].
//  * B slice: transposed on its way in, s_b[k][n] = B(k0 + k, n0 + n); BK threads per B column
//    read it along k (coalesced); rows padded to BN + 1 floats (conflict-free column writes).
//  * compute, k outer (the notes' order): per k a thread loads its TM rows of A as one float4
//    and its TN columns of B into registers, then does a TM x TN outer product.
//  * Thread tile: rows tm0 .. tm0+TM-1 with tm0 = TM * (tid / (BN/TN)) as in rung 4, but its TN
//    columns are strided: tn + i * (BN/TN), tn = tid % (BN/TN), so the s_b reads of a warp are 16
//    consecutive words per i (conflict-free). C stores stay float4 columns.
//
// Shape rules (checked by the caller, not here): M % BM == 0, N % BN == 0, K % BK == 0, and
//   16-byte aligned A and C (float4 loads and stores; the Variant asks it of every operand).
// Launch:  grid = (N/BN, M/BM, 1), block = ((BM/TM) * (BN/TN), 1, 1).
//   Config: <64, 64, 64, 4, 4> (256 threads, 32.25 KiB static shared memory).
// Needs <cooperative_groups.h> and <nv/target> from one CUDA include directory (Variant.headers);
// _CG_LIMIT_INCLUDED_DEPENDENCIES keeps cooperative groups off libcu++ (see rung 1).
#define _CG_LIMIT_INCLUDED_DEPENDENCIES 1
#include <cooperative_groups.h>

#include "../lib/move.cuh"

template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
sgemm_cm_64_opt(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                int M, int N, int K) {
  namespace cg = cooperative_groups;
  constexpr int THREADS = (BM / TM) * (BN / TN);
  constexpr int COLS = BN / TN;                  // threads per block row: the column stride
  constexpr int A_VECS = BM * BK / 4 / THREADS;  // float4s of the A slice each thread loads
  constexpr int B_STEP = THREADS / BK;           // B columns loaded per pass of the block
  static_assert(BM % TM == 0 && BN % TN == 0, "thread tiles must exactly cover the block tile");
  static_assert(THREADS % 32 == 0 && THREADS <= 1024, "whole warps, at most 1024 threads");
  static_assert(BM % 4 == 0 && TM % 4 == 0, "A columns and C columns move as float4s");
  static_assert((BM * BK / 4) % THREADS == 0, "A slice: a whole number of float4s per thread");
  static_assert(THREADS % BK == 0 && BN % B_STEP == 0, "B slice: whole columns per pass, whole passes");
  static_assert((BK * BM + BK * (BN + 1)) * 4 <= 48 * 1024, "static shared memory must fit in 48 KiB");

  __shared__ __align__(16) float s_a[BK][BM];  // s_a[k][m] = A(m0 + m, k0 + k)
  __shared__ float s_b[BK][BN + 1];            // s_b[k][n] = B(k0 + k, n0 + n), transposed

  const cg::thread_block block = cg::this_thread_block();
  const int tid = static_cast<int>(block.thread_rank());
  const int m0 = static_cast<int>(blockIdx.y) * BM;  // first C row of this block
  const int n0 = static_cast<int>(blockIdx.x) * BN;  // first C column of this block
  const float* a_blk = a + m0;                       // A(m0, 0)
  const float* b_blk = b + n0 * K;                   // B(0, n0)
  const int tm0 = TM * (tid / COLS);                 // thread's rows: tm0 .. tm0 + TM - 1
  const int tn = tid % COLS;                         // thread's columns: tn + i * COLS, i < TN
  const int b_k = tid % BK, b_n = tid / BK;          // B loader: row, first column

  float acc[TN][TM];  // acc[i][r] = C(m0 + tm0 + r, n0 + tn + i * COLS)
#pragma unroll
  for (int i = 0; i < TN; ++i)
#pragma unroll
    for (int r = 0; r < TM; ++r) acc[i][r] = 0.f;

  for (int k0 = 0; k0 < K; k0 += BK) {
    // load A: float4 v -> column k, rows m .. m+3; stored as is
#pragma unroll
    for (int p = 0; p < A_VECS; ++p) {
      const int v = tid + p * THREADS;
      const int k = v / (BM / 4), m = (v % (BM / 4)) * 4;
      store_f32x4(&s_a[k][m], load_f32x4(a_blk + (k0 + k) * M + m));
    }
    // load B: columns b_n, b_n + B_STEP, ... (BK threads per column, along k); stored transposed
#pragma unroll
    for (int p = 0; p < BN / B_STEP; ++p) {
      const int n = b_n + p * B_STEP;
      s_b[b_k][n] = b_blk[n * K + k0 + b_k];
    }
    block.sync();  // slice complete before anyone reads it

    // compute: per k, TM values of A (one float4) and TN of B, then an outer product
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float r_a[TM], r_b[TN];
      load_f32xN<TM>(r_a, &s_a[k][tm0]);
#pragma unroll
      for (int i = 0; i < TN; ++i) r_b[i] = s_b[k][tn + i * COLS];
#pragma unroll
      for (int i = 0; i < TN; ++i)
#pragma unroll
        for (int r = 0; r < TM; ++r) acc[i][r] += r_a[r] * r_b[i];
    }
    block.sync();  // everyone done reading before the next slice overwrites the tiles
  }

  // write back: TN columns of TM contiguous rows, as float4s
  float* c_thr = c + (n0 + tn) * M + m0 + tm0;  // C(m0 + tm0, n0 + tn)
#pragma unroll
  for (int i = 0; i < TN; ++i) store_f32xN<TM>(c_thr + i * COLS * M, acc[i]);
}
