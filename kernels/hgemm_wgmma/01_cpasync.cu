// cugemm/kernels/hgemm_wgmma/01_cpasync.cu: Hopper HGEMM rung 1 (sm_90a): wgmma with both operands in
// 128-byte-swizzled shared memory, filled by cp.async. Story and measurements: docs/hgemm_wgmma.md.
//
// C = A * B, T = half or __nv_bfloat16 in and out (row-major: A M x K, B K x N, C M x N, C
// overwritten), fp32 accumulation.
//
// What this rung adds over the mma.sync / WMMA kernels (kernels/hgemm_wmma/06_stages.cu): the
// warpgroup MMA. Each of the two warpgroups computes a 64 x BN slab of the 128 x BN block tile with
// wgmma.mma_async m64nBNk16 (four per 64-deep K-tile), reading A and B straight from shared memory
// through 64-bit matrix descriptors: no ldmatrix, no fragment registers. The tiles are laid out as
// the wgmma canonical 128-byte-swizzled layouts (hgemm_wgmma.cuh): A K-major, B N-major (TRANS_B:
// 64-column panels of 64 k rows); every thread writes its 16-byte cp.async chunks at the swizzled
// position itself (chunk c of row r at c ^ (r % 8)).
// Pipeline: STAGES ring stages, one cp.async group per K-tile (empty ones past the end). At K-tile
// kt: wait until K-tile kt has landed (cp.async.wait_group STAGES - 2), fence.proxy.async (the copies
// are generic-proxy writes, the wgmma reads async-proxy), one __syncthreads (it also says every
// warpgroup's wgmmas of K-tile kt - 1 are done), issue the copies of K-tile kt + STAGES - 1 into the
// stage K-tile kt - 1 used, then the wgmmas of K-tile kt, waited for (wgmma.wait_group 0) before the
// next barrier.
//
// Template parameters: BN (block tile columns: 128 or 256; the wgmma N), STAGES (>= 2), T.
// Fixed: BM = 128 (two warpgroups of 64 rows), BK = 64.
// Launch: block = (256, 1, 1), grid = (N / BN, M / 128, 1), dynamic shared memory
//   hgemm_wgmma_cpasync_smem_bytes<...> (CpasyncSmem: STAGES * (128 + BN) * 128 + 1024 bytes).
// Preconditions: M % 128 == 0, N % BN == 0, K % 64 == 0; a, b, c 16-byte aligned; 32-bit
//   element indices; sm_90a.
#include "../lib/barrier.cuh"
#include "../lib/cp_async.cuh"
#include "../lib/swizzle.cuh"
#include "hgemm_wgmma.cuh"

// Shared memory: the ring of 128 x 64 A and 64 x BN B tiles (hgemm_wgmma.cuh's layouts).
template <int BN, int STAGES>
using CpasyncSmem =
    hgemm_wgmma::RingSmem<128 * hgemm_wgmma::A_ROW_BYTES, (BN / 64) * hgemm_wgmma::B_PANEL_BYTES, STAGES>;
template <int BN, int STAGES, class T>
__device__ constexpr int hgemm_wgmma_cpasync_smem_bytes = CpasyncSmem<BN, STAGES>::BYTES;

template <int BN, int STAGES, class T>
__global__ void __launch_bounds__(256, 1)
    hgemm_wgmma_cpasync(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N,
                        int K) {
  using namespace hgemm_wgmma;
  using Smem = CpasyncSmem<BN, STAGES>;
  constexpr int BM = 128, THREADS = 256;
  constexpr int A_STAGE = Smem::A_STAGE;         // bytes: 128 rows of 64 k
  constexpr int B_STAGE = Smem::B_STAGE;
  constexpr int BCH = BN / 8;                    // 16-byte chunks per B row
  constexpr int B_ROWS = THREADS / BCH;          // B rows one pass of the block copies
  static_assert(BN == 128 || BN == 256, "BN is a wgmma N with a 128-register accumulator at most");
  static_assert(B_ROWS % 8 == 0 && BK % B_ROWS == 0, "every pass keeps a thread's rows at equal r % 8");

  extern __shared__ char smem_raw[];
  char* const smem = align_1024(smem_raw);  // swizzle atoms need 1024-byte alignment
  char* const sA = smem + Smem::A;           // STAGES x A tile
  char* const sB = smem + Smem::B;           // STAGES x B tile

  const int tid = threadIdx.x;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int num_kt = K / BK;

  // A: thread tid copies chunk tid % 8 of rows tid / 8 + 32 i (i = 0..3); all have the same r % 8.
  const int a_row = tid >> 3, a_chunk = tid & 7;
  const int a_dst = a_row * A_ROW_BYTES + ((a_chunk ^ (a_row & 7)) << 4);
  const T* const a_src = a + static_cast<size_t>(m0 + a_row) * K + a_chunk * 8;
  // B: chunk tid % BCH of rows tid / BCH + B_ROWS i; chunk cn lies in panel cn / 8 as chunk cn % 8.
  const int b_row = tid / BCH, b_cn = tid % BCH;
  const int b_dst = (b_cn >> 3) * B_PANEL_BYTES + b_row * 128 + (((b_cn & 7) ^ (b_row & 7)) << 4);
  const T* const b_src = b + static_cast<size_t>(b_row) * N + n0 + b_cn * 8;

  auto issue = [&](int s, int kt) {
    char* const da = sA + s * A_STAGE + a_dst;
    const T* const ga = a_src + kt * BK;
#pragma unroll
    for (int i = 0; i < BM / 32; ++i) cp_async_16(da + i * 32 * A_ROW_BYTES, ga + static_cast<size_t>(i) * 32 * K);
    char* const db = sB + s * B_STAGE + b_dst;
    const T* const gb = b_src + static_cast<size_t>(kt) * BK * N;
#pragma unroll
    for (int i = 0; i < BK / B_ROWS; ++i) cp_async_16(db + i * B_ROWS * 128, gb + static_cast<size_t>(i) * B_ROWS * N);
  };

  const int wg = tid >> 7;  // warpgroup: rows 64 wg .. 64 wg + 63 of the tile
  const unsigned sA_addr = smem_addr(sA) + wg * 64 * A_ROW_BYTES;
  const unsigned sB_addr = smem_addr(sB);
  float acc[BN / 2];

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < num_kt) issue(s, s);
    cp_async_commit();
  }
  for (int kt = 0; kt < num_kt; ++kt) {
    const int s = kt % STAGES;
    cp_async_wait<STAGES - 2>();  // this thread's copies of K-tile kt have landed
    fence_proxy_async_shared();   // ... and are visible to the tensor cores
    __syncthreads();              // everyone's have; every warpgroup waited for K-tile kt - 1
    const int next = kt + STAGES - 1;
    if (next < num_kt) issue(next % STAGES, next);  // into the stage of K-tile kt - 1
    cp_async_commit();
    begin_group(acc);
    mma_ktile<T, BN>(acc, sA_addr + s * A_STAGE, sB_addr + s * B_STAGE, kt > 0);
    end_group(acc);
    cugemm_wgmma::wait_group<0>();
  }
  cugemm_wgmma::fence_operands(acc);

  const int w = (tid >> 5) & 3, lane = tid & 31;
  store_slab<T>(c, acc, m0 + 64 * wg + 16 * w + (lane >> 2), n0 + 2 * (lane & 3), M, N);
}
