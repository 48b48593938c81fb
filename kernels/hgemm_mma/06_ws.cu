// cugemm/kernels/hgemm_mma/06_ws.cu -- mma.sync HGEMM, rung 12: warp specialisation, a TMA
// producer and mma.sync consumers that never meet at a block-wide barrier in the main loop,
// hgemm_mma_m16n8k16_mma2x4_warp4x8x4_stageS_ws[_edge] and the bf16 siblings bgemm_mma_... .
// Still mma.sync.m16n8k16 fed by ldmatrix (no wgmma); Hopper only (sm_90a: TMA, mbarrier
// transaction counts, setmaxnreg).
//
// C = A * B, 16-bit T in and out (half, or __nv_bfloat16), fp32 accumulation. What rung 12 adds
// over rungs 9-11 (05_swizzle.cu, where every warp issued cp.async copies and all met at a
// __syncthreads per K-tile):
//  1. Roles. WARPS_M x WARPS_N consumer warps (threads 0 .. NC - 1) and one producer warpgroup
//     (the next 128 threads) of which one thread works: per K-tile it waits on EMPTY[s], arrives on
//     FULL[s] with the stage's byte count and issues the TMA copies (one box {64 k, BM rows} of A,
//     BN / 64 boxes {64 columns, 64 k} of B). A consumer warp waits on FULL[s], runs the K-tile's 4
//     k steps and lane 0 arrives on EMPTY[s] (count: one arrival per consumer warp); tma_ring.cuh,
//     consume_ring. The consumers issue no copies and wait only for the data.
//  2. The shared layouts are TMA's 128-byte swizzle (tma_ring.cuh): A [BM][64], B in [64][64]
//     panels; a warp's 64 columns are one B panel, so the loop computes no swizzle.
//  3. setmaxnreg: the producer warpgroup drops to 40 registers, the consumers rise to 232.
//  4. Edges come free: TMA zero-fills the parts of a box outside the matrix; with EDGE the
//     epilogue stores only the 16-byte chunks inside C (the only difference of _edge).
//  Epilogue: one named barrier of the consumers (the ring is read), then each warp stages its 64 x 64
//  block into the swizzled C tile over the ring (hgemm_mma.cuh, stage_c) and copies that block to C
//  in 16-byte chunks (__syncwarp, no second block barrier). Blocks walk C in bands of GROUP tile
//  rows (rung 6). Rung 13 (07_persistent.cu) makes this block persistent.
// Measurements and history: docs/hgemm_mma.md.
//
// Template parameters: WARPS_M x WARPS_N consumer warps (a multiple of 4: whole warpgroups for
//   setmaxnreg), each FRAGS_M x FRAGS_N mma tiles (warp tile WM = 16 FRAGS_M by WN = 8 FRAGS_N =
//   64: one B panel); STAGES (2..4); GROUP (tile rows per raster band; 0 or 1: row-major);
//   EDGE (bounded stores); T. Fixed: BK = 64 (one 128-byte swizzle row of A per K-tile).
//   BM = WARPS_M * WM (<= 256, one TMA box), BN = WARPS_N * 64.
// Launch: grid = (ceil(N / BN), ceil(M / BM), 1), block = (32 * WARPS_M * WARPS_N + 128, 1, 1),
//   dynamic shared memory hgemm_mma_ws_smem_bytes (the layout: hgemm_mma_ws_smem below; the ring
//   is 1024-byte aligned by hand, hence the slack); extra kernel arguments: the tensor maps of A
//   (box {64, BM}) and B (box {64, 64}), 128-byte swizzle (cugemm/families/hgemm_mma.py, _maps_ab).
// Preconditions: without EDGE M % BM == 0, N % BN == 0, K % 64 == 0; with EDGE N % 8 == 0 and
//   K % 8 == 0 (16-byte rows, what TMA needs of a row stride); a, b, c 16-byte aligned; M * N < 2^31;
//   sm_90a.
#include "../lib/barrier.cuh"
#include "../lib/raster.cuh"
#include "../lib/swizzle.cuh"
#include "../lib/tma.cuh"
#include "tma_ring.cuh"

// The dynamic shared memory (bytes from its first 1024-byte-aligned address; SLACK pays for the
// alignment): the TMA ring (tma_ring.cuh, TmaRingLayout); in the epilogue the swizzled C tile
// [BM][BN] of 16-bit T over it.
template <int BM, int BN, int STAGES>
struct hgemm_mma_ws_smem {
  using OperandRing = hgemm_mma::TmaRingLayout<BM, BN, STAGES>;
  static constexpr int RING = 0, C = 0;
  static constexpr int SLACK = 1024;
  static constexpr int BYTES = OperandRing::BYTES + SLACK;
  static_assert(BM * BN * 2 <= OperandRing::BYTES, "the C tile fits over the ring");
};

template <int WARPS_M, int WARPS_N, int FRAGS_M, int FRAGS_N, int STAGES, int GROUP, bool EDGE,
          class T>
__device__ constexpr int hgemm_mma_ws_smem_bytes =
    hgemm_mma_ws_smem<16 * FRAGS_M * WARPS_M, 8 * FRAGS_N * WARPS_N, STAGES>::BYTES;

template <int WARPS_M, int WARPS_N, int FRAGS_M, int FRAGS_N, int STAGES, int GROUP, bool EDGE,
          class T>
__global__ void __launch_bounds__(32 * WARPS_M * WARPS_N + 128, 1)
    hgemm_mma_ws(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N, int K,
                 const __grid_constant__ TensorMap tmap_a, const __grid_constant__ TensorMap tmap_b) {
  using namespace hgemm_mma;
  constexpr int CONSUMER_WARPS = WARPS_M * WARPS_N, NC = 32 * CONSUMER_WARPS;
  constexpr int WM = 16 * FRAGS_M, WN = 8 * FRAGS_N, BM = WM * WARPS_M, BN = WN * WARPS_N;
  constexpr int BK = 64;
  using Smem = hgemm_mma_ws_smem<BM, BN, STAGES>;
  using Tiles = TmaRing<BM, BN, FRAGS_M, FRAGS_N, STAGES>;
  constexpr unsigned STAGE_TX = Tiles::A_STAGE + Tiles::B_STAGE;
  constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
  static_assert(CONSUMER_WARPS % 4 == 0, "consumers are whole warpgroups (setmaxnreg)");
  static_assert(WN == 64 && WM % 16 == 0 && BM <= 256, "a warp's columns are one B panel; A is one box");
  static_assert(STAGES >= 2 && STAGES <= 4, "2 to 4 stages");
  static_assert(PRODUCER_REGS * 128 + CONSUMER_REGS * NC <= 65536, "the register file");
  constexpr int PANELS = BN / 64;

  extern __shared__ unsigned char smem_raw[];
  unsigned char* const base = align_1024(smem_raw);
  unsigned char* const ring = base + Smem::RING;
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
      unsigned char* const sA = ring + Tiles::A;
      unsigned char* const sB = ring + Tiles::B;
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
  const unsigned sC = smem_addr(base + Smem::C);
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
