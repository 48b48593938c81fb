// cugemm/kernels/sgemm/04_t8x8_sliced_k_f32x4_bcf.cu -- SGEMM ladder, rung 4:
// sgemm_t_8x8_sliced_k_f32x4_bcf ("bank-conflict free") and its _offset sibling
// (the ladder's story, measurements and what was tried: docs/sgemm.md)
//
// C = A * B, all row-major fp32: A is MxK, B is KxN, C is MxN (C is overwritten).
//
// What this rung adds over rung 3 (thread tile): shared-memory layouts and a thread-tile split
// chosen so the per-k register loads are vector loads that do not conflict.
//  * A is transposed on its way into shared memory: s_a[BK][BM+PAD] (s_a[k][m]), so the TM
//    values of A a thread needs at step k sit in one row, next to each other.
//  * Each thread's TM rows come in two halves of TM/2 rows lying BM/2 apart (rows
//    ty*TM/2 + i and BM/2 + ty*TM/2 + i), and its TN columns likewise (tx*TN/2 + j and
//    BN/2 + tx*TN/2 + j): neighbouring threads read neighbouring float4 (or float2) chunks of a
//    row of s_b. C is written back with the same split.
//  * PAD pads each shared row by PAD floats (the `_offset` sibling uses 4), which moves the
//    transposed A stores of rows k and k+4 off the same banks.
//
// Shape rules (checked by the caller, not here): M % BM == 0, N % BN == 0, K % BK == 0, and
//   16-byte aligned base pointers; with BK, BN multiples of 4 that makes every vector access
//   aligned.
// Launch:  grid = (N/BN, M/BM, 1), block = (BN/TN, BM/TM, 1): threadIdx.x walks N, threadIdx.y
//   walks M. Configs: <128, 128, 8, 8, 8, 0> and <128, 128, 8, 8, 8, 4> (256 threads each).
#include "../lib/move.cuh"

template <int BM, int BN, int BK, int TM, int TN, int PAD>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
sgemm_t_8x8_sliced_k_f32x4_bcf(const float* __restrict__ a, const float* __restrict__ b,
                               float* __restrict__ c, int M, int N, int K) {
  constexpr int THREADS = (BM / TM) * (BN / TN);
  constexpr int HM = TM / 2, HN = TN / 2;        // a thread tile is two halves in each direction
  constexpr int A_VECS = BM * BK / 4 / THREADS;  // float4s of the A tile each thread loads
  constexpr int B_VECS = BK * BN / 4 / THREADS;  // float4s of the B tile each thread loads
  static_assert(BM % TM == 0 && BN % TN == 0, "thread tiles must exactly cover the block tile");
  static_assert(THREADS <= 1024, "too many threads per block");
  static_assert(TM % 2 == 0 && TN % 2 == 0, "thread tiles are split into two halves");
  static_assert(HM % 2 == 0 && HN % 2 == 0, "each half is read/written as float4s or float2s");
  static_assert(BK % 4 == 0 && BM % 4 == 0 && BN % 4 == 0, "tile rows are moved as float4s");
  static_assert(PAD >= 0 && PAD % 4 == 0, "padding must keep shared rows 16-byte aligned");
  static_assert((BM * BK / 4) % THREADS == 0, "A tile: a whole number of float4s per thread");
  static_assert((BK * BN / 4) % THREADS == 0, "B tile: a whole number of float4s per thread");
  static_assert(BK * (BM + PAD + BN + PAD) * 4 <= 48 * 1024,
                "static shared memory must fit in 48 KiB");

  __shared__ __align__(16) float s_a[BK][BM + PAD];  // A tile, transposed: s_a[k][m]
  __shared__ __align__(16) float s_b[BK][BN + PAD];  // B tile: s_b[k][n]

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

  for (int k0 = 0; k0 < K; k0 += BK) {
    // load A: float4 v -> row m, columns k..k+3; store to smem transposed: s_a[k + q][m]
#pragma unroll
    for (int i = 0; i < A_VECS; ++i) {
      const int v = tid + i * THREADS;
      const int m = v / (BK / 4), k = (v % (BK / 4)) * 4;
      const float4 t = load_f32x4(a_blk + m * K + k0 + k);
      s_a[k + 0][m] = t.x;
      s_a[k + 1][m] = t.y;
      s_a[k + 2][m] = t.z;
      s_a[k + 3][m] = t.w;
    }
    // load B: float4 v -> row k, columns n..n+3; store to smem as is
#pragma unroll
    for (int i = 0; i < B_VECS; ++i) {
      const int v = tid + i * THREADS;
      const int k = v / (BN / 4), n = (v % (BN / 4)) * 4;
      store_f32x4(&s_b[k][n], load_f32x4(b_blk + (k0 + k) * N + n));
    }
    __syncthreads();  // tiles complete before anyone reads them

    // compute: per k, two vector loads for each half, then a TM x TN outer product
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float r_a[TM], r_b[TN];
      load_f32xN<HM>(r_a, &s_a[k][tm0]);
      load_f32xN<HM>(r_a + HM, &s_a[k][tm0 + BM / 2]);
      load_f32xN<HN>(r_b, &s_b[k][tn0]);
      load_f32xN<HN>(r_b + HN, &s_b[k][tn0 + BN / 2]);
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) r_c[i][j] += r_a[i] * r_b[j];
    }
    __syncthreads();  // everyone done reading before the next slice overwrites the tiles
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
