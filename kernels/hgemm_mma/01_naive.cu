// cugemm/kernels/hgemm_mma/01_naive.cu -- mma.sync HGEMM, rung 1: hgemm_mma_m16n8k16_naive.
//
// C = A * B, A (M x K), B (K x N), C (M x N) row-major, 16-bit elements T (half; __nv_bfloat16
// for the bf16 siblings), fp32 accumulation on the tensor cores through inline PTX
// mma.sync.aligned.m16n8k16 (lib/mma.cuh), no WMMA API.
//
// What this rung is: one warp per 16 x 8 tile of C, one m16n8k16 per k step, operands straight
// from global memory. Unlike WMMA the fragment layout is the PTX ISA's, and the kernel builds the
// fragments itself (g = lane / 4, t = lane % 4, lib/mma.cuh):
//   A (16 x 16, row): a0 = A[g][2t, 2t+1], a1 = A[g+8][2t..], a2 = A[g][2t+8..], a3 = A[g+8][2t+8..]:
//     two adjacent k values of one row, one 32-bit load each;
//   B (16 x 8, "col"): b0 = B[2t][g], B[2t+1][g]; b1 = B[2t+8][g], B[2t+9][g]: two k values of one
//     column, which in a row-major B are N elements apart: two 16-bit loads packed into a register;
//   C (16 x 8): c0, c1 = C[g][2t, 2t+1], c2, c3 = C[g+8][2t..]: one 32-bit store per row pair.
// Every A element is read N / 8 times and every B element M / 16 times from global memory (L1/L2).
// Measurements and the ladder's story: docs/hgemm_mma.md.
//
// Template parameter: T (half or __nv_bfloat16).
// Launch: grid = (N / 8, M / 16, 1), block = (32, 1, 1), no dynamic shared memory.
// Preconditions: M % 16 == 0, N % 8 == 0, K % 16 == 0; a, b, c 4-byte aligned; 32-bit indices;
//   sm_80+ (mma.sync m16n8k16 with bf16).
#include "../lib/mma.cuh"

template <class T>
__global__ void __launch_bounds__(32)
hgemm_mma_naive(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N,
                int K) {
  const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  const int m0 = blockIdx.y * 16, n0 = blockIdx.x * 8;
  const T* a_lane = a + (m0 + g) * K + 2 * t;   // A[g][2t]
  const T* b_lane = b + 2 * t * N + n0 + g;     // B[2t][g]
  // the raw 16 bits of a B element: two of them (k, k + 1) make one register, k in the low half
  auto b16 = [](const T* p) { return static_cast<unsigned>(*reinterpret_cast<const unsigned short*>(p)); };
  auto u32 = [](const T* p) { return *reinterpret_cast<const unsigned*>(p); };

  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  for (int k0 = 0; k0 < K; k0 += 16) {
    const unsigned fa[4] = {u32(a_lane + k0), u32(a_lane + 8 * K + k0), u32(a_lane + k0 + 8),
                            u32(a_lane + 8 * K + k0 + 8)};
    const T* bk = b_lane + k0 * N;
    const unsigned fb[2] = {b16(bk) | b16(bk + N) << 16, b16(bk + 8 * N) | b16(bk + 9 * N) << 16};
    mma_m16n8k16<T>(acc, fa, fb);
  }
  T* c_lane = c + (m0 + g) * N + n0 + 2 * t;
  *reinterpret_cast<unsigned*>(c_lane) = pack2<T>(acc[0], acc[1]);
  *reinterpret_cast<unsigned*>(c_lane + 8 * N) = pack2<T>(acc[2], acc[3]);
}
