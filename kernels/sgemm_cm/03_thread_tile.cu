// cugemm/kernels/sgemm_cm/03_thread_tile.cu -- column-major SGEMM ladder (seed 001), rung 3:
// sgemm_cm_thread_tile
// (the ladder's story, measurements and what was tried: docs/sgemm_cm.md)
//
// C = A * B, all column-major (Fortran order) fp32: A is MxK with leading dimension M (A(m, k) at
// a[m + k*M]), B is KxN with leading dimension K (B(k, n) at b[k + n*K]), C is MxN with leading
// dimension M (C(m, n) at c[m + n*M]). C is overwritten.
//
// What this rung adds over rung 2 (shared): a thread tile. Each thread owns a TM x TN (2 x 2)
// block of C: rows tm0 .. tm0+TM-1 and columns tn0 .. tn0+TN-1 with tm0 = TM * (tid / (TILE/TN)),
// tn0 = TN * (tid % (TILE/TN)). Per k it reads TM values of A and TN of B from shared memory for
// TM*TN FMAs.
//  * Shared rows are padded to TILE + 1 floats (the s_b reads of a warp hit 16 different banks).
//  * Write back through shared memory (the notes' way to coalesce): after the last slice s_a is
//    reused as a TILE x TILE staging tile s_a[n][m], each thread drops its TM x TN values in, and
//    warp w then writes C columns w, w + WARPS, ..., lanes along m (128 contiguous bytes).
// Barriers separate a slice's compute from the next slice's loads, and the last compute from the
// staging writes (the notes' kernel has neither).
//
// Shape rules (checked by the caller, not here): M % TILE == 0, N % TILE == 0, K % TILE == 0.
//   Scalar accesses only: 4-byte alignment is enough.
// Launch:  grid = (N/TILE, M/TILE, 1), block = ((TILE/TM) * (TILE/TN), 1, 1).
//   Config: <32, 2, 2> (256 threads, 8.25 KiB static shared memory).
// Needs <cooperative_groups.h> and <nv/target> from one CUDA include directory (Variant.headers);
// _CG_LIMIT_INCLUDED_DEPENDENCIES keeps cooperative groups off libcu++ (see rung 1).
#define _CG_LIMIT_INCLUDED_DEPENDENCIES 1
#include <cooperative_groups.h>


template <int TILE, int TM, int TN>
__global__ void __launch_bounds__((TILE / TM) * (TILE / TN))
sgemm_cm_thread_tile(const float* __restrict__ a, const float* __restrict__ b,
                     float* __restrict__ c, int M, int N, int K) {
  namespace cg = cooperative_groups;
  constexpr int THREADS = (TILE / TM) * (TILE / TN);
  constexpr int WARPS = THREADS / 32;
  constexpr int PER_WARP = TILE / WARPS;  // tile columns each warp loads / writes
  static_assert(TILE == 32, "lanes index a tile column (m for A and C, k for B): TILE == warp size");
  static_assert(TILE % TM == 0 && TILE % TN == 0, "thread tiles must exactly cover the tile");
  static_assert(THREADS % 32 == 0 && THREADS <= 1024, "whole warps, at most 1024 threads");
  static_assert(TILE % WARPS == 0, "the warps must split the tile's columns evenly");
  static_assert(2 * TILE * (TILE + 1) * 4 <= 48 * 1024, "static shared memory must fit in 48 KiB");

  __shared__ float s_a[TILE][TILE + 1];  // s_a[k][m] = A(m0 + m, k0 + k); at the end s_a[n][m] of C
  __shared__ float s_b[TILE][TILE + 1];  // s_b[n][k] = B(k0 + k, n0 + n)

  const cg::thread_block block = cg::this_thread_block();
  const cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  const int tid = static_cast<int>(block.thread_rank());
  const int lane = static_cast<int>(warp.thread_rank());
  const int wid = static_cast<int>(warp.meta_group_rank());
  const int m0 = static_cast<int>(blockIdx.y) * TILE;  // first C row of this block
  const int n0 = static_cast<int>(blockIdx.x) * TILE;  // first C column of this block
  const float* a_blk = a + m0;                         // A(m0, 0)
  const float* b_blk = b + n0 * K;                     // B(0, n0)
  const int tm0 = TM * (tid / (TILE / TN));            // thread's first row (block-local)
  const int tn0 = TN * (tid % (TILE / TN));            // thread's first column (block-local)

  float acc[TN][TM];  // acc[i][r] = C(m0 + tm0 + r, n0 + tn0 + i)
#pragma unroll
  for (int i = 0; i < TN; ++i)
#pragma unroll
    for (int r = 0; r < TM; ++r) acc[i][r] = 0.f;

  for (int k0 = 0; k0 < K; k0 += TILE) {
    // load: column r of the A slice (lanes along m) and of the B slice (lanes along k)
#pragma unroll
    for (int p = 0; p < PER_WARP; ++p) {
      const int r = wid + p * WARPS;
      s_a[r][lane] = a_blk[(k0 + r) * M + lane];
      s_b[r][lane] = b_blk[r * K + k0 + lane];
    }
    block.sync();  // slice complete before anyone reads it

    // compute: TM x TN outer products, one per k
#pragma unroll
    for (int i = 0; i < TN; ++i) {
#pragma unroll
      for (int k = 0; k < TILE; ++k) {
        const float b_val = s_b[tn0 + i][k];
#pragma unroll
        for (int r = 0; r < TM; ++r) acc[i][r] += s_a[k][tm0 + r] * b_val;
      }
    }
    block.sync();  // everyone done reading before the next slice (or the staging) overwrites s_a
  }

  // write back: stage the tile in s_a as [n][m], then whole columns, lanes along m
#pragma unroll
  for (int i = 0; i < TN; ++i)
#pragma unroll
    for (int r = 0; r < TM; ++r) s_a[tn0 + i][tm0 + r] = acc[i][r];
  block.sync();  // staging tile complete
#pragma unroll
  for (int p = 0; p < PER_WARP; ++p) {
    const int r = wid + p * WARPS;
    c[(n0 + r) * M + m0 + lane] = s_a[r][lane];
  }
}
