// cugemm/kernels/sgemm/03_t8x8_sliced_k_f32x4.cu -- SGEMM ladder, rung 3:
// sgemm_t_8x8_sliced_k_f32x4
// (the ladder's story, measurements and what was tried: docs/sgemm.md)
//
// C = A * B, all row-major fp32: A is MxK, B is KxN, C is MxN (C is overwritten).
//
// What this rung adds over rung 2 (sliced_k): a thread tile. Each thread owns a TMxTN block of
// C (TM contiguous rows, TN contiguous columns) held in registers, so per k it loads TM values
// of A and TN values of B from shared memory and does TM*TN FMAs. Tiles move global -> shared
// as float4 (A kept as s_a[BM][BK], B as s_b[BK][BN]) and C is written back with float4 stores.
//
// Shape rules (checked by the caller, not here): M % BM == 0, N % BN == 0, K % BK == 0, and
//   16-byte aligned base pointers; with BK and BN multiples of 4 that makes every float4
//   access aligned.
// Launch:  grid = (N/BN, M/BM, 1), block = (BN/TN, BM/TM, 1): threadIdx.x walks N, threadIdx.y
//   walks M. Config: <128, 128, 8, 8, 8> (256 threads, 8 KiB static shared memory).
#include "../lib/move.cuh"

template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
sgemm_t_8x8_sliced_k_f32x4(const float* __restrict__ a, const float* __restrict__ b,
                           float* __restrict__ c, int M, int N, int K) {
  constexpr int THREADS = (BM / TM) * (BN / TN);
  constexpr int A_VECS = BM * BK / 4 / THREADS;  // float4s of the A tile each thread loads
  constexpr int B_VECS = BK * BN / 4 / THREADS;  // float4s of the B tile each thread loads
  static_assert(BM % TM == 0 && BN % TN == 0, "thread tiles must exactly cover the block tile");
  static_assert(THREADS <= 1024, "too many threads per block");
  static_assert(BK % 4 == 0 && BN % 4 == 0, "tile rows are moved as whole float4s");
  static_assert(TN % 4 == 0, "each thread reads B and writes C rows as float4s");
  static_assert((BM * BK / 4) % THREADS == 0, "A tile: a whole number of float4s per thread");
  static_assert((BK * BN / 4) % THREADS == 0, "B tile: a whole number of float4s per thread");
  static_assert((BM * BK + BK * BN) * 4 <= 48 * 1024, "static shared memory must fit in 48 KiB");

  __shared__ __align__(16) float s_a[BM][BK];
  __shared__ __align__(16) float s_b[BK][BN];

  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * (BN / TN) + tx;
  const int bm0 = static_cast<int>(blockIdx.y) * BM;  // first C row of this block
  const int bn0 = static_cast<int>(blockIdx.x) * BN;  // first C column of this block
  const float* a_blk = a + bm0 * K;                   // row bm0 of A
  const float* b_blk = b + bn0;                       // column bn0 of B

  float r_c[TM][TN];
#pragma unroll
  for (int m = 0; m < TM; ++m)
#pragma unroll
    for (int n = 0; n < TN; ++n) r_c[m][n] = 0.f;

  for (int k0 = 0; k0 < K; k0 += BK) {
    // load + store to smem: A tile, float4 v -> row m, columns k..k+3
#pragma unroll
    for (int i = 0; i < A_VECS; ++i) {
      const int v = tid + i * THREADS;
      const int m = v / (BK / 4), k = (v % (BK / 4)) * 4;
      store_f32x4(&s_a[m][k], load_f32x4(a_blk + m * K + k0 + k));
    }
    // load + store to smem: B tile, float4 v -> row k, columns n..n+3
#pragma unroll
    for (int i = 0; i < B_VECS; ++i) {
      const int v = tid + i * THREADS;
      const int k = v / (BN / 4), n = (v % (BN / 4)) * 4;
      store_f32x4(&s_b[k][n], load_f32x4(b_blk + (k0 + k) * N + n));
    }
    __syncthreads();  // tiles complete before anyone reads them

    // compute: one outer product (TM x TN) per k of the slice
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float r_a[TM], r_b[TN];
#pragma unroll
      for (int m = 0; m < TM; ++m) r_a[m] = s_a[ty * TM + m][k];
      load_f32xN<TN>(r_b, &s_b[k][tx * TN]);
#pragma unroll
      for (int m = 0; m < TM; ++m)
#pragma unroll
        for (int n = 0; n < TN; ++n) r_c[m][n] += r_a[m] * r_b[n];
    }
    __syncthreads();  // everyone done reading before the next slice overwrites the tiles
  }

  // write back: TM rows of TN contiguous floats, as float4s
  float* c_thr = c + (bm0 + ty * TM) * N + bn0 + tx * TN;
#pragma unroll
  for (int m = 0; m < TM; ++m) store_f32xN<TN>(c_thr + m * N, r_c[m]);
}
