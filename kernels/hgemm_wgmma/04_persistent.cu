// cugemm/kernels/hgemm_wgmma/04_persistent.cu: Hopper HGEMM rungs 5, 6 and 7 (sm_90a): a persistent
// warp-specialized kernel walking tiles in grouped order, clusters sharing B through TMA multicast,
// and an epilogue through shared memory and TMA stores that overlaps the next tile; and rung 7's forms
// for transposed operands, narrow edge tiles and a C of any alignment (story: docs/hgemm_wgmma.md).
//
// C = A * B, T = half or __nv_bfloat16 in and out, fp32 accumulation. The block is rung 4's (03_ws.cu):
// a producer warpgroup (one thread issues TMA copies), BM / 64 consumer warpgroups of 64 x BN slabs
// (wgmma m64nBNk16), FULL / EMPTY mbarriers around a STAGES-deep ring, setmaxnreg 40 / 232.
// Rung 5 (CLUSTER_M = 1, TMA_STORE = false) adds persistence: one block per SM walks the tiles
// blockIdx.x, + gridDim.x, ... in the grouped order of lib/raster.cuh, the ring's stage and phase
// running on across tiles (the producer loads tile i + 1 while the consumers finish tile i).
// Rung 6 (CLUSTER_M = 2) adds clusters along M: block r multicasts B panels r, r + CLUSTER_M, ... to
// every block of the cluster; EMPTY counts BM / 64 x CLUSTER_M arrivals (thread r of a consumer: block r's).
// Rung 7 (TMA_STORE) adds the epilogue: each consumer converts its slab one 64 x 64 panel at a time
// into one of its EPI_BOXES (2, or more for the batched forms) 8 KB 128-byte-swizzled staging boxes
// in turn, fences it for the async proxy, and one thread TMA-stores it (bounded by the tensor map); a
// box is rewritten only once its previous store has read it (wait_group.read EPI_BOXES - 1, then a
// named barrier): more boxes keep more stores in flight while the consumer goes on.
// Forms of rung 7:
//   A_COL / B_COL: A and/or B read column-major without a copy (hgemm_wgmma.cuh draws the layouts).
//   NARROW_EDGE (BN = 256): a tile with 1-3 of its 4 B panels inside N runs m64n64 / n128 / n192
//     wgmmas on its first accumulators; with N % BN != 0 those tiles are walked last and serpentine.
//   ANY_C: a C that TMA cannot store. Each consumer stages its whole 64 x BN slab (BN / 64 boxes in
//     stage_panel's layout) and goes on to the next tile; warps 1-3 of the producer warpgroup write
//     it with bounded stores (store_staged_slab). Per slab, the named barriers STAGED (consumers
//     arrive, storers wait) and READ (storers arrive, the consumer sleeps in it before restaging),
//     and an mbarrier DRAINED (each storing thread arrives after its reads, the consumer waits on
//     phase k - 1 before writing tile k's slab): the ordering of reads before rewrites racecheck
//     verifies, where the named barrier alone was reported as hazards; waiting on it alone cost 2%.
//   STAGED (ANY_C and TMA_STORE; 2-D, BM = 128, whole panels): ANY_C's structure for a C that TMA can
//     store, made for fused epilogues: the consumers stage the slab's pre-activation (alpha, source,
//     bias, AUX applied) and go on to the next tile's K loop; the storing warps apply the activation
//     and a residual in place (finish_staged_slab), fence for the async proxy, meet at BAR_STORING,
//     and one of them TMA-stores the live boxes and waits for their reads before its DRAINED
//     arrival. The activation's MUFU and issue cycles then run beside the wgmmas, not after them.
//   BM = 192 (TMA_STORE, BN <= 192): three consumers, setmaxnreg 40 / 152.
//   Fitted widths (BN a multiple of 16 but not of 64: B_COL, TMA_STORE, C dense; BM = 192 too): tile
//     counts fitted to the SMs where 64-column steps leave a round partly idle (1024 x 768 in 128 x 48
//     tiles: 128 of them; 128 x 64 make 96, 128 x 32 would halve the tile's work). The K-major B tile
//     is BN whole 128-byte rows: one box {64 k, BN / CLUSTER_M n} per block, multicast to the cluster
//     (pieces wholly past N not copied). The epilogue TMA-stores the BN / 64 whole 64-column panels
//     and writes the last BN % 64 columns from registers (store_slab_from; C's row stride is N).
//   BATCHED (TMA_STORE, not fitted): a batch of products in one launch, C[z] = A[(z / a_div) % a_mod]
//     * B[(z / b_div) % b_mod] for z < batches: an operand's matrices are one window of the batch
//     dimensions (a_mod 1: one matrix for every product; a_div > 1: A varies along outer dimensions
//     of the batch only, as (8, 1) against (1, 16) batches). The maps of A, B and C are 3-D (the
//     batch their outermost dimension) and every copy names its matrix; the persistent walk
//     goes over batches * (cluster tiles per product), batch-major, so the tiles in flight at one
//     time share one product's operands in L2. Without clusters the blocks take their tiles from a
//     counter (`tiles`, dynamic scheduling) instead of every gridDim.x-th: on small-K batches the C
//     stores set the time, and SMs drain them at unequal rates (ncu, 16 x 4096^2 x 64, H100: SM
//     active cycles 225k to 319k of 324k in the static walk), so a static walk waits for the
//     slowest. The producer thread fetches its next tile (atomicAdd, one fetch ahead: the next index
//     is fetched while this tile's copies are issued) and hands its index to the consumers through
//     two slots (`tile_slot`) with mbarriers of their own: TILE_FULL (the producer arrives after
//     writing a slot) and TILE_EMPTY (lane 0 of each consumer warp reads the slot, arrives, and
//     passes the index to its warp by a shuffle: only arriving threads read the slot), the ordering
//     racecheck verifies (an index passed in the ring stage, whose FULL phase the copy engine
//     completes, or read by every lane after a __syncwarp, was reported as hazards); an index past
//     the last tile ends the walk. The last block to finish resets the counters (`tiles[0]`: tiles
//     taken, `tiles[1]`: blocks done) to zero for the next launch (cugemm.workspace: a buffer per
//     stream). Otherwise the tile shapes, clusters, epilogue and the forms A_COL / B_COL /
//     NARROW_EDGE are the 2-D kernel's.
//   GROUPED (GROUPS > 0: a BATCHED form without clusters, A row-major): a grouped GEMM, C[rows of
//     g] = A[rows of g] * B[g] for groups g < batches (at most GROUPS: the length of the group tables in static
//     shared memory, 8 bytes a group; 1024, or 128 where the ring takes the rest). A and C are 2-D,
//     the groups' rows stacked (maps over all M rows); B is 3-D, one matrix per group (b_div 1,
//     b_mod batches). Group g's rows come from `group_ends` on the GPU (no host sync; group_table:
//     the contiguous layout's running ends, or masked_m > 0: the masked layout's per-group counts
//     of rows at stride masked_m; null: one group of M rows), read by warp 1 into shared memory
//     before the roles start, with each group's first tile of the walk. A group of r rows has
//     ceil(r / BM) tile rows; tile t (from the counter: the dynamic walk above) is found by
//     bisection (find_group) and walked in the grouped order within its group. A tile's last
//     rows may lie in the next group: they are loaded and computed but never stored, and a slab
//     that crosses its group's end is written from registers with bounded stores (store_slab, C's row stride N) where whole slabs
//     take the TMA store (C dense, row stride N). The grouped forms stage C with stmatrix.
//   PINGPONG (BM = 128, BN <= 128, 2-D TMA-store forms): the two consumers take the tiles in turn,
//     each a whole 128 x BN tile (two 64 x BN slabs, 2 x BN / 2 accumulators a thread), where the
//     other forms split a tile's rows between them (CUTLASS's ping-pong against its cooperative
//     schedule). One consumer's epilogue (its stores, a fused activation) then runs while the other's
//     wgmmas keep the tensor cores busy. The ring is one FIFO: consumer cw takes tiles cw, cw + 2, ...
//     of the walk and passes over the other's K-tiles (Ring::skip); EMPTY counts one consumer per
//     block. A consumer issues a tile's K loop only after the other has issued its previous tile's
//     (named barriers TURN, handed over once the last K-tile's wgmmas are issued): so the mainloops
//     alternate, and no consumer waits on a FULL phase two trips ahead of the ring (a parity wait
//     would pass on the older phase). Same block, grid, maps and shared memory as the form without.
//   PDL (every form): the producer thread waits in griddepcontrol.wait before its first load; no
//     other role touches global memory before data it loaded.
// The copy engine zero-fills box parts past M, N or K; boxes wholly past N are not issued (the
// expected bytes count the issued ones), nor A boxes wholly past M (such a block computes a copy).
// Template parameters: BM (128, 192), BN (64, 128, 192, 256; fitted: 48, 80, 112, 144, 160, 208, 224; with
//   BM = 192: 144, 160), STAGES, GROUP (tile rows per raster
//   band, in cluster tiles), CLUSTER_M (1, 2), TMA_STORE, ANY_C, A_COL, B_COL, NARROW_EDGE, BATCHED,
//   GROUPS (0, or GROUPED's table length), EPI_BOXES (2-8: TMA_STORE's staging boxes per consumer), PINGPONG, T,
//   EPI (lib/epilogue.cuh: None, or a Fused<...> epilogue applied to each panel's accumulators before
//   it is staged; the 2-D TMA-store forms with two consumers, FITTED's register-stored columns too;
//   ANY_C and STAGED: the consumers apply alpha, a pre-activation source, the bias and AUX, the
//   storing warps the activation and a residual to the staged pre-activation, off the K loop's warps).
//   BK = 64.
// Launch: block = (128 + 2 BM, 1, 1), grid = (min(tiles, SMs) rounded to CLUSTER_M, 1, 1); dynamic
//   shared memory hgemm_wgmma_persistent_smem_bytes<...> (PersistentSmem); extra arguments: maps of A
//   (box {64, BM}; A_COL: {64, 64} of the K x M memory), B (box {64, 64}; B_COL: of the N x K memory;
//   fitted: {64, BN / CLUSTER_M}) and C (box {64, 64}), 128-byte swizzled; ANY_C (not STAGED): C's row
//   stride (int, elements) instead of C's map; then batches, a_div, a_mod, b_div, b_mod (all 1 when not BATCHED;
//   then `tiles`, two zeroed uint32 counters for the dynamic walk (null but for BATCHED without clusters);
//   then group_ends and masked_m (null and 0 but for GROUPED); then the epilogue's bias, src, aux,
//   alpha, beta, ld_src, ld_aux (epilogue::Args; ignored where EPI is None: cugemm passes 0s and 1, 0);
//   BATCHED: 3-D maps, boxes one matrix deep, and a grid of min(batches * tiles, SMs) blocks;
//   GROUPED: 2-D maps of A and C, and a grid of at most (ceil(M / BM) + batches) * ceil(N / BN) blocks).
// Preconditions: leading dimensions of A, B and C multiples of 16 bytes (dense: K % 8 == 0, N % 8 ==
//   0), a, b, c 16-byte aligned (ANY_C: c and its row stride 2-byte aligned, any N; TMA-store forms:
//   N % 8 == 0, a TMA store writes a row's last 16-byte piece whole); M * N, M * K, K * N < 2^31.
#include "../lib/barrier.cuh"
#include "../lib/epilogue.cuh"
#include "../lib/raster.cuh"

// 1: session 45's L2 rule for B's copies (evict_first with clusters or without a TMA store), 0 (the
// default): evict_normal everywhere (the producer's comment says why)
#ifndef CUGEMM_PERSISTENT_B_EVICT_FIRST
#define CUGEMM_PERSISTENT_B_EVICT_FIRST 0
#endif
#include "../lib/swizzle.cuh"
#include "../lib/tma.cuh"
#include "hgemm_wgmma.cuh"

// Shared memory: the ring of BM x 64 A and 64 x BN B tiles, then the epilogue's staging: TMA_STORE
// EPI_BOXES 64 x 64 boxes per consumer warpgroup, ANY_C one whole 64 x BN slab (BN / 64 boxes) per consumer.
template <int BM, int BN, int STAGES, bool TMA_STORE, bool ANY_C, int EPI_BOXES>
using PersistentSmem =
    hgemm_wgmma::RingSmem<BM * hgemm_wgmma::A_ROW_BYTES, BN * hgemm_wgmma::BK * 2, STAGES,
                          (TMA_STORE && !ANY_C ? EPI_BOXES * (BM / 64) * hgemm_wgmma::BOX_BYTES : 0) +
                              (ANY_C ? 2 * (BN / 64) * hgemm_wgmma::BOX_BYTES : 0)>;
template <int BM, int BN, int STAGES, int GROUP, int CLUSTER_M, bool TMA_STORE, bool ANY_C, bool A_COL,
          bool B_COL, bool NARROW_EDGE, bool BATCHED, int GROUPS, int EPI_BOXES, bool PINGPONG, class T,
          class EPI = epilogue::None>
__device__ constexpr int hgemm_wgmma_persistent_smem_bytes =
    PersistentSmem<BM, BN, STAGES, TMA_STORE, ANY_C, EPI_BOXES>::BYTES;

// A tile of the walk, placed: product (group) z, first row m0 and column n0 of C; the row its
// product ends at (rows m0 .. m_end - 1 are C's); the first row of A the producer loads.
struct Placed {
  int z, m0, n0, m_end, m_load;
};

// The last kernel parameter: C's tensor map, or (ANY_C) C's row stride in elements.
template <bool ANY_C>
struct PersistentCParam {
  using type = TensorMap;
};
template <>
struct PersistentCParam<true> {
  using type = int;
};

template <int BM, int BN, int STAGES, int GROUP, int CLUSTER_M, bool TMA_STORE, bool ANY_C, bool A_COL,
          bool B_COL, bool NARROW_EDGE, bool BATCHED, int GROUPS, int EPI_BOXES, bool PINGPONG, class T,
          class EPI = epilogue::None>
__global__ void __cluster_dims__(CLUSTER_M, 1, 1) __launch_bounds__(128 + 2 * BM, 1)
    hgemm_wgmma_persistent(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N,
                           int K, const __grid_constant__ TensorMap tmap_a,
                           const __grid_constant__ TensorMap tmap_b,
                           const __grid_constant__ typename PersistentCParam<ANY_C && !TMA_STORE>::type c_param,
                           int batches,
                           int a_div, int a_mod, int b_div, int b_mod, unsigned* __restrict__ tiles,
                           const int* __restrict__ group_ends, int masked_m, const void* ep_bias,
                           const void* ep_src, void* ep_aux, float ep_alpha, float ep_beta, int ep_ld_src,
                           int ep_ld_aux) {
  using namespace hgemm_wgmma;
  using Smem = PersistentSmem<BM, BN, STAGES, TMA_STORE, ANY_C, EPI_BOXES>;
  constexpr int CONSUMERS = BM / 64;  // consumer warpgroups, one 64-row slab each (PINGPONG: a tile each)
  constexpr int SLABS = PINGPONG ? BM / 64 : 1;  // 64-row slabs a consumer owns
  constexpr int TURNS = PINGPONG ? CONSUMERS : 1;  // consumers taking the walk's tiles in turn
  constexpr int BAR_TURN = 8;  // PINGPONG: consumer cw may issue its next tile's K loop (ids 8, 9)
  constexpr int A_STAGE = Smem::A_STAGE;
  constexpr int B_STAGE = Smem::B_STAGE;
  constexpr bool FITTED = BN % 64 != 0;                  // a fitted width (header)
  constexpr bool STAGED = ANY_C && TMA_STORE;           // the STAGED form (header)
  constexpr int PANELS = BN / 64;                       // B panels per tile (and whole C panels per slab)
  constexpr int PIECE = BN / CLUSTER_M;                 // FITTED: n rows of B each block of a cluster copies
  constexpr int MY_PANELS = (PANELS + CLUSTER_M - 1) / CLUSTER_M;  // B panels this block copies at most
  constexpr int BOX = BOX_BYTES;                        // one 64 x 64 staging box of C
  constexpr int SLAB = PANELS * BOX;                    // ANY_C: a consumer's whole slab, staged
  // 65536 registers: 128 x 40 + 256 x 232 with two consumers, 128 x 40 + 384 x 152 with three;
  // STAGED 128 x 56 + 256 x 224, for the storing warps' activations of 16 elements at a time
  constexpr int PRODUCER_REGS = STAGED ? 56 : 40, CONSUMER_REGS = STAGED ? 224 : CONSUMERS == 2 ? 232 : 152;
  constexpr int STORING_THREADS = 96, BAR_STORING = 3;  // ANY_C: warps 1-3 of the producer warpgroup
  // ANY_C's named barriers (ids 1, 2 are the TMA-store epilogue's): slab cw staged, slab cw read
  constexpr int BAR_STAGED = 4, BAR_READ = 6, BOTH = 128 + STORING_THREADS;
  static_assert(BN == 64 || BN == 128 || BN == 192 || BN == 256 || (FITTED && BN % 16 == 0 && BN < 256),
                "BN is a wgmma N with a 128-register accumulator at most");
  static_assert(!FITTED || (B_COL && TMA_STORE && !A_COL && !NARROW_EDGE && PIECE % 8 == 0),
                "fitted widths: a K-major B (whole 8-row swizzle atoms per block), the TMA-store epilogue");
  static_assert(!NARROW_EDGE || BN == 256, "the narrow widths are those of a 256-wide tile's 1-3 live panels");
  static_assert(CLUSTER_M == 1 || CLUSTER_M == 2, "clusters of 1 or 2 blocks; B is split by whole panels");
  static_assert(BM == 128 || (BM == 192 && TMA_STORE && !NARROW_EDGE && BN <= 192),
                "three consumers (BM = 192): the TMA-store epilogue, at most 96 accumulators in 152 registers");
  static_assert(!STAGED || (BM == 128 && !FITTED && !BATCHED && !PINGPONG),
                "the STAGED form: 2-D, two consumers, whole 64-column panels");
  static_assert(EPI_BOXES >= 2 && EPI_BOXES <= 8, "2 to 8 staging boxes per consumer");
  constexpr bool DYNAMIC = BATCHED && CLUSTER_M == 1;  // tiles from the counter (header)
  static_assert(!BATCHED || (TMA_STORE && !FITTED), "batches: C through 3-D TMA stores, whole 64-column panels");
  constexpr bool GROUPED = GROUPS > 0;  // a grouped form, its tables GROUPS long (header)
  // (clusters along M with the static walk over the groups' cluster tiles: correct, and 0-47% slower
  // than these forms on cugemm's MoE tuning set, H100; not built)
  static_assert(!GROUPED || (BATCHED && CLUSTER_M == 1 && !A_COL),
                "groups: the batched form's B and dynamic walk; A's rows, without clusters");
  static_assert(!PINGPONG || (BM == 128 && BN <= 128 && TMA_STORE && !FITTED && !BATCHED),
                "ping-pong: 2-D TMA-store forms, a consumer's whole 128 x BN tile in 2 x BN / 2 <= 128 accumulators");
  constexpr bool MAPS_3D = BATCHED && !GROUPED;  // A and C: 3-D maps (GROUPED: 2-D, the groups' rows stacked)
  // (three consumers have 152 registers a thread: the epilogue's erf and loads spill 4-72 bytes there)
  static_assert(!EPI::ACTIVE || ((TMA_STORE || ANY_C) && !BATCHED && BM == 128),
                "a fused epilogue (lib/epilogue.cuh): the 2-D TMA-store and ANY_C forms with two consumers");
  const epilogue::Args ep{ep_bias, ep_src, ep_aux, ep_alpha, ep_beta, ep_ld_src, ep_ld_aux};

  extern __shared__ char smem_raw[];
  char* const smem = align_1024(smem_raw);
  char* const sA = smem + Smem::A;
  char* const sB = smem + Smem::B;
  char* const sC = smem + Smem::EPI;  // TMA_STORE: EPI_BOXES boxes per consumer warpgroup; ANY_C: a slab each
  __shared__ alignas(8) unsigned long long full[STAGES], empty[STAGES];
  // ANY_C: per consumer slab, DRAINED: the 96 storing threads have read it (one element, never used,
  // in the other forms)
  __shared__ alignas(8) unsigned long long drained[ANY_C ? 2 : 1];
  // DYNAMIC: the tile indices handed to the consumers, and their FULL / EMPTY barriers (header)
  __shared__ int tile_slot[2];
  __shared__ alignas(8) unsigned long long tile_full[2], tile_empty[2];
  // GROUPED: group g's end row (its rows: group_row0(g) .. group_end[g] - 1) and its first tile in
  // the walk (group_first[G]: the walk's length), written by warp 1 before the roles start
  __shared__ int group_end[GROUPED ? GROUPS : 1];
  __shared__ int group_first[GROUPS + 1];

  if (threadIdx.x == 0) {
    tma_prefetch_map(&tmap_a);
    tma_prefetch_map(&tmap_b);
    if constexpr (TMA_STORE) tma_prefetch_map(&c_param);
    if constexpr (ANY_C) {
      mbarrier_init(&drained[0], STORING_THREADS);
      mbarrier_init(&drained[1], STORING_THREADS);
    }
    if constexpr (DYNAMIC) {
      for (int j = 0; j < 2; ++j) {
        mbarrier_init(&tile_full[j], 1);
        mbarrier_init(&tile_empty[j], CONSUMERS * 4);  // one arrival per consumer warp
      }
    }
    // every consumer of every block of the cluster; its fence publishes the slab barriers too
    init_ring_barriers<STAGES>(full, empty, CONSUMERS / TURNS * CLUSTER_M);
  }
  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const int groups = GROUPED ? min(batches, GROUPS) : 1;
  if constexpr (GROUPED) {
    if (threadIdx.x / 32 == 1) group_table<BM>(group_end, group_first, group_ends, groups, masked_m, M, tiles_n);
  }
  sync_cta_or_cluster<CLUSTER_M>();  // every block's barriers exist before any multicast or remote arrival

  // ---- the tile walk, identical in every role and in every block of a cluster ----------------------
  const ClusterTileWalk<CLUSTER_M, true> walk(tiles_m, tiles_n);  // cluster tiles: CLUSTER_M tiles stacked in M
  const int rank = CLUSTER_M > 1 ? static_cast<int>(cluster_ctarank()) : 0;
  const int num_kt = (K + BK - 1) / BK;
  // NARROW_EDGE with a partial last tile column: those cheap tiles go last, in serpentine rounds, to
  // fill the round the whole tiles leave partly empty (lib/raster.cuh: nth, cluster_tile_edge_last).
  const bool edge_last = NARROW_EDGE && N % BN != 0;
  auto cluster_tile = [&](int t) {
    return edge_last ? walk.cluster_tile_edge_last(t, GROUP) : walk.cluster_tile(t, GROUP);
  };
  // BATCHED: cluster tile t of the walk over every product lies in batch z = t / walk.count (a
  // product's tiles are consecutive), where it is that product's cluster tile t - z * walk.count.
  const int total = GROUPED ? group_first[groups] : BATCHED ? walk.count * batches : walk.count;
  auto locate = [&](int t, int& z) {
    z = BATCHED ? t / walk.count : 0;
    return cluster_tile(t - z * walk.count);
  };
  // Tile t's product z, first row m0 (of C, and of A but for a block past M) and first column n0,
  // and the row its product ends at (C's rows m0 .. m_end - 1 of the tile are stored): GROUPED,
  // group z's tile t - group_first[z] in the grouped order over the group's own tile rows.
  auto place = [&](int t) {
    Placed p;
    if constexpr (GROUPED) {
      p.z = find_group(group_first, groups, t);
      const int row0 = group_row0(group_end, p.z, masked_m), end = group_end[p.z];
      const TileCoord tc = raster_grouped(t - group_first[p.z], (end - row0 + BM - 1) / BM, tiles_n, GROUP);
      p.m0 = p.m_load = row0 + tc.row * BM, p.n0 = tc.col * BN, p.m_end = end;
    } else {
      const TileCoord tc = locate(t, p.z);
      p.m0 = (tc.row * CLUSTER_M + rank) * BM, p.n0 = tc.col * BN, p.m_end = M;
      p.m_load = p.m0 < M ? p.m0 : tc.row * CLUSTER_M * BM;  // a block past M computes a copy
    }
    return p;
  };

  const int wg = warpgroup_index();
  if (wg == 0) {
    // ---- producer ------------------------------------------------------------------------------
    setmaxnreg_dec<PRODUCER_REGS>();
    if (threadIdx.x == 0) {
      // B's L2 lines: evict_normal. A B panel is read by every cluster tile of its column in the
      // band of GROUP cluster rows (lib/raster.cuh), not once: with evict_first its lines left L2
      // before the band's other rows read them (8192^3: 2.5-2.9 GB from DRAM, cuBLAS 1.25 GB, evict_normal
      // 1.23 GB; docs/hgemm_wgmma.md). CUGEMM_PERSISTENT_B_EVICT_FIRST=1 builds session 45's rule.
      constexpr bool B_STREAM = CUGEMM_PERSISTENT_B_EVICT_FIRST && (CLUSTER_M > 1 || !TMA_STORE);
      const unsigned long long b_policy = B_STREAM ? l2_policy_stream() : 0;
      // Launched with PDL (cugemm.matmul, after the relayout of its operands): everything above ran
      // beside the previous kernel; wait for it before the first read. The other roles touch global
      // memory only through what this thread loads.
      grid_dependency_wait();
      Ring<STAGES> ring;
      // DYNAMIC: the next tile is fetched while this one's copies are issued (one fetch in flight)
      int t_next = DYNAMIC ? static_cast<int>(atomicAdd(&tiles[0], 1u)) : 0;
      for (int k = 0;; ++k) {
        const int t = DYNAMIC ? t_next : walk.nth(k, edge_last);
        if constexpr (DYNAMIC) {  // tile k (or, past the last, the walk's end) to the consumers
          mbarrier_wait(&tile_empty[k & 1], ((k >> 1) & 1) ^ 1);
          tile_slot[k & 1] = t;
          mbarrier_arrive(&tile_full[k & 1]);
        }
        if (t >= total) break;
        if constexpr (DYNAMIC) t_next = static_cast<int>(atomicAdd(&tiles[0], 1u));
        const Placed tile = place(t);
        const int z = tile.z, m_load = tile.m_load, n0 = tile.n0;
        const int za = z / a_div % a_mod, zb = z / b_div % b_mod;  // the matrices of A and B product z reads
        // B panels wholly past N are not copied (their stale columns only reach columns of C
        // that are never stored); every block of the cluster skips the same ones.
        const int live = min(PANELS, (N - n0 + 63) / 64);
        // FITTED: the cluster's pieces of PIECE n rows that start inside N (every block receives them all)
        const int live_pieces = min(CLUSTER_M, (N - n0 + PIECE - 1) / PIECE);
        const unsigned tx = A_STAGE + (FITTED ? live_pieces * PIECE * 128 : live * B_PANEL_BYTES);
        for (int kt = 0; kt < num_kt; ++kt) {
          const int s = ring.stage;
          mbarrier_wait(&empty[s], ring.phase ^ 1);  // every consumer of the cluster released it
          mbarrier_arrive_expect_tx(&full[s], tx);
          auto load_a = [&](char* dst, int c0, int c1) {
            if constexpr (MAPS_3D) {
              tma_load_3d(dst, &tmap_a, &full[s], c0, c1, za);
            } else {
              tma_load_2d(dst, &tmap_a, &full[s], c0, c1);
            }
          };
          if constexpr (A_COL) {  // BM / 64 M-major panels: boxes {64 m, 64 k} of the K x M memory
#pragma unroll
            for (int i = 0; i < BM / 64; ++i)
              load_a(sA + s * A_STAGE + i * B_PANEL_BYTES, m_load + 64 * i, kt * BK);
          } else {
            load_a(sA + s * A_STAGE, kt * BK, m_load);
          }
          // one box of B into dst at (inner, outer) coordinates (c0, c1): multicast to the cluster, or
          // this block's alone, evict_first where B_STREAM says so
          auto load_b = [&](char* dst, int c0, int c1) {
            if constexpr (BATCHED && CLUSTER_M > 1) {
              tma_load_3d_multicast(dst, &tmap_b, &full[s], c0, c1, zb,
                                    static_cast<unsigned short>((1u << CLUSTER_M) - 1), b_policy);
            } else if constexpr (BATCHED && B_STREAM) {
              tma_load_3d(dst, &tmap_b, &full[s], c0, c1, zb, b_policy);
            } else if constexpr (BATCHED) {
              tma_load_3d(dst, &tmap_b, &full[s], c0, c1, zb);
            } else if constexpr (CLUSTER_M > 1) {
              tma_load_2d_multicast(dst, &tmap_b, &full[s], c0, c1, static_cast<unsigned short>((1u << CLUSTER_M) - 1),
                                    b_policy);
            } else if constexpr (B_STREAM) {
              tma_load_2d(dst, &tmap_b, &full[s], c0, c1, b_policy);
            } else {
              tma_load_2d(dst, &tmap_b, &full[s], c0, c1);
            }
          };
          if constexpr (FITTED) {  // block r copies n rows r * PIECE .. of the K-major tile
            if (rank < live_pieces) load_b(sB + s * B_STAGE + rank * PIECE * 128, kt * BK, n0 + rank * PIECE);
          } else {
#pragma unroll
            for (int i = 0; i < MY_PANELS; ++i) {
              const int p = rank + CLUSTER_M * i;  // block r copies panels r, r + CLUSTER_M, ...
              if (PANELS % CLUSTER_M != 0 && p >= PANELS) break;
              if (p >= live) break;
              // the box's first (inner, outer) coordinates: B_COL's memory is N rows of K
              load_b(sB + s * B_STAGE + p * B_PANEL_BYTES, B_COL ? kt * BK : n0 + 64 * p, B_COL ? n0 + 64 * p : kt * BK);
            }
          }
          ring.advance();
        }
      }
      if constexpr (DYNAMIC) {
        // this block takes no more tiles; the last block to get here leaves the counters zero
        if (atomicAdd(&tiles[1], 1u) == gridDim.x - 1) {
          atomicExch(&tiles[0], 0u);
          atomicExch(&tiles[1], 0u);
        }
      }
      // the cluster's arrivals on this block's ring are all in before it may leave (no end barrier)
      if constexpr (CLUSTER_M > 1) drain_ring(ring, empty);
    } else if (threadIdx.x >= 32) {
      if constexpr (ANY_C) {
        // ---- ANY_C: warps 1-3 write the consumers' staged slabs to C (what TMA does for rung 7) ----
        // Each slab's READ arrival comes as soon as that slab is read (so consumer 1 never waits for
        // slab 0's stores), none after the last tile's; DRAINED's phase k is the block's k-th tile.
        const int w = threadIdx.x / 32 - 1, lane = threadIdx.x & 31;
        // Among these 96 threads only: an aligned barrier tells ptxas the three warps run converged,
        // so the tile walk below stays in uniform registers (without it 176-196 bytes spill at 40).
        named_barrier_sync(BAR_STORING, STORING_THREADS);
        named_barrier_arrive(BAR_READ, BOTH);  // both slabs start free
        named_barrier_arrive(BAR_READ + 1, BOTH);
        for (int k = 0, t; (t = walk.nth(k, edge_last)) < total; ++k) {
          int z;
          const TileCoord tc = locate(t, z);
          const int m0 = (tc.row * CLUSTER_M + rank) * BM;
          const int n0 = tc.col * BN;
          const int live = min(PANELS, (N - n0 + 63) / 64);
          const bool more = walk.nth(k + 1, edge_last) < total;
          for (int cw = 0; cw < 2; ++cw) {
            named_barrier_sync(BAR_STAGED + cw, BOTH);  // this tile's slab cw is staged
            char* const slab = sC + cw * SLAB;
            const int row0 = m0 + 64 * cw;
            // EPI: the activation (and a residual) applied here, off the consumers (epilogue::DEFERS)
            if constexpr (STAGED) {
              // finished in place, then the copy engine stores the live boxes; their reads are done
              // before this thread's DRAINED arrival, the one the consumer's rewrite waits for
              if constexpr (epilogue::DEFERS<EPI>) {
                finish_staged_slab<T, PANELS, EPI>(slab, row0, n0, M, N, w, 3, lane, ep);
                fence_proxy_async_shared();  // this thread's writes are visible to the copy engine
              }
              named_barrier_sync(BAR_STORING, STORING_THREADS);
              if (w == 0 && lane == 0) {
                if (row0 < M) {
                  for (int p = 0; p < live; ++p) tma_store_2d(&c_param, slab + p * BOX, n0 + 64 * p, row0);
                }
                tma_store_commit();
                tma_store_wait_read<0>();
              }
            } else {
              store_staged_slab<T, PANELS, EPI>(c, c_param, slab, row0, n0, live, M, N, w, 3, lane, ep);
            }
            mbarrier_arrive(&drained[cw]);  // this thread's reads of slab cw are done (release)
            if (more) named_barrier_arrive(BAR_READ + cw, BOTH);  // slab cw may be restaged
          }
        }
        if constexpr (STAGED) {
          if (w == 0 && lane == 0) tma_store_wait<0>();  // the last stores have written C
        }
      }
    }
  } else {
    // ---- consumers -----------------------------------------------------------------------------
    setmaxnreg_inc<CONSUMER_REGS>();
    const int cw = wg - 1;                    // slab: rows 64 cw .. 64 cw + 63 of the tile
    const int tid = threadIdx.x & 127;
    const int w = tid >> 5, g = (tid & 31) >> 2, t4 = tid & 3;
    // A_COL: panel cw, the same offset; PINGPONG: the tile's first row (slab r: 64 r rows on)
    const unsigned sA_addr = smem_addr(sA) + (PINGPONG ? 0 : cw * 64 * A_ROW_BYTES);
    const unsigned sB_addr = smem_addr(sB);
    char* const boxes = sC + cw * EPI_BOXES * BOX;
    auto release = [&](int s) { release_stage<CLUSTER_M>(&empty[s], tid); };

    float acc_slabs[SLABS][BN / 2];
    float (&acc)[BN / 2] = acc_slabs[0];  // the slab of the forms without PINGPONG
    // EPI: D in registers of its own (epilogue::apply: a write into the accumulators would make ptxas
    // serialise every wgmma of the kernel); without an epilogue `out` is the slab's accumulators.
    float d[BN / 2];
    Ring<STAGES> ring;
    if constexpr (PINGPONG) ring.skip(cw * num_kt);  // consumer 1 starts at the walk's second tile
    int box_flip = 0;  // an odd PANELS (BN = 192) starts every other tile on the second staging box
    int box_next = 0;  // EPI_BOXES > 2: the box of the slab's first panel (panels take the boxes in turn)
    for (int k = PINGPONG ? cw : 0;; k += TURNS) {
      int t = 0;
      if constexpr (DYNAMIC) {  // the tile the producer fetched: lane 0 of each warp reads it
        if ((tid & 31) == 0) {
          mbarrier_wait(&tile_full[k & 1], (k >> 1) & 1);
          t = tile_slot[k & 1];
          mbarrier_arrive(&tile_empty[k & 1]);  // after its own read: no other thread reads the slot
        }
        t = __shfl_sync(0xffffffffu, t, 0);
      } else {
        t = walk.nth(k, edge_last);
      }
      if (t >= total) break;
      const Placed tile = place(t);
      const int z = tile.z, m0 = tile.m0, n0 = tile.n0, m_end = tile.m_end;
      const int live = min(PANELS, (N - n0 + 63) / 64);  // panels of the tile inside N
      // EPI: what this consumer's slabs' epilogue reads, fetched towards the SM while the K loop runs
#pragma unroll
      for (int r = 0; r < SLABS; ++r)
        epilogue::prefetch<EPI, T, BN>(m0 + 64 * (PINGPONG ? r : cw), n0, m_end, N, tid, ep);
      // EPI with a column bias: this thread's pairs of it, in registers by the time the K loop ends
      // (PINGPONG: beside a consumer's 128 accumulators only without a source or AUX, which then spill)
      epilogue::TileBias<EPI, T, BN / 8, !PINGPONG || (EPI::SRC == epilogue::NO_SRC && !EPI::AUX)> tile_bias;
      tile_bias.load(n0 + 2 * t4, N, ep);
      // The tile's K loop with wgmmas W columns wide (the first W / 2 accumulators).
      auto k_loop = [&](auto width) {
        constexpr int W = decltype(width)::value;
        consume_ktiles<T, W, STAGES, A_STAGE, B_STAGE, A_COL, B_COL>(acc_prefix<W / 2>(acc), ring, full, sA_addr,
                                                                     sB_addr, num_kt, release);
      };
      if constexpr (PINGPONG) {
        // this consumer's turn: the other issued its previous tile's K loop (none before the walk's first)
        if (k > 0) named_barrier_sync(BAR_TURN + cw, 256);
        consume_ktiles<T, BN, STAGES, A_STAGE, B_STAGE, A_COL, B_COL>(
            acc_slabs, ring, full, sA_addr, sB_addr, num_kt, release, [&] {
              // the turn passes once this K loop is issued, if the other consumer has a next tile
              if (walk.nth(k + 1, edge_last) < total) named_barrier_arrive(BAR_TURN + (cw ^ 1), 256);
            });
        ring.skip(num_kt);  // the other consumer's tile
      } else if constexpr (NARROW_EDGE) {
        with_live_width(live, k_loop);
      } else {
        k_loop(Cols<BN>{});
      }

#pragma unroll
      for (int r = 0; r < SLABS; ++r) {
        float (&acc)[BN / 2] = acc_slabs[r];
        float (&out)[BN / 2] = *(EPI::ACTIVE ? &d : &acc);
        const int row0 = m0 + 64 * (PINGPONG ? r : cw);  // the slab's first row
        // GROUPED: a slab that ends past its group's rows is written from registers, bounded (below)
        const bool slab_whole = !GROUPED || row0 + 64 <= m_end;
        if constexpr (TMA_STORE && !STAGED) {
#pragma unroll
          for (int p = 0; p < PANELS; ++p) {
            char* const box = boxes + (EPI_BOXES == 2 ? (p & 1) ^ box_flip : (box_next + p) % EPI_BOXES) * BOX;
            // the store that last read this box (EPI_BOXES panels ago) is done reading
            // EPI: this panel's fused epilogue, its loads issued before the wait for the box
            epilogue::apply<EPI, T, 8>(acc, out, 8 * p, row0 + 16 * w + g, n0 + 2 * t4, m_end, N, ep,
                                       tile_bias.held());
            if (tid == 0) tma_store_wait_read<EPI_BOXES - 1>();
            named_barrier_sync(1 + cw, 128);
            if constexpr (GROUPED) {  // stmatrix: 4 instructions a box where stage_panel takes 16 stores
              stage_box_stmatrix<false, T>(smem_addr(box), acc, 8 * p, w, tid & 31);
            } else {
              stage_panel<T>(box, out, p, w, g, t4);
            }
            fence_proxy_async_shared();              // the box is visible to the copy engine
            named_barrier_sync(1 + cw, 128);
            if (tid == 0) {
              if (row0 < m_end && slab_whole && n0 + 64 * p < N) {
                if constexpr (MAPS_3D) {
                  tma_store_3d(&c_param, box, n0 + 64 * p, row0, z);
                } else {
                  tma_store_2d(&c_param, box, n0 + 64 * p, row0);
                }
              }
              tma_store_commit();  // a group even when empty: the wait above counts groups
            }
          }
          box_flip ^= PANELS & 1;
          box_next = (box_next + PANELS) % EPI_BOXES;
          // FITTED: the last BN % 64 columns from registers (the final accumulators; C dense)
          if constexpr (FITTED) {
            epilogue::apply<EPI, T, BN / 8 - PANELS * 8>(acc, out, PANELS * 8, row0 + 16 * w + g, n0 + 2 * t4, M, N,
                                                         ep, tile_bias.held());
            store_slab_from<T, PANELS * 8>(c, out, row0 + 16 * w + g, n0 + 2 * t4, M, N);
          }
          // GROUPED: the group's last slab, its rows up to m_end (C dense: row stride N)
          if constexpr (GROUPED) {
            if (!slab_whole) store_slab<T>(c, acc, row0 + 16 * w + g, n0 + 2 * t4, m_end, N);
          }
        } else if constexpr (ANY_C) {
          char* const slab = sC + cw * SLAB;
          // Restaging waits until the storing warps have read the last slab: asleep in the READ named
          // barrier first (cheap), then DRAINED's phase, complete by then, orders their reads before
          // these writes (acquire), an ordering racecheck verifies.
          named_barrier_sync(BAR_READ + cw, BOTH);
          if (k > 0) mbarrier_wait(&drained[cw], (k - 1) & 1);
          // EPI: alpha, a pre-activation source, the bias and AUX here, a panel at a time (so that only
          // a panel of `out` is live beside the accumulators); the activation and a residual by the
          // storing warps (DEFER), so that the consumers go on to the next tile's K loop
#pragma unroll
          for (int p = 0; p < PANELS; ++p) {
            if (p < live) {
              epilogue::apply<EPI, T, 8, true>(acc, out, 8 * p, row0 + 16 * w + g, n0 + 2 * t4, m_end, N, ep,
                                               tile_bias.held());
              stage_panel<T>(slab + p * BOX, out, p, w, g, t4);
            }
          }
          if constexpr (STAGED) fence_proxy_async_shared();  // STAGED: the copy engine reads the slab
          named_barrier_arrive(BAR_STAGED + cw, BOTH);  // publish it; on to the next tile
        } else {
          store_slab<T>(c, acc, row0 + 16 * w + g, n0 + 2 * t4, M, N);
        }
      }
    }
    if constexpr (TMA_STORE && !STAGED) {
      if (tid == 0) tma_store_wait<0>();  // the last stores have written C
    }
  }
  __syncwarp();
}
