// cugemm/kernels/hgemm/04_t8x8_sliced_k_f16x4_bcf.cu -- HGEMM (CUDA cores) ladder, rung 4:
// the "bank-conflict free" thread-tile kernels. One template serves
//   hgemm_t_8x8_sliced_k_f16x4_bcf          VEC = 4, PACK = false (scalar __hfma)
//   hgemm_t_8x8_sliced_k_f16x4_pack_bcf     VEC = 4, PACK = true  (__hfma2 on half2 pairs)
//   hgemm_t_4x4_sliced_k_f16x4_pack_bcf     4x4 thread tile, 64x64x16 block tile
//   hgemm_t_8x8_sliced_k_f16x8_pack_bcf     VEC = 8: one 16-byte read per k-row fragment
// and their `_offset` siblings (PAD > 0: padded shared-memory rows).
// (the ladder's story, measurements and what was tried: docs/hgemm.md)
//
// C = A * B, all row-major fp16: A is MxK, B is KxN, C is MxN (C is overwritten); fp16 products
// and fp16 accumulation.
//
// What this rung adds over rung 3 (thread tile): shared-memory layouts and a thread-tile split
// chosen so that the per-k register loads are vector loads that do not conflict.
//  * A is transposed on its way into shared memory: s_a[BK][BM+PAD] (s_a[k][m]).
//  * A thread's TM rows come in TM/VEC chunks of VEC contiguous rows, the chunks BM/(TM/VEC) rows
//    apart: chunk q covers rows q*BM/(TM/VEC) + ty*VEC + r, r < VEC. Its TN columns likewise.
//    Each chunk is one VEC-half vector read; C is written back with the same split.
//  * The global -> shared copies are LD_A / LD_B-half vectors (4, or 8 when the tile gives each
//    thread 8 halves of a row); a vector of A is scattered into s_a column m.
//  * PAD pads each shared row by PAD halves (a multiple of VEC), which moves the transposed A
//    stores of rows k and k+4 off the same banks.
//
// Shape rules (checked by the caller, not here): M % BM == 0, N % BN == 0, K % BK == 0, and base
//   pointers aligned to the widest global vector (8 bytes for the f16x4 configs, 16 for f16x8).
// Launch:  grid = (N/BN, M/BM, 1), block = (BN/TN, BM/TM, 1): threadIdx.x walks N, threadIdx.y
//   walks M. Configs <BM, BN, BK, TM, TN, VEC, PACK, PAD> (256 threads each):
//     <128, 128,  8, 8, 8, 4, false, 0>  t8x8 f16x4 bcf
//     <128, 128,  8, 8, 8, 4, true, 0|4> t8x8 f16x4 pack_bcf (+offset)
//     < 64,  64, 16, 4, 4, 4, true, 0|4> t4x4 f16x4 pack_bcf (+offset)
//     <128, 128,  8, 8, 8, 8, true, 0|8> t8x8 f16x8 pack_bcf (+offset)
#include <cuda_fp16.h>
#include "../lib/half.cuh"
#include "../lib/move.cuh"

template <int BM, int BN, int BK, int TM, int TN, int VEC, bool PACK, int PAD>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
hgemm_t_8x8_sliced_k_f16x4_bcf(const half* __restrict__ a, const half* __restrict__ b,
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
  static_assert(BK * (BM + PAD + BN + PAD) * 2 <= 48 * 1024,
                "static shared memory must fit in 48 KiB");

  __shared__ __align__(16) half s_a[BK][BM + PAD];  // A tile, transposed: s_a[k][m]
  __shared__ __align__(16) half s_b[BK][BN + PAD];  // B tile: s_b[k][n]

  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * (BN / TN) + tx;
  const int bm0 = static_cast<int>(blockIdx.y) * BM;  // first C row of this block
  const int bn0 = static_cast<int>(blockIdx.x) * BN;  // first C column of this block
  const half* a_blk = a + bm0 * K;                    // row bm0 of A
  const half* b_blk = b + bn0;                        // column bn0 of B
  const int tm0 = ty * VEC;  // thread's rows: q*SM + tm0 + r (q < CM, r < VEC), block-local
  const int tn0 = tx * VEC;  // thread's cols: q*SN + tn0 + r (q < CN, r < VEC), block-local

  // r_c[i][j]: row i = q*VEC + r of the thread (block row q*SM + tm0 + r), half2 j = q*VEC/2 + p
  // of its columns (block columns q*SN + tn0 + 2p, +1)
  half2 r_c[TM][TN / 2];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN / 2; ++j) r_c[i][j] = __float2half2_rn(0.f);

  for (int k0 = 0; k0 < K; k0 += BK) {
    // load A: vector v -> row m, columns k..k+LD_A-1; store to smem transposed: s_a[k + e][m]
#pragma unroll
    for (int i = 0; i < A_VECS; ++i) {
      const int v = tid + i * THREADS;
      const int m = v / (BK / LD_A), k = (v % (BK / LD_A)) * LD_A;
      half2 t[LD_A / 2];
      load_f16xN<LD_A>(t, a_blk + m * K + k0 + k);
#pragma unroll
      for (int e = 0; e < LD_A / 2; ++e) {
        s_a[k + 2 * e][m] = t[e].x;
        s_a[k + 2 * e + 1][m] = t[e].y;
      }
    }
    // load B: vector v -> row k, columns n..n+LD_B-1; store to smem as is
#pragma unroll
    for (int i = 0; i < B_VECS; ++i) {
      const int v = tid + i * THREADS;
      const int k = v / (BN / LD_B), n = (v % (BN / LD_B)) * LD_B;
      if (LD_B == 8) copy_16B(&s_b[k][n], b_blk + (k0 + k) * N + n);
      else copy_8B(&s_b[k][n], b_blk + (k0 + k) * N + n);
    }
    __syncthreads();  // tiles complete before anyone reads them

    // compute: per k, one vector read per chunk, then a TM x TN outer product
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      half2 r_a[TM / 2], r_b[TN / 2];
#pragma unroll
      for (int q = 0; q < CM; ++q) load_f16xN<VEC>(r_a + q * VEC / 2, &s_a[k][q * SM + tm0]);
#pragma unroll
      for (int q = 0; q < CN; ++q) load_f16xN<VEC>(r_b + q * VEC / 2, &s_b[k][q * SN + tn0]);
#pragma unroll
      for (int i = 0; i < TM; ++i) {
        const half a_i = (i & 1) ? r_a[i / 2].y : r_a[i / 2].x;
#pragma unroll
        for (int j = 0; j < TN / 2; ++j) {
          if (PACK) {
            r_c[i][j] = __hfma2(bcast_f16(r_a, i), r_b[j], r_c[i][j]);
          } else {
            r_c[i][j].x = __hfma(a_i, r_b[j].x, r_c[i][j].x);
            r_c[i][j].y = __hfma(a_i, r_b[j].y, r_c[i][j].y);
          }
        }
      }
    }
    __syncthreads();  // everyone done reading before the next slice overwrites the tiles
  }

  // write back with the same split: row i -> block row (i / VEC)*SM + tm0 + i % VEC, each of its
  // CN chunks one VEC-half vector at block column q*SN + tn0
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = bm0 + (i / VEC) * SM + tm0 + i % VEC;
    half* c_row = c + row * N + bn0 + tn0;
#pragma unroll
    for (int q = 0; q < CN; ++q) store_f16xN<VEC>(c_row + q * SN, r_c[i] + q * VEC / 2);
  }
}
