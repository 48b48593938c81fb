// cugemm/kernels/hgemm/05_t8x8_sliced_k_f16x8_pack_bcf_dbuf.cu -- HGEMM (CUDA cores) ladder,
// rung 5: hgemm_t_8x8_sliced_k_f16x8_pack_bcf_dbuf (bcf + pack, double-buffered shared memory)
// (the ladder's story, measurements and what was tried: docs/hgemm.md)
//
// C = A * B, all row-major fp16: A is MxK, B is KxN, C is MxN (C is overwritten); fp16 products
// and fp16 accumulation (__hfma2 on half2 pairs).
//
// What this rung adds over rung 4 (pack_bcf): two copies of each shared tile. While the block
// computes on slice kt from buffer kt&1, the loads of slice kt+1 are already in flight:
//   1. load:     issue the global loads of slice kt+1 into registers (no wait yet),
//   2. compute:  the outer products of slice kt, from buffer kt&1 (hides the load latency),
//   3. store:    registers -> the other buffer (kt+1)&1 (A transposed, B as is),
//   4. one __syncthreads per slice: slice kt+1 is complete before it is read, and buffer kt&1
//      is no longer read before slice kt+2 overwrites it.
// Layouts, the thread-tile split (chunks of VEC rows / columns) and the write-back are rung 4's;
// the arithmetic is its PACK = true form.
//
// Shape rules (checked by the caller, not here): M % BM == 0, N % BN == 0, K % BK == 0, and base
//   pointers aligned to the widest global vector (16 bytes with VEC = 8: the C stores).
// Launch:  grid = (N/BN, M/BM, 1), block = (BN/TN, BM/TM, 1): threadIdx.x walks N, threadIdx.y
//   walks M. Config <BM, BN, BK, TM, TN, VEC, PAD> = <128, 128, 8, 8, 8, 8, 0> (256 threads,
//   8 KiB static shared memory).
#include <cuda_fp16.h>
#include "../lib/half.cuh"

template <int BM, int BN, int BK, int TM, int TN, int VEC, int PAD>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
hgemm_t_8x8_sliced_k_f16x8_pack_bcf_dbuf(const half* __restrict__ a, const half* __restrict__ b,
                                         half* __restrict__ c, int M, int N, int K) {
  constexpr int THREADS = (BM / TM) * (BN / TN);
  constexpr int CM = TM / VEC, CN = TN / VEC;          // chunks of a thread tile per direction
  constexpr int SM = BM / CM, SN = BN / CN;            // distance between a thread's chunks
  constexpr int LD_A = BM * BK / THREADS >= 8 && BK % 8 == 0 ? 8 : 4;  // global vector widths
  constexpr int LD_B = BK * BN / THREADS >= 8 ? 8 : 4;                 // (halves)
  constexpr int A_VECS = BM * BK / LD_A / THREADS;    // vectors of the A tile each thread loads
  constexpr int B_VECS = BK * BN / LD_B / THREADS;    // vectors of the B tile each thread loads
  static_assert(BM % TM == 0 && BN % TN == 0, "thread tiles must exactly cover the block tile");
  static_assert(THREADS <= 1024, "too many threads per block");
  static_assert(VEC == 4 || VEC == 8, "fragments are 4-half (8-byte) or 8-half (16-byte) vectors");
  static_assert(TM % VEC == 0 && TN % VEC == 0, "a thread tile is whole chunks of VEC");
  static_assert(BK % 4 == 0 && BN % 8 == 0 && BM % 8 == 0, "tile rows are moved as vectors");
  static_assert(PAD >= 0 && PAD % VEC == 0, "padding must keep shared rows aligned for VEC reads");
  static_assert((BM * BK) % (LD_A * THREADS) == 0, "A tile: a whole number of vectors per thread");
  static_assert((BK * BN) % (LD_B * THREADS) == 0, "B tile: a whole number of vectors per thread");
  static_assert(2 * BK * (BM + PAD + BN + PAD) * 2 <= 48 * 1024,
                "static shared memory must fit in 48 KiB");

  __shared__ __align__(16) half s_a[2][BK][BM + PAD];  // A tiles, transposed: s_a[buf][k][m]
  __shared__ __align__(16) half s_b[2][BK][BN + PAD];  // B tiles: s_b[buf][k][n]

  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * (BN / TN) + tx;
  const int bm0 = static_cast<int>(blockIdx.y) * BM;  // first C row of this block
  const int bn0 = static_cast<int>(blockIdx.x) * BN;  // first C column of this block
  const half* a_blk = a + bm0 * K;                    // row bm0 of A
  const half* b_blk = b + bn0;                        // column bn0 of B
  const int tm0 = ty * VEC;  // thread's rows: q*SM + tm0 + r (q < CM, r < VEC), block-local
  const int tn0 = tx * VEC;  // thread's cols: q*SN + tn0 + r (q < CN, r < VEC), block-local

  half2 r_c[TM][TN / 2];  // as in rung 4
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN / 2; ++j) r_c[i][j] = __float2half2_rn(0.f);

  // Staging registers for the next slice. A vector i is row m, columns k..k+LD_A-1 of the tile
  // with v = tid + i*THREADS, m = v / (BK/LD_A), k = (v % (BK/LD_A))*LD_A; B vector i is row k,
  // columns n..n+LD_B-1 with k = v / (BN/LD_B), n = (v % (BN/LD_B))*LD_B.
  half2 ld_a[A_VECS][LD_A / 2], ld_b[B_VECS][LD_B / 2];

  // load: slice starting at column k0 of A / row k0 of B, global -> registers
  auto load_slice = [&](int k0) {
#pragma unroll
    for (int i = 0; i < A_VECS; ++i) {
      const int v = tid + i * THREADS;
      const int m = v / (BK / LD_A), k = (v % (BK / LD_A)) * LD_A;
      load_f16xN<LD_A>(ld_a[i], a_blk + m * K + k0 + k);
    }
#pragma unroll
    for (int i = 0; i < B_VECS; ++i) {
      const int v = tid + i * THREADS;
      const int k = v / (BN / LD_B), n = (v % (BN / LD_B)) * LD_B;
      load_f16xN<LD_B>(ld_b[i], b_blk + (k0 + k) * N + n);
    }
  };
  // store to smem: registers -> buffer `buf` (A transposed, B as is)
  auto store_slice = [&](int buf) {
#pragma unroll
    for (int i = 0; i < A_VECS; ++i) {
      const int v = tid + i * THREADS;
      const int m = v / (BK / LD_A), k = (v % (BK / LD_A)) * LD_A;
#pragma unroll
      for (int e = 0; e < LD_A / 2; ++e) {
        s_a[buf][k + 2 * e][m] = ld_a[i][e].x;
        s_a[buf][k + 2 * e + 1][m] = ld_a[i][e].y;
      }
    }
#pragma unroll
    for (int i = 0; i < B_VECS; ++i) {
      const int v = tid + i * THREADS;
      const int k = v / (BN / LD_B), n = (v % (BN / LD_B)) * LD_B;
      store_f16xN<LD_B>(&s_b[buf][k][n], ld_b[i]);
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

    // compute: slice kt from buffer `cur`, rung 4's reads and packed products
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      half2 r_a[TM / 2], r_b[TN / 2];
#pragma unroll
      for (int q = 0; q < CM; ++q) load_f16xN<VEC>(r_a + q * VEC / 2, &s_a[cur][k][q * SM + tm0]);
#pragma unroll
      for (int q = 0; q < CN; ++q) load_f16xN<VEC>(r_b + q * VEC / 2, &s_b[cur][k][q * SN + tn0]);
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN / 2; ++j) r_c[i][j] = __hfma2(bcast_f16(r_a, i), r_b[j], r_c[i][j]);
    }

    // store to smem: slice kt+1 into the other buffer (last read in iteration kt-1, which
    // ended with a barrier), then one barrier so it is complete before iteration kt+1 reads it
    if (has_next) {
      store_slice(cur ^ 1);
      __syncthreads();
    }
  }

  // write back with rung 4's split: row i -> block row (i / VEC)*SM + tm0 + i % VEC, each of its
  // CN chunks one VEC-half vector at block column q*SN + tn0
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = bm0 + (i / VEC) * SM + tm0 + i % VEC;
    half* c_row = c + row * N + bn0 + tn0;
#pragma unroll
    for (int q = 0; q < CN; ++q) store_f16xN<VEC>(c_row + q * SN, r_c[i] + q * VEC / 2);
  }
}
