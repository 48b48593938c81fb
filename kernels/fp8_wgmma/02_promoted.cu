// cugemm/kernels/fp8_wgmma/02_promoted.cu: FP8 rung 3 (sm_90a): the partial sums promoted into fp32
// registers every K-tile, with per-tensor, per-row or block scales (the block recipe DeepSeek-V3 /
// DeepGEMM published; cuBLASLt's default, non-"fast" FP8 accumulation promotes likewise).
//
// What it adds over rungs 1-2 (01_scaled.cu), which sum all of K inside the tensor cores: Hopper's
// FP8 wgmma adds its products into the accumulators with fewer mantissa bits than fp32, an error
// that grows with K (docs/fp8_wgmma.md: 1.3e-3 against 1.3e-4 in fp32 out at K = 4096). Here a
// K-tile's four wgmma m64nBNk32 overwrite a partial accumulator (scale-d = 0 on the first), the
// consumer waits for them (wait_group 0), releases the stage and adds the partial into the fp32
// total with FADD / FFMA: no more than 128 products ever sum inside the tensor cores.
// SCALE = 0 (per-tensor) and 1 (per-row / per-column): total += partial, scaled in the epilogue as
//   in rungs 1-2.
// SCALE = 2 (block): a scale for every 1 x 128 block of A (row m, k values 128 kb .. 128 kb + 127:
//   scale_a[m * sa_m + kb * sa_k]) and every 128 x 128 block of B (k block kb, columns 128 nb ..:
//   scale_b[kb * sb_k + nb * sb_n]), any strides: total += partial * scale_a * scale_b, the scales
//   loaded two K-tiles ahead into two register slots (K-tile j's in slot j % 2) and used in place.
// The price: two sets of accumulators (BN <= 192) and a pipeline that drains every K-tile; the other
// consumer warpgroup (BM = 128) keeps the tensor cores busy meanwhile. A K tail is zero-filled by the
// copy engine (its block's scale multiplies zeros).
// Producer, walk, clusters and epilogue (scales, bias, TMA stores) are rungs 1-2's (fp8_wgmma.cuh).
// PIPE > 1: the K loop runs in trips of PIPE K-tiles, two partial sums in turn inside a trip, K-tile
//   kt issued into one while K-tile kt - 1 in the other is waited for (wait_group 1) and added, so the
//   tensor cores drain once a trip instead of once a K-tile (three sets of accumulators, BN <= 128).
//   A trip is straight-line code and ends drained: ptxas serialises every wgmma of a kernel in which a
//   partial issued in one trip of a loop is read after a wait_group 1 in the next (the kernel's first
//   form did that: 1030 TFLOP/s at 4096^3 against 1218-1237 after, docs/fp8_wgmma.md).
// Template parameters: BM (64: one consumer warpgroup, 128: two), BN (64, 128, 192: a tile's columns
//   lie in at most two 128-column blocks of B's scales), STAGES, GROUP, CLUSTER_M (1, 2), SCALE, PIPE (1, 2, 4, 8),
//   TA, TB, TC.
// Launch: block = (128 + BM * 2, 1, 1), grid = (min(tiles, SMs) rounded to CLUSTER_M, 1, 1), dynamic
//   shared memory fp8_wgmma_promoted_smem_bytes<...>; extra arguments: the maps and ldc of
//   01_scaled.cu, then scale_a, sa_m, sa_k, scale_b, sb_k, sb_n (float pointers and, for block scales, strides in
//   elements; a null pointer is a scale of 1 everywhere), bias (N floats or null).
// Preconditions: 01_scaled.cu's.
#include "fp8_wgmma.cuh"

template <int BM, int BN, int STAGES, int GROUP, int CLUSTER_M, int SCALE, int PIPE, class TA, class TB, class TC>
__device__ constexpr int fp8_wgmma_promoted_smem_bytes = fp8_wgmma::Smem<BM, BN, STAGES>::BYTES;

template <int BM, int BN, int STAGES, int GROUP, int CLUSTER_M, int SCALE, int PIPE, class TA, class TB, class TC>
__global__ void __cluster_dims__(CLUSTER_M, 1, 1) __launch_bounds__(128 + 2 * BM, 1)
    fp8_wgmma_promoted(const TA* __restrict__ a, const TB* __restrict__ b, TC* __restrict__ c, int M, int N,
                          int K, const __grid_constant__ TensorMap tmap_a, const __grid_constant__ TensorMap tmap_b,
                          const __grid_constant__ TensorMap tmap_c, int ldc, const float* __restrict__ scale_a, int sa_m,
                          int sa_k, const float* __restrict__ scale_b, int sb_k, int sb_n,
                          const float* __restrict__ bias) {
  using namespace fp8_wgmma;
  using S = Smem<BM, BN, STAGES>;
  constexpr int CONSUMERS = BM / 64;
  static_assert(BM == 64 || BM == 128, "one or two consumer warpgroups of 64 rows");
  static_assert(BN == 64 || BN == 128 || BN == 192, "BN: two sets of accumulators (three with PIPE > 1) in 232 registers");
  static_assert(SCALE >= 0 && SCALE <= 2, "SCALE: 0 per-tensor, 1 per-row / per-column, 2 block");
  static_assert(PIPE == 1 || PIPE == 2 || PIPE == 4 || PIPE == 8, "PIPE: K-tiles per trip, a power of two up to 8");
  static_assert(PIPE == 1 || BN <= 128, "PIPE > 1: three sets of accumulators");
  constexpr bool BLOCKS = SCALE == 2;
  static_assert(CLUSTER_M == 1 || CLUSTER_M == 2, "clusters of 1 or 2 blocks along M");
  // registers: 128 x 40 + CONSUMERS x 128 x CONSUMER_REGS <= 65536
  constexpr int CONSUMER_REGS = CONSUMERS == 2 ? 232 : 240;

  extern __shared__ char smem_raw[];
  char* const smem = align_1024(smem_raw);
  char* const sA = smem + S::A;
  char* const sB = smem + S::B;
  __shared__ alignas(8) unsigned long long full[STAGES], empty[STAGES];
  start_block<STAGES, CLUSTER_M>(&tmap_a, &tmap_b, &tmap_c, ldc == 0, full, empty, CONSUMERS);

  const int wg = hgemm_wgmma::warpgroup_index();
  if (wg == 0) {
    setmaxnreg_dec<40>();
    if (threadIdx.x == 0) produce<BM, BN, STAGES, GROUP, CLUSTER_M>(&tmap_a, &tmap_b, full, empty, sA, sB, M, N, K);
  } else {
    setmaxnreg_inc<CONSUMER_REGS>();
    const int cw = wg - 1, tid = threadIdx.x & 127;
    const unsigned sA_addr = smem_addr(sA) + cw * 64 * ROW_BYTES, sB_addr = smem_addr(sB);
    char* const boxes = smem + S::EPI + cw * 2 * BOX_BYTES;
    const ClusterTileWalk<CLUSTER_M, true> walk((M + BM - 1) / BM, (N + BN - 1) / BN);
    const int rank = CLUSTER_M > 1 ? static_cast<int>(cluster_ctarank()) : 0;
    const int num_kt = (K + BK - 1) / BK;
    grid_dependency_wait();  // the scales may come from the kernel before (a quantiser)
    // rungs 1-2's epilogue scale (per-tensor: one product; block scales: applied in the K loop)
    const float s = SCALE == 0 ? (scale_a != nullptr ? *scale_a : 1.f) * (scale_b != nullptr ? *scale_b : 1.f) : 1.f;
    // BLOCKS: a null scale pointer is read as fp8_wgmma::kUnitScale with strides 0 (loads, no branches)
    const float* const sa_base = scale_a != nullptr ? scale_a : &kUnitScale;
    const float* const sb_base = scale_b != nullptr ? scale_b : &kUnitScale;
    const int sam = scale_a != nullptr ? sa_m : 0, sak = scale_a != nullptr ? sa_k : 0;
    const int sbk = scale_b != nullptr ? sb_k : 0, sbn = scale_b != nullptr ? sb_n : 0;
    float total[BN / 2], part[BN / 2], part2[BN / 2];  // part2: PIPE > 1 only
    Ring<STAGES> ring;
    int flip = 0;  // the staging box the next store takes
    for (int k = 0, t; (t = walk.nth(k, false)) < walk.count; ++k) {
      const Placed p = place<BM, BN, CLUSTER_M, GROUP>(walk, t, rank, M);
      const int row0 = p.m0 + 64 * cw;
      const int row = row0 + 16 * (tid >> 5) + ((tid & 31) >> 2), col = p.n0 + 2 * (tid & 3);
      prefetch_epilogue<BN>(SCALE == 1 ? scale_a : nullptr, SCALE == 1 ? scale_b : nullptr, bias, row, p.n0, M, N,
                            tid & 31);
      // BLOCKS: this thread's rows' scales (rows past M read the last row's: never stored) and those
      // of the one or two 128-column blocks the tile's columns lie in (columns bnd .. BN - 1 of the
      // tile in the second; a second block past N is read as the last one: never stored), k block by
      // k block
      const float* const sa0 = sa_base + static_cast<size_t>(min(row, M - 1)) * sam;
      const float* const sa1 = sa_base + static_cast<size_t>(min(row + 8, M - 1)) * sam;
      const int nb0 = p.n0 / 128, bnd = 128 - p.n0 % 128;
      const float* const sb0 = sb_base + static_cast<size_t>(nb0) * sbn;
      const float* const sb1 = sb_base + static_cast<size_t>(min(nb0 + 1, (N - 1) / 128)) * sbn;
      // the raw values {a0, a1, b0, b1} of k block kb (past the last: the last's, never used): their
      // products are formed at the promotion (an instruction using a loaded value here would wait for
      // the load). No branch: a branch around the loads splits a trip's straight-line code
      auto load_scales = [&](int kb, float (&to)[4]) {
        kb = min(kb, num_kt - 1);
        to[0] = sa0[kb * sak], to[1] = sa1[kb * sak];
        to[2] = sb0[kb * sbk], to[3] = BN > 64 ? sb1[kb * sbk] : to[2];
      };
      // the K-tile in stage st into acc (four wgmma m64nBNk32, the first overwriting)
      auto issue = [&](float (&acc)[BN / 2], int st) {
        hgemm_wgmma::begin_group(acc);
        hgemm_wgmma::mma_ktile<TA, BN, false, true, false, TB>(acc, sA_addr + st * S::A_STAGE,
                                                              sB_addr + st * S::B_STAGE, false);
        hgemm_wgmma::end_group(acc);
      };
      // total += acc (times its k block's scales sc: BLOCKS), acc final (its group waited for). The
      // 8-column groups j >= bnd / 8 lie in the second column block; bnd is 64 or 128 (tiles start
      // at multiples of 64), so each case is its own unrolled code, without a select per element.
      auto promote_split = [&](const float (&acc)[BN / 2], const float (&sc)[4], auto split) {
        constexpr int J2 = decltype(split)::value;  // the first group in the second block
#pragma unroll
        for (int j = 0; j < BN / 8; ++j)
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            if constexpr (BLOCKS) {
              total[4 * j + i] = fmaf(acc[4 * j + i], sc[(j >= J2 ? 2 : 0) + (i >> 1)], total[4 * j + i]);
            } else {
              total[4 * j + i] += acc[4 * j + i];
            }
          }
      };
      auto promote = [&](const float (&acc)[BN / 2], const float (&raw)[4]) {
        const float sc[4] = {raw[0] * raw[2], raw[1] * raw[2], raw[0] * raw[3], raw[1] * raw[3]};
        if constexpr (BLOCKS && BN > 128) {  // 128 x 192 tiles: a split at 64 or 128 columns
          if (bnd == 64) {
            promote_split(acc, sc, hgemm_wgmma::Cols<8>{});
          } else {
            promote_split(acc, sc, hgemm_wgmma::Cols<16>{});
          }
        } else {  // no second block (128-column tiles start at multiples of 128)
          promote_split(acc, sc, hgemm_wgmma::Cols<BN / 8>{});
        }
      };
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) total[i] = 0.f;
      // the scales in two slots, K-tile j's in slot j % 2, loaded two K-tiles before they are used
      // and used in place (a register copy of a loaded value would wait for the load): the K loops
      // run two K-tiles per trip, so that each slot is a fixed register set
      float qa[4] = {1.f, 1.f, 1.f, 1.f}, qb[4] = {1.f, 1.f, 1.f, 1.f};
      if constexpr (BLOCKS) {
        load_scales(0, qa);
        load_scales(1, qb);
      }
      auto reload = [&](int kb, float (&slot)[4]) {
        if constexpr (BLOCKS) load_scales(kb, slot);
      };
      // One trip of U K-tiles from K-tile kt (ODD: kt is odd), straight-line code: K-tile kt + u is
      // issued into one partial while K-tile kt + u - 1, in the other, is waited for (wait_group 1),
      // released and promoted, so the tensor cores always hold this warpgroup's next K-tile; the trip
      // ends drained (wait_group 0). No wgmma group is in flight across the K loop's back edge:
      // ptxas follows a wait_group 1 in straight-line code only, and a partial issued in one trip of
      // a loop and read after a wait_group 1 in the next made it serialise every wgmma of the kernel
      // (C7514; tests/test_compile.py checks the SASS of every wgmma kernel). U = 1: issue, wait, promote.
      auto trip = [&](int kt, auto u_count, auto odd) {
        constexpr int U = decltype(u_count)::value;
        constexpr int ODD = decltype(odd)::value;
        // K-tile kt + j (in part for even j, part2 for odd j; its scales in slot (j + ODD) % 2), its
        // group waited for: release its stage, promote it, load the scales of K-tile kt + j + 2
        auto finish = [&](int j, int stage) {
          float(&last)[BN / 2] = (j & 1) ? part2 : part;
          float(&slot)[4] = ((j + ODD) & 1) ? qb : qa;
          cugemm_wgmma::fence_operands(last);
          release_stage<CLUSTER_M>(&empty[stage], tid);
          promote(last, slot);
          reload(kt + j + 2, slot);
        };
        int prev = ring.stage;  // the stage of the K-tile in flight
        mbarrier_wait(&full[prev], ring.phase);
        issue(part, prev);
        ring.advance();
#pragma unroll
        for (int u = 1; u < U; ++u) {  // K-tile kt + u - 1 is in part (u odd) or part2 (u even)
          const int st = ring.stage;
          mbarrier_wait(&full[st], ring.phase);
          if (u & 1) {
            issue(part2, st);
          } else {
            issue(part, st);
          }
          cugemm_wgmma::wait_group<1>();
          finish(u - 1, prev);
          prev = st;
          ring.advance();
        }
        cugemm_wgmma::wait_group<0>();
        finish(U - 1, prev);
      };
      using Even = hgemm_wgmma::Cols<0>;
      using Odd = hgemm_wgmma::Cols<1>;
      int kt = 0;
      if constexpr (PIPE == 1) {  // two trips of one K-tile per loop trip: the scale slots alternate
        for (; kt + 1 < num_kt; kt += 2) {
          trip(kt, hgemm_wgmma::Cols<1>{}, Even{});
          trip(kt + 1, hgemm_wgmma::Cols<1>{}, Odd{});
        }
      } else {
        for (; kt + PIPE <= num_kt; kt += PIPE) trip(kt, hgemm_wgmma::Cols<PIPE>{}, Even{});
        // the rest in trips of PIPE / 2, PIPE / 4, ... K-tiles (each starts at an even K-tile)
        if constexpr (PIPE >= 8) {
          if (kt + 4 <= num_kt) trip(kt, hgemm_wgmma::Cols<4>{}, Even{}), kt += 4;
        }
        if constexpr (PIPE >= 4) {
          if (kt + 2 <= num_kt) trip(kt, hgemm_wgmma::Cols<2>{}, Even{}), kt += 2;
        }
      }
      if (kt < num_kt) trip(kt, hgemm_wgmma::Cols<1>{}, Even{});
      float rs[2] = {s, s};  // the epilogue's row scales (per-row: scale_a's)
      if constexpr (SCALE == 1) {
#pragma unroll
        for (int h = 0; h < 2; ++h) rs[h] = row + 8 * h < M && scale_a != nullptr ? scale_a[row + 8 * h] : 1.f;
      }
      // the whole slab's column scales and bias at once (the partials' registers are free now: one
      // trip to L2 instead of one per staging box)
      scale_cols<BN / 8>(total, 0, rs, SCALE == 1 ? scale_b : nullptr, bias, col, N);
      store_slab_staged<TC>(total, boxes, flip, &tmap_c, c, ldc, row0, p.n0, M, N, 1 + cw, tid, [](int, auto) {});
    }
    if (tid == 0 && ldc == 0) tma_store_wait<0>();
  }
  __syncwarp();
}
