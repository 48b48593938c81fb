// cugemm/kernels/sgemm_cm/01_naive.cu -- column-major SGEMM ladder (seed 001),
// rung 1: sgemm_cm_naive
// (the ladder's story, measurements and what was tried: docs/sgemm_cm.md)
//
// C = A * B, all column-major (Fortran order) fp32: A is MxK with leading dimension M (A(m, k) at
// a[m + k*M]), B is KxN with leading dimension K (B(k, n) at b[k + n*K]), C is MxN with leading
// dimension M (C(m, n) at c[m + n*M]). C is overwritten.
//
// What this rung is: the notes' first kernel. A block owns a TILE x TILE (32 x 32) tile of C, kept
// in shared memory (s_c), and walks K in slices of TILE:
//  * load: warp w copies the columns w, w + WARPS, ... of the slice, lanes down a column (128
//    contiguous bytes per read). A is stored transposed, s_a[m][k] (rows padded to TILE + 1
//    floats), B as s_b[n][k].
//  * compute: warp w owns the C rows i = w, w + WARPS, ... and lane l the column n = l. Lane l
//    holds A(i, k = l); the dot product over k rotates it around the warp with cooperative-groups
//    shuffles (step j: lane l takes A(i, src) from lane src = (l + j) % 32 and multiplies it with
//    s_b[l][src]), and the sum is added into s_c[i][l].
//  * write back: warp w writes the C columns w, w + WARPS, ..., lane l row l, from s_c.
// There is a barrier between a slice's compute and the next slice's loads (the notes' kernel has
// none: a race on s_a / s_b).
//
// Shape rules: any M, N, K >= 0. Tile elements outside A or B load as 0, C elements outside C are
//   not written. No thread exits early: every lane takes part in the shuffles and the barriers.
//   K = 0 writes zeros.
// Launch:  grid = (ceil(N/TILE), ceil(M/TILE), 1), block = (WARPS * 32, 1, 1).
//   Config: <32, 8> (256 threads, 12.25 KiB static shared memory).
// Needs <cooperative_groups.h> and <nv/target> from one CUDA include directory (Variant.headers).
// _CG_LIMIT_INCLUDED_DEPENDENCIES keeps cooperative groups off libcu++ (<cuda/std/...>, which the
// toolkit ships in a separate cccl/ directory): only its own type traits are used.
#define _CG_LIMIT_INCLUDED_DEPENDENCIES 1
#include <cooperative_groups.h>


template <int TILE, int WARPS>
__global__ void __launch_bounds__(WARPS * 32)
sgemm_cm_naive(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
               int M, int N, int K) {
  namespace cg = cooperative_groups;
  constexpr int PER_WARP = TILE / WARPS;  // tile rows (columns) each warp takes
  static_assert(TILE == 32, "lanes index a tile row and the shuffle rotates k: TILE == warp size");
  static_assert(WARPS > 0 && TILE % WARPS == 0, "the warps must split the tile's rows evenly");
  static_assert(3 * TILE * (TILE + 1) * 4 <= 48 * 1024, "static shared memory must fit in 48 KiB");

  __shared__ float s_a[TILE][TILE + 1];  // s_a[m][k] = A(m0 + m, k0 + k)
  __shared__ float s_b[TILE][TILE];      // s_b[n][k] = B(k0 + k, n0 + n)
  __shared__ float s_c[TILE][TILE + 1];  // s_c[m][n] = C(m0 + m, n0 + n), accumulated

  const cg::thread_block block = cg::this_thread_block();
  const cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  const int lane = static_cast<int>(warp.thread_rank());
  const int wid = static_cast<int>(warp.meta_group_rank());
  const int m0 = static_cast<int>(blockIdx.y) * TILE;  // first C row of this block
  const int n0 = static_cast<int>(blockIdx.x) * TILE;  // first C column of this block

#pragma unroll
  for (int p = 0; p < PER_WARP; ++p) s_c[wid + p * WARPS][lane] = 0.f;
  block.sync();  // (only needed when K == 0: each thread updates its own s_c entries below)

  for (int k0 = 0; k0 < K; k0 += TILE) {
    // load: column r of the A slice (lanes along m) and of the B slice (lanes along k)
#pragma unroll
    for (int p = 0; p < PER_WARP; ++p) {
      const int r = wid + p * WARPS;
      const int am = m0 + lane, ak = k0 + r;
      s_a[lane][r] = (am < M && ak < K) ? a[ak * M + am] : 0.f;
      const int bk = k0 + lane, bn = n0 + r;
      s_b[r][lane] = (bk < K && bn < N) ? b[bn * K + bk] : 0.f;
    }
    block.sync();  // slice complete before anyone reads it

    // compute: C(i, l) += sum_k A(i, k) * B(k, l), A(i, k) fetched from lane k by shuffles
#pragma unroll
    for (int p = 0; p < PER_WARP; ++p) {
      const int i = wid + p * WARPS;
      const float a_val = s_a[i][lane];  // A(i, k = lane)
      float sum = a_val * s_b[lane][lane];
#pragma unroll
      for (int j = 1; j < TILE; ++j) {
        const int src = (lane + j) % TILE;
        sum += warp.shfl(a_val, src) * s_b[lane][src];
      }
      s_c[i][lane] += sum;
    }
    block.sync();  // everyone done with the slice (and with s_c) before it is overwritten / read
  }

  // write back: column r of the C tile, lanes along m
#pragma unroll
  for (int p = 0; p < PER_WARP; ++p) {
    const int r = wid + p * WARPS;
    const int gm = m0 + lane, gn = n0 + r;
    if (gm < M && gn < N) c[gn * M + gm] = s_c[lane][r];
  }
}
