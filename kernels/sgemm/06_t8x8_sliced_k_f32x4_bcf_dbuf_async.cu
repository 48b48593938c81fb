// cugemm/kernels/sgemm/06_t8x8_sliced_k_f32x4_bcf_dbuf_async.cu -- SGEMM ladder, rung 6:
// sgemm_t_{8x4,8x8,8x16}_sliced_k16_f32x4_bcf_dbuf_async (double-buffered through cp.async)
// (the ladder's story, measurements and what was tried: docs/sgemm.md)
//
// C = A * B, all row-major fp32: A is MxK, B is KxN, C is MxN (C is overwritten).
//
// What this rung adds over rung 5 (dbuf): the global -> shared copies are cp.async, which
// write shared memory directly without passing through registers, so the staging registers
// and the explicit store phase disappear. B goes in 16-byte copies (cp_async_16, row k,
// columns n..n+3); A, being transposed on the way in, goes one float at a time (cp_async_4).
// Per slice kt:
//   1. load:     issue the copies of slice kt+1 into buffer (kt+1)&1, then commit the group,
//   2. compute:  slice kt from buffer kt&1 while the copies fly,
//   3. wait:     cp_async_wait<0>() (this thread's copies have landed) + __syncthreads()
//      (so have everyone's, and nobody still reads buffer kt&1 when slice kt+2 is issued).
// Layouts, the thread-tile split and the write-back are rung 4's.
//
// Shape rules (checked by the caller, not here): M % BM == 0, N % BN == 0, K % BK == 0, and
//   16-byte aligned base pointers. Needs sm_80+ (cp.async).
// Launch:  grid = (N/BN, M/BM, 1), block = (BN/TN, BM/TM, 1): threadIdx.x walks N, threadIdx.y
//   walks M. Configs (block size):
//     <128,  64, 16, 8,  4, 0>  t8x4, k16    256 threads  (block 16 x 16)
//     <128, 128, 16, 8,  8, 0>  t8x8, k16    256 threads
//     <128, 128, 16, 8, 16, 0>  t8x16, k16   128 threads  (block 8 x 16)
#include "../lib/cp_async.cuh"
#include "../lib/move.cuh"

template <int BM, int BN, int BK, int TM, int TN, int PAD>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
sgemm_t_8x8_sliced_k_f32x4_bcf_dbuf_async(const float* __restrict__ a,
                                          const float* __restrict__ b, float* __restrict__ c,
                                          int M, int N, int K) {
  constexpr int THREADS = (BM / TM) * (BN / TN);
  constexpr int HM = TM / 2, HN = TN / 2;        // a thread tile is two halves in each direction
  constexpr int A_VECS = BM * BK / 4 / THREADS;  // 4-float runs of the A tile each thread copies
  constexpr int B_VECS = BK * BN / 4 / THREADS;  // float4s of the B tile each thread copies
  static_assert(BM % TM == 0 && BN % TN == 0, "thread tiles must exactly cover the block tile");
  static_assert(THREADS <= 1024, "too many threads per block");
  static_assert(TM % 2 == 0 && TN % 2 == 0, "thread tiles are split into two halves");
  static_assert(HM % 2 == 0 && HN % 2 == 0, "each half is read/written as float4s or float2s");
  static_assert(BK % 4 == 0 && BM % 4 == 0 && BN % 4 == 0, "tile rows are moved as float4s");
  static_assert(PAD >= 0 && PAD % 4 == 0, "padding must keep shared rows 16-byte aligned");
  static_assert((BM * BK / 4) % THREADS == 0, "A tile: a whole number of float4s per thread");
  static_assert((BK * BN / 4) % THREADS == 0, "B tile: a whole number of float4s per thread");
  static_assert(2 * BK * (BM + PAD + BN + PAD) * 4 <= 48 * 1024,
                "static shared memory must fit in 48 KiB");

  __shared__ __align__(16) float s_a[2][BK][BM + PAD];  // A tiles, transposed: s_a[buf][k][m]
  __shared__ __align__(16) float s_b[2][BK][BN + PAD];  // B tiles: s_b[buf][k][n]

  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * (BN / TN) + tx;
  const int bm0 = static_cast<int>(blockIdx.y) * BM;  // first C row of this block
  const int bn0 = static_cast<int>(blockIdx.x) * BN;  // first C column of this block
  const float* a_blk = a + bm0 * K;                   // row bm0 of A
  const float* b_blk = b + bn0;                       // column bn0 of B
  const int tm0 = ty * HM;  // thread's rows: tm0 + i and BM/2 + tm0 + i, i < HM (block-local)
  const int tn0 = tx * HN;  // thread's cols: tn0 + j and BN/2 + tn0 + j, j < HN (block-local)

  float r_c[TM][TN];  // r_c[i][j]: rows i < HM upper half, i >= HM lower; same for columns
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) r_c[i][j] = 0.f;

  // load: issue the cp.async copies of the slice starting at column k0 of A / row k0 of B into
  // buffer `buf` (does not wait). Same element mapping as rung 5.
  auto issue_slice = [&](int k0, int buf) {
#pragma unroll
    for (int i = 0; i < A_VECS; ++i) {  // A: row m, columns k..k+3 -> s_a[buf][k + q][m]
      const int v = tid + i * THREADS;
      const int m = v / (BK / 4), k = (v % (BK / 4)) * 4;
      const float* src = a_blk + m * K + k0 + k;
#pragma unroll
      for (int q = 0; q < 4; ++q) cp_async_4(&s_a[buf][k + q][m], src + q);
    }
#pragma unroll
    for (int i = 0; i < B_VECS; ++i) {  // B: row k, columns n..n+3 -> s_b[buf][k][n..n+3]
      const int v = tid + i * THREADS;
      const int k = v / (BN / 4), n = (v % (BN / 4)) * 4;
      cp_async_16(&s_b[buf][k][n], b_blk + (k0 + k) * N + n);
    }
    cp_async_commit();
  };

  // prologue: slice 0 into buffer 0, and wait for it (nothing to copy when K == 0: C is then
  // all zeros)
  const int num_slices = K / BK;
  if (num_slices > 0) {
    issue_slice(0, 0);
    cp_async_wait<0>();
  }
  __syncthreads();

  for (int kt = 0; kt < num_slices; ++kt) {
    const int cur = kt & 1;
    const bool has_next = kt + 1 < num_slices;  // same value in every thread of the block

    // load: slice kt+1 into the other buffer (last read in iteration kt-1, which ended with
    // a barrier), in flight during the compute below
    if (has_next) issue_slice((kt + 1) * BK, cur ^ 1);

    // compute: slice kt from buffer `cur`, same split as rung 4
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float r_a[TM], r_b[TN];
      load_f32xN<HM>(r_a, &s_a[cur][k][tm0]);
      load_f32xN<HM>(r_a + HM, &s_a[cur][k][tm0 + BM / 2]);
      load_f32xN<HN>(r_b, &s_b[cur][k][tn0]);
      load_f32xN<HN>(r_b + HN, &s_b[cur][k][tn0 + BN / 2]);
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) r_c[i][j] += r_a[i] * r_b[j];
    }

    // wait: this thread's copies of slice kt+1 have landed; the barrier makes everyone's
    // visible before iteration kt+1 reads them
    if (has_next) {
      cp_async_wait<0>();
      __syncthreads();
    }
  }

  // write back with the same split: row i -> tm0 + i (upper) or BM/2 + tm0 + i - HM (lower),
  // each row as two half rows of HN floats at columns tn0 and BN/2 + tn0
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = bm0 + (i < HM ? tm0 + i : BM / 2 + tm0 + (i - HM));
    float* c_row = c + row * N + bn0;
    store_f32xN<HN>(c_row + tn0, r_c[i]);
    store_f32xN<HN>(c_row + BN / 2 + tn0, r_c[i] + HN);
  }
}
