// cugemm/kernels/sgemm_cm/02_shared.cu -- column-major SGEMM ladder (seed 001),
// rung 2: sgemm_cm_shared
// (the ladder's story, measurements and what was tried: docs/sgemm_cm.md)
//
// C = A * B, all column-major (Fortran order) fp32: A is MxK with leading dimension M (A(m, k) at
// a[m + k*M]), B is KxN with leading dimension K (B(k, n) at b[k + n*K]), C is MxN with leading
// dimension M (C(m, n) at c[m + n*M]). C is overwritten.
//
// What this rung adds over rung 1 (naive): the C tile leaves shared memory for registers, and the
// shuffles go. Lane l of warp w owns the C elements (m = l, n = w + p*WARPS), p < TILE/WARPS, in
// acc[p]; for each k of the slice it reads s_a[k][l] (a warp reads one contiguous row: no bank
// conflict) and s_b[n][k] (one address per warp: a broadcast) and does one FMA per element. Loads
// are rung 1's, but A is no longer transposed: s_a[k][m] is stored as it lies in memory. As in
// rung 1, a barrier separates a slice's compute from the next slice's loads.
//
// Shape rules (checked by the caller, not here): M % TILE == 0, N % TILE == 0, K % TILE == 0.
//   Scalar accesses only: 4-byte alignment is enough.
// Launch:  grid = (N/TILE, M/TILE, 1), block = (WARPS * 32, 1, 1).
//   Config: <32, 8> (256 threads, 8 KiB static shared memory).
// Needs <cooperative_groups.h> and <nv/target> from one CUDA include directory (Variant.headers);
// _CG_LIMIT_INCLUDED_DEPENDENCIES keeps cooperative groups off libcu++ (see rung 1).
#define _CG_LIMIT_INCLUDED_DEPENDENCIES 1
#include <cooperative_groups.h>


template <int TILE, int WARPS>
__global__ void __launch_bounds__(WARPS * 32)
sgemm_cm_shared(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                int M, int N, int K) {
  namespace cg = cooperative_groups;
  constexpr int PER_WARP = TILE / WARPS;  // C columns per warp (C elements per thread)
  static_assert(TILE == 32, "lanes index a tile column (m for A and C, k for B): TILE == warp size");
  static_assert(WARPS > 0 && TILE % WARPS == 0, "the warps must split the tile's columns evenly");
  static_assert(2 * TILE * TILE * 4 <= 48 * 1024, "static shared memory must fit in 48 KiB");

  __shared__ float s_a[TILE][TILE];  // s_a[k][m] = A(m0 + m, k0 + k)
  __shared__ float s_b[TILE][TILE];  // s_b[n][k] = B(k0 + k, n0 + n)

  const cg::thread_block block = cg::this_thread_block();
  const cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  const int lane = static_cast<int>(warp.thread_rank());
  const int wid = static_cast<int>(warp.meta_group_rank());
  const int m0 = static_cast<int>(blockIdx.y) * TILE;  // first C row of this block
  const int n0 = static_cast<int>(blockIdx.x) * TILE;  // first C column of this block
  const float* a_blk = a + m0;                         // A(m0, 0)
  const float* b_blk = b + n0 * K;                     // B(0, n0)

  float acc[PER_WARP];  // acc[p] = C(m0 + lane, n0 + wid + p*WARPS)
#pragma unroll
  for (int p = 0; p < PER_WARP; ++p) acc[p] = 0.f;

  for (int k0 = 0; k0 < K; k0 += TILE) {
    // load: column r of the A slice (lanes along m) and of the B slice (lanes along k)
#pragma unroll
    for (int p = 0; p < PER_WARP; ++p) {
      const int r = wid + p * WARPS;
      s_a[r][lane] = a_blk[(k0 + r) * M + lane];
      s_b[r][lane] = b_blk[r * K + k0 + lane];
    }
    block.sync();  // slice complete before anyone reads it

    // compute: each warp takes whole columns of the C tile; s_b reads are warp-wide broadcasts
#pragma unroll
    for (int p = 0; p < PER_WARP; ++p)
#pragma unroll
      for (int k = 0; k < TILE; ++k) acc[p] += s_a[k][lane] * s_b[wid + p * WARPS][k];
    block.sync();  // everyone done reading before the next slice overwrites the tiles
  }

  // write back: lanes along m, 128 contiguous bytes per warp and column
#pragma unroll
  for (int p = 0; p < PER_WARP; ++p) c[(n0 + wid + p * WARPS) * M + m0 + lane] = acc[p];
}
