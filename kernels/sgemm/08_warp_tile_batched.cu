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
//   (at most 65535)), block 07_warp_tile.cu's; extra arguments after K: a_div, a_mod, a_stride, b_div,
//   b_mod, b_stride, c_stride (strides in elements, 64-bit), z0 (the first product of this
//   launch: grid z stops at 65535, so a larger batch takes one launch per 65535).
// Registers: the 2-D kernel reads a, b and c from the parameter bank; here they are per-product values
//   in registers, and the tile already takes the 128 registers that two blocks per SM leave on sm_80.
//   With the product's index unsigned (z / a_div % a_mod an unsigned division) the ptxas of CUDA 13.5
//   fits it there without spilling; CUDA 12.9's spills 44 bytes (with int indices: 12 bytes under
//   13.x). Its variant records why (spills).
// Preconditions: 07_warp_tile.cu's for each product (dense row-major matrices: A rows K elements
//   long, B and C rows N; with EDGE any M, N, K and any alignment).
#include "07_warp_tile.cu"

template <int BM, int BN, int BK, int WARPS_M, int WARPS_N, int TM, int TN, bool EDGE>
__global__ void __launch_bounds__(WARPS_M * WARPS_N * 32, warp_tile_min_blocks(TM, TN))
    sgemm_warp_tile_dbuf_batched(const float* __restrict__ a, const float* __restrict__ b,
                                 float* __restrict__ c, int M, int N, int K, int a_div, int a_mod,
                                 long long a_stride, int b_div, int b_mod, long long b_stride,
                                 long long c_stride, int z0) {
  const unsigned z = static_cast<unsigned>(z0) + blockIdx.z;  // launches of more than 65535 products: one per 65535
  const unsigned za = z / a_div % a_mod, zb = z / b_div % b_mod;
  sgemm_warp_tile_dbuf_tile<BM, BN, BK, WARPS_M, WARPS_N, TM, TN, EDGE>(a + za * a_stride, b + zb * b_stride,
                                                                       c + z * c_stride, M, N, K);
}
