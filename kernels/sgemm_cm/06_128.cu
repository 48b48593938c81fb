// cugemm/kernels/sgemm_cm/06_128.cu -- column-major SGEMM ladder (seed 001), rung 6: sgemm_cm_128
// (the ladder's story, measurements and what was tried: docs/sgemm_cm.md)
//
// C = A * B, all column-major (Fortran order) fp32: A is MxK with leading dimension M (A(m, k) at
// a[m + k*M]), B is KxN with leading dimension K (B(k, n) at b[k + n*K]), C is MxN with leading
// dimension M (C(m, n) at c[m + n*M]). C is overwritten.
//
// What this rung adds over rung 5 (64 opt): a 128 x 128 block tile, which halves global traffic
// again, walked in thin K slices of BK = 8 (a 128-deep slice would not fit in shared memory).
//  * Thread tile 4 x 16, laid out for coalesced stores: lane l of warp w owns rows 4l .. 4l+3 and
//    columns 16w .. 16w+15 (tm0 = TM * (tid % 32), tn0 = TN * (tid / 32), BM/TM = 32 lanes
//    spanning the block's rows); each float4 C store of a warp is 512 contiguous bytes.
//  * A slice: one float4 per thread, warp w copies column w into s_a[k][m] unchanged.
//  * B slice: transposed as in rung 5, s_b[k][n], by groups of BK = 8 threads that read the 8 k of
//    one B column; rows padded to BN + 4 floats (conflict-free, rows 16-byte aligned).
//  * compute: per k, the thread's A rows are one float4 and its B columns four float4s that are
//    the same for the whole warp (broadcasts): 5 shared loads for 64 FMAs.
// Two barriers per slice (one between a slice's compute and the next slice's loads, which the
// notes' kernel lacks).
//
// Shape rules (checked by the caller, not here): M % BM == 0, N % BN == 0, K % BK == 0, and
//   16-byte aligned A and C (float4 loads and stores; the Variant asks it of every operand).
// Launch:  grid = (N/BN, M/BM, 1), block = ((BM/TM) * (BN/TN), 1, 1).
//   Config: <128, 128, 8, 4, 16> (256 threads, 8.1 KiB static shared memory).
// Needs <cooperative_groups.h> and <nv/target> from one CUDA include directory (Variant.headers);
// _CG_LIMIT_INCLUDED_DEPENDENCIES keeps cooperative groups off libcu++ (see rung 1).
#define _CG_LIMIT_INCLUDED_DEPENDENCIES 1
#include <cooperative_groups.h>

#include "../lib/move.cuh"

template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
sgemm_cm_128(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
             int M, int N, int K) {
  namespace cg = cooperative_groups;
  constexpr int THREADS = (BM / TM) * (BN / TN);
  constexpr int BS_LD = BN + 4;                  // padded row length of s_b
  constexpr int A_VECS = BM * BK / 4 / THREADS;  // float4s of the A slice each thread loads
  constexpr int B_STEP = THREADS / BK;           // B columns loaded per pass of the block
  static_assert(BM % TM == 0 && BN % TN == 0, "thread tiles must exactly cover the block tile");
  static_assert(BM / TM == 32, "the 32 lanes of a warp span the block tile's rows");
  static_assert(THREADS <= 1024, "at most 1024 threads");
  static_assert(TM % 4 == 0 && TN % 4 == 0 && BM % 4 == 0, "fragments and C columns move as float4s");
  static_assert((BM * BK / 4) % THREADS == 0, "A slice: a whole number of float4s per thread");
  static_assert(THREADS % BK == 0 && BN % B_STEP == 0, "B slice: whole columns per pass, whole passes");
  static_assert(BK * (BM + BS_LD) * 4 <= 48 * 1024, "static shared memory must fit in 48 KiB");

  __shared__ __align__(16) float s_a[BK][BM];     // s_a[k][m] = A(m0 + m, k0 + k)
  __shared__ __align__(16) float s_b[BK][BS_LD];  // s_b[k][n] = B(k0 + k, n0 + n), transposed

  const cg::thread_block block = cg::this_thread_block();
  const cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  const int tid = static_cast<int>(block.thread_rank());
  const int m0 = static_cast<int>(blockIdx.y) * BM;  // first C row of this block
  const int n0 = static_cast<int>(blockIdx.x) * BN;  // first C column of this block
  const float* a_blk = a + m0;                       // A(m0, 0)
  const float* b_blk = b + n0 * K;                   // B(0, n0)
  const int tm0 = TM * static_cast<int>(warp.thread_rank());      // rows tm0 .. tm0 + TM - 1
  const int tn0 = TN * static_cast<int>(warp.meta_group_rank());  // columns tn0 .. tn0 + TN - 1
  const int b_k = tid % BK, b_n = tid / BK;  // B loader: row, first column

  float acc[TN][TM];  // acc[i][r] = C(m0 + tm0 + r, n0 + tn0 + i)
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

    // compute: per k, one float4 of A and TN/4 broadcast float4s of B, then a TM x TN outer product
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float r_a[TM], r_b[TN];
      load_f32xN<TM>(r_a, &s_a[k][tm0]);
      load_f32xN<TN>(r_b, &s_b[k][tn0]);
#pragma unroll
      for (int i = 0; i < TN; ++i)
#pragma unroll
        for (int r = 0; r < TM; ++r) acc[i][r] += r_a[r] * r_b[i];
    }
    block.sync();  // everyone done reading before the next slice overwrites the tiles
  }

  // write back: TN columns of TM contiguous rows, as float4s (a warp: 512 bytes per column)
  float* c_thr = c + (n0 + tn0) * M + m0 + tm0;  // C(m0 + tm0, n0 + tn0)
#pragma unroll
  for (int i = 0; i < TN; ++i) store_f32xN<TM>(c_thr + i * M, acc[i]);
}
