// cugemm/scripts/tc_peak.cu: TF32 tensor-core instruction ceilings, for scripts/tc_peak.py.
//
// Not a GEMM: each kernel keeps its operands in registers (or one shared-memory tile for wgmma)
// and issues one kind of TF32 MMA instruction back to back into ACC independent accumulators, so
// the time it takes is the issue rate of that instruction with no loads in the way. A GEMM built
// on the instruction can at best reach that rate; tc_peak.py sets it beside cupy.matmul TF32.
//
//   peak_wmma_tf32     wmma::mma_sync m16n16k8 .tf32 (ptxas: 4 x HMMA.1684.F32.TF32 each)
//   peak_mma_m16n8k8   mma.sync m16n8k8 .tf32         (1 x HMMA.1688.F32.TF32)
//   peak_mma_m16n8k4   mma.sync m16n8k4 .tf32         (1 x HMMA.1684.F32.TF32)
//   peak_wgmma_tf32    wgmma.mma_async m64n256k8 .tf32, A from registers, B from shared memory
//                      (sm_90a; one warpgroup per block, several blocks per SM)
//
// Every accumulator is written out at the end so nothing can be dropped as dead code. The
// operands hold 1.0 / small integers: the result is exact and is checked by tc_peak.py.
#include <mma.h>
#include "../kernels/lib/mma.cuh"
#include "../kernels/sgemm_tf32/tf32.cuh"

template <int ACC>
__global__ void peak_wmma_tf32(float* out, int iters) {
  using namespace nvcuda;
  cugemm_tf32::FragA a;
  cugemm_tf32::FragB b;
  cugemm_tf32::FragC c[ACC];
  wmma::fill_fragment(a, 1.0f);
  wmma::fill_fragment(b, 1.0f);
#pragma unroll
  for (int j = 0; j < ACC; ++j) wmma::fill_fragment(c[j], 0.0f);
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int j = 0; j < ACC; ++j) wmma::mma_sync(c[j], a, b, c[j]);
  }
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
#pragma unroll
  for (int j = 0; j < ACC; ++j)
    wmma::store_matrix_sync(out + (static_cast<size_t>(warp) * ACC + j) * 256, c[j], 16,
                            wmma::mem_row_major);
}

// d (16 x 8) += a (16 x 4) * b (4 x 8), TF32: PTX "Matrix fragments for mma.m16n8k4" (.tf32)
__device__ __forceinline__ void mma_m16n8k4_tf32(float (&d)[4], const unsigned (&a)[2],
                                                 const unsigned (&b)[1]) {
  asm("mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(b[0]));
}

template <int ACC>
__device__ __forceinline__ void store_acc(float* out, float (&d)[ACC][4]) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
  for (int j = 0; j < ACC; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) out[(static_cast<size_t>(t) * ACC + j) * 4 + e] = d[j][e];
}

template <int ACC>
__global__ void peak_mma_m16n8k8(float* out, int iters) {
  const unsigned one = __float_as_uint(1.0f);
  const unsigned a[4] = {one, one, one, one};
  const unsigned b[2] = {one, one};
  float d[ACC][4] = {};
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int j = 0; j < ACC; ++j) mma_m16n8k8_tf32(d[j], a, b);
  }
  store_acc(out, d);
}

template <int ACC>
__global__ void peak_mma_m16n8k4(float* out, int iters) {
  const unsigned one = __float_as_uint(1.0f);
  const unsigned a[2] = {one, one};
  const unsigned b[1] = {one};
  float d[ACC][4] = {};
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int j = 0; j < ACC; ++j) mma_m16n8k4_tf32(d[j], a, b);
  }
  store_acc(out, d);
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#include "../kernels/lib/barrier.cuh"
#include "../kernels/lib/wgmma.cuh"

// One warpgroup (128 threads) per block. B: 8 x 256 TF32, K-major, 128-byte swizzle (256 rows of
// 128 bytes, of which each wgmma reads the first 32); every value 1.0, so the swizzle is moot.
// GROUP wgmmas into the one accumulator per commit, then wait: the serial chain a GEMM's k loop has.
template <int GROUP>
__global__ void __launch_bounds__(128) peak_wgmma_tf32(float* out, int iters) {
  __shared__ __align__(1024) float bs[256 * 32];
  for (int i = threadIdx.x; i < 256 * 32; i += 128) bs[i] = 1.0f;
  fence_proxy_async_shared();
  __syncthreads();
  const unsigned one = __float_as_uint(1.0f);
  const unsigned a[4] = {one, one, one, one};
  const unsigned long long desc =
      cugemm_wgmma::make_desc_sw128(static_cast<unsigned>(__cvta_generic_to_shared(bs)));
  float d[128];
#pragma unroll
  for (int e = 0; e < 128; ++e) d[e] = 0.0f;
  for (int i = 0; i < iters; ++i) {
    cugemm_wgmma::fence();
#pragma unroll
    for (int g = 0; g < GROUP; ++g) cugemm_wgmma::wgmma_tf32_rs(d, a, desc);
    cugemm_wgmma::commit_group();
    cugemm_wgmma::wait_group<0>();
#pragma unroll
    for (int e = 0; e < 128; ++e) cugemm_wgmma::fence_operand(d[e]);
  }
  const size_t t = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
  for (int e = 0; e < 128; ++e) out[t * 128 + e] = d[e];
}
#endif
