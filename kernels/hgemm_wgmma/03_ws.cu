// cugemm/kernels/hgemm_wgmma/03_ws.cu: Hopper HGEMM rungs 3 and 4 (sm_90a), warp specialisation: a
// producer warpgroup whose one thread issues the TMA copies, and consumer warpgroups that only
// wait and issue wgmmas. Story and measurements: docs/hgemm_wgmma.md.
//
// C = A * B, T = half or __nv_bfloat16 in and out (row-major), fp32 accumulation. Tiles, tensor
// maps and the FULL / EMPTY mbarrier ring are rung 2's (02_tma.cu).
//
// What rung 3 adds over rung 2 (thread 0 of a consumer warpgroup issued the copies, and stalled
// its warpgroup whenever it had to wait for a stage to be released):
//  1. Roles. Warpgroup 0 produces: its thread 0 loops over the K-tiles, waits on EMPTY[s] (parity
//     of the stage's previous use; a fresh barrier passes parity 1 at once, so the first STAGES
//     fills do not wait), arrives on FULL[s] with the expected bytes and issues the copies. The
//     CONSUMERS warpgroups wait on FULL[s], issue one K-tile of wgmmas, wait for the previous
//     K-tile's (wgmma.wait_group 1) and release its stage (one arrival per consumer warpgroup on
//     EMPTY). Nothing a consumer does waits on the copies' issue, and the producer runs up to
//     STAGES K-tiles ahead.
//  2. setmaxnreg: the producer warpgroup drops to 40 registers per thread and the consumers rise
//     to 232 (for 3 warpgroups at launch: 168 each, 40 + 2 x 232 = 3 x 168).
// Rung 3 (CONSUMERS = 1, BM = BN = 128): one consumer warpgroup owns the 128 x 128 tile as two
// 64-row slabs (two wgmma m64n128k16 per k16 step, 128 accumulators).
// What rung 4 adds over rung 3: two consumer warpgroups and a 128 x 256 tile (each consumer owns a
// 64 x 256 slab: wgmma m64n256k16, 128 accumulators). Per K-tile the block reads 48 KB of operands
// for 4.2 MFLOP (rung 3: 32 KB for 2.1 MFLOP), and the two consumers keep the tensor cores busy
// while either waits.
//
// Template parameters: BM (128), BN (128 or 256), CONSUMERS (1 or 2; each owns BM / CONSUMERS
// rows as 64-row slabs), STAGES, T. Fixed: BK = 64.
// Launch: block = (128 (CONSUMERS + 1), 1, 1), grid = (N / BN, M / BM, 1), dynamic shared memory
//   hgemm_wgmma_ws_smem_bytes<...> (WsSmem: STAGES * (BM + BN) * 128 + 1024 bytes); extra kernel
//   arguments: the tensor maps of A (box {64, BM}) and B (box {64, 64}), 128-byte swizzled.
// Preconditions: M % BM == 0, N % BN == 0, K % 64 == 0; a, b, c 16-byte aligned; sm_90a.
#include "../lib/barrier.cuh"
#include "../lib/swizzle.cuh"
#include "../lib/tma.cuh"
#include "hgemm_wgmma.cuh"

// Shared memory: the ring of BM x 64 A and 64 x BN B tiles (hgemm_wgmma.cuh's layouts).
template <int BM, int BN, int STAGES>
using WsSmem =
    hgemm_wgmma::RingSmem<BM * hgemm_wgmma::A_ROW_BYTES, (BN / 64) * hgemm_wgmma::B_PANEL_BYTES, STAGES>;
template <int BM, int BN, int CONSUMERS, int STAGES, class T>
__device__ constexpr int hgemm_wgmma_ws_smem_bytes = WsSmem<BM, BN, STAGES>::BYTES;

template <int BM, int BN, int CONSUMERS, int STAGES, class T>
__global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1)
    hgemm_wgmma_ws(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N, int K,
                   const __grid_constant__ TensorMap tmap_a, const __grid_constant__ TensorMap tmap_b) {
  using namespace hgemm_wgmma;
  using Smem = WsSmem<BM, BN, STAGES>;
  constexpr int SLABS = BM / 64 / CONSUMERS;  // 64-row slabs per consumer warpgroup
  constexpr int A_STAGE = Smem::A_STAGE;
  constexpr int B_STAGE = Smem::B_STAGE;
  constexpr unsigned STAGE_TX = A_STAGE + B_STAGE;
  constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
  static_assert(BN == 128 || BN == 256, "BN is a wgmma N");
  static_assert(SLABS >= 1 && SLABS * 64 * CONSUMERS == BM && SLABS * BN / 2 <= 128,
                "each consumer owns whole 64-row slabs, at most 128 accumulators");
  static_assert(BM <= 256, "one TMA box of A (box dimensions are at most 256)");

  extern __shared__ char smem_raw[];
  char* const smem = align_1024(smem_raw);
  char* const sA = smem + Smem::A;
  char* const sB = smem + Smem::B;
  __shared__ alignas(8) unsigned long long full[STAGES], empty[STAGES];

  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int num_kt = K / BK;
  if (threadIdx.x == 0) {
    tma_prefetch_map(&tmap_a);
    tma_prefetch_map(&tmap_b);
    init_ring_barriers<STAGES>(full, empty, CONSUMERS);
  }
  __syncthreads();

  const int wg = warpgroup_index();
  if (wg == 0) {
    // ---- producer ------------------------------------------------------------------------------
    setmaxnreg_dec<PRODUCER_REGS>();
    if (threadIdx.x == 0) {
      Ring<STAGES> ring;
      for (int kt = 0; kt < num_kt; ++kt) {
        const int s = ring.stage;
        mbarrier_wait(&empty[s], ring.phase ^ 1);  // the stage's previous K-tile is consumed
        mbarrier_arrive_expect_tx(&full[s], STAGE_TX);
        tma_load_2d(sA + s * A_STAGE, &tmap_a, &full[s], kt * BK, m0);
#pragma unroll
        for (int p = 0; p < BN / 64; ++p)
          tma_load_2d(sB + s * B_STAGE + p * B_PANEL_BYTES, &tmap_b, &full[s], n0 + 64 * p, kt * BK);
        ring.advance();
      }
    }
  } else {
    // ---- consumers -----------------------------------------------------------------------------
    setmaxnreg_inc<CONSUMER_REGS>();
    const int cw = wg - 1;
    const unsigned sA_addr = smem_addr(sA) + cw * SLABS * 64 * A_ROW_BYTES;
    const unsigned sB_addr = smem_addr(sB);
    float acc[SLABS][BN / 2];
    Ring<STAGES> ring;
    int prev = 0;
    for (int kt = 0; kt < num_kt; ++kt) {
      mbarrier_wait(&full[ring.stage], ring.phase);
#pragma unroll
      for (int i = 0; i < SLABS; ++i) cugemm_wgmma::fence_operands(acc[i]);
      cugemm_wgmma::fence();
#pragma unroll
      for (int i = 0; i < SLABS; ++i)
        mma_ktile<T, BN>(acc[i], sA_addr + ring.stage * A_STAGE + i * 64 * A_ROW_BYTES,
                         sB_addr + ring.stage * B_STAGE, kt > 0);
      cugemm_wgmma::commit_group();  // one group per K-tile, all slabs
#pragma unroll
      for (int i = 0; i < SLABS; ++i) cugemm_wgmma::fence_operands(acc[i]);
      cugemm_wgmma::wait_group<1>();  // K-tile kt - 1's wgmmas are done: release its stage
      if (kt > 0 && (threadIdx.x & 127) == 0) mbarrier_arrive(&empty[prev]);
      prev = ring.stage;
      ring.advance();
    }
    cugemm_wgmma::wait_group<0>();
#pragma unroll
    for (int i = 0; i < SLABS; ++i) cugemm_wgmma::fence_operands(acc[i]);
    const int w = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31;
#pragma unroll
    for (int i = 0; i < SLABS; ++i)
      store_slab<T>(c, acc[i], m0 + (cw * SLABS + i) * 64 + 16 * w + (lane >> 2), n0 + 2 * (lane & 3), M, N);
  }
}
