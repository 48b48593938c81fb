// cugemm/kernels/hgemm_mma/06_ws.cu -- mma.sync HGEMM, rung 12: warp specialisation, a TMA
// producer and mma.sync consumers that never meet at a block-wide barrier in the main loop,
// hgemm_mma_m16n8k16_mma2x4_warp4x8x4_stageS_ws[_cluster2][_edge] and the bf16 siblings bgemm_mma_... .
// The math is still mma.sync.m16n8k16 fed by ldmatrix (no wgmma): the top rung of the mma.sync
// family, Hopper only (sm_90a: TMA, mbarrier transaction counts, setmaxnreg).
//
// C = A * B, 16-bit T in and out (half, or __nv_bfloat16 for the bgemm_ siblings), fp32
// accumulation. What rung 12 adds over rung 9-11 (05_swizzle.cu, 128x256x64, where the same 8 warps
// issued the cp.async copies of every K-tile (12 per thread, with their address arithmetic) and met
// at a __syncthreads per K-tile):
//  1. Roles. The block is 8 consumer warps (2 x 4 warps of 64 x 64 warp tiles, threads 0-255) and
//     one producer warpgroup (threads 256-383) of which one thread works: it loops over the
//     K-tiles, waits on EMPTY[s] (the parity of the stage's previous use; a fresh barrier passes
//     parity 1 at once, so the first STAGES fills do not wait), arrives on FULL[s] with the stage's
//     byte count and issues the TMA copies (one box {64 k, BM rows} of A, BN / 64 boxes {64
//     columns, 64 k} of B, 128-byte swizzled). A consumer warp waits on FULL[s] (every lane polls
//     the mbarrier's parity), runs its 4 k steps (ldmatrix + 32 mma.sync each, fragments double
//     buffered in registers as rung 7) and, once its last fragments of stage s are in registers
//     (consumed by an MMA), lane 0 arrives on EMPTY[s] (count 8: one arrival per consumer warp).
//     The consumers issue no copies and no address arithmetic for them, and no warp waits for a
//     slower one: only FULL, i.e. for the data itself.
//  2. The shared layouts are TMA's 128-byte swizzle (lib/swizzle.cuh): A [BM][64] exactly as rung
//     5's xor_swizzle_chunk<8> (chunk c of row r at c ^ r % 8); B as BN / 64 panels of [64 k][64
//     columns], 8 KB each. A warp's 64 columns are one B panel, so its ldmatrix.x4.trans addresses
//     are the panel base + (16 kk + l % 16) * 128 + (chunk(l / 16) ^ l % 8) * 16, the fragment pair
//     jp one more XOR by 32 jp bytes: again no swizzle arithmetic in the loop.
//  3. setmaxnreg: 384 threads start with 168 registers each; the producer warpgroup drops to 40,
//     the consumers rise to 232 (40 + 2 x 232 = 3 x 168 per lane), room for 128 fp32 accumulators
//     and two sets of fragments (64 registers).
//  4. Edges come free: TMA zero-fills the parts of a box outside the matrix (rows past M or K,
//     columns past N or K), so tails in K add zeros, and the FULL byte count is always the whole
//     box. With EDGE the epilogue stores only the 16-byte chunks inside C (N % 8 == 0: a chunk is
//     all in or all out); that is the whole difference between the tile-multiple rung and _edge.
//  Epilogue: after one named barrier of the 256 consumer threads (every warp is done reading the
//  ring), each warp stages its 64 x 64 tile as 16-bit pairs with stmatrix into the swizzled C tile
//  over the ring (05_swizzle.cu's stage_c) and copies its own 64 x 64 block to C, 16-byte chunks,
//  8 lanes per 128-byte row segment (__syncwarp, no second block barrier).
//  Blocks walk C in bands of GROUP tile rows (rung 6).
//
// Rung 13 (CLUSTER_M = 2, `_ws_cluster2`; written and compiled, never run: not registered, see
// PENDING_DEVICE in cugemm/families/hgemm_mma.py): clusters of 2 blocks on tiles stacked in M
// (__cluster_dims__(1, 2, 1); the cluster tiles walk the same bands). Each producer copies its own A
// and half of the B panels with TMA multicast into both blocks; EMPTY counts the consumer warps of
// both blocks and each consumer warp releases a stage in both (mbarrier_arrive_remote); cluster
// barriers after the mbarrier init and before exit. Per K-tile a block reads 32 KB from L2, not 48.
//
// Measured on an H100 80GB HBM3 (2026-11-23, bench.py, one process, TFLOP/s and % of cupy.matmul):
//   4096^3: stage4_ws 454.6 (63.2%), stage4_ws_edge 449.9 (63.4%), stage3_ws 461.7 (63.8%), beside
//   rung 9 (05_swizzle.cu, 128x256x64 stage3) 479.6 (63.0%) and its _edge 405.7 (56.5%);
//   8192^3: 459.3 (64.2%), 422.7 (64.2%), 459.6 (64.3%), beside 404.9 (56.5%) and 384.9 (56.3%).
//   Level with rung 9 at 4096^3, +8 points at 8192^3; the any-shape form loses nothing. 4096x4096x1024:
//   not measured (that table of the run was lost). 168 registers at launch (384 threads), the
//   consumers use up to R204 after setmaxnreg, 0 spills.
//
// Template parameters: WARPS_M x WARPS_N consumer warps (a multiple of 4: whole warpgroups for
//   setmaxnreg), each FRAGS_M x FRAGS_N mma tiles (warp tile WM = 16 FRAGS_M by WN = 8 FRAGS_N =
//   64: one B panel); STAGES (2..4); GROUP (tile rows per raster band; 0 or 1: row-major);
//   CLUSTER_M (1, or 2: rung 13); EDGE (bounded stores); T. Fixed: BK = 64 (one 128-byte swizzle row
//   of A per K-tile).
//   BM = WARPS_M * WM (<= 256, one TMA box), BN = WARPS_N * 64.
// Launch: grid = (ceil(N / BN), ceil(M / BM) rounded up to CLUSTER_M, 1),
//   block = (32 * WARPS_M * WARPS_N + 128, 1, 1),
//   dynamic shared memory hgemm_mma_ws_smem_bytes = STAGES * (BM + BN) * 128 + 1024 bytes (the
//   ring, 1024-byte aligned by hand: the slack); extra kernel arguments: the tensor maps of A (box
//   {64, BM}) and B (box {64, 64}), 128-byte swizzle (cugemm/families/hgemm_mma.py, _maps_ab).
// Preconditions: without EDGE M % BM == 0, N % BN == 0, K % 64 == 0; with EDGE N % 8 == 0 and
//   K % 8 == 0 (16-byte rows, what TMA needs of a row stride); a, b, c 16-byte aligned; M * N < 2^31;
//   sm_90a.
#include "../lib/barrier.cuh"
#include "../lib/raster.cuh"
#include "../lib/swizzle.cuh"
#include "../lib/tma.cuh"
#include "hgemm_mma.cuh"

template <int WARPS_M, int WARPS_N, int FRAGS_M, int FRAGS_N, int STAGES, int GROUP, int CLUSTER_M, bool EDGE,
          class T>
__device__ constexpr int hgemm_mma_ws_smem_bytes =
    STAGES * (16 * FRAGS_M * WARPS_M + 8 * FRAGS_N * WARPS_N) * 128 + 1024;

namespace hgemm_mma {

// The consumers' view of the TMA-filled ring: A stages [BM][64] and B stages (BN / 64 panels of
// [64][64]) of 16-bit T, 128-byte swizzled, and a warp's ldmatrix loads of one k step.
template <int BM, int BN, int FRAGS_M, int FRAGS_N, int STAGES>
struct TmaRing {
  static constexpr int A_STAGE = BM * 128, B_PANEL = 64 * 128, B_STAGE = BN / 64 * B_PANEL;
  unsigned sA, sB;            // ring bases (shared window, 1024-byte aligned)
  unsigned a_lane, b_lane;    // this lane's offsets for k step 0, fragment 0 / pair 0

  __device__ __forceinline__ TmaRing(unsigned ring, int lane, int wm0, int wn0)
      : sA(ring), sB(ring + STAGES * A_STAGE) {
    // lane l addresses row l % 16 of its 16 x 16 block, chunk column l / 16 (wm0 % 8 == 0)
    const int sw = ((lane >> 4) ^ (lane & 7)) * 16;
    a_lane = (wm0 + (lane & 15)) * 128 + sw;
    b_lane = wn0 / 64 * B_PANEL + (lane & 15) * 128 + sw;
  }

  // k step kk of stage s: ldmatrix.x4 per 16 x 16 A fragment, ldmatrix.x4.trans per pair of 16 x 8
  // B fragments (chunk column 2 kk of A / 2 jp of the panel: an XOR inside the 128-byte line).
  __device__ __forceinline__ void load_frags(int s, int kk, unsigned (&fa)[FRAGS_M][4],
                                             unsigned (&fb)[FRAGS_N][2]) const {
    const unsigned a_s = sA + s * A_STAGE + (a_lane ^ (kk * 32));
#pragma unroll
    for (int i = 0; i < FRAGS_M; ++i) ldmatrix_x4(fa[i], a_s + i * 16 * 128);
    const unsigned b_s = sB + s * B_STAGE + kk * 16 * 128;
#pragma unroll
    for (int jp = 0; jp < FRAGS_N / 2; ++jp) {
      unsigned r[4];
      ldmatrix_x4_trans(r, b_s + (b_lane ^ (jp * 32)));
      fb[2 * jp][0] = r[0];
      fb[2 * jp][1] = r[1];
      fb[2 * jp + 1][0] = r[2];
      fb[2 * jp + 1][1] = r[3];
    }
  }
};

}  // namespace hgemm_mma

template <int WARPS_M, int WARPS_N, int FRAGS_M, int FRAGS_N, int STAGES, int GROUP, int CLUSTER_M, bool EDGE,
          class T>
__global__ void __cluster_dims__(1, CLUSTER_M, 1) __launch_bounds__(32 * WARPS_M * WARPS_N + 128, 1)
    hgemm_mma_ws(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N, int K,
                 const __grid_constant__ TensorMap tmap_a, const __grid_constant__ TensorMap tmap_b) {
  using namespace hgemm_mma;
  constexpr int CONSUMER_WARPS = WARPS_M * WARPS_N, NC = 32 * CONSUMER_WARPS;
  constexpr int WM = 16 * FRAGS_M, WN = 8 * FRAGS_N, BM = WM * WARPS_M, BN = WN * WARPS_N;
  constexpr int BK = 64, KSTEPS = BK / 16;
  using Ring = TmaRing<BM, BN, FRAGS_M, FRAGS_N, STAGES>;
  constexpr unsigned STAGE_TX = Ring::A_STAGE + Ring::B_STAGE;
  constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
  static_assert(CONSUMER_WARPS % 4 == 0, "consumers are whole warpgroups (setmaxnreg)");
  static_assert(WN == 64 && WM % 16 == 0 && BM <= 256, "a warp's columns are one B panel; A is one box");
  static_assert(STAGES >= 2 && STAGES <= 4, "2 to 4 stages");
  static_assert(BM * BN * 2 <= STAGES * (Ring::A_STAGE + Ring::B_STAGE), "the C tile fits over the ring");
  static_assert(PRODUCER_REGS * 128 + CONSUMER_REGS * NC <= 65536, "the register file");
  constexpr int PANELS = BN / 64, MY_PANELS = PANELS / CLUSTER_M;  // B panels this block copies
  static_assert((CLUSTER_M == 1 || CLUSTER_M == 2) && PANELS % CLUSTER_M == 0,
                "the cluster splits B by whole panels");
  static_assert(hgemm_mma_ws_smem_bytes<WARPS_M, WARPS_N, FRAGS_M, FRAGS_N, STAGES, GROUP, CLUSTER_M, EDGE,
                                        T> ==
                    STAGES * (Ring::A_STAGE + Ring::B_STAGE) + 1024,
                "the declared dynamic shared memory is the ring plus the alignment slack");

  extern __shared__ unsigned char smem_raw[];
  unsigned char* const ring = align_1024(smem_raw);
  __shared__ alignas(8) unsigned long long full[STAGES], empty[STAGES];

  if (threadIdx.x == NC) {
    tma_prefetch_map(&tmap_a);
    tma_prefetch_map(&tmap_b);
    init_ring_barriers<STAGES>(full, empty, CLUSTER_M * CONSUMER_WARPS);  // every consumer warp of the cluster
  }
  sync_cta_or_cluster<CLUSTER_M>();  // every block's barriers exist before any multicast or remote arrival

  // The tile: bands of GROUP tile rows (rung 6); with clusters, of GROUP / CLUSTER_M rows of cluster
  // tiles (CLUSTER_M tiles stacked in M, the blocks of one cluster: blockIdx.y / CLUSTER_M). Each
  // role computes it after its setmaxnreg (values live across it were spilled with clusters).
  const int rank = CLUSTER_M > 1 ? static_cast<int>(cluster_ctarank()) : 0;
  auto tile_origin = [&]() __attribute__((always_inline)) {
    TileCoord t;
    if constexpr (CLUSTER_M == 1) {
      t = block_tile_grouped<GROUP>();
    } else {
      t = raster_grouped(blockIdx.y / CLUSTER_M * gridDim.x + blockIdx.x, gridDim.y / CLUSTER_M, gridDim.x,
                         GROUP / CLUSTER_M);
      t.row = t.row * CLUSTER_M + rank;
    }
    return TileCoord{t.row * BM, t.col * BN};
  };
  const int num_kt = (K + BK - 1) / BK;

  if (threadIdx.x >= NC) {
    // ---- producer warpgroup: one thread issues the TMA copies --------------------------------------
    setmaxnreg_dec<PRODUCER_REGS>();
    if (threadIdx.x == NC) {
      const TileCoord o = tile_origin();
      const int m0 = o.row, n0 = o.col;
      unsigned char* const sA = ring;
      unsigned char* const sB = ring + STAGES * Ring::A_STAGE;
      // a block of a cluster past M (an odd number of tile rows) computes a copy of its pair's rows
      // that is never stored, but still copies its share of B for the pair
      const int m_load = m0 < M ? m0 : m0 - rank * BM;
      int s = 0;
      unsigned phase = 0;
      for (int kt = 0; kt < num_kt; ++kt) {
        mbarrier_wait(&empty[s], phase ^ 1);  // the stage's previous K-tile is consumed
        mbarrier_arrive_expect_tx(&full[s], STAGE_TX);
        tma_load_2d(sA + s * Ring::A_STAGE, &tmap_a, &full[s], kt * BK, m_load);
#pragma unroll
        for (int i = 0; i < MY_PANELS; ++i) {
          const int p = rank * MY_PANELS + i;
          unsigned char* const dst = sB + s * Ring::B_STAGE + p * Ring::B_PANEL;
          if constexpr (CLUSTER_M > 1) {  // rung 13: one L2 read lands in both blocks of the cluster
            tma_load_2d_multicast(dst, &tmap_b, &full[s], n0 + 64 * p, kt * BK,
                                  static_cast<unsigned short>((1u << CLUSTER_M) - 1));
          } else {
            tma_load_2d(dst, &tmap_b, &full[s], n0 + 64 * p, kt * BK);
          }
        }
        if (++s == STAGES) {
          s = 0;
          phase ^= 1;
        }
      }
    }
    if constexpr (CLUSTER_M > 1) cluster_sync();  // the consumers' final cluster barrier (below)
    return;
  }

  // ---- consumers: 8 warps of 64 x 64 ---------------------------------------------------------------
  setmaxnreg_inc<CONSUMER_REGS>();
  const TileCoord o = tile_origin();
  const int m0 = o.row, n0 = o.col;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int wm0 = warp / WARPS_N * WM, wn0 = warp % WARPS_N * WN;
  const Ring ops(smem_addr(ring), lane, wm0, wn0);
  unsigned fa[2][FRAGS_M][4];
  unsigned fb[2][FRAGS_N][2];
  MmaTile<false> acc[FRAGS_M][FRAGS_N];
  auto mma = [&](int p) __attribute__((always_inline)) {
#pragma unroll
    for (int i = 0; i < FRAGS_M; ++i)
#pragma unroll
      for (int j = 0; j < FRAGS_N; ++j) acc[i][j].template mma<T>(fa[p][i], fb[p][j]);
  };

  if (num_kt > 0) {
    int s = 0;
    unsigned phase = 0;
    mbarrier_wait(&full[0], 0);
    ops.load_frags(0, 0, fa[0], fb[0]);
    // One K-tile in stage s; on entry fragment set 0 holds its k step 0. With has_next, k step 3
    // waits for the next K-tile and loads its step 0 into set 0 under its own MMAs.
    auto ktile = [&](const bool has_next) __attribute__((always_inline)) {
      const int ns = s + 1 == STAGES ? 0 : s + 1;
      const unsigned nphase = ns == 0 ? phase ^ 1 : phase;
#pragma unroll
      for (int kk = 0; kk < KSTEPS; ++kk) {
        const int p = kk & 1;
        if (kk + 1 < KSTEPS) {
          ops.load_frags(s, kk + 1, fa[p ^ 1], fb[p ^ 1]);
        } else if (has_next) {
          mbarrier_wait(&full[ns], nphase);
          ops.load_frags(ns, 0, fa[p ^ 1], fb[p ^ 1]);
        }
        mma(p);
      }
      // k step 3's fragments were consumed by the MMAs above: this warp is done with stage s
      __syncwarp();
      if constexpr (CLUSTER_M > 1) {  // the stage is free when every consumer warp of the cluster says so
        if (lane < CLUSTER_M) mbarrier_arrive_remote(&empty[s], lane);
      } else {
        if (lane == 0) mbarrier_arrive(&empty[s]);
      }
      s = ns;
      phase = nphase;
    };
    for (int kt = 0; kt < num_kt - 1; ++kt) ktile(true);
    ktile(false);
  }

  // ---- epilogue: every consumer warp is done with the ring; each stages and stores its own block ----
  named_barrier_sync(1, NC);
  const unsigned sC = smem_addr(ring);
  stage_c<BN, FRAGS_M, FRAGS_N, false, T>(acc, sC, lane, wm0, wn0);
  __syncwarp();
  constexpr int C_CPR = BN / 8, W_CPR = WN / 8;  // 16-byte chunks per C tile row / warp tile row
#pragma unroll
  for (int i = 0; i < WM * W_CPR / 32; ++i) {
    const int q = lane + 32 * i, row = wm0 + q / W_CPR, cc = wn0 / 8 + q % W_CPR;
    if ((EDGE || CLUSTER_M > 1) && (m0 + row >= M || n0 + cc * 8 >= N)) continue;
    copy_shared_to_global_16B(c + (m0 + row) * N + n0 + cc * 8, sC + xor_swizzle_chunk<C_CPR>(row, cc) * 16);
  }
  if constexpr (CLUSTER_M > 1) cluster_sync();  // no block leaves while its pair may still arrive on it
}
