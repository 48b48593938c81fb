// cugemm/scripts/tc_peak.cu: tensor-core instruction ceilings (TF32, and fp16 / bf16 mma.sync), for
// scripts/tc_peak.py.
//
// Not a GEMM: each kernel keeps its operands in registers (or one shared-memory tile for wgmma and
// the ldmatrix probe) and issues one kind of MMA instruction back to back into ACC independent
// accumulators, so the time it takes is the issue rate of that instruction with no loads in the
// way. A GEMM built on the instruction can at best reach that rate; tc_peak.py sets it beside
// cupy.matmul (TF32, or fp16).
//
//   peak_wmma_tf32     wmma::mma_sync m16n16k8 .tf32 (ptxas: 4 x HMMA.1684.F32.TF32 each)
//   peak_mma_m16n8k8   mma.sync m16n8k8 .tf32         (1 x HMMA.1688.F32.TF32)
//   peak_mma_m16n8k4   mma.sync m16n8k4 .tf32         (1 x HMMA.1684.F32.TF32)
//   peak_wgmma_tf32    wgmma.mma_async m64n256k8 .tf32, A from registers, B from shared memory
//                      (sm_90a; one warpgroup per block, several blocks per SM)
//   peak_mma_f16       mma.sync m16n8k16 .f32.f16.f16.f32  (1 x HMMA.16816.F32): the hgemm_mma
//                      family's instruction (fp32 accumulation)
//   peak_mma_f16acc    mma.sync m16n8k16 .f16.f16.f16.f16  (1 x HMMA.16816.F16): the _f16acc rung's
//   peak_mma_bf16      mma.sync m16n8k16 .f32.bf16.bf16.f32 (1 x HMMA.16816.F32.BF16)
//   peak_mma_ldsm      a warp's k loop with its operands in shared memory but no global memory: per
//                      k step FRAGS_M ldmatrix.x4 + FRAGS_N / 2 ldmatrix.x4.trans and FRAGS_M x FRAGS_N
//                      m16n8k16 (fp32 accumulation), fragments double-buffered in registers (the
//                      hgemm_mma _rbuf order): the ceiling of that warp tile's main loop with its
//                      shared-memory reads
//
// Every accumulator is written out at the end so nothing can be dropped as dead code. The
// operands hold 1.0 / small integers: the result is exact and is checked by tc_peak.py (fp16
// accumulators stop growing at 32768 = 2^15, where adding 16 rounds back to 32768; the script
// expects that).
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
    for (int g = 0; g < GROUP; ++g) cugemm_wgmma::wgmma_tf32_rs(d, a, desc, 1);
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

// ---- fp16 / bf16: mma.sync m16n8k16 ------------------------------------------------------------
// Block of 128 threads (4 warps, one per SM sub-partition), so the resident warps per SM step by 4.
// The operand registers are 16-bit ones (1.0 = 0x3C00 in fp16, 0x3F80 in bf16): each m16n8k16 adds
// 16 to every accumulator element.
template <class T>
__device__ __forceinline__ unsigned ones2();
template <>
__device__ __forceinline__ unsigned ones2<half>() { return 0x3C003C00u; }
template <>
__device__ __forceinline__ unsigned ones2<__nv_bfloat16>() { return 0x3F803F80u; }

template <class T, int ACC>
__device__ __forceinline__ void peak_mma_16bit(float* out, int iters) {
  const unsigned one = ones2<T>();
  const unsigned a[4] = {one, one, one, one};
  const unsigned b[2] = {one, one};
  float d[ACC][4] = {};
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int j = 0; j < ACC; ++j) mma_m16n8k16<T>(d[j], a, b);
  }
  store_acc(out, d);
}

template <int ACC>
__global__ void __launch_bounds__(128) peak_mma_f16(float* out, int iters) {
  peak_mma_16bit<half, ACC>(out, iters);
}

template <int ACC>
__global__ void __launch_bounds__(128) peak_mma_bf16(float* out, int iters) {
  peak_mma_16bit<__nv_bfloat16, ACC>(out, iters);
}

template <int ACC>
__global__ void __launch_bounds__(128) peak_mma_f16acc(float* out, int iters) {
  const unsigned one = ones2<half>();
  const unsigned a[4] = {one, one, one, one};
  const unsigned b[2] = {one, one};
  unsigned d[ACC][2] = {};
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int j = 0; j < ACC; ++j) mma_m16n8k16_f16acc(d[j], a, b);
  }
  float f[ACC][4];
#pragma unroll
  for (int j = 0; j < ACC; ++j) {
    const float2 lo = __half22float2(*reinterpret_cast<const half2*>(&d[j][0]));
    const float2 hi = __half22float2(*reinterpret_cast<const half2*>(&d[j][1]));
    f[j][0] = lo.x; f[j][1] = lo.y; f[j][2] = hi.x; f[j][3] = hi.y;
  }
  store_acc(out, f);
}

// The main loop of a warp tile of FRAGS_M x FRAGS_N mma tiles (64 x 64: 4 x 8) fed from shared
// memory: per k step FRAGS_M ldmatrix.x4 (A) and FRAGS_N / 2 ldmatrix.x4.trans (B), 512 bytes
// each, from a 20 KB tile of ones. Lane l's row address is line 8 w + l / 8 (warp w), chunk l % 8:
// the 8 rows of every 8 x 8 matrix fall in 8 distinct 16-byte bank groups (conflict-free, like the
// swizzled tiles); fragments are 1 KB apart, B 8 KB after A, odd k steps 512 bytes on, and loop
// trip i shifts everything by (i % 8) lines, so no load is loop-invariant (ptxas hoists or merges
// loads of an address it has already read when nothing stores in between). Two k steps per loop
// trip, fragments double-buffered (set 1 loads while set 0 multiplies, and back), as the hgemm_mma
// _rbuf rung does. Each accumulator element gains 2 x 16 per trip.
template <int FRAGS_M, int FRAGS_N>
__global__ void __launch_bounds__(128) peak_mma_ldsm(float* out, int iters) {
  static_assert(FRAGS_M <= 4 && FRAGS_N <= 8 && FRAGS_N % 2 == 0, "offsets stay inside the 20 KB tile");
  __shared__ __align__(128) unsigned tile[5120];
  for (int i = threadIdx.x; i < 5120; i += 128) tile[i] = ones2<half>();
  __syncthreads();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const unsigned base = smem_addr(tile) + (8 * warp + (lane >> 3)) * 128 + (lane & 7) * 16;
  auto lds = [&](unsigned (&fa)[FRAGS_M][4], unsigned (&fb)[FRAGS_N][2], int it, int step)
                 __attribute__((always_inline)) {
    const unsigned s = base + (it & 7) * 128 + step * 512;
#pragma unroll
    for (int i = 0; i < FRAGS_M; ++i) ldmatrix_x4(fa[i], s + i * 1024);
#pragma unroll
    for (int j = 0; j < FRAGS_N; j += 2) {
      unsigned r[4];
      ldmatrix_x4_trans(r, s + 8192 + j * 512);
      fb[j][0] = r[0]; fb[j][1] = r[1]; fb[j + 1][0] = r[2]; fb[j + 1][1] = r[3];
    }
  };
  float d[FRAGS_M * FRAGS_N][4] = {};
  auto mma = [&](const unsigned (&fa)[FRAGS_M][4], const unsigned (&fb)[FRAGS_N][2])
                 __attribute__((always_inline)) {
#pragma unroll
    for (int i = 0; i < FRAGS_M; ++i)
#pragma unroll
      for (int j = 0; j < FRAGS_N; ++j) mma_m16n8k16<half>(d[i * FRAGS_N + j], fa[i], fb[j]);
  };
  unsigned fa0[FRAGS_M][4], fb0[FRAGS_N][2], fa1[FRAGS_M][4], fb1[FRAGS_N][2];
  lds(fa0, fb0, 0, 0);
  for (int it = 0; it < iters; ++it) {
    lds(fa1, fb1, it, 1);
    mma(fa0, fb0);
    lds(fa0, fb0, it + 1, 0);  // one load set past the last trip: harmless, keeps the loop uniform
    mma(fa1, fb1);
  }
  store_acc(out, d);
}
