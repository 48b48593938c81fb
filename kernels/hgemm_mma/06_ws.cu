// cugemm/kernels/hgemm_mma/06_ws.cu -- mma.sync HGEMM, rung 12: warp specialisation, a TMA
// producer and mma.sync consumers that never meet at a block-wide barrier in the main loop,
// hgemm_mma_m16n8k16_mma2x4_warp4x8x4_stageS_ws[_edge] and the bf16 siblings bgemm_mma_... .
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
// Rung 13 (07_persistent.cu) keeps this block and makes it persistent, with the epilogue by TMA
// stores; it also carries the clusters-of-2 form with B multicast (measured slower there).
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
//   EDGE (bounded stores); T. Fixed: BK = 64 (one 128-byte swizzle row
//   of A per K-tile).
//   BM = WARPS_M * WM (<= 256, one TMA box), BN = WARPS_N * 64.
// Launch: grid = (ceil(N / BN), ceil(M / BM), 1),
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
#include "tma_ring.cuh"

template <int WARPS_M, int WARPS_N, int FRAGS_M, int FRAGS_N, int STAGES, int GROUP, bool EDGE,
          class T>
__device__ constexpr int hgemm_mma_ws_smem_bytes =
    STAGES * (16 * FRAGS_M * WARPS_M + 8 * FRAGS_N * WARPS_N) * 128 + 1024;

template <int WARPS_M, int WARPS_N, int FRAGS_M, int FRAGS_N, int STAGES, int GROUP, bool EDGE,
          class T>
__global__ void __launch_bounds__(32 * WARPS_M * WARPS_N + 128, 1)
    hgemm_mma_ws(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N, int K,
                 const __grid_constant__ TensorMap tmap_a, const __grid_constant__ TensorMap tmap_b) {
  using namespace hgemm_mma;
  constexpr int CONSUMER_WARPS = WARPS_M * WARPS_N, NC = 32 * CONSUMER_WARPS;
  constexpr int WM = 16 * FRAGS_M, WN = 8 * FRAGS_N, BM = WM * WARPS_M, BN = WN * WARPS_N;
  constexpr int BK = 64;
  using Tiles = TmaRing<BM, BN, FRAGS_M, FRAGS_N, STAGES>;
  constexpr unsigned STAGE_TX = Tiles::A_STAGE + Tiles::B_STAGE;
  constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
  static_assert(CONSUMER_WARPS % 4 == 0, "consumers are whole warpgroups (setmaxnreg)");
  static_assert(WN == 64 && WM % 16 == 0 && BM <= 256, "a warp's columns are one B panel; A is one box");
  static_assert(STAGES >= 2 && STAGES <= 4, "2 to 4 stages");
  static_assert(BM * BN * 2 <= STAGES * (Tiles::A_STAGE + Tiles::B_STAGE), "the C tile fits over the ring");
  static_assert(PRODUCER_REGS * 128 + CONSUMER_REGS * NC <= 65536, "the register file");
  constexpr int PANELS = BN / 64;
  static_assert(hgemm_mma_ws_smem_bytes<WARPS_M, WARPS_N, FRAGS_M, FRAGS_N, STAGES, GROUP, EDGE,
                                        T> ==
                    STAGES * (Tiles::A_STAGE + Tiles::B_STAGE) + 1024,
                "the declared dynamic shared memory is the ring plus the alignment slack");

  extern __shared__ unsigned char smem_raw[];
  unsigned char* const ring = align_1024(smem_raw);
  __shared__ alignas(8) unsigned long long full[STAGES], empty[STAGES];

  if (threadIdx.x == NC) {
    tma_prefetch_map(&tmap_a);
    tma_prefetch_map(&tmap_b);
    init_ring_barriers<STAGES>(full, empty, CONSUMER_WARPS);  // one arrival per consumer warp
  }
  __syncthreads();  // the barriers exist before any copy or arrival

  // The tile: bands of GROUP tile rows (rung 6). Each role computes it after its setmaxnreg.
  auto tile_origin = [&]() __attribute__((always_inline)) {
    const TileCoord t = block_tile_grouped<GROUP>();
    return TileCoord{t.row * BM, t.col * BN};
  };
  const int num_kt = (K + BK - 1) / BK;

  if (threadIdx.x >= NC) {
    // ---- producer warpgroup: one thread issues the TMA copies --------------------------------------
    setmaxnreg_dec<PRODUCER_REGS>();
    if (threadIdx.x == NC) {
      const TileCoord o = tile_origin();
      unsigned char* const sA = ring;
      unsigned char* const sB = ring + STAGES * Tiles::A_STAGE;
      Ring<STAGES> pos;
      for (int kt = 0; kt < num_kt; ++kt) {
        const int s = pos.stage;
        mbarrier_wait(&empty[s], pos.phase ^ 1);  // the stage's previous K-tile is consumed
        mbarrier_arrive_expect_tx(&full[s], STAGE_TX);
        tma_load_2d(sA + s * Tiles::A_STAGE, &tmap_a, &full[s], kt * BK, o.row);
#pragma unroll
        for (int p = 0; p < PANELS; ++p)
          tma_load_2d(sB + s * Tiles::B_STAGE + p * Tiles::B_PANEL, &tmap_b, &full[s], o.col + 64 * p, kt * BK);
        pos.advance();
      }
    }
    return;
  }

  // ---- consumers: 8 warps of 64 x 64 ---------------------------------------------------------------
  setmaxnreg_inc<CONSUMER_REGS>();
  const TileCoord o = tile_origin();
  const int m0 = o.row, n0 = o.col;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int wm0 = warp / WARPS_N * WM, wn0 = warp % WARPS_N * WN;
  const Tiles ops(smem_addr(ring), lane, wm0, wn0);
  MmaTile<false> acc[FRAGS_M][FRAGS_N];
  Ring<STAGES> pos;
  consume_ring<T, 1, STAGES>(ops, acc, full, empty, pos, num_kt, lane);

  // ---- epilogue: every consumer warp is done with the ring; each stages and stores its own block ----
  named_barrier_sync(1, NC);
  const unsigned sC = smem_addr(ring);
  stage_c<BN, FRAGS_M, FRAGS_N, false, T>(acc, sC, lane, wm0, wn0);
  __syncwarp();
  constexpr int C_CPR = BN / 8, W_CPR = WN / 8;  // 16-byte chunks per C tile row / warp tile row
#pragma unroll
  for (int i = 0; i < WM * W_CPR / 32; ++i) {
    const int q = lane + 32 * i, row = wm0 + q / W_CPR, cc = wn0 / 8 + q % W_CPR;
    if (EDGE && (m0 + row >= M || n0 + cc * 8 >= N)) continue;
    copy_shared_to_global_16B(c + (m0 + row) * N + n0 + cc * 8, sC + xor_swizzle_chunk<C_CPR>(row, cc) * 16);
  }
}
