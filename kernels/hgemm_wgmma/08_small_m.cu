// cugemm/kernels/hgemm_wgmma/08_small_m.cu: Hopper HGEMM rung 10 (sm_90a): 64-row tiles, narrow and
// deep, for products with few rows (M = 1..256 tokens against a large weight, small squares). Story,
// measurements and what was tried: docs/hgemm_wgmma.md.
//
// C = A * B, T = half or __nv_bfloat16 in and out (row-major, dense; B column-major with B_COL), fp32
// accumulation, any M; N, K multiples of 8 (16-byte rows): the copy engine zero-fills past M, N and
// K, the stores are bounded.
//
// What this rung adds over rungs 5-7 (04_persistent.cu) and split-K (07_splitk.cu): tiles of 64 x BN
// with BN as narrow as 32, and a ring 6 to 16 stages deep, so that few-row products fill the GPU with
// whole-K tiles and no partials (64 x 32 tiles: 128 at N = 4096); the ring's depth keeps a narrow
// tile fed (16 stages of 12 KB: 192 KB of copies in flight per SM).
// The block: one consumer warpgroup (warps 0-3, one m64nBNk16 slab) and one producer warp (warp 4,
// one thread issues the TMA copies): 160 threads, no setmaxnreg. Tiles are walked persistently as in
// rung 5, the ring running on across tiles; the epilogue stores from registers (store_slab).
// Clusters of CLUSTER = 2 blocks share one operand, copied once from L2 with multicast: stacked
// along M (ALONG_M) they share the B tile and each copies half of every panel's 64 k rows; side by
// side along N they share the 64 x 64 A tile and each copies 32 of its rows. A stage is free only
// when the consumers of both blocks have released it (EMPTY counts CLUSTER arrivals).
// B layout: where BN is a multiple of 64, 64-column panels (128-byte swizzle, one TMA box {64, 64}
// each); otherwise (BN = 32, 96) 32-column panels, 64-byte swizzled (B_P32 in hgemm_wgmma.cuh, one
// box {32, 64} each). A: the K-major 128-byte-swizzled 64 x 64 box, its rows past M not copied.
// B_COL (x @ W.T, W a dense row-major N x K weight): the B tile is K-major (hgemm_wgmma.cuh), one
// panel of BN n rows (128-byte rows, 128-byte swizzle) whatever BN, copied as one TMA box {64 k, BN n}
// of W's memory; clusters along M split it along n, block r multicasting n rows r * BN / CLUSTER ..
// (a piece wholly past N is not copied). One box per tile, not one per 32- or 64-row panel: with
// a box per panel the forms with clusters along M (a piece of every panel each) ran 3-13% slower,
// the 64 x 96 and 64 x 128 forms up to 10% (docs/hgemm_wgmma.md). Any width that is whole 8-row swizzle atoms
// fits: the fitted widths (B_COL only, BN = 40, 48, 80: a multiple of 8 but not of 32) fit the tile
// count to the SMs (N = 2560 in 64 x 48 tiles: 54 per tile row, 108 at M <= 128, where 64 x 32 tiles
// make 160 and 64 x 64 make 80). A row-major B's 64-byte-swizzled panels need 32 columns, so the
// row-major form keeps BN % 32 == 0.
//
// Template parameters: BN (32, 64, 96, 128, 192; B_COL also 40, 48, 80; a wgmma N), STAGES, GROUP (tile rows per raster
// band, in cluster tiles), CLUSTER (1 or 2; __cluster_dims__), ALONG_M, B_COL, T, EPI (lib/epilogue.cuh:
// None, or a fused epilogue applied to the accumulators before the register store). Fixed: BM = 64,
// BK = 64.
// Launch: block = (160, 1, 1), grid = (min(cluster tiles, SMs / CLUSTER) * CLUSTER, 1, 1); dynamic
//   shared memory hgemm_wgmma_small_m_smem_bytes<...> (SmallMSmem: STAGES * (64 + BN) * 128 + 1024);
//   extra kernel arguments: tensor maps of A (box {64, min(64, M rounded up to 8)}, or {64, 32} for
//   clusters along N; 128-byte swizzle) and B (box {P, 64}, or {P, 32} for clusters along M; P = 64
//   with the 128-byte swizzle, or 32 with the 64-byte one; B_COL: a map of W's N x K memory, box
//   {64, BN}, or {64, BN / 2} for clusters along M, 128-byte swizzle); then
//   the epilogue's bias, src, aux, alpha, beta, ld_src, ld_aux (epilogue::Args; 0s, 1, 0 without one).
// Preconditions: N % 8 == 0, K % 8 == 0, C dense (row stride N); B dense (row stride N; B_COL:
//   column stride K, W's rows); a, b, c 16-byte aligned; M * N, M * K, K * N < 2^31; sm_90a.
#include "../lib/barrier.cuh"
#include "../lib/epilogue.cuh"
#include "../lib/raster.cuh"
#include "../lib/swizzle.cuh"
#include "../lib/tma.cuh"
#include "hgemm_wgmma.cuh"

// Shared memory: the ring of 64 x 64 A tiles and 64 x BN B tiles, BN x 128 bytes in every layout
// (BN / 64 panels of 64 columns, BN / 32 panels of 32, or one K-major panel of BN n rows).
template <int BN, int STAGES>
using SmallMSmem = hgemm_wgmma::RingSmem<64 * hgemm_wgmma::A_ROW_BYTES, BN * hgemm_wgmma::BK * 2, STAGES>;
template <int BN, int STAGES, int GROUP, int CLUSTER, bool ALONG_M, bool B_COL, class T,
          class EPI = epilogue::None>
__device__ constexpr int hgemm_wgmma_small_m_smem_bytes = SmallMSmem<BN, STAGES>::BYTES;

template <int BN, int STAGES, int GROUP, int CLUSTER, bool ALONG_M, bool B_COL, class T,
          class EPI = epilogue::None>
__global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(160, 1)
    hgemm_wgmma_small_m(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N, int K,
                        const __grid_constant__ TensorMap tmap_a, const __grid_constant__ TensorMap tmap_b,
                        const void* ep_bias, const void* ep_src, void* ep_aux, float ep_alpha, float ep_beta,
                        int ep_ld_src, int ep_ld_aux) {
  using namespace hgemm_wgmma;
  using Smem = SmallMSmem<BN, STAGES>;
  constexpr int BM = 64;
  constexpr int A_STAGE = Smem::A_STAGE;                           // 8 KB
  constexpr bool P32 = !B_COL && BN % 64 != 0;                     // 32-column B panels (B_P32)
  constexpr int P = B_COL ? BN : P32 ? 32 : 64;                    // B columns (B_COL: n rows) per panel
  constexpr int PANEL_BYTES = B_COL ? BN * 128 : P32 ? B_P32_PANEL_BYTES : B_PANEL_BYTES;
  constexpr int PANELS = BN / P;
  constexpr int B_STAGE = Smem::B_STAGE;                           // PANELS * PANEL_BYTES
  constexpr int PART = BK / CLUSTER;  // rows of the shared box each block copies: k rows of every B
                                      // panel (ALONG_M) or m rows of the A tile (along N)
  // B_COL: n rows per B box (the tile, or a block's piece of it for clusters along M), 128 bytes each
  constexpr int Q = (CLUSTER > 1 && ALONG_M) ? BN / CLUSTER : BN;
  static_assert((BN % 32 == 0 || (B_COL && BN % 8 == 0)) && BN <= 192,
                "BN: whole 32-column panels (B_COL: whole 8-row swizzle atoms), a wgmma N of at most 96 accumulators");
  static_assert(B_STAGE == PANELS * PANEL_BYTES, "the B tile is its panels");
  static_assert(CLUSTER == 1 || CLUSTER == 2, "clusters of 1 or 2 blocks");
  static_assert(!B_COL || (PANELS == 1 && Q % 8 == 0),
                "B_COL: one panel of BN K-major rows of 128 bytes, a box whole 1024-byte swizzle atoms");

  extern __shared__ char smem_raw[];
  char* const smem = align_1024(smem_raw);
  char* const sA = smem + Smem::A;
  char* const sB = smem + Smem::B;
  __shared__ alignas(8) unsigned long long full[STAGES], empty[STAGES];

  if (threadIdx.x == 0) {
    tma_prefetch_map(&tmap_a);
    tma_prefetch_map(&tmap_b);
    init_ring_barriers<STAGES>(full, empty, CLUSTER);  // the consumer warpgroup of every block of the cluster
  }
  sync_cta_or_cluster<CLUSTER>();  // every block's barriers exist before any multicast or remote arrival

  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const ClusterTileWalk<CLUSTER, ALONG_M> walk(tiles_m, tiles_n);
  const int rank = CLUSTER > 1 ? static_cast<int>(cluster_ctarank()) : 0;
  const int num_kt = (K + BK - 1) / BK;
  constexpr unsigned short ALL = (1u << CLUSTER) - 1;
  // The rows of A a box copies: M rounded up to 8 when M < 64 (the tensor map's box says the same),
  // so a product of 1 or 16 rows does not fetch 64 rows of zeros per K-tile. The slab's rows past
  // them keep stale values; they only reach rows of C >= M, which are never stored. A shared A
  // tile (clusters along N) is copied whole, in halves.
  const int a_rows = (CLUSTER > 1 && !ALONG_M) ? BM : min(BM, (M + 7) / 8 * 8);

  if (threadIdx.x >= 128) {
    // ---- producer: warp 4, one thread -------------------------------------------------------------
    if (threadIdx.x == 128) {
      const unsigned long long b_policy = l2_policy_stream();  // B's L2 lines: evict_first
      Ring<STAGES> ring;
      for (int t = walk.first(); t < walk.count; t += walk.stride) {
        const TileCoord tile = walk.tile(walk.cluster_tile(t, GROUP), rank);
        const int m0 = tile.row * BM, n0 = tile.col * BN;
        // a block past M (ALONG_M) computes a copy of its pair's rows; one past N copies no B
        const int m_load = m0 < M ? m0 : m0 - BM;
        // panels wholly past N are not copied (their stale columns reach no stored column of C);
        // along M every block of the cluster skips the same ones
        const int live = max(0, min(PANELS, (N - n0 + P - 1) / P));
        // B_COL: the cluster's pieces of Q n rows that start inside N (rows past N in a live piece
        // are the copy engine's zeros, counted in the bytes)
        const int live_q = B_COL ? max(0, min(BN / Q, (N - n0 + Q - 1) / Q)) : 0;
        const unsigned tx = a_rows * A_ROW_BYTES + (B_COL ? live_q * Q * 128 : live * PANEL_BYTES);
        for (int kt = 0; kt < num_kt; ++kt) {
          const int s = ring.stage;
          mbarrier_wait(&empty[s], ring.phase ^ 1);  // every consumer of the cluster released it
          mbarrier_arrive_expect_tx(&full[s], tx);
          if (CLUSTER > 1 && !ALONG_M) {  // rows rank * PART .. of the shared A tile, to every block
            tma_load_2d_multicast(sA + s * A_STAGE + rank * PART * A_ROW_BYTES, &tmap_a, &full[s], kt * BK,
                                  m0 + rank * PART, ALL);
          } else {
            tma_load_2d(sA + s * A_STAGE, &tmap_a, &full[s], kt * BK, m_load);
          }
          if constexpr (B_COL) {  // one box {64 k, Q n} of W: the whole tile, or piece `rank` of it
            const int q = Q < BN ? rank : 0;
            if (q < live_q) {
              char* const dst = sB + s * B_STAGE + q * Q * 128;
              if constexpr (Q < BN) {
                tma_load_2d_multicast(dst, &tmap_b, &full[s], kt * BK, n0 + Q * q, ALL, b_policy);
              } else {
                tma_load_2d(dst, &tmap_b, &full[s], kt * BK, n0 + Q * q, b_policy);
              }
            }
          } else {
#pragma unroll
            for (int p = 0; p < PANELS; ++p) {
              if (p >= live) break;
              char* const dst = sB + s * B_STAGE + p * PANEL_BYTES;
              if (CLUSTER > 1 && ALONG_M) {  // k rows rank * PART .. of the shared panel, to every block
                tma_load_2d_multicast(dst + rank * PART * P * 2, &tmap_b, &full[s], n0 + P * p,
                                      kt * BK + rank * PART, ALL, b_policy);
              } else {
                tma_load_2d(dst, &tmap_b, &full[s], n0 + P * p, kt * BK, b_policy);
              }
            }
          }
          ring.advance();
        }
      }
      // the cluster's arrivals on this block's ring are all in before it may leave (no end barrier)
      if constexpr (CLUSTER > 1) drain_ring(ring, empty);
    }
  } else {
    // ---- consumer: warps 0-3, one 64 x BN slab ---------------------------------------------------
    const int tid = threadIdx.x;
    const int w = tid >> 5, g = (tid & 31) >> 2, t4 = tid & 3;
    auto release = [&](int s) { release_stage<CLUSTER>(&empty[s], tid); };
    const epilogue::Args ep{ep_bias, ep_src, ep_aux, ep_alpha, ep_beta, ep_ld_src, ep_ld_aux};
    float acc[BN / 2];
    Ring<STAGES> ring;
    for (int t = walk.first(); t < walk.count; t += walk.stride) {
      const TileCoord tile = walk.tile(walk.cluster_tile(t, GROUP), rank);
      epilogue::prefetch<EPI, T, BN>(tile.row * BM, tile.col * BN, M, N, tid, ep);  // EPI: its reads, ahead
      epilogue::TileBias<EPI, T, BN / 8> tile_bias;  // EPI with a column bias: in registers by the K loop's end
      tile_bias.load(tile.col * BN + 2 * t4, N, ep);
      consume_ktiles<T, BN, STAGES, A_STAGE, B_STAGE, false, B_COL, P32>(acc, ring, full, smem_addr(sA),
                                                                                  smem_addr(sB), num_kt, release);
      // EPI (lib/epilogue.cuh): the fused epilogue on the final accumulators, before the store
      epilogue::apply_groups<EPI, T, BN / 8>(acc, tile.row * BM + 16 * w + g, tile.col * BN + 2 * t4, M, N, ep,
                                             tile_bias.held());
      store_slab<T>(c, acc, tile.row * BM + 16 * w + g, tile.col * BN + 2 * t4, M, N);
    }
  }
  __syncwarp();
}
