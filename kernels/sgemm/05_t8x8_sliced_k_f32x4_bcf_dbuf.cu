// cugemm/kernels/sgemm/05_t8x8_sliced_k_f32x4_bcf_dbuf.cu -- SGEMM ladder, rung 5:
// sgemm_t_8x8_sliced_k_f32x4_bcf_dbuf (bank-conflict free, double-buffered shared memory),
// its _offset sibling and the k16 t8x4 / t8x8 / t8x16 forms
// (the ladder's story, measurements and what was tried: docs/sgemm.md)
//
// C = A * B, all row-major fp32: A is MxK, B is KxN, C is MxN (C is overwritten).
//
// What this rung adds over rung 4 (bcf): two copies of each shared tile. While the block
// computes on slice kt from buffer kt&1, the loads of slice kt+1 are already in flight:
//   1. load:     issue the global loads of slice kt+1 into registers (no wait yet),
//   2. compute:  the outer products of slice kt, from buffer kt&1 (hides the load latency),
//   3. store:    registers -> the other buffer (kt+1)&1,
//   4. one __syncthreads per slice: slice kt+1 is complete before it is read, and buffer kt&1
//      is no longer read before slice kt+2 overwrites it.
// Layouts, the thread-tile split and the write-back are rung 4's.
//
// Shape rules (checked by the caller, not here): M % BM == 0, N % BN == 0, K % BK == 0, and
//   16-byte aligned base pointers.
// Launch:  grid = (N/BN, M/BM, 1), block = (BN/TN, BM/TM, 1): threadIdx.x walks N, threadIdx.y
//   walks M. Configs (block size):
//     <128, 128,  8, 8,  8, 0>  t8x8, k8              256 threads
//     <128, 128,  8, 8,  8, 4>  t8x8, k8, +offset     256 threads
//     <128,  64, 16, 8,  4, 0>  t8x4, k16             256 threads  (block 16 x 16)
//     <128, 128, 16, 8,  8, 0>  t8x8, k16             256 threads
//     <128, 128, 16, 8, 16, 0>  t8x16, k16            128 threads  (block 8 x 16)
#include "../lib/move.cuh"

template <int BM, int BN, int BK, int TM, int TN, int PAD>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
sgemm_t_8x8_sliced_k_f32x4_bcf_dbuf(const float* __restrict__ a, const float* __restrict__ b,
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

  // Staging registers for the next slice: A float4 i is row m, columns k..k+3 of the tile with
  // v = tid + i*THREADS, m = v / (BK/4), k = (v % (BK/4))*4; B float4 i is row k, columns n..n+3
  // with k = v / (BN/4), n = (v % (BN/4))*4.
  float4 ld_a[A_VECS], ld_b[B_VECS];

  // load: slice starting at column k0 of A / row k0 of B, global -> registers
  auto load_slice = [&](int k0) {
#pragma unroll
    for (int i = 0; i < A_VECS; ++i) {
      const int v = tid + i * THREADS;
      const int m = v / (BK / 4), k = (v % (BK / 4)) * 4;
      ld_a[i] = load_f32x4(a_blk + m * K + k0 + k);
    }
#pragma unroll
    for (int i = 0; i < B_VECS; ++i) {
      const int v = tid + i * THREADS;
      const int k = v / (BN / 4), n = (v % (BN / 4)) * 4;
      ld_b[i] = load_f32x4(b_blk + (k0 + k) * N + n);
    }
  };
  // store to smem: registers -> buffer `buf` (A transposed, B as is)
  auto store_slice = [&](int buf) {
#pragma unroll
    for (int i = 0; i < A_VECS; ++i) {
      const int v = tid + i * THREADS;
      const int m = v / (BK / 4), k = (v % (BK / 4)) * 4;
      s_a[buf][k + 0][m] = ld_a[i].x;
      s_a[buf][k + 1][m] = ld_a[i].y;
      s_a[buf][k + 2][m] = ld_a[i].z;
      s_a[buf][k + 3][m] = ld_a[i].w;
    }
#pragma unroll
    for (int i = 0; i < B_VECS; ++i) {
      const int v = tid + i * THREADS;
      const int k = v / (BN / 4), n = (v % (BN / 4)) * 4;
      store_f32x4(&s_b[buf][k][n], ld_b[i]);
    }
  };

  // prologue: slice 0 into buffer 0 (nothing to load when K == 0: C is then all zeros)
  const int num_slices = K / BK;
  if (num_slices > 0) {
    load_slice(0);
    store_slice(0);
  }
  __syncthreads();

  for (int kt = 0; kt < num_slices; ++kt) {
    const int cur = kt & 1;
    const bool has_next = kt + 1 < num_slices;  // same value in every thread of the block

    // load: issue the global loads of slice kt+1 now; they complete during the compute below
    if (has_next) load_slice((kt + 1) * BK);

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

    // store to smem: slice kt+1 into the other buffer (last read in iteration kt-1, which
    // ended with a barrier), then one barrier so it is complete before iteration kt+1 reads it
    if (has_next) {
      store_slice(cur ^ 1);
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
