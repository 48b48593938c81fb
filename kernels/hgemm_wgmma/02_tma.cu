// cugemm/kernels/hgemm_wgmma/02_tma.cu: Hopper HGEMM rung 2 (sm_90a): the tiles loaded by the Tensor
// Memory Accelerator (cp.async.bulk.tensor.2d), completing on mbarriers. Story and measurements:
// docs/hgemm_wgmma.md.
//
// C = A * B, T = half or __nv_bfloat16 in and out (row-major), fp32 accumulation; the MMA side is
// rung 1's (two warpgroups, 64 x BN each, wgmma m64nBNk16 from 128-byte-swizzled shared memory).
//
// What this rung adds over rung 1 (cp.async by all 256 threads, one __syncthreads per K-tile and
// a wgmma.wait_group 0 in front of it):
//  1. TMA loads. One thread issues a K-tile as 1 + BN / 64 bulk tensor copies (A: one box
//     {64 k, 128 rows}; B: one box {64 columns, 64 k} per 64-column panel) from tensor maps built on
//     the host (cugemm/tma.py, passed as __grid_constant__ kernel parameters). The copy engine
//     writes the 128-byte swizzle itself (CU_TENSOR_MAP_SWIZZLE_128B: the layout the wgmma
//     descriptors describe), so no thread computes an address or holds a copy in flight.
//  2. mbarriers instead of __syncthreads, two per ring stage. FULL[s]: the issuing thread arrives
//     with expect-tx = the stage's bytes; the copies complete their bytes on it, so the phase ends
//     when the data has landed, and the warpgroups wait on its parity. EMPTY[s]: one thread per
//     warpgroup arrives once that warpgroup's wgmmas that read stage s are done (wgmma.wait_group
//     1 after the next K-tile's wgmmas are issued, so one K-tile of wgmmas stays in flight); the
//     issuing thread waits on it before refilling the stage with K-tile kt + STAGES - 1.
//  The issuing thread is thread 0, a consumer too: its warpgroup stalls while it waits for the
//  other warpgroup to release a stage. Rung 3 gives the copies their own warp.
//
// Template parameters: BN (128 or 256), STAGES (>= 2), T. Fixed: BM = 128, BK = 64.
// Launch: block = (256, 1, 1), grid = (N / BN, M / 128, 1), dynamic shared memory
//   hgemm_wgmma_tma_smem_bytes<...> (TmaSmem: STAGES * (128 + BN) * 128 + 1024 bytes); extra kernel
//   arguments: the tensor maps of A (box {64, 128}) and B (box {64, 64}), both 128-byte swizzled.
// Preconditions: M % 128 == 0, N % BN == 0, K % 64 == 0; a, b, c 16-byte aligned; sm_90a.
#include "../lib/barrier.cuh"
#include "../lib/swizzle.cuh"
#include "../lib/tma.cuh"
#include "hgemm_wgmma.cuh"

// Shared memory: the ring of 128 x 64 A and 64 x BN B tiles (hgemm_wgmma.cuh's layouts).
template <int BN, int STAGES>
using TmaSmem =
    hgemm_wgmma::RingSmem<128 * hgemm_wgmma::A_ROW_BYTES, (BN / 64) * hgemm_wgmma::B_PANEL_BYTES, STAGES>;
template <int BN, int STAGES, class T>
__device__ constexpr int hgemm_wgmma_tma_smem_bytes = TmaSmem<BN, STAGES>::BYTES;

template <int BN, int STAGES, class T>
__global__ void __launch_bounds__(256, 1)
    hgemm_wgmma_tma(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N, int K,
                    const __grid_constant__ TensorMap tmap_a, const __grid_constant__ TensorMap tmap_b) {
  using namespace hgemm_wgmma;
  using Smem = TmaSmem<BN, STAGES>;
  constexpr int BM = 128;
  constexpr int A_STAGE = Smem::A_STAGE;
  constexpr int B_STAGE = Smem::B_STAGE;
  constexpr unsigned STAGE_TX = A_STAGE + B_STAGE;  // bytes the copies of one K-tile complete
  static_assert(BN == 128 || BN == 256, "BN is a wgmma N with a 128-register accumulator at most");

  extern __shared__ char smem_raw[];
  char* const smem = align_1024(smem_raw);
  char* const sA = smem + Smem::A;
  char* const sB = smem + Smem::B;
  __shared__ alignas(8) unsigned long long full[STAGES], empty[STAGES];

  const int tid = threadIdx.x;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int num_kt = K / BK;
  if (tid == 0) {
    tma_prefetch_map(&tmap_a);
    tma_prefetch_map(&tmap_b);
    init_ring_barriers<STAGES>(full, empty, 2);  // one arrival per warpgroup
  }
  __syncthreads();

  auto issue = [&](int s, int kt) {  // thread 0: K-tile kt into stage s
    mbarrier_arrive_expect_tx(&full[s], STAGE_TX);
    tma_load_2d(sA + s * A_STAGE, &tmap_a, &full[s], kt * BK, m0);
#pragma unroll
    for (int p = 0; p < BN / 64; ++p)
      tma_load_2d(sB + s * B_STAGE + p * B_PANEL_BYTES, &tmap_b, &full[s], n0 + 64 * p, kt * BK);
  };
  if (tid == 0) {
    for (int s = 0; s < STAGES && s < num_kt; ++s) issue(s, s);
  }

  const int wg = tid >> 7;
  const unsigned sA_addr = smem_addr(sA) + wg * 64 * A_ROW_BYTES;
  const unsigned sB_addr = smem_addr(sB);
  float acc[BN / 2];
  Ring<STAGES> ring;
  int prev = 0;  // stage of K-tile kt - 1
  for (int kt = 0; kt < num_kt; ++kt) {
    mbarrier_wait(&full[ring.stage], ring.phase);  // K-tile kt has landed
    begin_group(acc);
    mma_ktile<T, BN>(acc, sA_addr + ring.stage * A_STAGE, sB_addr + ring.stage * B_STAGE, kt > 0);
    end_group(acc);
    cugemm_wgmma::wait_group<1>();  // this warpgroup's wgmmas of K-tile kt - 1 are done
    if (kt > 0) {
      if ((tid & 127) == 0) mbarrier_arrive(&empty[prev]);
      const int next = kt - 1 + STAGES;  // refills the stage of K-tile kt - 1, its use (kt - 1) / STAGES
      if (tid == 0 && next < num_kt) {
        mbarrier_wait(&empty[prev], ((kt - 1) / STAGES) & 1);
        issue(prev, next);
      }
    }
    prev = ring.stage;
    ring.advance();
  }
  cugemm_wgmma::wait_group<0>();
  cugemm_wgmma::fence_operands(acc);

  const int w = (tid >> 5) & 3, lane = tid & 31;
  store_slab<T>(c, acc, m0 + 64 * wg + 16 * w + (lane >> 2), n0 + 2 * (lane & 3), M, N);
}
