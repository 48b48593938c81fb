// cugemm/kernels/hgemm_mma/05_swizzle.cu -- mma.sync HGEMM, rungs 5 to 11: XOR-swizzled shared
// memory and everything above it, hgemm_mma_m16n8k16_..._swizzle[_bswizzle][_rbuf][_epi][_f16acc]
// [_edge] and the bf16 siblings bgemm_mma_m16n8k16_... .
//
// C = A * B, 16-bit T in and out (half, or __nv_bfloat16 for the bgemm_ siblings), fp32
// accumulation (F16ACC: fp16) on the tensor cores through inline PTX mma.sync.m16n8k16, ldmatrix
// (.trans for the row-major B) and a STAGES-deep cp.async ring in dynamic shared memory, as in
// rung 4. One template; each rung is a template argument, so each named variant switches on one
// more idea than the rung below it:
//
//  5. _swizzle (always on here): XOR-swizzled shared tiles instead of padded rows. Rows are
//     stored unpadded (A: BK halves, B: BN halves) and each 16-byte chunk is permuted within its
//     128-byte line by XOR-ing its column with the line's row index (lib/swizzle.cuh,
//     xor_swizzle_chunk): the 8 row addresses of every ldmatrix phase (8 rows at one chunk
//     column) and of every cp.async phase land in 8 distinct 16-byte bank groups, with no wasted
//     bytes (padding costs 1/5 of the A ring at BK = 32), 128-byte aligned rows, and the same
//     layout for every stage. A lane's ldmatrix address for k step kk (or fragment pair jp) is its
//     step-0 address XOR a compile-time constant (the swizzle only permutes chunks within a line),
//     so the main loop computes no swizzle.
//  6. _bswizzle (GROUP > 1): block rasterisation. The blocks of the launch walk the C tiles in
//     bands of GROUP tile rows, column by column (lib/raster.cuh, block_tile_grouped), so the
//     resident blocks share GROUP row panels of A and a few column panels of B, which stay in L2.
//  7. _rbuf (RBUF): fragments double-buffered in registers: k step kk + 1's ldmatrix loads are
//     issued before k step kk's MMAs, and the next K-tile's first step right after the barrier
//     (lib/pipeline.cuh, ring_pipeline): the ldmatrix latency hides behind a k step of MMAs.
//  8. _epi (EPI): the epilogue goes through shared memory. Each warp converts its accumulators to
//     16-bit pairs and writes them into a swizzled BM x BN tile (stmatrix.x4 on sm_90, four
//     st.shared.b32 per 16 x 16 block on sm_80), then the block copies the tile to C in 16-byte
//     chunks, consecutive threads on consecutive chunks of a row: whole 32-byte sectors, fully
//     coalesced rows, instead of 4-byte stores that cover half a sector per row per lane quad.
//  9. larger tiles (mma2x4_warp4x8, mma2x2_warp4x8, mma4x2_warp4x8): 64 x 64 warp tiles (4 x 8
//     mma tiles, 128 fp32 accumulators per thread), 128 x 256, 128 x 128 or 256 x 128 blocks, BK 32
//     or 64: per k step a warp issues 32 MMAs for 4 + 4 ldmatrix.x4.
// 10. _f16acc (F16ACC): fp16 accumulation (mma ...f16.f16.f16.f16): half the accumulator registers.
// 11. _edge (EDGE): any M, N, K whose rows are 16-byte aligned (N % 8 == 0, K % 8 == 0). The grid
//     rounds up; a 16-byte chunk of A or B outside the matrix (rows past M or K, columns past N or
//     K: all-in or all-out, since K and N are multiples of 8) is zero-filled by cp.async with a
//     source size of 0 (lib/cp_async.cuh, cp_async_16_zfill) from a clamped address, so tails in
//     K add zeros; the epilogue stores only the chunks inside C. Only K-tiles that cross an edge
//     pay for the predicates: a block whose C tile lies inside M x N copies its whole K-tiles
//     unpredicated (a uniform branch per K-tile). Needs EPI.
// bf16: T = __nv_bfloat16 selects mma ...f32.bf16.bf16.f32 and bf16 rounding of C; nothing else
// changes (ldmatrix and cp.async move 16-bit elements whatever they are).
//
// Measured on an H100 80GB HBM3 (2026-11-23, bench.py, TFLOP/s and % of cupy.matmul in the same run;
// the same variant moved by up to 8% between two runs), at 4096x4096x1024 / 4096^3 [/ 8192^3]:
//   5  mma2x4_warp4x4x2_stage3_swizzle                 297 / 335  (46 / 44%): +15% / +16% over stage3
//   6  ..._bswizzle                                    265 / 293  (41 / 39%): -11% / -12% on this
//      128x128 tile at 4096 (in both runs; not profiled); it pays on the 128x256x64 tile at 8192^3:
//      450 TFLOP/s in bands of 8 tile rows, 440 in bands of 16, 419 in launch order (_swizzle_rbuf_epi;
//      391 / 419 at 4096, level with bands of 8), so the rungs above keep bands of 8
//   7  ..._rbuf                                        294 / 343  (46 / 45%): +11% / +17%
//   8  ..._epi                                         320 / 353  (50 / 47%): +9% / +3%
//   9  mma2x4_warp4x8x4_stage3_..._epi (128x256x64)    390 / 448 / 450  (61 / 59 / 66%): +22% / +27%;
//      mma2x4_warp4x8x2_stage4 (128x256x32) 392 / 461 / 448, ..._x4_stage4 391 / 440 / 443,
//      mma2x2_warp4x8x4_stage3 (128x128x64, 2 blocks/SM) 400 / 431 / 423, mma4x2 (256x128x64)
//      385 / 438 / 370
//   10 ..._f16acc                                      418 / 481 / 481  (65 / 64 / 71%): +7%
//   11 ..._edge (hgemm_mma_fast)                       392 / 428 / 444  (61 / 57 / 65%): -4% at 4096^3;
//      4095x4104x1016: 232 (47%; 544 tiles on 132 SMs). bf16 (bgemm_mma_fast): 396 / 487 (61 / 62%).
// 240 registers per thread at 128x256x64 (fp32 accumulators), 168 with _f16acc, one 8-warp block
// per SM: the loop is 32 HMMA.16816 per 4 + 4 LDSM per k step, one barrier per 4 k steps.
//
// Template parameters: WARPS_M x WARPS_N warps, each FRAGS_M x FRAGS_N mma tiles of 16 x 8 (FRAGS_N
// even; warp tile WM = 16 FRAGS_M by WN = 8 FRAGS_N, WN = 32 or a multiple of 64); BK (32 or 64: 4 or
// 8 chunks per A row); STAGES (2..5); GROUP (tile rows per raster band; 0 or 1: row-major); RBUF,
// EPI, EDGE, F16ACC (half only) flags; T.
//   BM = WARPS_M * WM, BN = WARPS_N * WN (a multiple of 64).
// Launch: grid = (ceil(N / BN), ceil(M / BM), 1), block = (32 * WARPS_M * WARPS_N, 1, 1), dynamic
//   shared memory hgemm_mma_swizzle_smem_bytes = max(STAGES * (BM * BK + BK * BN), EPI ? BM * BN : 0)
//   * 2 bytes (the C tile reuses the ring); over 48 KB the caller raises the attribute (the JIT does).
// Preconditions: without EDGE M % BM == 0, N % BN == 0, K % BK == 0; with EDGE N % 8 == 0 and
//   K % 8 == 0; a, b, c 16-byte aligned; M * K, K * N, M * N (rounded up to tiles) < 2^31; sm_80+.
#include "../lib/pipeline.cuh"
#include "../lib/raster.cuh"
#include "hgemm_mma.cuh"

template <int WARPS_M, int WARPS_N, int FRAGS_M, int FRAGS_N, int BK, int STAGES, int GROUP, bool RBUF,
          bool EPI, bool EDGE, bool F16ACC, class T>
__device__ constexpr int hgemm_mma_swizzle_smem_bytes = [] {
  constexpr int bm = 16 * FRAGS_M * WARPS_M, bn = 8 * FRAGS_N * WARPS_N;
  constexpr int ring = STAGES * (bm * BK + BK * bn) * 2;
  constexpr int ctile = EPI ? bm * bn * 2 : 0;
  return ring > ctile ? ring : ctile;
}();

template <int WARPS_M, int WARPS_N, int FRAGS_M, int FRAGS_N, int BK, int STAGES, int GROUP, bool RBUF,
          bool EPI, bool EDGE, bool F16ACC, class T>
__global__ void __launch_bounds__(32 * WARPS_M * WARPS_N, hgemm_mma::min_blocks(32 * WARPS_M * WARPS_N))
hgemm_mma_swizzle(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N,
                  int K) {
  using namespace hgemm_mma;
  using Ops = Operands<WARPS_M, WARPS_N, FRAGS_M, FRAGS_N, BK, STAGES, EDGE, T>;
  constexpr int NT = Ops::NT, BM = Ops::BM, BN = Ops::BN, KSTEPS = Ops::KSTEPS;
  static_assert(!F16ACC || !IsBf16<T>::value, "fp16 accumulation takes fp16 inputs");
  static_assert(!EDGE || EPI, "the edge rung stores C through the shared-memory epilogue");
  static_assert(hgemm_mma_swizzle_smem_bytes<WARPS_M, WARPS_N, FRAGS_M, FRAGS_N, BK, STAGES, GROUP, RBUF,
                                             EPI, EDGE, F16ACC, T> ==
                    (Ops::RING_BYTES > (EPI ? BM * BN * 2 : 0) ? Ops::RING_BYTES : BM * BN * 2),
                "the declared dynamic shared memory is the ring's (or the C tile's)");
  extern __shared__ __align__(128) unsigned char smem[];

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm0 = warp / WARPS_N * Ops::WM, wn0 = warp % WARPS_N * Ops::WN;
  const TileCoord tile = block_tile_grouped<GROUP>();  // rung 6: GROUP > 1 walks bands of tile rows
  const int m0 = tile.row * BM, n0 = tile.col * BN;

  Ops ops(a, b, M, N, K, smem_addr(smem), tid, lane, wm0, wn0);
  ops.begin_tile(m0, n0);
  unsigned fa[RBUF ? 2 : 1][FRAGS_M][4];
  unsigned fb[RBUF ? 2 : 1][FRAGS_N][2];
  MmaTile<F16ACC> acc[FRAGS_M][FRAGS_N];
  auto issue = [&](int s) __attribute__((always_inline)) { ops.issue(s); };
  auto load_frags = [&](int s, int kk, int p) __attribute__((always_inline)) {
    ops.load_frags(s, kk, fa[p], fb[p]);
  };
  auto mma = [&](int p) __attribute__((always_inline)) {
#pragma unroll
    for (int i = 0; i < FRAGS_M; ++i)
#pragma unroll
      for (int j = 0; j < FRAGS_N; ++j) acc[i][j].template mma<T>(fa[p][i], fb[p][j]);
  };

  const int num_kt = (K + BK - 1) / BK;
  if constexpr (RBUF) {  // rung 7: the ring pipeline with register double buffering
    static_assert(KSTEPS % 2 == 0, "BK = 32 or 64: an even number of k steps");
    ring_pipeline<STAGES, KSTEPS>(num_kt, issue, load_frags, mma, [] {});
  } else {  // rung 4's loop: fragments of k step kk loaded right before its MMAs
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < num_kt) issue(s);
      cp_async_commit();
    }
    int rd = 0, wr = STAGES - 1;
    for (int kt = 0; kt < num_kt; ++kt) {
      cp_async_wait<STAGES - 2>();
      __syncthreads();
      if (kt + STAGES - 1 < num_kt) issue(wr);
      cp_async_commit();
      wr = wr + 1 == STAGES ? 0 : wr + 1;
#pragma unroll
      for (int kk = 0; kk < KSTEPS; ++kk) {
        load_frags(rd, kk, 0);
        mma(0);
      }
      rd = rd + 1 == STAGES ? 0 : rd + 1;
    }
  }

  if constexpr (EPI) {  // rung 8: through a swizzled C tile over the ring, 16-byte stores
    cp_async_wait<0>();  // only empty groups can remain; drained before the ring is overwritten
    __syncthreads();     // every warp is done reading fragments
    const unsigned sC = smem_addr(smem);
    stage_c<BN, FRAGS_M, FRAGS_N, F16ACC, T>(acc, sC, lane, wm0, wn0);
    __syncthreads();
    store_c<BM, BN, NT, EDGE, T>(sC, c, m0, n0, M, N, tid);
  } else {  // rung 4's epilogue: one 32-bit store per lane and row pair
    const int g = lane >> 2, t = lane & 3;
    T* c_lane = c + (m0 + wm0 + g) * N + n0 + wn0 + 2 * t;
#pragma unroll
    for (int i = 0; i < FRAGS_M; ++i)
#pragma unroll
      for (int j = 0; j < FRAGS_N; ++j) {
        T* p = c_lane + i * 16 * N + j * 8;
        *reinterpret_cast<unsigned*>(p) = acc[i][j].template lo<T>();
        *reinterpret_cast<unsigned*>(p + 8 * N) = acc[i][j].template hi<T>();
      }
  }
}
