// cugemm/kernels/sgemm_cm/04_64.cu -- column-major SGEMM ladder (seed 001), rung 4: sgemm_cm_64
// (the ladder's story, measurements and what was tried: docs/sgemm_cm.md)
//
// C = A * B, all column-major (Fortran order) fp32: A is MxK with leading dimension M (A(m, k) at
// a[m + k*M]), B is KxN with leading dimension K (B(k, n) at b[k + n*K]), C is MxN with leading
// dimension M (C(m, n) at c[m + n*M]). C is overwritten.
//
// What this rung adds over rung 3 (thread tile): a bigger block tile. Global traffic is
// 2*M*N*K / tile, so the 64 x 64 tile (K slice 64) reads half of what the 32 x 32 one did. Each of
// the 256 threads owns a TM x TN (4 x 4) block of C: rows tm0 .. tm0+3, tm0 = TM*(tid / (BN/TN)),
// and columns tn0 .. tn0+3, tn0 = TN*(tid % (BN/TN)); it is written back directly as one float4
// per column (4 contiguous rows of a C column), without a staging tile.
//  * load: the A slice as BK columns of BM floats, BM threads per column (s_a[k][m], as in
//    memory), the B slice as BN columns of BK floats, BK threads per column (s_b[n][k], rows
//    padded to BK + 1). The 64-thread groups are formed from thread_rank() by hand.
//  * compute (the notes' loop order): for each of the TN columns, for each k of the slice, one
//    s_b value times TM s_a values.
// A barrier separates a slice's compute from the next slice's loads (the notes' kernel has none).
//
// Shape rules (checked by the caller, not here): M % BM == 0, N % BN == 0, K % BK == 0, and a
//   16-byte aligned C (float4 stores; the Variant asks 16-byte alignment of every operand).
// Launch:  grid = (N/BN, M/BM, 1), block = ((BM/TM) * (BN/TN), 1, 1).
//   Config: <64, 64, 64, 4, 4> (256 threads, 32.25 KiB static shared memory).
// Needs <cooperative_groups.h> and <nv/target> from one CUDA include directory (Variant.headers);
// _CG_LIMIT_INCLUDED_DEPENDENCIES keeps cooperative groups off libcu++ (see rung 1).
#define _CG_LIMIT_INCLUDED_DEPENDENCIES 1
#include <cooperative_groups.h>

#include "../lib/move.cuh"

template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
sgemm_cm_64(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
            int M, int N, int K) {
  namespace cg = cooperative_groups;
  constexpr int THREADS = (BM / TM) * (BN / TN);
  constexpr int A_STEP = THREADS / BM;  // A columns loaded per pass of the block
  constexpr int B_STEP = THREADS / BK;  // B columns loaded per pass of the block
  static_assert(BM % TM == 0 && BN % TN == 0, "thread tiles must exactly cover the block tile");
  static_assert(THREADS % 32 == 0 && THREADS <= 1024, "whole warps, at most 1024 threads");
  static_assert(THREADS % BM == 0 && BK % A_STEP == 0, "A slice: whole columns per pass, whole passes");
  static_assert(THREADS % BK == 0 && BN % B_STEP == 0, "B slice: whole columns per pass, whole passes");
  static_assert(TM % 4 == 0 && BM % 4 == 0, "C columns are written as float4s");
  static_assert((BK * BM + BN * (BK + 1)) * 4 <= 48 * 1024, "static shared memory must fit in 48 KiB");

  __shared__ __align__(16) float s_a[BK][BM];  // s_a[k][m] = A(m0 + m, k0 + k)
  __shared__ float s_b[BN][BK + 1];            // s_b[n][k] = B(k0 + k, n0 + n)

  const cg::thread_block block = cg::this_thread_block();
  const int tid = static_cast<int>(block.thread_rank());
  const int m0 = static_cast<int>(blockIdx.y) * BM;  // first C row of this block
  const int n0 = static_cast<int>(blockIdx.x) * BN;  // first C column of this block
  const float* a_blk = a + m0;                       // A(m0, 0)
  const float* b_blk = b + n0 * K;                   // B(0, n0)
  const int tm0 = TM * (tid / (BN / TN));            // thread's first row (block-local)
  const int tn0 = TN * (tid % (BN / TN));            // thread's first column (block-local)
  const int a_m = tid % BM, a_k = tid / BM;          // A loader: row, first column
  const int b_k = tid % BK, b_n = tid / BK;          // B loader: row, first column

  float acc[TN][TM];  // acc[i][r] = C(m0 + tm0 + r, n0 + tn0 + i)
#pragma unroll
  for (int i = 0; i < TN; ++i)
#pragma unroll
    for (int r = 0; r < TM; ++r) acc[i][r] = 0.f;

  for (int k0 = 0; k0 < K; k0 += BK) {
    // load: A columns a_k, a_k + A_STEP, ... (BM threads per column, along m)
#pragma unroll
    for (int p = 0; p < BK / A_STEP; ++p) {
      const int k = a_k + p * A_STEP;
      s_a[k][a_m] = a_blk[(k0 + k) * M + a_m];
    }
    // load: B columns b_n, b_n + B_STEP, ... (BK threads per column, along k)
#pragma unroll
    for (int p = 0; p < BN / B_STEP; ++p) {
      const int n = b_n + p * B_STEP;
      s_b[n][b_k] = b_blk[n * K + k0 + b_k];
    }
    block.sync();  // slice complete before anyone reads it

    // compute: for each of the thread's columns, walk the slice's k
#pragma unroll
    for (int i = 0; i < TN; ++i) {
#pragma unroll
      for (int k = 0; k < BK; ++k) {
        const float b_val = s_b[tn0 + i][k];
#pragma unroll
        for (int r = 0; r < TM; ++r) acc[i][r] += s_a[k][tm0 + r] * b_val;
      }
    }
    block.sync();  // everyone done reading before the next slice overwrites the tiles
  }

  // write back: TN columns of TM contiguous rows, as float4s
  float* c_thr = c + (n0 + tn0) * M + m0 + tm0;  // C(m0 + tm0, n0 + tn0)
#pragma unroll
  for (int i = 0; i < TN; ++i) store_f32xN<TM>(c_thr + i * M, acc[i]);
}
