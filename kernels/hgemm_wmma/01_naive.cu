// cugemm/kernels/hgemm_wmma/01_naive.cu -- WMMA HGEMM ladder, rung 1: hgemm_wmma_m16n16k16_naive
// (the ladder's story, measurements and what was tried: docs/hgemm_wmma.md)
//
// C = A * B on tensor cores through the WMMA API: A (M x K), B (K x N) and C (M x N) are fp16,
// row-major; C is overwritten. Products accumulate in fp32 (F16ACC = false, what cuBLAS does) or
// in fp16 (F16ACC = true, as the notes do).
//
// What this rung adds over the CUDA-core HGEMM: the multiply itself moves to the tensor cores.
// One warp computes one WMMA_M x WMMA_N tile of C: for each K step of WMMA_K it loads the A and B
// fragments straight from global memory (wmma::load_matrix_sync, leading dimension K resp. N) and
// issues one wmma::mma_sync. No shared-memory staging, no reuse between warps.
// Epilogue (fp32): the accumulator goes through a small shared scratch tile and leaves as fp16 in
// 16-byte stores (warp_store_c); with F16ACC it is stored directly.
//
// Template parameters: WMMA_M x WMMA_N x WMMA_K, an fp16 WMMA shape (16x16x16, 32x8x16, 8x32x16);
// F16ACC as above.
// Preconditions (checked by the caller): M % WMMA_M == 0, N % WMMA_N == 0, K % WMMA_K == 0;
//   a, b, c 16-byte aligned (fragment loads want each fragment's first element 32-byte aligned:
//   with K and N multiples of 16 that holds whenever the base pointers are, as CuPy allocations
//   are); 32-bit indices (M*K, K*N, M*N < 2^31). sm_70+ (registered for sm_80+).
// Launch: grid = (N / WMMA_N, M / WMMA_M, 1), block = (32, 1, 1), no dynamic shared memory.
#include <mma.h>
#include <cuda_fp16.h>

#include "wmma_common.cuh"

template <int WMMA_M, int WMMA_N, int WMMA_K, bool F16ACC>
__global__ void __launch_bounds__(32)
hgemm_wmma_naive(const half* __restrict__ a, const half* __restrict__ b, half* __restrict__ c,
                 int M, int N, int K) {
  using namespace cugemm_wmma;
  static_assert(is_wmma_f16_shape(WMMA_M, WMMA_N, WMMA_K), "not an fp16 WMMA shape");
  __shared__ __align__(128) float scratch[scratch_floats(WMMA_M, WMMA_N, 1)];

  const int m0 = static_cast<int>(blockIdx.y) * WMMA_M;
  const int n0 = static_cast<int>(blockIdx.x) * WMMA_N;

  FragC<WMMA_M, WMMA_N, WMMA_K, F16ACC> acc[1][1];
  wmma::fill_fragment(acc[0][0], 0.0f);
  FragA<WMMA_M, WMMA_N, WMMA_K> fa;
  FragB<WMMA_M, WMMA_N, WMMA_K> fb;
  for (int k0 = 0; k0 < K; k0 += WMMA_K) {
    wmma::load_matrix_sync(fa, a + m0 * K + k0, K);
    wmma::load_matrix_sync(fb, b + k0 * N + n0, N);
    wmma::mma_sync(acc[0][0], fa, fb, acc[0][0]);
  }
  warp_store_c<WMMA_M, WMMA_N, WMMA_K, 1, 1, F16ACC>(c + m0 * N + n0, N, acc, scratch,
                                                    threadIdx.x & 31);
}
