// cugemm/kernels/hgemm_wgmma/04_persistent.cu: Hopper HGEMM rungs 5, 6 and 7: a persistent
// warp-specialized kernel with a grouped tile scheduler, thread-block clusters with TMA multicast,
// and an epilogue through shared memory and TMA stores that overlaps the next tile (sm_90a); and
// rung 7's forms for transposed operands, narrow edge tiles and a C of any alignment (issue 13).
//
// C = A * B, T = half or __nv_bfloat16 in and out (row-major), fp32 accumulation, any M and any N,
// K that are multiples of 8 (16-byte rows): the copy engine zero-fills what lies past M, N or K,
// and the stores are bounded. The block is rung 4's (03_ws.cu): a producer warpgroup (one thread
// issues TMA copies), two consumer warpgroups of 64 x BN slabs (wgmma m64nBNk16), FULL / EMPTY
// mbarriers around a STAGES-deep ring, setmaxnreg 40 / 232.
//
// What rung 5 (CLUSTER_M = 1, TMA_STORE = false) adds over rung 4: persistence. The grid is one
// block per SM (cugemm/families/hgemm_wgmma.py sizes it from the SM count) and each block walks
// tiles id = blockIdx.x, + gridDim.x, ... of the tile grid, in the grouped order of
// lib/raster.cuh (bands of GROUP tile rows, column by column): the tiles resident at one time
// share A row panels and B column panels in L2. The ring's stage and phase run on across tiles,
// so the producer starts loading tile i + 1 while the consumers finish tile i and store it: no
// launch, prologue or pipeline drain per tile, and no tail of idle SMs waiting for a new block.
// What rung 6 (CLUSTER_M = 2) adds: clusters of CLUSTER_M blocks on tiles stacked along M (same
// columns of B). Each block copies 1 / CLUSTER_M of the B tile (whole 64-column panels) with
// multicast (.multicast::cluster): one L2 read lands in every block of the cluster, at the same
// shared-memory offset, completing bytes on the FULL barrier at the same offset in each. A stage
// is then only free when every consumer of the cluster has released it: EMPTY counts 2 x
// CLUSTER_M arrivals, and consumer thread r (r < CLUSTER_M) of each warpgroup arrives on block
// r's barrier (mapa + mbarrier.arrive.shared::cluster). Per K-tile a block now reads 16 KB of A and
// 32 / CLUSTER_M KB of B from L2 instead of 48 KB.
// What rung 7 (TMA_STORE = true) adds: the epilogue. Instead of 4-byte stores from registers
// (half-sector writes, in the shadow of nothing), each consumer converts its slab to T one 64 x 64
// panel at a time into one of two 8 KB 128-byte-swizzled staging boxes (conflict-free 4-byte
// shared stores), fences them for the async proxy, and one thread issues a TMA store (bounded by
// the tensor map: rows past M and columns past N are not written). The consumer goes straight on
// to the next tile's wgmmas while the copy engine writes C; a box is only rewritten after its
// previous store has read it (cp.async.bulk.wait_group.read 1, then a named barrier).
// (Writing the boxes with stmatrix.x4, 4 instructions per box instead of 16 4-byte stores,
// measured the same: 683-701 TFLOP/s at 4096^3 on an H100, within the run-to-run spread.)
//
// Measured on an H100 SXM (2026-11-23, same-run % of cupy.matmul), 4096x4096x1024 / 4096^3 / 8192^3:
//   rung 5: 424 (66%) / 623 (84%) / 521 (77%) TFLOP/s: +35% over rung 4 at 8192^3;
//   rung 6: 454 (71%) / 667 (89%) / 631 (94%): +7%, +7%, +21% over rung 5;
//   rung 7: 642 (100.4%) / 684 (92%) / 651 (97%): +42%, +2%, +3% over rung 6 (the stores from
//           registers took ~7 us per tile); without clusters 612 (96%) / 680 (91%) / 643 (96%).
//   Earlier runs of rung 7, same machine type: 643 (100.0%) / 693 (90%) / 666 (98%) and
//   642 (99.9%) / 701 (91%) / 674 (96%). bf16 (_bf16, against cupy.matmul on bfloat16):
//   655 (100.0%) / 765 (98.4%) / 695 (100.3%).
//   Later runs (same day, same machine type): rung 7 fp16 640 (99.6%) / 732-767 (98.8-99.1%) /
//   674-780 (97.1-100.7%) measured second in a short list, 646 (100.0%) / 677 (90.3%) / 637 (84.4%)
//   measured after rungs 1-6; bf16 651-657 (99.6-100.3%) / 766-793 (98.8-99.0%) / 690-701 (87.8-95.2%).
//   The spread is the GPU's clock, not the kernel: launched back to back every kernel of this shape,
//   cuBLAS's included, runs at the 700 W power cap at 1.3-1.45 GHz; sustained, rung 7 makes 642-646
//   TFLOP/s at 4096^3 against cuBLAS's 647-651 and 658-662 at 8192^3 against 649-650. Its structure
//   is cuBLAS's for these shapes (nvjet 256x128 coopA, clusters of 2, 4 stages); Nsight Compute puts
//   it 1.6% more cycles than cuBLAS's kernel per launch, the tensor pipe busy 94.0% of active cycles
//   against 94.6% (cugemm/families/hgemm_wgmma.py: the profile, and the schedules that measured no
//   better: ping-pong consumers, staggered consumers, batched epilogue staging).
//
// The forms of rung 7 for every layout and shape cugemm.matmul hands it (issue 13; measured figures
// in cugemm/families/hgemm_wgmma.py: the transposed forms at 99-100.5% of cupy.matmul, ANY_C at
// 88-96%, and 480-499 TFLOP/s, 3.4-3.5x cupy.matmul, at 4095x4097x1023 on an H100):
//   A_COL / B_COL: the operands read column-major without a copy. A_COL (A is a.T of a row-major
//     K x M array): each stage holds two M-major A panels, TMA boxes {64 m, 64 k}, a warpgroup's
//     slab is one panel and its wgmma descriptor is B's (transposed A). B_COL (B is W.T of a
//     row-major N x K array, x @ W.T): the B tile is K-major, TMA boxes {64 k, 64 n}, descriptor
//     as A's (B not transposed). hgemm_wgmma.cuh draws the layouts.
//   strided (a registry field, no template parameter): the tensor maps carry the true M, N, K and
//     the leading dimensions, so any M, K (and N with ANY_C) whose leading dimensions are multiples
//     of 16 bytes: TMA zero-fills past K (and M, N), the stores are bounded. The TMA-store forms
//     keep N % 8 == 0: a TMA store writes the 16-byte piece holding a row's last column whole
//     (measured: a 1 x 1 C got 7 more elements written past it).
//   NARROW_EDGE: a tile with only 1-3 of its 4 B panels inside N (the last tile column when N % 256
//     is 1..192) runs its K loop with m64n64 / n128 / n192 wgmmas on the first accumulators. At
//     N = 4097 the 17th tile column is one element wide: with full-width wgmmas it costs a whole
//     extra round of tiles on the clusters that get one last.
//   ANY_C: the epilogue for a C that TMA cannot store (pointer or row stride not a multiple of 16
//     bytes, e.g. a dense 4095 x 4097 fp16 C): each consumer stages its whole 64 x BN slab (BN / 64
//     boxes in stage_panel's layout, 64 KB for both consumers, hence STAGES = 3) and goes straight
//     on to the next tile; warps 1-3 of the producer warpgroup, idle until now, write the slab to C
//     with bounded stores (store_staged_slab: a warp per slab row, 4-byte stores where the pair is
//     4-byte aligned, 2-byte ones where not, streaming .cs), overlapping the next mainloop as TMA
//     stores do. Two named barriers per consumer (slab staged / slab read) with 128 + 96 threads.
//     The last kernel argument is then C's row stride in elements instead of C's tensor map.
//   Programmatic dependent launch (every form): the producer thread waits in griddepcontrol.wait
//     (grid_dependency_wait) before its first load, and no other role touches global memory before
//     data it loaded, so cugemm.matmul launches this kernel with PDL right after the relayout of
//     its operands (cugemm/pdl.py): its blocks start and set up beside the relayout's tail. H100,
//     2026-11-23, cugemm.matmul fp16 with PDL / without (CUGEMM_PDL=0), % of cupy.matmul:
//     4095x4097x1023 304.5-307.4 / 295.3 (79.1-79.2 / 81.7 us), 4095x4096x1023 376.6-379.4 / 364.0,
//     1023x1025x4095 204.6-205.7 / 188.6, 4097x4095x1025 250.0-251.2 / 243.1.
//
//   BN = 192 (the _m64n192k16_ forms): 128 x 192 tiles, two m64n192k16 slabs (96 accumulators),
//     4 stages beside the staging boxes. For shapes that both other widths quantise badly: 3072^3 is
//     2.2 rounds of 132 SMs in 128 x 256 tiles, 4.4 in 128 x 128, 2.9 in 128 x 192. Three B panels:
//     block r of a cluster multicasts panels r, r + CLUSTER_M, ... (every width alike), and with an
//     odd panel count the TMA-store epilogue's two boxes keep alternating across tiles (box_flip).
//     H100, 2026-11-23, same-run % of cupy.matmul (bench.py): 3072^3 705.6 TFLOP/s (99.4%) against
//     603.5 (82.2%) for 128 x 128 and 555.3 (75.6%) for 128 x 256; where 128 x 256 tiles fill their
//     rounds they stay ahead (4096x4096x1024: 90.7% against 98.0%; 2048x4096x4096: 86.2% / 97.8%).
//   Edge-last serpentine walk (NARROW_EDGE with N % BN != 0, lib/raster.cuh): the narrow last tile
//     column's cheap tiles come after all the whole ones, and odd rounds of clusters take their
//     tiles in reverse order, so the clusters left without a whole tile in the last partial round get
//     the cheap ones (4095 x 4097: 256 whole cluster tiles and 16 one-column ones on 66 clusters; the
//     plain walk gave 8 clusters a fifth, whole, tile). cugemm.matmul at 4095x4097x1023 (copies
//     included) went from 283.4% to 298.4-299.5% of cupy.matmul fp16 on an H100 (bf16 288.6% to
//     304.9%). (An epilogue writing the dense 4097-wide C with 16-byte stores on C's own boundaries,
//     chunks joined across lanes by shuffles, was correct and slower: 90 against 81 us per product.)
//
//   BN = 64 (the _m64n64k16_ forms): 128 x 64 tiles (cuBLAS's for 1024^3: 128 tiles on 132 SMs where
//     128 x 128 tiles make 64), two m64n64k16 slabs, 8 stages; one B panel, which block 0 of a
//     cluster multicasts (the panel loop above), one staging box a tile (box_flip alternates them).
//
// Template parameters: BN (64, 128, 192 or 256), STAGES, GROUP (tile rows per raster band, in cluster
// tiles), CLUSTER_M (1 or 2; __cluster_dims__), TMA_STORE, ANY_C (not with TMA_STORE), A_COL, B_COL,
// NARROW_EDGE (BN = 256), T. Fixed: BM = 128 (2 x 64), BK = 64.
// (Clusters of 4 measured 387 TFLOP/s at 4096^3 on an H100, against 701 for pairs: fewer
// clusters of four blocks of 225 KB can be resident at once than the grid launches.)
// Launch: block = (384, 1, 1), grid = (min(tiles, SMs) rounded to CLUSTER_M, 1, 1); dynamic shared
//   memory hgemm_wgmma_persistent_smem_bytes<...> = STAGES * (128 + BN) * 128 (+ 32768 for the
//   staging boxes, + 256 BN for ANY_C's slabs) + 1024 bytes; extra kernel arguments: tensor maps of
//   A (box {64, 128}; A_COL: {64, 64} of the K x M memory), B (box {64, 64}, B_COL: of the N x K
//   memory) and C (box {64, 64}), 128-byte swizzled; ANY_C: C's row stride (int, elements) last.
// The copy engine zero-fills the parts of a box past M, N or K, and still completes the whole
// box's bytes; boxes wholly past N are not issued at all (the expected bytes count only the
// issued ones), nor A boxes wholly past M (a block of a cluster past M re-reads rows of its pair).
// Preconditions: the leading dimensions of A, B and C multiples of 16 bytes (dense rows: N % 8 == 0,
//   K % 8 == 0; what TMA can describe), a, b, c 16-byte aligned (ANY_C: c and its row stride 2-byte
//   aligned only); M * N, M * K, K * N < 2^31; sm_90a.
#include "../lib/barrier.cuh"
#include "../lib/raster.cuh"
#include "../lib/swizzle.cuh"
#include "../lib/tma.cuh"
#include "hgemm_wgmma.cuh"

template <int BN, int STAGES, int GROUP, int CLUSTER_M, bool TMA_STORE, bool ANY_C, bool A_COL, bool B_COL,
          bool NARROW_EDGE, class T>
__device__ constexpr int hgemm_wgmma_persistent_smem_bytes =
    STAGES * (128 + BN) * 128 + (TMA_STORE ? 2 * 2 * 64 * 128 : 0) + (ANY_C ? 2 * 64 * BN * 2 : 0) + 1024;

// The last kernel parameter: C's tensor map, or (ANY_C) C's row stride in elements.
template <bool ANY_C>
struct PersistentCParam {
  using type = TensorMap;
};
template <>
struct PersistentCParam<true> {
  using type = int;
};

template <int BN, int STAGES, int GROUP, int CLUSTER_M, bool TMA_STORE, bool ANY_C, bool A_COL, bool B_COL,
          bool NARROW_EDGE, class T>
__global__ void __cluster_dims__(CLUSTER_M, 1, 1) __launch_bounds__(384, 1)
    hgemm_wgmma_persistent(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N,
                           int K, const __grid_constant__ TensorMap tmap_a,
                           const __grid_constant__ TensorMap tmap_b,
                           const __grid_constant__ typename PersistentCParam<ANY_C>::type c_param) {
  using namespace hgemm_wgmma;
  constexpr int BM = 128;
  constexpr int A_STAGE = BM * A_ROW_BYTES;
  constexpr int B_STAGE = (BN / 64) * B_PANEL_BYTES;
  constexpr int PANELS = BN / 64;                       // B panels per tile (and C panels per slab)
  constexpr int MY_PANELS = (PANELS + CLUSTER_M - 1) / CLUSTER_M;  // B panels this block copies at most
  constexpr int BOX = 64 * 128;                         // one 64 x 64 staging box of C
  constexpr int SLAB = PANELS * BOX;                    // ANY_C: a consumer's whole slab, staged
  constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
  // ANY_C's named barriers (ids 1, 2 are the TMA-store epilogue's): slab cw staged, slab cw read;
  // each the 128 threads of consumer cw and the 96 storing threads of the producer warpgroup.
  constexpr int BAR_STAGED = 3, BAR_READ = 5, STAGED_THREADS = 128 + 96;
  static_assert(BN == 64 || BN == 128 || BN == 192 || BN == 256, "BN is a wgmma N with a 128-register accumulator at most");
  static_assert(!NARROW_EDGE || BN == 256, "the narrow widths are those of a 256-wide tile's 1-3 live panels");
  static_assert(CLUSTER_M == 1 || CLUSTER_M == 2, "clusters of 1 or 2 blocks; B is split by whole panels");
  static_assert(!(TMA_STORE && ANY_C), "one epilogue: registers, TMA stores or ANY_C's staged stores");
  static_assert(hgemm_wgmma_persistent_smem_bytes<BN, STAGES, GROUP, CLUSTER_M, TMA_STORE, ANY_C, A_COL, B_COL,
                                                  NARROW_EDGE, T> ==
                    STAGES * (A_STAGE + B_STAGE) + (TMA_STORE ? 4 * BOX : 0) + (ANY_C ? 2 * SLAB : 0) + 1024,
                "the declared dynamic shared memory is the ring, the staging boxes and the alignment slack");

  extern __shared__ char smem_raw[];
  char* const sA = align_1024(smem_raw);
  char* const sB = sA + STAGES * A_STAGE;
  char* const sC = sB + STAGES * B_STAGE;  // TMA_STORE: 2 boxes per consumer warpgroup; ANY_C: a slab
  __shared__ alignas(8) unsigned long long full[STAGES], empty[STAGES];

  if (threadIdx.x == 0) {
    tma_prefetch_map(&tmap_a);
    tma_prefetch_map(&tmap_b);
    if constexpr (TMA_STORE) tma_prefetch_map(&c_param);
    init_ring_barriers<STAGES>(full, empty, 2 * CLUSTER_M);  // both consumers of every block of the cluster
  }
  sync_cta_or_cluster<CLUSTER_M>();  // every block's barriers exist before any multicast or remote arrival

  // ---- the tile walk, identical in every role and in every block of a cluster ----------------------
  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const ClusterTileWalk<CLUSTER_M, true> walk(tiles_m, tiles_n);  // cluster tiles: CLUSTER_M tiles stacked in M
  const int rank = CLUSTER_M > 1 ? static_cast<int>(cluster_ctarank()) : 0;
  const int num_kt = (K + BK - 1) / BK;
  // NARROW_EDGE with a partial last tile column: those cheap tiles go last, in serpentine rounds, to
  // fill the round the whole tiles leave partly empty (lib/raster.cuh: nth, cluster_tile_edge_last).
  const bool edge_last = NARROW_EDGE && N % BN != 0;
  auto cluster_tile = [&](int t) {
    return edge_last ? walk.cluster_tile_edge_last(t, GROUP) : walk.cluster_tile(t, GROUP);
  };

  const int wg = warpgroup_index();
  if (wg == 0) {
    // ---- producer ------------------------------------------------------------------------------
    setmaxnreg_dec<PRODUCER_REGS>();
    if (threadIdx.x == 0) {
      const unsigned long long b_policy = l2_policy_stream();  // B's L2 lines: evict_first
      // Launched with PDL (cugemm.matmul, after the relayout of its operands): everything above ran
      // beside the previous kernel; wait for it before the first read. The other roles touch global
      // memory only through what this thread loads.
      grid_dependency_wait();
      Ring<STAGES> ring;
      for (int k = 0, t; (t = walk.nth(k, edge_last)) < walk.count; ++k) {
        const TileCoord tc = cluster_tile(t);
        const int m0 = (tc.row * CLUSTER_M + rank) * BM;
        const int m_load = m0 < M ? m0 : tc.row * CLUSTER_M * BM;  // a block past M computes a copy
        const int n0 = tc.col * BN;
        // B panels wholly past N are not copied (their stale columns only reach columns of C
        // that are never stored); every block of the cluster skips the same ones.
        const int live = min(PANELS, (N - n0 + 63) / 64);
        const unsigned tx = A_STAGE + live * B_PANEL_BYTES;
        for (int kt = 0; kt < num_kt; ++kt) {
          const int s = ring.stage;
          mbarrier_wait(&empty[s], ring.phase ^ 1);  // every consumer of the cluster released it
          mbarrier_arrive_expect_tx(&full[s], tx);
          if constexpr (A_COL) {  // two M-major panels: boxes {64 m, 64 k} of the K x M memory
#pragma unroll
            for (int i = 0; i < BM / 64; ++i)
              tma_load_2d(sA + s * A_STAGE + i * B_PANEL_BYTES, &tmap_a, &full[s], m_load + 64 * i, kt * BK);
          } else {
            tma_load_2d(sA + s * A_STAGE, &tmap_a, &full[s], kt * BK, m_load);
          }
#pragma unroll
          for (int i = 0; i < MY_PANELS; ++i) {
            const int p = rank + CLUSTER_M * i;  // block r copies panels r, r + CLUSTER_M, ...
            if (PANELS % CLUSTER_M != 0 && p >= PANELS) break;
            if (p >= live) break;
            char* const dst = sB + s * B_STAGE + p * B_PANEL_BYTES;
            // the box's first (inner, outer) coordinates: B_COL's memory is N rows of K
            const int c0 = B_COL ? kt * BK : n0 + 64 * p, c1 = B_COL ? n0 + 64 * p : kt * BK;
            if constexpr (CLUSTER_M > 1) {
              tma_load_2d_multicast(dst, &tmap_b, &full[s], c0, c1, static_cast<unsigned short>((1u << CLUSTER_M) - 1),
                                    b_policy);
            } else {
              tma_load_2d(dst, &tmap_b, &full[s], c0, c1, b_policy);
            }
          }
          ring.advance();
        }
      }
    } else if (threadIdx.x >= 32) {
      if constexpr (ANY_C) {
        // ---- ANY_C: warps 1-3 write the consumers' staged slabs to C (what TMA does for rung 7) ----
        // Each slab's READ arrival comes as soon as that slab is written (so consumer 1 never waits
        // for slab 0's stores), and none after the last tile's: arrivals match the consumers' syncs.
        const int w = threadIdx.x / 32 - 1, lane = threadIdx.x & 31;
        named_barrier_arrive(BAR_READ, STAGED_THREADS);  // both slabs start free
        named_barrier_arrive(BAR_READ + 1, STAGED_THREADS);
        for (int k = 0, t; (t = walk.nth(k, edge_last)) < walk.count; ++k) {
          const TileCoord tc = cluster_tile(t);
          const int m0 = (tc.row * CLUSTER_M + rank) * BM;
          const int n0 = tc.col * BN;
          const int live = min(PANELS, (N - n0 + 63) / 64);
          const bool more = walk.nth(k + 1, edge_last) < walk.count;
          for (int cw = 0; cw < 2; ++cw) {
            named_barrier_sync(BAR_STAGED + cw, STAGED_THREADS);  // this tile's slab cw is staged
            store_staged_slab<T, PANELS>(c, c_param, sC + cw * SLAB, m0 + 64 * cw, n0, live, M, N, w, 3, lane);
            if (more) named_barrier_arrive(BAR_READ + cw, STAGED_THREADS);  // slab cw may be restaged
          }
        }
      }
    }
  } else {
    // ---- consumers -----------------------------------------------------------------------------
    setmaxnreg_inc<CONSUMER_REGS>();
    const int cw = wg - 1;                    // slab: rows 64 cw .. 64 cw + 63 of the tile
    const int tid = threadIdx.x & 127;
    const int w = tid >> 5, g = (tid & 31) >> 2, t4 = tid & 3;
    const unsigned sA_addr = smem_addr(sA) + cw * 64 * A_ROW_BYTES;  // A_COL: panel cw, the same offset
    const unsigned sB_addr = smem_addr(sB);
    char* const boxes = sC + cw * 2 * BOX;
    auto release = [&](int s) { release_stage<CLUSTER_M>(&empty[s], tid); };

    float acc[BN / 2];
    Ring<STAGES> ring;
    int box_flip = 0;  // an odd PANELS (BN = 192) starts every other tile on the second staging box
    for (int k = 0, t; (t = walk.nth(k, edge_last)) < walk.count; ++k) {
      const TileCoord tc = cluster_tile(t);
      const int m0 = (tc.row * CLUSTER_M + rank) * BM;
      const int n0 = tc.col * BN;
      const int live = min(PANELS, (N - n0 + 63) / 64);  // panels of the tile inside N
      // The tile's K loop with wgmmas W columns wide (the first W / 2 accumulators).
      auto k_loop = [&](auto width) {
        constexpr int W = decltype(width)::value;
        consume_ktiles<T, W, STAGES, A_STAGE, B_STAGE, A_COL, B_COL>(acc_prefix<W / 2>(acc), ring, full, sA_addr,
                                                                     sB_addr, num_kt, release);
      };
      if constexpr (NARROW_EDGE) {
        with_live_width(live, k_loop);
      } else {
        k_loop(Cols<BN>{});
      }

      const int row0 = m0 + 64 * cw;  // the slab's first row
      if constexpr (TMA_STORE) {
#pragma unroll
        for (int p = 0; p < PANELS; ++p) {
          char* const box = boxes + ((p & 1) ^ box_flip) * BOX;
          if (tid == 0) tma_store_wait_read<1>();  // the store that last read this box is done reading
          named_barrier_sync(1 + cw, 128);
          stage_panel<T>(box, acc, p, w, g, t4);
          fence_proxy_async_shared();              // the box is visible to the copy engine
          named_barrier_sync(1 + cw, 128);
          if (tid == 0) {
            if (row0 < M && n0 + 64 * p < N) tma_store_2d(&c_param, box, n0 + 64 * p, row0);
            tma_store_commit();  // a group even when empty: the wait above counts groups
          }
        }
        box_flip ^= PANELS & 1;
      } else if constexpr (ANY_C) {
        char* const slab = sC + cw * SLAB;
        named_barrier_sync(BAR_READ + cw, STAGED_THREADS);  // the storing warps have read the last slab
#pragma unroll
        for (int p = 0; p < PANELS; ++p) {
          if (p < live) stage_panel<T>(slab + p * BOX, acc, p, w, g, t4);
        }
        named_barrier_arrive(BAR_STAGED + cw, STAGED_THREADS);  // publish it; on to the next tile
      } else {
        store_slab<T>(c, acc, row0 + 16 * w + g, n0 + 2 * t4, M, N);
      }
    }
    if constexpr (TMA_STORE) {
      if (tid == 0) tma_store_wait<0>();  // the last stores have written C
    }
  }
  __syncwarp();
  if constexpr (CLUSTER_M > 1) {
    cluster_sync();  // no block leaves while another may still multicast into it or arrive on it
  }
}
