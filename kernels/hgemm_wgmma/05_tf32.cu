// cugemm/kernels/hgemm_wgmma/05_tf32.cu: the TF32 sibling of the persistent warp-specialized
// Hopper GEMM (04_persistent.cu): float32 in and out, TF32 multiplies rounded to nearest by the
// copy engine, fp32 accumulation (sm_90a). Story and measurements: docs/hgemm_wgmma.md.
//
// C = A * B, row-major float32, any M, and N, K multiples of 4 (16-byte rows).
//
// Structure: 04's (persistent grid walking tiles in grouped order, a producer warpgroup issuing
// TMA copies into a STAGES-deep ring with FULL / EMPTY mbarriers, two consumer warpgroups,
// setmaxnreg 40 / 232, optional clusters with multicast). What differs:
//  1. The operand roles. wgmma reads TF32 operands from shared memory only K-major, and B (K x N,
//     row-major) is N-major; so each consumer computes a 64-column slice of C^T = B^T A^T: the
//     wgmma A operand (64 rows of n x 8 k) comes from registers, loaded from the B tile (4 scalar
//     shared loads per k8 step and thread), and the wgmma B operand is the A tile, K-major as in
//     memory. wgmma m64n256k8: the block tile is 256 (M: the wgmma N) x 128 (N: two consumers).
//  2. The rounding. The tensor maps of A and B have the data type CU_TENSOR_MAP_DATA_TYPE_TFLOAT32,
//     for which the copy engine rounds every float32 it loads to TF32 (to nearest, as cuBLAS) on its
//     way into shared memory: no instruction and no extra pass over shared memory.
//  3. The B tile is stored as 32-column panels of 32 k rows, 128-byte swizzled (TMA box {32, 32}),
//     so the register-fragment loads hit 16 banks twice instead of 8 banks four times.
//  4. Clusters (CLUSTER_N = 2) pair tiles side by side along N: they share the A tile, each block
//     copying half of it with multicast.
//  5. The epilogue stores C^T's fragments straight to global memory, bounded.
//
//  6. B_COL: B read column-major without a copy (B = W.T of a row-major N x K float32 array W: x @ W.T,
//     q @ k.T). B^T's rows are then K-major as they lie in memory, so both wgmma operands come from
//     shared memory (wgmma_tf32_ss): the B tile is BN n rows of 32 k (128 bytes, 128-byte swizzled,
//     one TMA box {32 k, BN n} of W's memory), laid out as the A tile, and a consumer's 64 rows of
//     B^T are rows 64 cw .. of it. No register fragments, so a K-tile's wgmmas stay in flight while
//     the next K-tile's are issued (wait_group 1 before a stage is released).
//  7. BATCHED (CLUSTER_N any; GROUPS > 0 needs it and CLUSTER_N = 1): a batch of products in one launch (cugemm.batched's float32 batches with TF32 allowed),
//     C[z] = A[(z / a_div) % a_mod] * B[(z / b_div) % b_mod] for z < batches, as rung 7's batched
//     form (04_persistent.cu): the maps of A and B are 3-D (boxes one matrix deep, an operand's
//     matrices one window of the batch), the walk goes over batches * (cluster tiles per product),
//     batch-major, and product z's C starts c_stride floats after product z - 1's.
//  8. GROUPS > 0: a grouped product (cugemm.grouped_matmul on float32 with TF32 allowed), C[rows of g]
//     = A[rows of g] B[g], as rung 7's grouped form (04_persistent.cu): warp 1 fills the groups'
//     tables from `group_ends` on the GPU (group_table, hgemm_wgmma.cuh: clamped ends, each group's
//     first tile; masked_m > 0: counts of the masked layout), A's map is 2-D over every row, B's 3-D
//     with one matrix per group, and tile t is found by bisection (find_group) and walked in the
//     grouped order within its group (static walk). The epilogue already stores from registers, so
//     a tile's rows past its group's end are simply not stored (no partial-slab path).
//
//  9. BM = 128 (`_m64n128k8`): wgmma m64n128k8, 128 x 128 tiles for products whose 256-row tiles
//     leave most SMs idle (1024x768: 24 tiles of 256 x 128, 48 of 128 x 128); 64 accumulators a
//     thread, 32 KB a stage.
//
// Template parameters: BM (256 or 128: the wgmma N), STAGES, GROUP (tile rows per raster band),
// CLUSTER_N (1 or 2), B_COL, BATCHED, GROUPS (0, or the grouped form's table length). Fixed: BN = 128,
// BK = 32.
// Launch: block = (384, 1, 1), grid = (min(batches * tiles, SMs) rounded to CLUSTER_N, 1, 1); dynamic
//   shared memory hgemm_wgmma_tf32_smem_bytes<...> (Tf32Smem: STAGES * (BM + 128) * 128 + 1024 bytes);
//   extra kernel arguments: tensor maps of A (box {32, BM / CLUSTER_N}) and B (box {32, 32}; B_COL: W's
//   N x K memory, box {32, 128}), data type TFLOAT32, 128-byte swizzled (BATCHED: 3-D, boxes one
//   matrix deep; GROUPS: A 2-D over all rows, B 3-D over the groups); then batches, a_div, a_mod,
//   b_div, b_mod, c_stride (1, 1, 1, 1, 1, 0 when not BATCHED; GROUPS: groups, 1, 1, 1, groups, 0),
//   group_ends (the groups' end rows on the GPU, or counts when masked_m > 0; null: one group of M
//   rows) and masked_m.
// Preconditions: N % 4 == 0 (B_COL: any N), K % 4 == 0; a, b, c 16-byte aligned; M * N, M * K, K * N < 2^31 (per
// product); C's rows N floats long; sm_90a.
#include "../lib/barrier.cuh"
#include "../lib/raster.cuh"
#include "../lib/swizzle.cuh"
#include "../lib/tma.cuh"
#include "../lib/wgmma.cuh"
#include "hgemm_wgmma.cuh"

// Shared memory: the ring of BM x 32 A float tiles (rows of 128 bytes) and 32 x 128 B float tiles
// (4 panels of 32 columns x 32 k rows), 128-byte swizzled.
template <int BM, int STAGES>
using Tf32Smem = hgemm_wgmma::RingSmem<BM * 128, 4 * 32 * 128, STAGES>;
template <int BM, int STAGES, int GROUP, int CLUSTER_N, bool B_COL, bool BATCHED, int GROUPS>
__device__ constexpr int hgemm_wgmma_tf32_smem_bytes = Tf32Smem<BM, STAGES>::BYTES;

template <int BM, int STAGES, int GROUP, int CLUSTER_N, bool B_COL, bool BATCHED, int GROUPS>
__global__ void __cluster_dims__(CLUSTER_N, 1, 1) __launch_bounds__(384, 1)
    hgemm_wgmma_tf32(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int M,
                     int N, int K, const __grid_constant__ TensorMap tmap_a,
                     const __grid_constant__ TensorMap tmap_b, int batches, int a_div, int a_mod, int b_div,
                     int b_mod, long long c_stride, const int* __restrict__ group_ends, int masked_m) {
  using Smem = Tf32Smem<BM, STAGES>;
  constexpr int BN = 128, BK = 32;
  static_assert(BM == 256 || BM == 128, "wgmma m64n256k8 or m64n128k8");
  constexpr int A_STAGE = Smem::A_STAGE;          // BM rows of 32 floats
  constexpr int B_PANEL = BK * 128;               // 32 k rows of 32 floats
  constexpr int B_STAGE = Smem::B_STAGE;          // BN / 32 panels (B_COL: BN rows of 32 k)
  constexpr int A_PART = BM / CLUSTER_N;          // A rows this block copies (multicast)
  constexpr int NACC = BM / 2;                    // m64nBM: BM / 2 accumulators per thread
  constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
  static_assert(CLUSTER_N == 1 || CLUSTER_N == 2, "pairs of tiles at most");
  static_assert(B_STAGE == (BN / 32) * B_PANEL, "the B tile is BN / 32 panels");
  constexpr bool GROUPED = GROUPS > 0;
  static_assert(!GROUPED || (BATCHED && CLUSTER_N == 1), "groups: the batched form's B, no clusters");
  constexpr bool MAPS_3D_A = BATCHED && !GROUPED;  // GROUPED: A 2-D, the groups' rows stacked

  extern __shared__ char smem_raw[];
  char* const smem = align_1024(smem_raw);
  char* const sA = smem + Smem::A;
  char* const sB = smem + Smem::B;
  __shared__ alignas(8) unsigned long long full[STAGES], empty[STAGES];
  // GROUPED: group g's end row (its rows: group_row0(g) .. group_end[g] - 1) and its first tile
  __shared__ int group_end[GROUPED ? GROUPS : 1];
  __shared__ int group_first[GROUPS + 1];
  const int groups = GROUPED ? min(batches, GROUPS) : 1;

  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  if (threadIdx.x == 0) {
    tma_prefetch_map(&tmap_a);
    tma_prefetch_map(&tmap_b);
    init_ring_barriers<STAGES>(full, empty, 2 * CLUSTER_N);
  }
  if constexpr (GROUPED) {
    if (threadIdx.x / 32 == 1) group_table<BM>(group_end, group_first, group_ends, groups, masked_m, M, tiles_n);
  }
  sync_cta_or_cluster<CLUSTER_N>();

  const ClusterTileWalk<CLUSTER_N, false> walk(tiles_m, tiles_n);  // cluster tiles: CLUSTER_N tiles side by side in N
  const int rank = CLUSTER_N > 1 ? static_cast<int>(cluster_ctarank()) : 0;
  const int num_kt = (K + BK - 1) / BK;
  // BATCHED: cluster tile t of the walk over every product lies in product z = t / walk.count;
  // GROUPED: in the group whose first tile is the last at or before t
  const int total = GROUPED ? group_first[groups] : BATCHED ? walk.count * batches : walk.count;
  // cluster tile t, placed: product (group) z, its tile (row, column) and first row m0 of C, the row
  // its rows end at
  struct Placed {
    int z, m0, m_end;
    TileCoord tc;
  };
  auto place = [&](int t) -> Placed {
    if constexpr (GROUPED) {
      const int g = find_group(group_first, groups, t);
      const int row0 = group_row0(group_end, g, masked_m);
      const TileCoord tc = raster_grouped(t - group_first[g], (group_end[g] - row0 + BM - 1) / BM, tiles_n, GROUP);
      return {g, row0 + tc.row * BM, group_end[g], tc};
    } else {
      const int z = BATCHED ? t / walk.count : 0;
      const TileCoord tc = walk.cluster_tile(t - z * walk.count, GROUP);
      return {z, tc.row * BM, M, tc};
    }
  };

  const int wg = hgemm_wgmma::warpgroup_index();
  if (wg == 0) {
    // ---- producer ------------------------------------------------------------------------------
    setmaxnreg_dec<PRODUCER_REGS>();
    if (threadIdx.x == 0) {
      Ring<STAGES> ring;
      for (int t = walk.first(); t < total; t += walk.stride) {
        const Placed p = place(t);
        const int z = p.z, m0 = p.m0;
        const TileCoord tc = p.tc;
        const int za = z / a_div % a_mod, zb = z / b_div % b_mod;  // the matrices of A and B product z reads
        const int n0 = (tc.col * CLUSTER_N + rank) * BN;
        const int n_load = n0 < N ? n0 : tc.col * CLUSTER_N * BN;  // a block past N computes a copy
        // Boxes wholly past M (A parts) or N (B panels) are not copied: their stale rows and
        // columns only reach parts of C that are never stored. Both blocks of a cluster agree on
        // the A parts (same m0).
        const int live_a = min(CLUSTER_N, (M - m0 + A_PART - 1) / A_PART);
        const int live_b = min(BN / 32, (N - n_load + 31) / 32);
        // B_COL: one box of BN n rows, zero-filled past N (its bytes all count)
        const unsigned tx = live_a * A_PART * 128 + (B_COL ? B_STAGE : live_b * B_PANEL);
        for (int kt = 0; kt < num_kt; ++kt) {
          const int s = ring.stage;
          mbarrier_wait(&empty[s], ring.phase ^ 1);
          mbarrier_arrive_expect_tx(&full[s], tx);
          constexpr unsigned short everyone = (1u << CLUSTER_N) - 1;
          char* const a_dst = sA + s * A_STAGE + rank * A_PART * 128;
          if constexpr (CLUSTER_N > 1 && MAPS_3D_A) {
            if (rank < live_a) tma_load_3d_multicast(a_dst, &tmap_a, &full[s], kt * BK, m0 + rank * A_PART, za, everyone);
          } else if constexpr (CLUSTER_N > 1) {
            if (rank < live_a) tma_load_2d_multicast(a_dst, &tmap_a, &full[s], kt * BK, m0 + rank * A_PART, everyone);
          } else if constexpr (MAPS_3D_A) {
            tma_load_3d(a_dst, &tmap_a, &full[s], kt * BK, m0, za);
          } else {
            tma_load_2d(a_dst, &tmap_a, &full[s], kt * BK, m0);
          }
          if constexpr (B_COL) {
            if constexpr (BATCHED) {
              tma_load_3d(sB + s * B_STAGE, &tmap_b, &full[s], kt * BK, n_load, zb);
            } else {
              tma_load_2d(sB + s * B_STAGE, &tmap_b, &full[s], kt * BK, n_load);
            }
          }
#pragma unroll
          for (int p = 0; p < (B_COL ? 0 : BN / 32); ++p) {
            if (p >= live_b) continue;
            char* const b_dst = sB + s * B_STAGE + p * B_PANEL;
            if constexpr (BATCHED) {
              tma_load_3d(b_dst, &tmap_b, &full[s], n_load + 32 * p, kt * BK, zb);
            } else {
              tma_load_2d(b_dst, &tmap_b, &full[s], n_load + 32 * p, kt * BK);
            }
          }
          ring.advance();
        }
      }
      // the cluster's arrivals on this block's ring are all in before it may leave (no end barrier)
      if constexpr (CLUSTER_N > 1) drain_ring(ring, empty);
    }
  } else {
    // ---- consumers -----------------------------------------------------------------------------
    setmaxnreg_inc<CONSUMER_REGS>();
    const int cw = wg - 1;  // columns 64 cw .. 64 cw + 63 of the tile (rows of the wgmma)
    const int tid = threadIdx.x & 127;
    const int w = tid >> 5, g = (tid & 31) >> 2, t4 = tid & 3;
    // Register fragment of k8 step kk: a[0] = B(k = 8kk + t, n = 16w + g), a[1] = (t, g + 8),
    // a[2] = (t + 4, g), a[3] = (t + 4, g + 8), n relative to the slice. The slice's columns
    // 16w .. 16w + 15 lie in panel 2 cw + w / 2 at columns 16 (w % 2) + ...; row k of a panel is
    // 128 bytes, 16-byte chunk q at q ^ (k % 8), and 8 k rows further is 1024 bytes on.
    unsigned frag_off[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int k = t4 + 4 * (r >> 1), nn = 16 * (w & 1) + g + 8 * (r & 1);
      frag_off[r] = (2 * cw + (w >> 1)) * B_PANEL + k * 128 + (((nn >> 2) ^ k) << 4) + (nn & 3) * 4;
    }
    const unsigned sA_addr = smem_addr(sA);
    const char* const sB_c = sB;
    auto release = [&](int s) { release_stage<CLUSTER_N>(&empty[s], tid); };

    float acc[NACC];
    // The register operand: B^T fragments of the BK / 8 k8 steps of one K-tile, loaded only after
    // wgmma.wait_group 0 says the previous K-tile's wgmmas (which read them asynchronously) are done;
    // the other consumer's wgmmas keep the tensor cores busy meanwhile.
    unsigned frag[BK / 8][4];
    Ring<STAGES> ring;
    for (int t = walk.first(); t < total; t += walk.stride) {
      const Placed p = place(t);
      const int z = p.z, m0 = p.m0, m_end = p.m_end;  // rows m0 .. m_end - 1 are this tile's product's
      const TileCoord tc = p.tc;
      const int n0 = (tc.col * CLUSTER_N + rank) * BN;
      float* const cz = BATCHED && !GROUPED ? c + z * c_stride : c;  // product z's C (GROUPED: rows stacked)
      int prev = -1;  // stage of the previous K-tile, still to be released
      if constexpr (B_COL) {
        for (int kt = 0; kt < num_kt; ++kt) {
          // both operands from shared memory; K-tile kt - 1's wgmmas finish while kt's are issued
          mbarrier_wait(&full[ring.stage], ring.phase);
          cugemm_wgmma::fence_operands(acc);
          cugemm_wgmma::fence();
          const unsigned a_stage = sA_addr + ring.stage * A_STAGE;
          const unsigned b_rows = smem_addr(sB) + ring.stage * B_STAGE + cw * 64 * 128;  // B^T rows 64 cw ..
#pragma unroll
          for (int kk = 0; kk < BK / 8; ++kk)
            cugemm_wgmma::wgmma_tf32_ss(acc, cugemm_wgmma::make_desc_sw128(b_rows + 32 * kk),
                                        cugemm_wgmma::make_desc_sw128(a_stage + 32 * kk), (kt > 0 || kk > 0) ? 1 : 0);
          cugemm_wgmma::commit_group();
          cugemm_wgmma::wait_group<1>();  // K-tile kt - 1's wgmmas are done: its stage is free
          cugemm_wgmma::fence_operands(acc);
          if (prev >= 0) release(prev);
          prev = ring.stage;
          ring.advance();
        }
      } else {
        for (int kt = 0; kt < num_kt; ++kt) {
          mbarrier_wait(&full[ring.stage], ring.phase);
          cugemm_wgmma::wait_group<0>();  // K-tile kt - 1's wgmmas are done: fragments and stage free
          if (prev >= 0) release(prev);
          const char* const bs = sB_c + ring.stage * B_STAGE;
#pragma unroll
          for (int kk = 0; kk < BK / 8; ++kk)
#pragma unroll
            for (int r = 0; r < 4; ++r)
              frag[kk][r] = *reinterpret_cast<const unsigned*>(bs + frag_off[r] + kk * 1024);
          cugemm_wgmma::fence_operands(acc);
          cugemm_wgmma::fence();
          const unsigned a_stage = sA_addr + ring.stage * A_STAGE;
#pragma unroll
          for (int kk = 0; kk < BK / 8; ++kk)
            cugemm_wgmma::wgmma_tf32_rs(acc, frag[kk], cugemm_wgmma::make_desc_sw128(a_stage + 32 * kk),
                                        (kt > 0 || kk > 0) ? 1 : 0);
          cugemm_wgmma::commit_group();
          cugemm_wgmma::fence_operands(acc);
          prev = ring.stage;
          ring.advance();
        }
      }
      cugemm_wgmma::wait_group<0>();
      cugemm_wgmma::fence_operands(acc);
      release(prev);

      // acc[4j + 2h + e] = C(m = m0 + 8j + 2t + e, n = n0 + 64 cw + 16w + g + 8h)
      const int n_base = n0 + 64 * cw + 16 * w + g;
#pragma unroll
      for (int j = 0; j < NACC / 4; ++j) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int m = m0 + 8 * j + 2 * t4 + e;
          if (m < m_end) {
            float* const c_row = cz + static_cast<size_t>(m) * N;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const int n = n_base + 8 * h;
              if (n < N) c_row[n] = acc[4 * j + 2 * h + e];
            }
          }
        }
      }
    }
  }
  __syncwarp();
}
