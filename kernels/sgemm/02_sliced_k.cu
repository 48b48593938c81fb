// cugemm/kernels/sgemm/02_sliced_k.cu -- SGEMM ladder, rung 2: sgemm_sliced_k_f32
// (the ladder's story, measurements and what was tried: docs/sgemm.md)
//
// C = A * B, all row-major fp32: A is MxK, B is KxN, C is MxN (C is overwritten).
//
// What this rung adds over rung 1 (naive): K is cut into slices of BK. For each slice the block
// cooperatively copies a BMxBK tile of A and a BKxBN tile of B into shared memory once, and
// every thread then reads its row/column from there, so each global element is loaded once per
// block instead of once per thread. Still one thread per C element.
//
// Shape rules: any M, N, K >= 0. Tile elements outside A or B load as 0; C elements outside the
//   matrix are not written. Out-of-range threads stay alive (they take part in the loads and
//   the __syncthreads) and only skip the final store.
// Cooperative load: the THREADS = BM*BN threads walk each tile in row-major order, THREADS
//   elements per round (consecutive threads take consecutive columns, so global reads coalesce);
//   a last, partial round is guarded, so no relation between BM, BN and BK is needed.
// Launch:  grid = (ceil(N/BN), ceil(M/BM), 1), block = (BN, BM, 1): threadIdx.x walks N,
//   threadIdx.y walks M. Config: <32, 32, 32> (1024 threads, 8 KiB static shared memory).

template <int BM, int BN, int BK>
__global__ void __launch_bounds__(BM * BN)
sgemm_sliced_k_f32(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                   int M, int N, int K) {
  constexpr int THREADS = BM * BN;
  constexpr int A_ROUNDS = (BM * BK + THREADS - 1) / THREADS;  // tile elements per thread,
  constexpr int B_ROUNDS = (BK * BN + THREADS - 1) / THREADS;  // rounded up
  static_assert(BM > 0 && BN > 0 && BK > 0, "tile sizes must be positive");
  static_assert(THREADS <= 1024, "one thread per C element: BM*BN <= 1024");
  static_assert((BM * BK + BK * BN) * 4 <= 48 * 1024, "static shared memory must fit in 48 KiB");

  __shared__ float s_a[BM][BK];
  __shared__ float s_b[BK][BN];

  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * BN + tx;
  const int bm0 = static_cast<int>(blockIdx.y) * BM;  // first C row of this block
  const int bn0 = static_cast<int>(blockIdx.x) * BN;  // first C column of this block

  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += BK) {
    // load: A tile [BM][BK], element e -> (m, k) = (e / BK, e % BK); zero outside A
#pragma unroll
    for (int i = 0; i < A_ROUNDS; ++i) {
      const int e = tid + i * THREADS;
      if (e < BM * BK) {  // compile-time true when THREADS divides BM*BK
        const int m = e / BK, k = e % BK;
        const int gm = bm0 + m, gk = k0 + k;
        s_a[m][k] = (gm < M && gk < K) ? a[gm * K + gk] : 0.f;
      }
    }
    // load: B tile [BK][BN], element e -> (k, n) = (e / BN, e % BN); zero outside B
#pragma unroll
    for (int i = 0; i < B_ROUNDS; ++i) {
      const int e = tid + i * THREADS;
      if (e < BK * BN) {
        const int k = e / BN, n = e % BN;
        const int gk = k0 + k, gn = bn0 + n;
        s_b[k][n] = (gk < K && gn < N) ? b[gk * N + gn] : 0.f;
      }
    }
    __syncthreads();  // tiles complete before anyone reads them

    // compute: s_a[ty][k] is one address per warp row (broadcast), s_b[k][tx] is contiguous
#pragma unroll
    for (int k = 0; k < BK; ++k) acc += s_a[ty][k] * s_b[k][tx];
    __syncthreads();  // everyone done reading before the next slice overwrites the tiles
  }

  // write back
  const int row = bm0 + ty, col = bn0 + tx;
  if (row < M && col < N) c[row * N + col] = acc;
}
