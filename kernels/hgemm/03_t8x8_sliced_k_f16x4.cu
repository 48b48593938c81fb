// cugemm/kernels/hgemm/03_t8x8_sliced_k_f16x4.cu -- HGEMM (CUDA cores) ladder, rung 3:
// hgemm_t_8x8_sliced_k_f16x4 (PACK = false, "unpack") and hgemm_t_8x8_sliced_k_f16x4_pack
// (PACK = true)
// (the ladder's story, measurements and what was tried: docs/hgemm.md)
//
// C = A * B, all row-major fp16: A is MxK, B is KxN, C is MxN (C is overwritten); fp16 products
// and fp16 accumulation.
//
// What this rung adds over rung 2 (sliced_k): a thread tile. Each thread owns a TMxTN block of C
// (TM contiguous rows, TN contiguous columns) held in registers, so per k it reads TM values of A
// and TN values of B from shared memory for TM*TN multiply-adds. Tiles move global -> shared as
// 4-half (8-byte, "f16x4") vectors, A kept as s_a[BM][BK], B as s_b[BK][BN]; each thread's row
// of TN halves of B is one vector read, and C is written back as TN-half vectors.
//   PACK = false: the products are written as scalar __hfma, one fp16 multiply-add each.
//   PACK = true:  the TN columns are taken as TN/2 half2 pairs, and a[m] broadcast to both lanes
//                 of a half2 multiplies a pair: one __hfma2 does two multiply-adds (the notes'
//                 "pack").
// In both, the accumulator is half2 r_c[TM][TN/2] (r_c[m][j] = C columns 2j, 2j+1 of row m).
//
// Shape rules (checked by the caller, not here): M % BM == 0, N % BN == 0, K % BK == 0, and
//   16-byte aligned base pointers (the TN = 8 half rows of C are 16-byte stores); with BK, BN
//   multiples of 8 every vector access is then aligned.
// Launch:  grid = (N/BN, M/BM, 1), block = (BN/TN, BM/TM, 1): threadIdx.x walks N, threadIdx.y
//   walks M. Configs: <128, 128, 8, 8, 8, false> and <..., true> (256 threads, 4 KiB smem).
#include <cuda_fp16.h>
#include "../lib/half.cuh"
#include "../lib/move.cuh"

template <int BM, int BN, int BK, int TM, int TN, bool PACK>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
hgemm_t_8x8_sliced_k_f16x4(const half* __restrict__ a, const half* __restrict__ b,
                           half* __restrict__ c, int M, int N, int K) {
  constexpr int THREADS = (BM / TM) * (BN / TN);
  constexpr int A_VECS = BM * BK / 4 / THREADS;  // 4-half vectors of the A tile each thread loads
  constexpr int B_VECS = BK * BN / 4 / THREADS;  // 4-half vectors of the B tile each thread loads
  static_assert(BM % TM == 0 && BN % TN == 0, "thread tiles must exactly cover the block tile");
  static_assert(THREADS <= 1024, "too many threads per block");
  static_assert(BK % 4 == 0 && BN % 4 == 0, "tile rows are moved as whole 4-half vectors");
  static_assert(TN % 2 == 0, "each thread's columns are whole half2 pairs");
  static_assert((BM * BK / 4) % THREADS == 0, "A tile: a whole number of vectors per thread");
  static_assert((BK * BN / 4) % THREADS == 0, "B tile: a whole number of vectors per thread");
  static_assert((BM * BK + BK * BN) * 2 <= 48 * 1024, "static shared memory must fit in 48 KiB");

  __shared__ __align__(16) half s_a[BM][BK];
  __shared__ __align__(16) half s_b[BK][BN];

  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * (BN / TN) + tx;
  const int bm0 = static_cast<int>(blockIdx.y) * BM;  // first C row of this block
  const int bn0 = static_cast<int>(blockIdx.x) * BN;  // first C column of this block
  const half* a_blk = a + bm0 * K;                    // row bm0 of A
  const half* b_blk = b + bn0;                        // column bn0 of B

  half2 r_c[TM][TN / 2];  // r_c[m][j]: C(row ty*TM + m, columns tx*TN + 2j, +1)
#pragma unroll
  for (int m = 0; m < TM; ++m)
#pragma unroll
    for (int j = 0; j < TN / 2; ++j) r_c[m][j] = __float2half2_rn(0.f);

  for (int k0 = 0; k0 < K; k0 += BK) {
    // load + store to smem: A tile, vector v -> row m, columns k..k+3
#pragma unroll
    for (int i = 0; i < A_VECS; ++i) {
      const int v = tid + i * THREADS;
      const int m = v / (BK / 4), k = (v % (BK / 4)) * 4;
      copy_8B(&s_a[m][k], a_blk + m * K + k0 + k);
    }
    // load + store to smem: B tile, vector v -> row k, columns n..n+3
#pragma unroll
    for (int i = 0; i < B_VECS; ++i) {
      const int v = tid + i * THREADS;
      const int k = v / (BN / 4), n = (v % (BN / 4)) * 4;
      copy_8B(&s_b[k][n], b_blk + (k0 + k) * N + n);
    }
    __syncthreads();  // tiles complete before anyone reads them

    // compute: one TM x TN outer product per k of the slice
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      half r_a[TM];
      half2 r_b[TN / 2];
#pragma unroll
      for (int m = 0; m < TM; ++m) r_a[m] = s_a[ty * TM + m][k];
      load_f16xN<TN>(r_b, &s_b[k][tx * TN]);
#pragma unroll
      for (int m = 0; m < TM; ++m) {
#pragma unroll
        for (int j = 0; j < TN / 2; ++j) {
          if (PACK) {
            r_c[m][j] = __hfma2(__half2half2(r_a[m]), r_b[j], r_c[m][j]);
          } else {
            r_c[m][j].x = __hfma(r_a[m], r_b[j].x, r_c[m][j].x);
            r_c[m][j].y = __hfma(r_a[m], r_b[j].y, r_c[m][j].y);
          }
        }
      }
    }
    __syncthreads();  // everyone done reading before the next slice overwrites the tiles
  }

  // write back: TM rows of TN contiguous halves, as vectors
  half* c_thr = c + (bm0 + ty * TM) * N + bn0 + tx * TN;
#pragma unroll
  for (int m = 0; m < TM; ++m) store_f16xN<TN>(c_thr + m * N, r_c[m]);
}
