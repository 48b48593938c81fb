// cugemm/kernels/sgemm_cm/07_128_pipeline.cu -- column-major SGEMM ladder (seed 001), rung 7:
// sgemm_cm_128_pipeline
// (the ladder's story, the index math, measurements and what was tried: docs/sgemm_cm.md)
//
// C = A * B, all column-major (Fortran order) fp32: A is MxK with leading dimension M (A(m, k) at
// a[m + k*M]), B is KxN with leading dimension K (B(k, n) at b[k + n*K]), C is MxN with leading
// dimension M (C(m, n) at c[m + n*M]). C is overwritten.
//
// What this rung adds over rung 6 (128 tile): a software pipeline. Tiles, thread tile (4 x 16,
// lane l of warp w: rows 4l .. 4l+3, columns 16w .. 16w+15), the A loader, the shared layouts and
// the coalesced float4 write-back are rung 6's. New:
//  * Register-staged double buffer: the global loads of K-slice kt + 1 go into registers right
//    after the barrier that publishes slice kt, and are stored into the other shared buffer before
//    the slice's last k step: one barrier per slice (rung 6 needed two).
//  * Register double buffer of fragments: the fragments of step k + 1 are loaded from shared
//    memory while the 64 FFMAs of step k run (across slices too).
//  * B is fetched as one float4 per thread (4 consecutive k of one column), stored transposed to
//    s_b[buf][k + q][n] (row stride BN + 4: conflict-free).
//  * The last slice is peeled off the loop; __launch_bounds__(256, 2): at most 128 registers, two
//    blocks per SM.
//
// Shape rules (checked by the caller, not here): M % BM == 0, N % BN == 0, K % BK == 0, K >= BK,
//   and 16-byte aligned A, B and C (float4 loads and stores).
// Launch:  grid = (N/BN, M/BM, 1), block = ((BM/TM) * (BN/TN), 1, 1).
//   Config: <128, 128, 8, 4, 16> (256 threads, 16.25 KiB static shared memory).
// Needs <cooperative_groups.h> and <nv/target> from one CUDA include directory (Variant.headers);
// _CG_LIMIT_INCLUDED_DEPENDENCIES keeps cooperative groups off libcu++ (see rung 1).
#define _CG_LIMIT_INCLUDED_DEPENDENCIES 1
#include <cooperative_groups.h>

#include "../lib/move.cuh"

template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN), 2)
sgemm_cm_128_pipeline(const float* __restrict__ a, const float* __restrict__ b,
                      float* __restrict__ c, int M, int N, int K) {
  namespace cg = cooperative_groups;
  constexpr int THREADS = (BM / TM) * (BN / TN);
  constexpr int BS_LD = BN + 4;                  // padded row length of s_b
  constexpr int A_VECS = BM * BK / 4 / THREADS;  // float4s of the A slice each thread loads
  constexpr int B_VECS = BN * BK / 4 / THREADS;  // float4s of the B slice each thread loads
  static_assert(BM % TM == 0 && BN % TN == 0, "thread tiles must exactly cover the block tile");
  static_assert(BM / TM == 32, "the 32 lanes of a warp span the block tile's rows");
  static_assert(THREADS <= 512, "two blocks per SM: at most 512 threads");
  static_assert(TM % 4 == 0 && TN % 4 == 0 && BM % 4 == 0, "fragments and C columns move as float4s");
  static_assert(BK % 2 == 0, "fragment sets alternate per k step: a slice must end on set 1");
  static_assert((BM * BK / 4) % THREADS == 0, "A slice: a whole number of float4s per thread");
  static_assert(BK % 4 == 0 && (BN * BK / 4) % THREADS == 0,
                "B slice: a whole number of float4s (along k) per thread");
  static_assert(2 * BK * (BM + BS_LD) * 4 <= 48 * 1024, "static shared memory must fit in 48 KiB");

  __shared__ __align__(16) float s_a[2][BK][BM];     // s_a[buf][k][m] = A(m0 + m, k0 + k)
  __shared__ __align__(16) float s_b[2][BK][BS_LD];  // s_b[buf][k][n] = B(k0 + k, n0 + n)

  const cg::thread_block block = cg::this_thread_block();
  const cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  const int tid = static_cast<int>(block.thread_rank());
  const int m0 = static_cast<int>(blockIdx.y) * BM;  // first C row of this block
  const int n0 = static_cast<int>(blockIdx.x) * BN;  // first C column of this block
  const float* a_blk = a + m0;                       // A(m0, 0)
  const float* b_blk = b + n0 * K;                   // B(0, n0)
  const int tm0 = TM * static_cast<int>(warp.thread_rank());      // rows tm0 .. tm0 + TM - 1
  const int tn0 = TN * static_cast<int>(warp.meta_group_rank());  // columns tn0 .. tn0 + TN - 1
  const int num_kt = K / BK;

  // ---- global -> registers -> shared ----------------------------------------------------------
  float r_ga[4 * A_VECS];  // A slice part: float4 p = columns/rows of v = tid + p * THREADS
  float r_gb[4 * B_VECS];  // B slice part: float4 p = rows k .. k+3 of column n of v = tid + p * THREADS

  auto load_global = [&](int kt) __attribute__((always_inline)) {
    const int k0 = kt * BK;
#pragma unroll
    for (int p = 0; p < A_VECS; ++p) {
      const int v = tid + p * THREADS;
      const int k = v / (BM / 4), m = (v % (BM / 4)) * 4;
      const float4 t = load_f32x4(a_blk + (k0 + k) * M + m);
      r_ga[4 * p + 0] = t.x;
      r_ga[4 * p + 1] = t.y;
      r_ga[4 * p + 2] = t.z;
      r_ga[4 * p + 3] = t.w;
    }
#pragma unroll
    for (int p = 0; p < B_VECS; ++p) {
      const int v = tid + p * THREADS;
      const int n = v / (BK / 4), k = (v % (BK / 4)) * 4;
      const float4 t = load_f32x4(b_blk + n * K + k0 + k);
      r_gb[4 * p + 0] = t.x;
      r_gb[4 * p + 1] = t.y;
      r_gb[4 * p + 2] = t.z;
      r_gb[4 * p + 3] = t.w;
    }
  };
  auto store_shared = [&](int buf) __attribute__((always_inline)) {
#pragma unroll
    for (int p = 0; p < A_VECS; ++p) {
      const int v = tid + p * THREADS;
      const int k = v / (BM / 4), m = (v % (BM / 4)) * 4;
      store_f32xN<4>(&s_a[buf][k][m], &r_ga[4 * p]);
    }
#pragma unroll
    for (int p = 0; p < B_VECS; ++p) {
      const int v = tid + p * THREADS;
      const int n = v / (BK / 4), k = (v % (BK / 4)) * 4;
#pragma unroll
      for (int q = 0; q < 4; ++q) s_b[buf][k + q][n] = r_gb[4 * p + q];
    }
  };

  // ---- shared -> register fragments, double-buffered ------------------------------------------
  float f_a[2][TM];  // f_a[s][r] = A(m0 + tm0 + r, k) of the k step held in set s
  float f_b[2][TN];  // f_b[s][i] = B(k, n0 + tn0 + i)
  auto load_frag = [&](int buf, int k, int s) __attribute__((always_inline)) {
    load_f32xN<TM>(f_a[s], &s_a[buf][k][tm0]);
    load_f32xN<TN>(f_b[s], &s_b[buf][k][tn0]);
  };

  float acc[TN][TM];  // acc[i][r] = C(m0 + tm0 + r, n0 + tn0 + i)
#pragma unroll
  for (int i = 0; i < TN; ++i)
#pragma unroll
    for (int r = 0; r < TM; ++r) acc[i][r] = 0.f;

  // Prologue: slice 0 into buffer 0, the loads of slice 1 issued, step 0's fragments into set 0.
  // The fetch after a barrier is clamped to the last slice: the redundant one is never stored.
  load_global(0);
  store_shared(0);
  block.sync();
  load_global(min(1, num_kt - 1));
  load_frag(0, 0, 0);

  // One slice of FFMAs. On entry buffer kt & 1 holds slice kt, visible to all threads, fragment
  // set 0 holds its step 0, and if has_next the registers r_ga / r_gb are receiving slice kt + 1.
  // On exit, if has_next, the same holds for kt + 1. (always_inline: called twice below, with
  // has_next a constant each time.)
  auto slice = [&](const int kt, const bool has_next) __attribute__((always_inline)) {
    const int cur = kt & 1;
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const int s = k & 1;  // fragment set used by this step; 1 - s is being filled
      if (k < BK - 1) {
        load_frag(cur, k + 1, 1 - s);
      } else if (has_next) {
        // Every thread loaded its last fragment of buffer cur ^ 1 before the previous slice's
        // barrier, so it may be overwritten now; this barrier then publishes slice kt + 1.
        store_shared(cur ^ 1);
        block.sync();
        load_global(min(kt + 2, num_kt - 1));
        load_frag(cur ^ 1, 0, 1 - s);  // 1 - s == 0 since BK is even
      }
#pragma unroll
      for (int i = 0; i < TN; ++i)
#pragma unroll
        for (int r = 0; r < TM; ++r) acc[i][r] = fmaf(f_a[s][r], f_b[s][i], acc[i][r]);
    }
  };
  int kt = 0;
  for (; kt < num_kt - 1; ++kt) slice(kt, true);  // every slice but the last stores the next
  slice(kt, false);                                // kt == num_kt - 1

  // write back: TN columns of TM contiguous rows, as float4s (a warp: 512 bytes per column)
  float* c_thr = c + (n0 + tn0) * M + m0 + tm0;  // C(m0 + tm0, n0 + tn0)
#pragma unroll
  for (int i = 0; i < TN; ++i) store_f32xN<TM>(c_thr + i * M, acc[i]);
}
