// cugemm/kernels/sgemm/08_warp_tile_batched.cu -- the batched form of the SGEMM warp-tile rung
// (07_warp_tile.cu), registered for its any-shape _edge form as ..._edge_batched: cugemm.batched's
// batch of float32 products in one launch (exact FP32, any GPU).
//
// What it adds over 07_warp_tile.cu: the products in grid z. Block (x, y, z) computes tile (y, x) of
// product z exactly as the 2-D kernel computes it (sgemm_warp_tile_dbuf_tile, the same template
// arguments), with the operands offset to product z's matrices: A's matrix (z / a_div) % a_mod, each
// a_stride elements after the one before (one window of the batch dimensions, as cugemm.batched
// finds it), B's likewise, and C's z-th, c_stride elements apart. It is the mma.sync batched form's
// wrapper (hgemm_mma/08_swizzle_batched.cu) around the FP32 rung.
// Template parameters: 07_warp_tile.cu's. Launch: grid = (ceil(N / BN), ceil(M / BM), products
//   (<= 65535)), block 07_warp_tile.cu's; extra arguments after K: a_div, a_mod, a_stride, b_div,
//   b_mod, b_stride, c_stride (strides in elements, 64-bit).
// Registers: the 2-D kernel reads a, b and c from the parameter bank; here they are per-product values
//   in registers, and the tile already takes the 128 registers that two blocks per SM leave on sm_80:
//   ptxas spills 12 bytes there (sm_90: 123 registers, none). Its variant records why (spills).
// Preconditions: 07_warp_tile.cu's for each product (dense row-major matrices: A rows K elements
//   long, B and C rows N; with EDGE any M, N, K and any alignment).
#include "07_warp_tile.cu"

template <int BM, int BN, int BK, int WARPS_M, int WARPS_N, int TM, int TN, bool EDGE>
__global__ void __launch_bounds__(WARPS_M * WARPS_N * 32, warp_tile_min_blocks(TM, TN))
    sgemm_warp_tile_dbuf_batched(const float* __restrict__ a, const float* __restrict__ b,
                                 float* __restrict__ c, int M, int N, int K, int a_div, int a_mod,
                                 long long a_stride, int b_div, int b_mod, long long b_stride,
                                 long long c_stride) {
  const int z = static_cast<int>(blockIdx.z);
  sgemm_warp_tile_dbuf_tile<BM, BN, BK, WARPS_M, WARPS_N, TM, TN, EDGE>(
      a + z / a_div % a_mod * a_stride, b + z / b_div % b_mod * b_stride, c + z * c_stride, M, N, K);
}
