// cugemm/kernels/hgemm_mma/08_swizzle_batched.cu -- the batched form of the mma.sync rungs 5-11
// (05_swizzle.cu), registered for the _edge rungs as ..._edge_batched: cugemm.batched's batch of
// products in one launch on the GPUs without wgmma (sm_80, sm_86, sm_89, Blackwell).
//
// What it adds over 05_swizzle.cu: the products in grid z. Block (x, y, z) computes tile (y, x) of
// product z exactly as the 2-D kernel computes it (hgemm_mma_swizzle_tile, the same template
// arguments), with the operands offset to product z's matrices: A's matrix (z / a_div) % a_mod, each
// a_stride elements after the one before (so one window of the batch dimensions: a_mod 1 is one
// matrix for every product, a_div > 1 a matrix read by a_div products in a row), B's likewise, and
// C's z-th, c_stride elements apart. cugemm.batched finds the windows (batched.window) and copies an
// operand that is not one.
// Template parameters: 05_swizzle.cu's but its EPI (no fused epilogue: the tile's epilogue::None).
// Launch: grid = (ceil(N / BN), ceil(M / BM), products (at most 65535)), block and dynamic shared
//   memory 05_swizzle.cu's; extra arguments after K (none of 05's epilogue arguments): a_div,
//   a_mod, a_stride, b_div, b_mod, b_stride, c_stride (strides in elements, 64-bit), z0 (the first
//   product of this launch: grid z stops at 65535, so a larger batch takes one launch per 65535).
// Preconditions: 05_swizzle.cu's for each product (dense row-major matrices: A rows K elements
//   long, B and C rows N); a_stride, b_stride, c_stride multiples of 8 (16-byte-aligned matrices).
#include "05_swizzle.cu"

template <int WARPS_M, int WARPS_N, int FRAGS_M, int FRAGS_N, int BK, int STAGES, int GROUP, bool RBUF,
          bool EPI_SMEM, bool EDGE, bool F16ACC, class T>
__device__ constexpr int hgemm_mma_swizzle_batched_smem_bytes =
    hgemm_mma_swizzle_smem_bytes<WARPS_M, WARPS_N, FRAGS_M, FRAGS_N, BK, STAGES, GROUP, RBUF, EPI_SMEM, EDGE, F16ACC, T>;

template <int WARPS_M, int WARPS_N, int FRAGS_M, int FRAGS_N, int BK, int STAGES, int GROUP, bool RBUF,
          bool EPI_SMEM, bool EDGE, bool F16ACC, class T>
__global__ void __launch_bounds__(32 * WARPS_M * WARPS_N, hgemm_mma::min_blocks(32 * WARPS_M * WARPS_N))
hgemm_mma_swizzle_batched(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N,
                          int K, int a_div, int a_mod, long long a_stride, int b_div, int b_mod,
                          long long b_stride, long long c_stride, int z0) {
  const unsigned z = static_cast<unsigned>(z0) + blockIdx.z;  // launches of more than 65535 products: one per 65535
  const T* const az = a + static_cast<long long>(z / a_div % a_mod) * a_stride;
  const T* const bz = b + static_cast<long long>(z / b_div % b_mod) * b_stride;
  hgemm_mma_swizzle_tile<WARPS_M, WARPS_N, FRAGS_M, FRAGS_N, BK, STAGES, GROUP, RBUF, EPI_SMEM, EDGE, F16ACC, T>(
      az, bz, c + z * c_stride, M, N, K);
}
