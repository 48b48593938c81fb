// cugemm/kernels/hgemm_wgmma/05_tf32.cu: the TF32 sibling of the persistent warp-specialized
// Hopper GEMM (04_persistent.cu): float32 in and out, TF32 multiplies rounded to nearest by the
// copy engine, fp32 accumulation (sm_90a).
//
// C = A * B, row-major float32, any M, and N, K multiples of 4 (16-byte rows).
//
// Structure: 04's (persistent grid walking tiles in grouped order, a producer warpgroup issuing
// TMA copies into a STAGES-deep ring with FULL / EMPTY mbarriers, two consumer warpgroups,
// setmaxnreg 40 / 232, optional clusters with multicast). What differs, and why:
//  1. The operand roles. wgmma reads TF32 operands from shared memory only K-major, and B (K x N,
//     row-major) is N-major; so, as in kernels/sgemm_tf32/03 and 04, each consumer computes a
//     slice of C^T = B^T A^T: the wgmma A operand (64 rows of n x 8 k) comes from registers,
//     loaded from the B tile (4 scalar shared loads per k8 step and thread), and the wgmma B
//     operand is the A tile, K-major as it is in memory (rows of 32 floats = 128 bytes, swizzled).
//     wgmma m64n256k8: the block tile is 256 (M: the wgmma N) x 128 (N: two consumers of 64 n).
//  2. The rounding. cuBLAS rounds both operands to TF32 (round to nearest; the tensor cores
//     themselves truncate, which gives a relative error of ~4.7e-4 instead of ~2.9e-4 at 4096^3).
//     Here the tensor maps of A and B have the data type CU_TENSOR_MAP_DATA_TYPE_TFLOAT32, for
//     which the copy engine rounds every float32 it loads to TF32 on its way into shared memory:
//     the rounding costs no instruction and no extra pass over shared memory (the zoo's rounding
//     rung, kernels/sgemm_tf32/04, spends a producer pass of 64 KB per K-tile on it).
//  3. The B tile is stored as 32-column panels of 32 k rows, 128-byte swizzled (TMA box {32, 32}):
//     the register-fragment loads (lanes g = 0..7 along n, t = 0..3 along k) then hit 16 banks
//     twice instead of 8 banks four times (plain rows of 512 bytes).
//  4. Clusters (CLUSTER_N = 2) pair tiles side by side along N: they share the A tile (32 KB of
//     the 48 KB per K-tile), each block copies half of it with multicast.
//  5. The epilogue stores C^T's fragments straight to global memory, bounded (8 lanes of equal t
//     write one 32-byte sector of a row): the block tile is 256 x 128 and K-tiles are 32 deep, so
//     the mainloop of a tile is long compared with its stores.
//
// Measured on an H100 SXM (2026-11-23, bench.py --dtype tf32: cupy.matmul with CUPY_TF32=1 in the
// same run), CLUSTER_N = 2: 396 TFLOP/s (99.8%) at 4096^3, 348 (96.7%) at 8192^3 (an earlier run:
// 402 (99.0%), 379 (103.5%)); CLUSTER_N = 1: 375 (94%), 328 (91%). Relative error 2.9e-4 at 4096^3
// and 8192^3, the same as cupy.matmul TF32 (truncation gives 4.7e-4). The zoo's rounding rung
// (kernels/sgemm_tf32/04) measured 63% of cuBLAS TF32.
//
// Template parameters: STAGES, GROUP (tile rows per raster band), CLUSTER_N (1 or 2). Fixed: BM =
// 256, BN = 128, BK = 32.
// Launch: block = (384, 1, 1), grid = (min(tiles, SMs) rounded to CLUSTER_N, 1, 1); dynamic shared
//   memory hgemm_wgmma_tf32_smem_bytes<...> = STAGES * 48 KB + 1024 bytes; extra kernel
//   arguments: tensor maps of A (box {32, 256 / CLUSTER_N}) and B (box {32, 32}), data type
//   TFLOAT32, 128-byte swizzled.
// Preconditions: N % 4 == 0, K % 4 == 0; a, b, c 16-byte aligned; M * N, M * K, K * N < 2^31; sm_90a.
#include "../lib/barrier.cuh"
#include "../lib/raster.cuh"
#include "../lib/swizzle.cuh"
#include "../lib/tma.cuh"
#include "../lib/wgmma.cuh"
#include "hgemm_wgmma.cuh"

template <int STAGES, int GROUP, int CLUSTER_N>
__device__ constexpr int hgemm_wgmma_tf32_smem_bytes = STAGES * (256 * 128 + 4 * 32 * 128) + 1024;

template <int STAGES, int GROUP, int CLUSTER_N>
__global__ void __cluster_dims__(CLUSTER_N, 1, 1) __launch_bounds__(384, 1)
    hgemm_wgmma_tf32(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int M,
                     int N, int K, const __grid_constant__ TensorMap tmap_a,
                     const __grid_constant__ TensorMap tmap_b) {
  constexpr int BM = 256, BN = 128, BK = 32;
  constexpr int A_STAGE = BM * 128;               // 256 rows of 32 floats
  constexpr int B_PANEL = BK * 128;               // 32 k rows of 32 floats
  constexpr int B_STAGE = (BN / 32) * B_PANEL;
  constexpr int A_PART = BM / CLUSTER_N;          // A rows this block copies (multicast)
  constexpr int NACC = BM / 2;                    // m64n256: 128 accumulators per thread
  constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
  static_assert(CLUSTER_N == 1 || CLUSTER_N == 2, "pairs of tiles at most");
  static_assert(hgemm_wgmma_tf32_smem_bytes<STAGES, GROUP, CLUSTER_N> == STAGES * (A_STAGE + B_STAGE) + 1024,
                "the declared dynamic shared memory is the ring plus the alignment slack");

  extern __shared__ char smem_raw[];
  char* const sA = align_1024(smem_raw);
  char* const sB = sA + STAGES * A_STAGE;
  __shared__ alignas(8) unsigned long long full[STAGES], empty[STAGES];

  if (threadIdx.x == 0) {
    tma_prefetch_map(&tmap_a);
    tma_prefetch_map(&tmap_b);
    init_ring_barriers<STAGES>(full, empty, 2 * CLUSTER_N);
  }
  sync_cta_or_cluster<CLUSTER_N>();

  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const ClusterTileWalk<CLUSTER_N, false> walk(tiles_m, tiles_n);  // cluster tiles: CLUSTER_N tiles side by side in N
  const int rank = CLUSTER_N > 1 ? static_cast<int>(cluster_ctarank()) : 0;
  const int num_kt = (K + BK - 1) / BK;

  const int wg = hgemm_wgmma::warpgroup_index();
  if (wg == 0) {
    // ---- producer ------------------------------------------------------------------------------
    setmaxnreg_dec<PRODUCER_REGS>();
    if (threadIdx.x == 0) {
      Ring<STAGES> ring;
      for (int t = walk.first(); t < walk.count; t += walk.stride) {
        const TileCoord tc = walk.cluster_tile(t, GROUP);
        const int m0 = tc.row * BM;
        const int n0 = (tc.col * CLUSTER_N + rank) * BN;
        const int n_load = n0 < N ? n0 : tc.col * CLUSTER_N * BN;  // a block past N computes a copy
        // Boxes wholly past M (A parts) or N (B panels) are not copied: their stale rows and
        // columns only reach parts of C that are never stored. Both blocks of a cluster agree on
        // the A parts (same m0).
        const int live_a = min(CLUSTER_N, (M - m0 + A_PART - 1) / A_PART);
        const int live_b = min(BN / 32, (N - n_load + 31) / 32);
        const unsigned tx = live_a * A_PART * 128 + live_b * B_PANEL;
        for (int kt = 0; kt < num_kt; ++kt) {
          const int s = ring.stage;
          mbarrier_wait(&empty[s], ring.phase ^ 1);
          mbarrier_arrive_expect_tx(&full[s], tx);
          if constexpr (CLUSTER_N > 1) {
            if (rank < live_a)
              tma_load_2d_multicast(sA + s * A_STAGE + rank * A_PART * 128, &tmap_a, &full[s], kt * BK,
                                    m0 + rank * A_PART, static_cast<unsigned short>((1u << CLUSTER_N) - 1));
          } else {
            tma_load_2d(sA + s * A_STAGE, &tmap_a, &full[s], kt * BK, m0);
          }
#pragma unroll
          for (int p = 0; p < BN / 32; ++p)
            if (p < live_b)
              tma_load_2d(sB + s * B_STAGE + p * B_PANEL, &tmap_b, &full[s], n_load + 32 * p, kt * BK);
          ring.advance();
        }
      }
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
    // The register operand: B^T fragments of the BK / 8 k8 steps of one K-tile. A wgmma reads its
    // register operand asynchronously and ptxas does not keep those registers from being
    // rewritten by later loads (a version that loaded K-tile kt + 1's fragments while K-tile kt's
    // wgmmas ran, double-buffered, computed wrong products or had every wgmma serialised), so as
    // in kernels/sgemm_tf32/04 a K-tile's fragments are loaded only after wgmma.wait_group 0 says
    // the previous K-tile's wgmmas are done. The other consumer warpgroup's wgmmas keep the
    // tensor cores busy meanwhile.
    unsigned frag[BK / 8][4];
    Ring<STAGES> ring;
    for (int t = walk.first(); t < walk.count; t += walk.stride) {
      const TileCoord tc = walk.cluster_tile(t, GROUP);
      const int m0 = tc.row * BM;
      const int n0 = (tc.col * CLUSTER_N + rank) * BN;
      int prev = -1;  // stage of the previous K-tile, still to be released
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
          if (m < M) {
            float* const c_row = c + static_cast<size_t>(m) * N;
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
  if constexpr (CLUSTER_N > 1) {
    cluster_sync();
  }
}
