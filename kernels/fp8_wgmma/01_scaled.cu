// cugemm/kernels/fp8_wgmma/01_scaled.cu: FP8 rungs 1 and 2 (sm_90a): C = (A * B) * scales + bias
// with 8-bit A and B (e4m3 or e5m2 each), fp32 accumulation in the tensor cores, and the scales
// applied once, in the epilogue (story: docs/fp8_wgmma.md).
//
// The kernel is the Hopper fp16 ladder's top structure (hgemm_wgmma rung 7, 04_persistent.cu) with
// 8-bit operands: a producer warpgroup whose thread 0 issues TMA copies (fp8_wgmma::produce), two
// consumer warpgroups of 64 x BN slabs (wgmma m64nBNk32, four per 128-deep K-tile), FULL / EMPTY
// mbarriers around a STAGES-deep ring, setmaxnreg 40 / 232, one block per SM walking the tiles in
// grouped order, clusters of CLUSTER_M blocks along M sharing B by multicast, and an epilogue
// through swizzled staging boxes and TMA stores that overlap the next tile's mainloop.
// Rung 1 (ROW = false): per-tensor scales, s = scale_a[0] * scale_b[0] (a null pointer is 1).
// Rung 2 (ROW = true): per-row scales of A (scale_a: M floats) and per-column scales of B (scale_b:
//   N floats): C[m][n] = acc * scale_a[m] * scale_b[n], read in the epilogue (a null pointer: 1s).
// Either: + bias[n] (N floats, or null) after the scale, then rounded to TC.
// The accumulation stays in the wgmma accumulators over all of K (Hopper's FP8 tensor cores add
// with fewer mantissa bits than fp32: docs/fp8_wgmma.md measures it; rung 3, 02_promoted.cu,
// promotes every K-tile into fp32 registers).
// Template parameters: BM (128), BN (128, 256), STAGES, GROUP (tile rows per raster band, in cluster
//   tiles), CLUSTER_M (1, 2), ROW, TA, TB (fp8_e4m3, fp8_e5m2), TC (__nv_bfloat16, half, float).
// Launch: block = (384, 1, 1), grid = (min(tiles, SMs) rounded to CLUSTER_M, 1, 1), dynamic shared
//   memory fp8_wgmma_scaled_smem_bytes<...>; extra arguments: maps of A (box {128, BM}), of B's
//   N x K memory (box {128, BN / CLUSTER_M}) and of C (box {128 / sizeof(TC), 64}), all 128-byte
//   swizzled, then ldc (0: C through its map; else C's row stride in elements, C written by the
//   consumers from the staging boxes, any alignment, its map unused), then scale_a, scale_b, bias
//   (device pointers to float; null: 1, 1, no bias).
// Preconditions: K % 16 == 0 (16-byte rows of A and B), a, b 16-byte aligned; with ldc = 0 C's rows
//   16-byte multiples (N % 8 == 0 for 16-bit TC, N % 4 for float) and c 16-byte aligned; any M, N,
//   K (the copy engine zero-fills past the edges, the stores are bounded); M * K, N * K, M * N < 2^31.
#include "fp8_wgmma.cuh"

template <int BM, int BN, int STAGES, int GROUP, int CLUSTER_M, bool ROW, class TA, class TB, class TC>
__device__ constexpr int fp8_wgmma_scaled_smem_bytes = fp8_wgmma::Smem<BM, BN, STAGES>::BYTES;

template <int BM, int BN, int STAGES, int GROUP, int CLUSTER_M, bool ROW, class TA, class TB, class TC>
__global__ void __cluster_dims__(CLUSTER_M, 1, 1) __launch_bounds__(128 + 2 * BM, 1)
    fp8_wgmma_scaled(const TA* __restrict__ a, const TB* __restrict__ b, TC* __restrict__ c, int M, int N, int K,
                     const __grid_constant__ TensorMap tmap_a, const __grid_constant__ TensorMap tmap_b,
                     const __grid_constant__ TensorMap tmap_c, int ldc, const float* __restrict__ scale_a,
                     const float* __restrict__ scale_b, const float* __restrict__ bias) {
  using namespace fp8_wgmma;
  using S = Smem<BM, BN, STAGES>;
  static_assert(BM == 128, "two consumer warpgroups of 64 rows");
  static_assert(BN == 128 || BN == 256, "BN: a wgmma N of whole 64-column staging boxes");
  static_assert(CLUSTER_M == 1 || CLUSTER_M == 2, "clusters of 1 or 2 blocks along M");

  extern __shared__ char smem_raw[];
  char* const smem = align_1024(smem_raw);
  char* const sA = smem + S::A;
  char* const sB = smem + S::B;
  __shared__ alignas(8) unsigned long long full[STAGES], empty[STAGES];
  start_block<STAGES, CLUSTER_M>(&tmap_a, &tmap_b, &tmap_c, ldc == 0, full, empty, 2);

  const int wg = hgemm_wgmma::warpgroup_index();
  if (wg == 0) {
    setmaxnreg_dec<40>();
    if (threadIdx.x == 0) produce<BM, BN, STAGES, GROUP, CLUSTER_M>(&tmap_a, &tmap_b, full, empty, sA, sB, M, N, K);
  } else {
    setmaxnreg_inc<232>();
    const int cw = wg - 1, tid = threadIdx.x & 127;
    const unsigned sA_addr = smem_addr(sA) + cw * 64 * ROW_BYTES, sB_addr = smem_addr(sB);
    char* const boxes = smem + S::EPI + cw * 2 * BOX_BYTES;
    const ClusterTileWalk<CLUSTER_M, true> walk((M + BM - 1) / BM, (N + BN - 1) / BN);
    const int rank = CLUSTER_M > 1 ? static_cast<int>(cluster_ctarank()) : 0;
    const int num_kt = (K + BK - 1) / BK;
    grid_dependency_wait();  // the scales may come from the kernel before (a quantiser)
    const float s = ROW ? 1.f : (scale_a != nullptr ? *scale_a : 1.f) * (scale_b != nullptr ? *scale_b : 1.f);
    auto release = [&](int st) { release_stage<CLUSTER_M>(&empty[st], tid); };
    float acc[BN / 2];
    Ring<STAGES> ring;
    int flip = 0;  // the staging box the next store takes
    for (int k = 0, t; (t = walk.nth(k, false)) < walk.count; ++k) {
      const Placed p = place<BM, BN, CLUSTER_M, GROUP>(walk, t, rank, M);
      prefetch_epilogue<BN>(ROW ? scale_a : nullptr, ROW ? scale_b : nullptr, bias,
                            p.m0 + 64 * cw + 16 * (tid >> 5) + ((tid & 31) >> 2), p.n0, M, N, tid & 31);
      hgemm_wgmma::consume_ktiles<TA, BN, STAGES, S::A_STAGE, S::B_STAGE, false, true, false, TB>(
          acc, ring, full, sA_addr, sB_addr, num_kt, release);
      const int row0 = p.m0 + 64 * cw;
      const int row = row0 + 16 * (tid >> 5) + ((tid & 31) >> 2), col = p.n0 + 2 * (tid & 3);
      float rs[2] = {s, s};  // the scales of this thread's two rows
      if constexpr (ROW) {
#pragma unroll
        for (int h = 0; h < 2; ++h) rs[h] = row + 8 * h < M && scale_a != nullptr ? scale_a[row + 8 * h] : 1.f;
      }
      store_slab_staged<TC>(acc, boxes, flip, &tmap_c, c, ldc, row0, p.n0, M, N, 1 + cw, tid, [&](int box, auto jn) {
        scale_cols<decltype(jn)::value>(acc, box * decltype(jn)::value, rs, ROW ? scale_b : nullptr, bias, col, N);
      });
    }
    if (tid == 0 && ldc == 0) tma_store_wait<0>();  // the last stores have written C
  }
  __syncwarp();
}
