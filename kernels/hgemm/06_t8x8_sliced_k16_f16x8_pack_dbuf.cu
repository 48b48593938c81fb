// cugemm/kernels/hgemm/06_t8x8_sliced_k16_f16x8_pack_dbuf.cu -- HGEMM (CUDA cores) ladder, rung 6:
// hgemm_t_8x8_sliced_k16_f16x8_pack_dbuf (+ _offset), hgemm_t_8x8_sliced_k32_f16x8_pack_dbuf and
// hgemm_t_16x8_sliced_k32_f16x8_pack_dbuf: deeper K slices, A kept row-major in shared memory.
// (the ladder's story, measurements and what was tried: docs/hgemm.md)
//
// C = A * B, all row-major fp16: A is MxK, B is KxN, C is MxN (C is overwritten); fp16 products
// and fp16 accumulation (__hfma2 on half2 pairs).
//
// What this rung changes over rung 5 (pack_bcf_dbuf): the K slice is 16 or 32 deep and A is no
// longer transposed, so every global -> shared move is a plain 16-byte copy of 8 halves.
//  * Shared layout: s_a[buf][m][k] (BM rows of BK+PAD halves), s_b[buf][k][n].
//  * A fragments along k: a thread reads AK halves of k of each of its rows with one vector read
//    (AK = 8 for TM <= 8; AK = 4 for TM = 16, to keep its fragment registers at 32) and uses them
//    for AK consecutive k steps; per k step it then reads just its TN halves of B.
//  * Rows interleaved: the thread's row i is block row i*(BM/TM) + ty (conflict-free A reads);
//    its TN columns are chunks of 8 at q*(BN/(TN/8)) + tx*8.
//  * Double-buffered as in rung 5: loads of slice kt+1 issued into registers before the compute
//    of slice kt, stored to the other buffer after it, one barrier per slice.
//  * PAD (the `_offset` sibling: 8 halves, keeping rows 16-byte aligned) is the notes' padded form.
//
// Shape rules (checked by the caller, not here): M % BM == 0, N % BN == 0, K % BK == 0, 16-byte
//   aligned base pointers.
// Launch:  grid = (N/BN, M/BM, 1), block = (BN/TN, BM/TM, 1): threadIdx.x walks N, threadIdx.y
//   walks M. Configs <BM, BN, BK, TM, TN, PAD> (256 threads each; static shared memory):
//     <128, 128, 16,  8, 8, 0|8>  t8x8 k16 (+offset)   16 KiB (+offset 20.5 KiB)
//     <128, 128, 32,  8, 8, 0>    t8x8 k32             32 KiB
//     <256, 128, 32, 16, 8, 0>    t16x8 k32            48 KiB
#include <cuda_fp16.h>
#include "../lib/half.cuh"

template <int BM, int BN, int BK, int TM, int TN, int PAD>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
hgemm_t_8x8_sliced_k16_f16x8_pack_dbuf(const half* __restrict__ a, const half* __restrict__ b,
                                       half* __restrict__ c, int M, int N, int K) {
  constexpr int THREADS = (BM / TM) * (BN / TN);
  constexpr int RM = BM / TM;                   // distance between a thread's rows
  constexpr int CN = TN / 8, SN = BN / CN;      // 8-column chunks per thread, their distance
  constexpr int AK = TM <= 8 ? 8 : 4;           // k values per A fragment read
  constexpr int A_VECS = BM * BK / 8 / THREADS;  // 8-half vectors of the A tile per thread
  constexpr int B_VECS = BK * BN / 8 / THREADS;  // 8-half vectors of the B tile per thread
  static_assert(BM % TM == 0 && BN % TN == 0, "thread tiles must exactly cover the block tile");
  static_assert(THREADS <= 1024, "too many threads per block");
  static_assert(TN % 8 == 0, "a thread's columns are whole 8-half (16-byte) chunks");
  static_assert(BK % 8 == 0 && BN % 8 == 0, "tile rows are moved as 8-half vectors");
  static_assert(BK % AK == 0, "the K slice is whole A fragments");
  static_assert(PAD >= 0 && PAD % 8 == 0, "padding must keep shared rows 16-byte aligned");
  static_assert((BM * BK / 8) % THREADS == 0, "A tile: a whole number of vectors per thread");
  static_assert((BK * BN / 8) % THREADS == 0, "B tile: a whole number of vectors per thread");
  static_assert(2 * (BM * (BK + PAD) + BK * (BN + PAD)) * 2 <= 48 * 1024,
                "static shared memory must fit in 48 KiB");

  __shared__ __align__(16) half s_a[2][BM][BK + PAD];  // A tiles, row-major: s_a[buf][m][k]
  __shared__ __align__(16) half s_b[2][BK][BN + PAD];  // B tiles: s_b[buf][k][n]

  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * (BN / TN) + tx;
  const int bm0 = static_cast<int>(blockIdx.y) * BM;  // first C row of this block
  const int bn0 = static_cast<int>(blockIdx.x) * BN;  // first C column of this block
  const half* a_blk = a + bm0 * K;                    // row bm0 of A
  const half* b_blk = b + bn0;                        // column bn0 of B
  const int tn0 = tx * 8;  // thread's cols: q*SN + tn0 + r (q < CN, r < 8); rows i*RM + ty

  half2 r_c[TM][TN / 2];  // r_c[i][q*4 + p]: C(block row i*RM + ty, columns q*SN + tn0 + 2p, +1)
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN / 2; ++j) r_c[i][j] = __float2half2_rn(0.f);

  // Staging registers for the next slice: A vector i is row m, columns k..k+7 of the tile with
  // v = tid + i*THREADS, m = v / (BK/8), k = (v % (BK/8))*8; B vector i is row k, columns n..n+7
  // with k = v / (BN/8), n = (v % (BN/8))*8. Consecutive threads take consecutive vectors.
  uint4 ld_a[A_VECS], ld_b[B_VECS];

  // load: slice starting at column k0 of A / row k0 of B, global -> registers
  auto load_slice = [&](int k0) {
#pragma unroll
    for (int i = 0; i < A_VECS; ++i) {
      const int v = tid + i * THREADS;
      const int m = v / (BK / 8), k = (v % (BK / 8)) * 8;
      ld_a[i] = *reinterpret_cast<const uint4*>(a_blk + m * K + k0 + k);
    }
#pragma unroll
    for (int i = 0; i < B_VECS; ++i) {
      const int v = tid + i * THREADS;
      const int k = v / (BN / 8), n = (v % (BN / 8)) * 8;
      ld_b[i] = *reinterpret_cast<const uint4*>(b_blk + (k0 + k) * N + n);
    }
  };
  // store to smem: registers -> buffer `buf`, both tiles as they are
  auto store_slice = [&](int buf) {
#pragma unroll
    for (int i = 0; i < A_VECS; ++i) {
      const int v = tid + i * THREADS;
      const int m = v / (BK / 8), k = (v % (BK / 8)) * 8;
      *reinterpret_cast<uint4*>(&s_a[buf][m][k]) = ld_a[i];
    }
#pragma unroll
    for (int i = 0; i < B_VECS; ++i) {
      const int v = tid + i * THREADS;
      const int k = v / (BN / 8), n = (v % (BN / 8)) * 8;
      *reinterpret_cast<uint4*>(&s_b[buf][k][n]) = ld_b[i];
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

    // compute: slice kt from buffer `cur`, AK k steps per A fragment read
#pragma unroll
    for (int kg = 0; kg < BK; kg += AK) {
      half2 r_a[TM][AK / 2];  // r_a[i]: A(block row i*RM + ty, k = kg .. kg+AK-1)
#pragma unroll
      for (int i = 0; i < TM; ++i) load_f16xN<AK>(r_a[i], &s_a[cur][i * RM + ty][kg]);
#pragma unroll
      for (int kk = 0; kk < AK; ++kk) {
        half2 r_b[TN / 2];
#pragma unroll
        for (int q = 0; q < CN; ++q) load_f16xN<8>(r_b + q * 4, &s_b[cur][kg + kk][q * SN + tn0]);
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < TN / 2; ++j)
            r_c[i][j] = __hfma2(bcast_f16(r_a[i], kk), r_b[j], r_c[i][j]);
      }
    }

    // store to smem: slice kt+1 into the other buffer (last read in iteration kt-1, which
    // ended with a barrier), then one barrier so it is complete before iteration kt+1 reads it
    if (has_next) {
      store_slice(cur ^ 1);
      __syncthreads();
    }
  }

  // write back: row i of the thread is block row i*RM + ty, its CN chunks 16-byte stores
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    half* c_row = c + (bm0 + i * RM + ty) * N + bn0 + tn0;
#pragma unroll
    for (int q = 0; q < CN; ++q) store_f16xN<8>(c_row + q * SN, r_c[i] + q * 4);
  }
}
