// cugemm/kernels/hgemm_mma/07_persistent.cu -- mma.sync HGEMM, rung 13: persistent blocks and an
// epilogue by TMA stores that overlaps the next tile, hgemm_mma_m16n8k16_mma2x4_warp4x8x4_stageS_persistent
// [_cluster2] and the bf16 siblings bgemm_mma_... . Still mma.sync.m16n8k16 fed by ldmatrix (no
// wgmma): the top rung of the mma.sync family, Hopper only (sm_90a: TMA, mbarriers, setmaxnreg).
//
// C = A * B, 16-bit T in and out (half, or __nv_bfloat16 for the bgemm_ siblings), fp32
// accumulation, any M, N, K with 16-byte rows. The block is rung 12's (06_ws.cu): a producer
// warpgroup of which one thread issues TMA copies into a STAGES-deep ring of 128-byte swizzled A
// [BM][64] and B (BN / 64 panels of [64][64]) stages on FULL / EMPTY mbarriers, and WARPS_M x
// WARPS_N consumer warps of 64 x 64 tiles (ldmatrix + mma.sync, fragments double-buffered in
// registers: tma_ring.cuh's consume_ring). What rung 13 adds over rung 12:
//  1. Persistence. The grid is one block per SM (cugemm/families/hgemm_mma.py sizes it from the SM
//     count) and each block walks the tiles id = blockIdx.x, + gridDim.x, ... of the tile grid in
//     bands of GROUP tile rows (lib/raster.cuh). The ring's stage and phase run on across tiles, so
//     the producer loads tile i + 1's first K-tiles while the consumers finish tile i and store it:
//     no block launch, barrier set-up, pipeline fill or drain per tile. Rung 12 paid those once per
//     tile, about 1 in 8 of a tile's time at K = 1024 (16 K-tiles).
//  2. The epilogue by TMA stores, per warp and asynchronous. Rung 12 staged the C tile over the
//     ring, so every warp first waited for the slowest one (a block barrier) and the ring stood
//     empty until the block exited. Here each consumer warp owns an 8 KB staging box after the ring
//     (its 64 x 64 C block, 128-byte swizzled as TMA stores it): it waits until its previous store
//     has read the box (cp.async.bulk.wait_group.read, lane 0), writes the box with 16 stmatrix.x4,
//     fences it for the async proxy, and lane 0 issues one TMA store {64 columns, 64 rows}. The
//     warp goes straight on to its next tile's K loop while the copy engine writes C. The store is
//     bounded by the tensor map (rows past M, columns past N are not written), so the tile-multiple
//     and any-shape forms are one kernel; with TMA zero-filling the loads past M, N and K, the
//     kernel has no edge code at all.
//  3. CLUSTER_M = 2 (`_cluster2`): clusters of 2 blocks on tiles stacked in M walk the cluster
//     tiles together; each producer copies its own A and half of the B panels with TMA multicast
//     into both blocks, EMPTY counts the consumer warps of both blocks and each consumer warp
//     releases a stage in both (consume_ring). Per K-tile a block reads 32 KB from L2, not 48.
//     A block of a cluster past M (an odd number of tile rows) computes a copy of its pair's rows
//     and stores nothing.
//
// Measured on an H100 80GB HBM3 (2026-11-23, bench.py, one process, TFLOP/s and % of cupy.matmul at
//   4096x4096x1024 / 4096^3 / 8192^3): stage4 461.2 (71.7%) / 460.9 (65.2%) / 447.7 (65.0%), beside
//   rung 12's stage4_ws 413.9 (64.2%) / 449.4 (63.5%) / 453.6 (64.2%); _f16acc 75.3 / 67.3 / 67.2%;
//   _cluster2 (stage3) 68.0 / 61.3 / 60.6%, a loss. Nsight Compute at 8192^3: the tensor pipe busy
//   92.2% of the active cycles (cugemm/families/hgemm_mma.py). 168 registers at launch, 0 spills.
//
// Template parameters: WARPS_M x WARPS_N consumer warps (a multiple of 4: whole warpgroups for
//   setmaxnreg) of 64 x 64 tiles (BM = 64 WARPS_M <= 256, BN = 64 WARPS_N), STAGES (2..4, with the
//   staging boxes inside the 227 KB of shared memory), GROUP (tile rows per raster band, in cluster
//   tiles), CLUSTER_M (1 or 2), F16ACC (fp16 accumulators, `_f16acc`: rung 10's idea on this rung;
//   T = half only), T. Fixed: BK = 64.
// Launch: grid = (min(cluster tiles, SMs / CLUSTER_M) * CLUSTER_M, 1, 1), block = (32 WARPS_M
//   WARPS_N + 128, 1, 1), dynamic shared memory hgemm_mma_persistent_smem_bytes = STAGES * (BM + BN)
//   * 128 + 8192 * warps + 1024 bytes (the ring, the staging boxes and the 1024-byte alignment
//   slack); extra kernel arguments: the tensor maps of A (box {64, BM}), B (box {64, 64}) and C (box
//   {64, 64}), 128-byte swizzled (cugemm/families/hgemm_mma.py).
// Preconditions: N % 8 == 0 and K % 8 == 0 (16-byte rows, what TMA needs of a row stride), a, b, c
//   16-byte aligned; M, N, K < 2^31; sm_90a.
#include "../lib/raster.cuh"
#include "../lib/swizzle.cuh"
#include "../lib/tma.cuh"
#include "tma_ring.cuh"

template <int WARPS_M, int WARPS_N, int STAGES, int GROUP, int CLUSTER_M, bool F16ACC, class T>
__device__ constexpr int hgemm_mma_persistent_smem_bytes =
    STAGES * 64 * (WARPS_M + WARPS_N) * 128 + WARPS_M * WARPS_N * 2 * 16 * 128 + 1024;

template <int WARPS_M, int WARPS_N, int STAGES, int GROUP, int CLUSTER_M, bool F16ACC, class T>
__global__ void __cluster_dims__(CLUSTER_M, 1, 1) __launch_bounds__(32 * WARPS_M * WARPS_N + 128, 1)
    hgemm_mma_persistent(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N,
                         int K, const __grid_constant__ TensorMap tmap_a, const __grid_constant__ TensorMap tmap_b,
                         const __grid_constant__ TensorMap tmap_c) {
  using namespace hgemm_mma;
  constexpr int FRAGS_M = 4, FRAGS_N = 8, WM = 64, WN = 64;  // 64 x 64 warp tiles
  constexpr int CONSUMER_WARPS = WARPS_M * WARPS_N, NC = 32 * CONSUMER_WARPS;
  constexpr int BM = WM * WARPS_M, BN = WN * WARPS_N, BK = 64;
  using Tiles = TmaRing<BM, BN, FRAGS_M, FRAGS_N, STAGES>;
  constexpr unsigned STAGE_TX = Tiles::A_STAGE + Tiles::B_STAGE;
  constexpr int BOX = 16 * 128;  // a staging box: 16 rows of a warp's 64 x 64 C block of 16-bit T
  constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
  static_assert(sizeof(T) == 2, "16-bit elements");
  static_assert(CONSUMER_WARPS % 4 == 0, "consumers are whole warpgroups (setmaxnreg)");
  static_assert(BM <= 256, "A is one TMA box");
  static_assert(STAGES >= 2 && STAGES <= 4, "2 to 4 stages");
  static_assert(PRODUCER_REGS * 128 + CONSUMER_REGS * NC <= 65536, "the register file");
  constexpr int PANELS = BN / 64, MY_PANELS = PANELS / CLUSTER_M;  // B panels this block copies
  static_assert((CLUSTER_M == 1 || CLUSTER_M == 2) && PANELS % CLUSTER_M == 0,
                "the cluster splits B by whole panels");
  static_assert(hgemm_mma_persistent_smem_bytes<WARPS_M, WARPS_N, STAGES, GROUP, CLUSTER_M, F16ACC, T> ==
                    STAGES * STAGE_TX + CONSUMER_WARPS * 2 * BOX + 1024,
                "the declared dynamic shared memory is the ring, the boxes and the alignment slack");
  static_assert(hgemm_mma_persistent_smem_bytes<WARPS_M, WARPS_N, STAGES, GROUP, CLUSTER_M, F16ACC, T> <= 227 * 1024,
                "the ring and the staging boxes fit the shared memory of an SM");

  extern __shared__ unsigned char smem_raw[];
  unsigned char* const ring = align_1024(smem_raw);
  unsigned char* const boxes = ring + STAGES * STAGE_TX;  // 1024-byte aligned (the 128-byte swizzle's atom)
  __shared__ alignas(8) unsigned long long full[STAGES], empty[STAGES];

  if (threadIdx.x == NC) {
    tma_prefetch_map(&tmap_a);
    tma_prefetch_map(&tmap_b);
    tma_prefetch_map(&tmap_c);
    init_ring_barriers<STAGES>(full, empty, CLUSTER_M * CONSUMER_WARPS);  // every consumer warp of the cluster
  }
  sync_cta_or_cluster<CLUSTER_M>();  // every block's barriers exist before any multicast or remote arrival

  // The tile walk (lib/raster.cuh: cluster tiles of CLUSTER_M tiles stacked in M, in bands of GROUP
  // rows of them), with the block's rank in its cluster and the K-tiles of a tile. Each role sets it
  // up after its setmaxnreg (values live across setmaxnreg are spilled).
  struct Walk : ClusterTileWalk<CLUSTER_M, true> {
    int rank, num_kt;
    __device__ __forceinline__ Walk(int M, int N, int K)
        : ClusterTileWalk<CLUSTER_M, true>((M + BM - 1) / BM, (N + BN - 1) / BN),
          rank(CLUSTER_M > 1 ? static_cast<int>(cluster_ctarank()) : 0),
          num_kt((K + BK - 1) / BK) {}
    __device__ __forceinline__ TileCoord origin(int t) const {  // tile t's first row and column of C
      const TileCoord at = this->tile(this->cluster_tile(t, GROUP), rank);
      return TileCoord{at.row * BM, at.col * BN};
    }
  };

  if (threadIdx.x >= NC) {
    // ---- producer warpgroup: one thread issues the TMA copies of every tile, one ring -------------
    setmaxnreg_dec<PRODUCER_REGS>();
    if (threadIdx.x == NC) {
      unsigned char* const sA = ring;
      unsigned char* const sB = ring + STAGES * Tiles::A_STAGE;
      const Walk w(M, N, K);
      Ring<STAGES> pos;
      for (int t = w.first(); t < w.count; t += w.stride) {
        const TileCoord o = w.origin(t);
        // a block of a cluster past M re-reads its pair's rows but still copies its share of B
        const int m_load = o.row < M ? o.row : o.row - w.rank * BM;
        for (int kt = 0; kt < w.num_kt; ++kt) {
          const int s = pos.stage;
          mbarrier_wait(&empty[s], pos.phase ^ 1);  // the stage's previous K-tile is consumed
          mbarrier_arrive_expect_tx(&full[s], STAGE_TX);
          tma_load_2d(sA + s * Tiles::A_STAGE, &tmap_a, &full[s], kt * BK, m_load);
#pragma unroll
          for (int i = 0; i < MY_PANELS; ++i) {
            const int p = w.rank * MY_PANELS + i;
            unsigned char* const dst = sB + s * Tiles::B_STAGE + p * Tiles::B_PANEL;
            if constexpr (CLUSTER_M > 1) {  // one L2 read lands in both blocks of the cluster
              tma_load_2d_multicast(dst, &tmap_b, &full[s], o.col + 64 * p, kt * BK,
                                    static_cast<unsigned short>((1u << CLUSTER_M) - 1));
            } else {
              tma_load_2d(dst, &tmap_b, &full[s], o.col + 64 * p, kt * BK);
            }
          }
          pos.advance();
        }
      }
    }
    if constexpr (CLUSTER_M > 1) cluster_sync();  // the consumers' final cluster barrier (below)
    return;
  }

  // ---- consumers: warps of 64 x 64, each with two staging boxes and TMA stores --------------------
  setmaxnreg_inc<CONSUMER_REGS>();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int wm0 = warp / WARPS_N * WM, wn0 = warp % WARPS_N * WN;
  const Tiles ops(smem_addr(ring), lane, wm0, wn0);
  unsigned char* const my_boxes = boxes + warp * 2 * BOX;
  // stmatrix.x4 of the 16 x 16 block jp of a box: lane l gives row l % 16, chunk column
  // 2 jp + l / 16, stored at chunk column (2 jp + l / 16) ^ (l % 8) (an XOR by 32 jp bytes of the
  // lane's jp = 0 offset)
  const unsigned box_addr = smem_addr(my_boxes), box_lane = (lane & 15) * 128 + (((lane >> 4) ^ (lane & 7)) * 16);
  MmaTile<F16ACC> acc[FRAGS_M][FRAGS_N];
  const Walk w(M, N, K);
  Ring<STAGES> pos;
  for (int t = w.first(); t < w.count; t += w.stride) {
    const TileCoord o = w.origin(t);
#pragma unroll
    for (int i = 0; i < FRAGS_M; ++i)
#pragma unroll
      for (int j = 0; j < FRAGS_N; ++j) acc[i][j].zero();
    consume_ring<T, CLUSTER_M, STAGES>(ops, acc, full, empty, pos, w.num_kt, lane);

    // epilogue: the warp's 64 x 64 block as 4 boxes of 16 rows (mma tile row i), through its two
    // staging boxes in turn, each stored by the copy engine
#pragma unroll
    for (int i = 0; i < FRAGS_M; ++i) {
      const unsigned box = box_addr + (i & 1) * BOX;
      if (lane == 0) tma_store_wait_read<1>();  // the store that last read this box is done reading
      __syncwarp();
#pragma unroll
      for (int jp = 0; jp < FRAGS_N / 2; ++jp) {
        const unsigned r[4] = {acc[i][2 * jp].template lo<T>(), acc[i][2 * jp].template hi<T>(),
                               acc[i][2 * jp + 1].template lo<T>(), acc[i][2 * jp + 1].template hi<T>()};
        stmatrix_x4(box + (box_lane ^ (jp * 32)), r);
      }
      fence_proxy_async_shared();  // the box is visible to the copy engine
      __syncwarp();
      if (lane == 0) {
        if (o.row + wm0 + 16 * i < M && o.col + wn0 < N)
          tma_store_2d(&tmap_c, my_boxes + (i & 1) * BOX, o.col + wn0, o.row + wm0 + 16 * i);
        tma_store_commit();  // a group even when empty: the wait above counts groups
      }
    }
  }
  if (lane == 0) tma_store_wait<0>();  // the last stores have written C
  if constexpr (CLUSTER_M > 1) cluster_sync();  // no block leaves while its pair may still arrive on it
}
