// cugemm/kernels/hgemm_wgmma/06_persistent_bt.cu: Hopper HGEMM rung 8 (sm_90a), the persistent
// kernel of rung 7 (04_persistent.cu) with the operand roles swapped: each consumer computes a slab
// of C^T = B^T A^T, so the wide (N = 256) wgmma operand is the K-major A tile. Story and
// measurements: docs/hgemm_wgmma.md.
//
// C = A * B, T = half or __nv_bfloat16 in and out (row-major), fp32 accumulation, any M, N and K
// multiples of 8 (16-byte rows); tails as in 04 (zero-filled boxes, bounded TMA stores).
//
// What this rung changes: which operand is which in the wgmma. Rung 7 gives each consumer a 64 x 256
// slab of C: A (64 rows, K-major) is the narrow operand and the 256-column B tile (N-major, TRANS_B)
// the wide one. Here the block tile is 256 (M) x 128 (N) and each consumer owns 64 columns of C:
// wgmma m64n256k16 computes C^T's 64 x 256 slab, the narrow operand is B^T's 64 columns (the N-major
// panel, TRANS_A) and the wide one the 256-row A tile, K-major as in memory (cuBLAS's orientation for
// row-major products). The bytes each wgmma reads and each K-tile copies are rung 7's (A 32 KB + B
// 16 KB per stage); the transpose moves onto the small operand. The clusters pair tiles side by side
// along N, which share the A tile: each block copies half of it with multicast.
// The epilogue transposes on its way out: stmatrix .trans stores each 8 x 8 matrix of the C^T
// fragment transposed into the 128-byte-swizzled staging boxes (hgemm_wgmma.cuh:
// stage_box_stmatrix<true>), which TMA stores write to C as in rung 7.
//
// Template parameters: STAGES, GROUP (tile rows per raster band), CLUSTER_N (1 or 2), T. Fixed:
// BM = 256, BN = 128 (2 consumers x 64), BK = 64.
// Launch: block = (384, 1, 1), grid = (min(tiles, SMs) rounded to CLUSTER_N, 1, 1); dynamic shared
//   memory hgemm_wgmma_persistent_bt_smem_bytes<...> (PersistentBtSmem: STAGES * 48 KB + 32 KB +
//   1024 bytes); extra kernel arguments: tensor maps of A (box {64, 256 / CLUSTER_N}), B (box
//   {64, 64}) and C (box {64, 64}), 128-byte swizzled.
// Preconditions: N % 8 == 0, K % 8 == 0; a, b, c 16-byte aligned; M * N, M * K, K * N < 2^31; sm_90a.
#include "../lib/barrier.cuh"
#include "../lib/raster.cuh"
#include "../lib/swizzle.cuh"
#include "../lib/tma.cuh"
#include "hgemm_wgmma.cuh"

// Shared memory: the ring of 256 x 64 A and 64 x 128 B tiles, then two 64 x 64 staging boxes of C
// per consumer warpgroup.
template <int STAGES>
using PersistentBtSmem = hgemm_wgmma::RingSmem<256 * hgemm_wgmma::A_ROW_BYTES, (128 / 64) * hgemm_wgmma::B_PANEL_BYTES,
                                               STAGES, 4 * hgemm_wgmma::BOX_BYTES>;
template <int STAGES, int GROUP, int CLUSTER_N, class T>
__device__ constexpr int hgemm_wgmma_persistent_bt_smem_bytes = PersistentBtSmem<STAGES>::BYTES;

template <int STAGES, int GROUP, int CLUSTER_N, class T>
__global__ void __cluster_dims__(CLUSTER_N, 1, 1) __launch_bounds__(384, 1)
    hgemm_wgmma_persistent_bt(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N,
                              int K, const __grid_constant__ TensorMap tmap_a,
                              const __grid_constant__ TensorMap tmap_b, const __grid_constant__ TensorMap tmap_c) {
  using namespace hgemm_wgmma;
  using Smem = PersistentBtSmem<STAGES>;
  constexpr int BM = 256, BN = 128;
  constexpr int A_STAGE = Smem::A_STAGE;              // 256 rows of 64 k
  constexpr int B_STAGE = Smem::B_STAGE;              // 2 panels of 64 columns x 64 k
  constexpr int A_PART = BM / CLUSTER_N;              // A rows this block copies (multicast)
  constexpr int BOX = BOX_BYTES;                      // one 64 x 64 staging box of C
  constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
  static_assert(CLUSTER_N == 1 || CLUSTER_N == 2, "pairs of tiles at most");

  extern __shared__ char smem_raw[];
  char* const smem = align_1024(smem_raw);
  char* const sA = smem + Smem::A;
  char* const sB = smem + Smem::B;
  char* const sC = smem + Smem::EPI;  // 2 boxes per consumer warpgroup
  __shared__ alignas(8) unsigned long long full[STAGES], empty[STAGES];

  if (threadIdx.x == 0) {
    tma_prefetch_map(&tmap_a);
    tma_prefetch_map(&tmap_b);
    tma_prefetch_map(&tmap_c);
    init_ring_barriers<STAGES>(full, empty, 2 * CLUSTER_N);
  }
  sync_cta_or_cluster<CLUSTER_N>();

  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const ClusterTileWalk<CLUSTER_N, false> walk(tiles_m, tiles_n);  // cluster tiles: CLUSTER_N tiles side by side in N
  const int rank = CLUSTER_N > 1 ? static_cast<int>(cluster_ctarank()) : 0;
  const int num_kt = (K + BK - 1) / BK;

  const int wg = warpgroup_index();
  if (wg == 0) {
    // ---- producer ------------------------------------------------------------------------------
    setmaxnreg_dec<PRODUCER_REGS>();
    if (threadIdx.x == 0) {
      const unsigned long long b_policy = l2_policy_stream();  // B's L2 lines: evict_first
      Ring<STAGES> ring;
      for (int t = walk.first(); t < walk.count; t += walk.stride) {
        const TileCoord tc = walk.cluster_tile(t, GROUP);
        const int m0 = tc.row * BM;
        const int n0 = (tc.col * CLUSTER_N + rank) * BN;
        const int n_load = n0 < N ? n0 : tc.col * CLUSTER_N * BN;  // a block past N computes a copy
        // Boxes wholly past M (A parts) or N (B panels) are not copied: their stale rows and
        // columns only reach parts of C that are never stored. Both blocks agree on the A parts.
        const int live_a = min(CLUSTER_N, (M - m0 + A_PART - 1) / A_PART);
        const int live_b = min(BN / 64, (N - n_load + 63) / 64);
        const unsigned tx = live_a * A_PART * A_ROW_BYTES + live_b * B_PANEL_BYTES;
        for (int kt = 0; kt < num_kt; ++kt) {
          const int s = ring.stage;
          mbarrier_wait(&empty[s], ring.phase ^ 1);
          mbarrier_arrive_expect_tx(&full[s], tx);
          if constexpr (CLUSTER_N > 1) {
            if (rank < live_a)
              tma_load_2d_multicast(sA + s * A_STAGE + rank * A_PART * A_ROW_BYTES, &tmap_a, &full[s], kt * BK,
                                    m0 + rank * A_PART, static_cast<unsigned short>((1u << CLUSTER_N) - 1));
          } else {
            tma_load_2d(sA + s * A_STAGE, &tmap_a, &full[s], kt * BK, m0);
          }
#pragma unroll
          for (int p = 0; p < BN / 64; ++p)
            if (p < live_b)
              tma_load_2d(sB + s * B_STAGE + p * B_PANEL_BYTES, &tmap_b, &full[s], n_load + 64 * p, kt * BK,
                          b_policy);
          ring.advance();
        }
      }
      // the cluster's arrivals on this block's ring are all in before it may leave (no end barrier)
      if constexpr (CLUSTER_N > 1) drain_ring(ring, empty);
    }
  } else {
    // ---- consumers -----------------------------------------------------------------------------
    setmaxnreg_inc<CONSUMER_REGS>();
    const int cw = wg - 1;  // C columns 64 cw .. 64 cw + 63 of the tile: B panel cw
    const int tid = threadIdx.x & 127;
    const int w = tid >> 5, lane = tid & 31;
    const unsigned sA_addr = smem_addr(sA);
    const unsigned sB_addr = smem_addr(sB) + cw * B_PANEL_BYTES;
    const unsigned boxes = smem_addr(sC) + cw * 2 * BOX;
    auto release = [&](int s) { release_stage<CLUSTER_N>(&empty[s], tid); };

    float acc[128];  // C^T: acc[4j + 2h + e] = C(m0 + 8j + 2t + e, n0 + 64 cw + 16w + g + 8h)
    Ring<STAGES> ring;
    for (int t = walk.first(); t < walk.count; t += walk.stride) {
      const TileCoord tc = walk.cluster_tile(t, GROUP);
      const int m0 = tc.row * BM;
      const int n0 = (tc.col * CLUSTER_N + rank) * BN;
      // wgmma A operand: B^T's 64 columns (an N-major panel, read as a column-major "A"); B operand:
      // the 256-row A tile (K-major, read as a column-major "B"): consume_ktiles with both roles
      // swapped and both operands column-major
      consume_ktiles<T, 256, STAGES, B_STAGE, A_STAGE, true, true>(acc, ring, full, sB_addr, sA_addr, num_kt,
                                                                   release);

      // ---- epilogue: four 64 x 64 boxes (rows m0 + 64q ..), transposed by stmatrix .trans ----
      const int col0 = n0 + 64 * cw;
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const unsigned box = boxes + (q & 1) * BOX;
        if (tid == 0) tma_store_wait_read<1>();  // the store that last read this box is done reading
        named_barrier_sync(1 + cw, 128);
        stage_box_stmatrix<true, T>(box, acc, 8 * q, w, lane);
        fence_proxy_async_shared();
        named_barrier_sync(1 + cw, 128);
        if (tid == 0) {
          if (m0 + 64 * q < M && col0 < N)
            tma_store_2d(&tmap_c, sC + cw * 2 * BOX + (q & 1) * BOX, col0, m0 + 64 * q);
          tma_store_commit();  // a group even when empty: the wait above counts groups
        }
      }
    }
    if (tid == 0) tma_store_wait<0>();
  }
  __syncwarp();
}
