// cugemm/kernels/hgemm_mma/07_persistent.cu -- mma.sync HGEMM, rung 13: persistent blocks and an
// epilogue by TMA stores that overlaps the next tile, hgemm_mma_m16n8k16_mma2x4_warp4x8x4_stageS_persistent
// [_f16acc][_cluster2] and the bf16 siblings bgemm_mma_... . Still mma.sync.m16n8k16 fed by ldmatrix
// (no wgmma); Hopper only (sm_90a: TMA, mbarriers, setmaxnreg).
//
// C = A * B, 16-bit T in and out (half, or __nv_bfloat16), fp32 accumulation (F16ACC: fp16), any
// M, N, K with 16-byte rows. The block is rung 12's (06_ws.cu): one producer thread fills a
// STAGES-deep TMA ring on FULL / EMPTY mbarriers for WARPS_M x WARPS_N consumer warps of 64 x 64
// tiles (tma_ring.cuh). What rung 13 adds over rung 12:
//  1. Persistence. One block per SM (the launcher sizes the grid from the SM count); each block
//     walks the tiles blockIdx.x, + gridDim.x, ... in bands of GROUP tile rows (lib/raster.cuh,
//     ClusterTileWalk). The ring's stage and phase run on across tiles, so the producer loads tile
//     i + 1 while the consumers finish tile i: no launch, barrier set-up, fill or drain per tile.
//  2. The epilogue by TMA stores, per warp and asynchronous: each consumer warp owns two staging
//     boxes after the ring (16 rows x 64 columns of 16-bit T each, 128-byte swizzled as TMA stores
//     them). For each 16-row strip of its 64 x 64 block, in turn through the two boxes: lane 0
//     waits until the store that last used the box has read it (cp.async.bulk.wait_group.read), the
//     warp writes it with stmatrix.x4, fences it for the async proxy, and lane 0 issues one TMA store
//     {64 columns, 16 rows}; then the warp goes on to its next tile. The tensor map clips the store
//     at M and N and TMA zero-fills loads past M, N and K: the kernel has no edge code.
//  3. CLUSTER_M = 2 (_cluster2): clusters of 2 blocks on tiles stacked in M; each producer copies
//     its A and half of the B panels by TMA multicast into both blocks; EMPTY counts the consumer
//     warps of both blocks and each consumer warp releases a stage in both (consume_ring). A block
//     of a cluster past M computes a copy of its pair's rows and stores nothing.
// Measurements and the profile: docs/hgemm_mma.md.
//
// Template parameters: WARPS_M x WARPS_N consumer warps (a multiple of 4: whole warpgroups for
//   setmaxnreg) of 64 x 64 tiles (BM = 64 WARPS_M <= 256, BN = 64 WARPS_N), STAGES (2..4, with the
//   staging boxes inside the 227 KB of shared memory), GROUP (tile rows per raster band, in cluster
//   tiles), CLUSTER_M (1 or 2), F16ACC (fp16 accumulators, rung 10's idea; T = half only), T.
//   Fixed: BK = 64.
// Launch: grid = (min(cluster tiles, SMs / CLUSTER_M) * CLUSTER_M, 1, 1), block = (32 WARPS_M
//   WARPS_N + 128, 1, 1), dynamic shared memory hgemm_mma_persistent_smem_bytes (the layout:
//   hgemm_mma_persistent_smem below: the ring, the staging boxes, the 1024-byte alignment slack);
//   extra kernel arguments: the tensor maps of A (box {64, BM}), B (box {64, 64}) and C (box
//   {64, 16}), 128-byte swizzled (cugemm/families/hgemm_mma.py, _maps_abc).
// Preconditions: N % 8 == 0 and K % 8 == 0 (16-byte rows, what TMA needs of a row stride), a, b, c
//   16-byte aligned; M, N, K < 2^31; sm_90a.
#include "../lib/raster.cuh"
#include "../lib/swizzle.cuh"
#include "../lib/tma.cuh"
#include "tma_ring.cuh"

// The dynamic shared memory (bytes from its first 1024-byte-aligned address; SLACK pays for the
// alignment): the TMA ring (tma_ring.cuh, TmaRingLayout), then two staging boxes per consumer warp
// (16 rows of its 64 x 64 C block of 16-bit T, 128-byte swizzled; 1024-byte aligned as the ring's
// size is a multiple of 1024).
template <int BM, int BN, int STAGES, int CONSUMER_WARPS>
struct hgemm_mma_persistent_smem {
  using OperandRing = hgemm_mma::TmaRingLayout<BM, BN, STAGES>;
  static constexpr int BOX = 16 * 128;
  static constexpr int RING = 0, BOXES = RING + OperandRing::BYTES;
  static constexpr int SLACK = 1024;
  static constexpr int BYTES = BOXES + CONSUMER_WARPS * 2 * BOX + SLACK;
  static_assert(BYTES <= 227 * 1024, "the ring and the staging boxes fit the shared memory of an SM");
};

template <int WARPS_M, int WARPS_N, int STAGES, int GROUP, int CLUSTER_M, bool F16ACC, class T>
__device__ constexpr int hgemm_mma_persistent_smem_bytes =
    hgemm_mma_persistent_smem<64 * WARPS_M, 64 * WARPS_N, STAGES, WARPS_M * WARPS_N>::BYTES;

template <int WARPS_M, int WARPS_N, int STAGES, int GROUP, int CLUSTER_M, bool F16ACC, class T>
__global__ void __cluster_dims__(CLUSTER_M, 1, 1) __launch_bounds__(32 * WARPS_M * WARPS_N + 128, 1)
    hgemm_mma_persistent(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N,
                         int K, const __grid_constant__ TensorMap tmap_a, const __grid_constant__ TensorMap tmap_b,
                         const __grid_constant__ TensorMap tmap_c) {
  using namespace hgemm_mma;
  constexpr int FRAGS_M = 4, FRAGS_N = 8, WM = 64, WN = 64;  // 64 x 64 warp tiles
  constexpr int CONSUMER_WARPS = WARPS_M * WARPS_N, NC = 32 * CONSUMER_WARPS;
  constexpr int BM = WM * WARPS_M, BN = WN * WARPS_N, BK = 64;
  using Smem = hgemm_mma_persistent_smem<BM, BN, STAGES, CONSUMER_WARPS>;
  using Tiles = TmaRing<BM, BN, FRAGS_M, FRAGS_N, STAGES>;
  constexpr unsigned STAGE_TX = Tiles::A_STAGE + Tiles::B_STAGE;
  constexpr int BOX = Smem::BOX;  // a staging box: 16 rows of a warp's 64 x 64 C block of 16-bit T
  constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
  static_assert(sizeof(T) == 2, "16-bit elements");
  static_assert(CONSUMER_WARPS % 4 == 0, "consumers are whole warpgroups (setmaxnreg)");
  static_assert(BM <= 256, "A is one TMA box");
  static_assert(STAGES >= 2 && STAGES <= 4, "2 to 4 stages");
  static_assert(PRODUCER_REGS * 128 + CONSUMER_REGS * NC <= 65536, "the register file");
  constexpr int PANELS = BN / 64, MY_PANELS = PANELS / CLUSTER_M;  // B panels this block copies
  static_assert((CLUSTER_M == 1 || CLUSTER_M == 2) && PANELS % CLUSTER_M == 0,
                "the cluster splits B by whole panels");

  extern __shared__ unsigned char smem_raw[];
  unsigned char* const base = align_1024(smem_raw);
  unsigned char* const ring = base + Smem::RING;
  unsigned char* const boxes = base + Smem::BOXES;  // 1024-byte aligned (the 128-byte swizzle's atom)
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
      unsigned char* const sA = ring + Tiles::A;
      unsigned char* const sB = ring + Tiles::B;
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
      // the cluster's arrivals on this block's ring are all in before it may leave (no end barrier)
      if constexpr (CLUSTER_M > 1) drain_ring(pos, empty);
    }
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
}
