// cugemm/kernels/sgemm/01_naive.cu -- SGEMM ladder, rung 1: sgemm_naive_f32
// (the ladder's story, measurements and what was tried: docs/sgemm.md)
//
// C = A * B, all row-major fp32: A is MxK, B is KxN, C is MxN (C is overwritten).
//
// What this rung is: the baseline. One thread computes one element of C and walks the whole K
// dimension, reading a row of A and a column of B straight from global memory; nothing is
// reused on chip.
//
// Shape rules: any M, N, K >= 0. Threads past the last row/column of C exit early (there is no
//   __syncthreads in this kernel, so that is safe); K = 0 writes zeros.
// Launch:  grid = (ceil(N/BN), ceil(M/BM), 1), block = (BN, BM, 1): threadIdx.x walks N (so a
//   warp reads B and writes C along contiguous columns), threadIdx.y walks M. BM*BN <= 1024.

template <int BM, int BN>
__global__ void __launch_bounds__(BM * BN)
sgemm_naive_f32(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                int M, int N, int K) {
  static_assert(BM > 0 && BN > 0 && BM * BN <= 1024, "one thread per C element: BM*BN <= 1024");

  const int row = static_cast<int>(blockIdx.y) * BM + static_cast<int>(threadIdx.y);  // C row
  const int col = static_cast<int>(blockIdx.x) * BN + static_cast<int>(threadIdx.x);  // C column
  if (row >= M || col >= N) return;

  // compute: dot product of row `row` of A with column `col` of B
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc += a[row * K + k] * b[k * N + col];

  // write back
  c[row * N + col] = acc;
}
