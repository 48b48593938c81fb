// cugemm/kernels/hgemm_wgmma/08_small_m.cu: Hopper HGEMM rung 10: 64-row tiles, narrow and deep,
// for products with few rows (M = 1..256 tokens against a large weight, small squares) (sm_90a).
//
// C = A * B, T = half or __nv_bfloat16 in and out (row-major, dense), fp32 accumulation, any M;
// N, K multiples of 8 (16-byte rows): the copy engine zero-fills past M, N and K, the stores are
// bounded.
//
// What this rung adds over rungs 5-7 (04_persistent.cu) and split-K (07_splitk.cu): the tile is
// 64 x BN with BN as narrow as 32, and the ring 6 to 16 stages deep. With M = 64 tokens against a
// 4096 x 4096 weight, 128 x 256 tiles make 16 tiles for 132 SMs; split-K cuts them into K-slices
// and pays for fp32 partials and a serial reduction (5-10 us, 07_splitk.cu's header). Here the
// tiles themselves are small enough to fill the GPU, each streaming its whole K range: 64 x 32
// tiles make 128 at N = 4096, 64 x 96 make 115 at N = 11008, with no partials at all. What keeps a
// narrow tile fed is the depth of the ring: a product this size is bound by reading B once from
// HBM, and 16 stages of 12 KB keep 192 KB of copies in flight per SM. (Nsight Compute on an H100,
// 2026-11-23: cuBLAS runs these shapes with the same tiles, nvjet 64x32 16 stages at 64x4096x4096,
// 64x64 13 stages with clusters of 2 along M at 128x4096x4096, no split-K.)
// The block is small: one consumer warpgroup (warps 0-3: one m64nBNk16 slab, BN / 2 fp32
// accumulators a thread) and one producer warp (warp 4, one thread issues the TMA copies): 160
// threads, no setmaxnreg. Tiles are walked persistently as in rung 5 (lib/raster.cuh), the ring
// running on across tiles; the epilogue stores from registers (store_slab: C is small here).
// Clusters of CLUSTER = 2 blocks share one operand, copied once from L2 with multicast: stacked
// along M (ALONG_M, rung 6's clusters) they share the B tile and each copies half of every panel's
// 64 k rows; side by side along N they share the 64 x 64 A tile and each copies 32 of its rows. A
// product this narrow reads its small A once per tile column: at 64 x 4096 x 4096 in 64 x 32 tiles,
// 64 MB of A against 32 MB of B come out of L2 without sharing. Either way a stage is free only when
// the consumers of both blocks have released it (EMPTY counts CLUSTER arrivals).
//
// B layout: where BN is a multiple of 64, rung 5's 64-column panels (128-byte swizzle, one TMA box
// {64, 64} each); otherwise (BN = 32, 96) 32-column panels, 64-byte swizzled (B_P32 in
// hgemm_wgmma.cuh, one box {32, 64} each). The wider panels copy 128-byte rows, the narrow ones
// 64-byte rows: twice the L2 requests for the same bytes. A: rung 5's K-major 128-byte-swizzled
// 64 x 64 box.
//
// Measured on an H100 SXM (2026-11-23). Nsight Compute, kernel alone: 64x4096x4096 in 64 x 32 tiles
// 17.1 us (cuBLAS's nvjet 64x32 17.0), 64 x 64 tiles with clusters along M 18.9; 128x4096x4096 in
// 64 x 64 tiles with clusters along M 18.8 (cuBLAS 16.7, our split-K 23.3); 16x4096x4096 in 64 x 32
// tiles 16.5 (cuBLAS: split-K 15.3 + its reduction 4.4). cugemm.matmul with the shipped table
// (bench, same-run % of cupy.matmul, fp16 / bf16): 128x4096x4096 94.1 / 94.1 (split-K 79.6 / 78.9),
// 64x11008x4096 92.4 / 104.2 (80.0 / 67.0), 64x14336x4096 94.9 / 93.9 (92.6 / 88.5). Those were
// before B's copies carried the L2 hint evict_first (lib/core.cuh, l2_policy_stream); with it
// (scripts/define_probe.py, fp16, hint on / off in one process): 64x4096x4096 101.4 / 90.5,
// 128x4096x4096 109.7 / 91.0, 64x11008x4096 106.1 / 93.8, 64x14336x4096 104.4 / 97.0.
// Tried, each against the shipped choice in the run after it: clusters along N sharing A with 64 x 32
// tiles, 84% of cupy.matmul at 64x4096x4096 against 92% without clusters (not profiled; a pair's
// stage is free only when both consumers release it); 32-column panels for a 64-wide tile (64-byte
// rows), 84% against 95% for 64-column ones at 128x4096x4096.
//
// B_COL: B read column-major without a copy, the x @ W.T of a linear layer (B the transposed view
// of a dense row-major N x K weight W: memory N rows of K). The B tile is then K-major, as in rung
// 7's B_COL (hgemm_wgmma.cuh: BN n-rows of 128 bytes, 64 k each, 128-byte swizzled; wgmma
// descriptor as A's, B not transposed), and needs no 64-byte swizzle for any width: a panel of P
// n-rows (P = 64, or 32 where BN is not a multiple of 64, the same P and the same bytes as the
// row-major panels) is P whole 128-byte rows, one TMA box {64 k, P n} of W's memory, P * 128 bytes
// at p * P * 128, every box on a 1024-byte swizzle atom. Clusters along M (sharing B) split each
// panel along n instead of k (a k split would cut the 128-byte rows): block r multicasts pieces
// r, r + CLUSTER, ... of Q = P / CLUSTER n-rows (boxes {64, Q}; Q * 128 bytes, whole swizzle
// atoms), and the pieces wholly past N are not copied (the expected bytes count the pieces
// inside N, the same in both blocks: they share n0). Clusters along N share A as before.
//
// Template parameters: BN (32, 64, 96, 128, 192; a wgmma N), STAGES, GROUP (tile rows per raster
// band, in cluster tiles), CLUSTER (1 or 2; __cluster_dims__), ALONG_M (the cluster's blocks
// stacked along M sharing B, or along N sharing A), B_COL (B column-major: K-major B tiles), T.
// Fixed: BM = 64, BK = 64.
// Launch: block = (160, 1, 1), grid = (min(cluster tiles, SMs / CLUSTER) * CLUSTER, 1, 1);
//   dynamic shared memory hgemm_wgmma_small_m_smem_bytes<...> = STAGES * (64 + BN) * 128 + 1024;
//   extra kernel arguments: tensor maps of A (box {64, min(64, M rounded up to 8)}, or {64, 32} for
//   clusters along N; 128-byte swizzle) and B (box {P, 64}, or {P, 32} for clusters along M; P = 64 columns with the
//   128-byte swizzle, or 32 with the 64-byte one; B_COL: a map of W's N x K memory, box {64, P}, or
//   {64, P / 2} for clusters along M, 128-byte swizzle).
// Preconditions: N % 8 == 0, K % 8 == 0, C dense (row stride N); B dense (row stride N; B_COL:
//   column stride K, W's rows); a, b, c 16-byte aligned; M * N, M * K, K * N < 2^31; sm_90a.
#include "../lib/barrier.cuh"
#include "../lib/raster.cuh"
#include "../lib/swizzle.cuh"
#include "../lib/tma.cuh"
#include "hgemm_wgmma.cuh"

template <int BN, int STAGES, int GROUP, int CLUSTER, bool ALONG_M, bool B_COL, class T>
__device__ constexpr int hgemm_wgmma_small_m_smem_bytes = STAGES * (64 + BN) * 128 + 1024;

template <int BN, int STAGES, int GROUP, int CLUSTER, bool ALONG_M, bool B_COL, class T>
__global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(160, 1)
    hgemm_wgmma_small_m(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N, int K,
                        const __grid_constant__ TensorMap tmap_a, const __grid_constant__ TensorMap tmap_b) {
  using namespace hgemm_wgmma;
  constexpr int BM = 64;
  constexpr int A_STAGE = BM * A_ROW_BYTES;                        // 8 KB
  constexpr bool P32 = BN % 64 != 0;                               // 32-column B panels (B_P32)
  constexpr int P = P32 ? 32 : 64;                                 // B columns per panel
  constexpr int PANEL_BYTES = P32 ? B_P32_PANEL_BYTES : B_PANEL_BYTES;
  constexpr int PANELS = BN / P;
  constexpr int B_STAGE = PANELS * PANEL_BYTES;
  constexpr int PART = BK / CLUSTER;  // rows of the shared box each block copies: k rows of every B
                                      // panel (ALONG_M) or m rows of the A tile (along N)
  // B_COL: n rows per B box (a panel, or a block's piece of one for clusters along M), 128 bytes each
  constexpr int Q = (CLUSTER > 1 && ALONG_M) ? P / CLUSTER : P;
  static_assert(BN % 32 == 0 && BN <= 192, "BN: whole 32-column panels, a wgmma N of at most 96 accumulators");
  static_assert(CLUSTER == 1 || CLUSTER == 2, "clusters of 1 or 2 blocks");
  static_assert(!B_COL || (PANEL_BYTES == P * 128 && Q % 8 == 0),
                "B_COL: a panel is P K-major rows of 128 bytes, a box whole 1024-byte swizzle atoms");
  static_assert(hgemm_wgmma_small_m_smem_bytes<BN, STAGES, GROUP, CLUSTER, ALONG_M, B_COL, T> ==
                    STAGES * (A_STAGE + B_STAGE) + 1024,
                "the declared dynamic shared memory is the ring and the alignment slack");

  extern __shared__ char smem_raw[];
  char* const sA = align_1024(smem_raw);
  char* const sB = sA + STAGES * A_STAGE;
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
        // B_COL: the same in pieces of Q n rows (= live with whole panels)
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
          if constexpr (B_COL) {  // K-major pieces: n rows Q q .. Q q + Q - 1, boxes {64 k, Q n} of W
            constexpr int SPLIT = P / Q;  // CLUSTER for clusters along M (sharing B), else 1
#pragma unroll
            for (int i = 0; i < PANELS; ++i) {
              const int q = SPLIT * i + (SPLIT > 1 ? rank : 0);  // block r: pieces r, r + CLUSTER, ...
              if (q >= live_q) break;
              char* const dst = sB + s * B_STAGE + q * Q * 128;
              if constexpr (SPLIT > 1) {
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
    }
  } else {
    // ---- consumer: warps 0-3, one 64 x BN slab ---------------------------------------------------
    const int tid = threadIdx.x;
    const int w = tid >> 5, g = (tid & 31) >> 2, t4 = tid & 3;
    auto release = [&](int s) { release_stage<CLUSTER>(&empty[s], tid); };
    float acc[BN / 2];
    Ring<STAGES> ring;
    for (int t = walk.first(); t < walk.count; t += walk.stride) {
      const TileCoord tile = walk.tile(walk.cluster_tile(t, GROUP), rank);
      consume_ktiles<T, BN, STAGES, A_STAGE, B_STAGE, false, B_COL, P32 && !B_COL>(acc, ring, full, smem_addr(sA),
                                                                                  smem_addr(sB), num_kt, release);
      store_slab<T>(c, acc, tile.row * BM + 16 * w + g, tile.col * BN + 2 * t4, M, N);
    }
  }
  __syncwarp();
  if constexpr (CLUSTER > 1) {
    cluster_sync();  // no block leaves while another may still multicast into it or arrive on it
  }
}
