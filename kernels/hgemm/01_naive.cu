// cugemm/kernels/hgemm/01_naive.cu -- HGEMM (CUDA cores) ladder, rung 1: hgemm_naive_f16
// (the ladder's story, measurements and what was tried: docs/hgemm.md)
//
// C = A * B, all row-major fp16: A is MxK, B is KxN, C is MxN (C is overwritten). Products and
// the running sum are fp16 (__hfma: one fused multiply-add, rounded to fp16 once), as in the notes.
//
// What this rung is: the baseline, the fp16 twin of sgemm_naive_f32. One thread computes one
// element of C and walks the whole K dimension, reading a row of A and a column of B straight
// from global memory.
//
// Shape rules: any M, N, K >= 0, any 2-byte aligned pointers (scalar accesses only). Threads past
//   the last row/column of C exit early (there is no __syncthreads in this kernel, so that is
//   safe); K = 0 writes zeros.
// Launch:  grid = (ceil(N/BN), ceil(M/BM), 1), block = (BN, BM, 1): threadIdx.x walks N (so a
//   warp reads B and writes C along contiguous columns), threadIdx.y walks M. Config: <16, 16>.
#include <cuda_fp16.h>

template <int BM, int BN>
__global__ void __launch_bounds__(BM * BN)
hgemm_naive_f16(const half* __restrict__ a, const half* __restrict__ b, half* __restrict__ c,
                int M, int N, int K) {
  static_assert(BM > 0 && BN > 0 && BM * BN <= 1024, "one thread per C element: BM*BN <= 1024");

  const int row = static_cast<int>(blockIdx.y) * BM + static_cast<int>(threadIdx.y);  // C row
  const int col = static_cast<int>(blockIdx.x) * BN + static_cast<int>(threadIdx.x);  // C column
  if (row >= M || col >= N) return;

  // compute: dot product of row `row` of A with column `col` of B, accumulated in fp16
  half acc = __float2half(0.f);
  for (int k = 0; k < K; ++k) acc = __hfma(a[row * K + k], b[k * N + col], acc);

  // write back
  c[row * N + col] = acc;
}
