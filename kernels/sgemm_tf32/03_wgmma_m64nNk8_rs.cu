// cugemm/kernels/sgemm_tf32/03_wgmma_m64nNk8_rs.cu: TF32 tensor-core SGEMM through Hopper wgmma
// (sm_90a), the rung above 02_mma_m16n8k8_stages.cu. Story and measurements: docs/sgemm_tf32.md.
//
// C = A * B, float32 in and out, row-major: A is M x K, B is K x N, C is M x N (overwritten).
// The multiplies are TF32 (tensor cores), the accumulation fp32.
//
// What it adds over 02 (mma.sync m16n8k8, one warp per 16 x 8 x 8):
//  1. wgmma.mma_async m64nNk8 (HGMMA in SASS): one warpgroup (128 threads) issues a 64 x BM x 8
//     product per instruction, asynchronously; the tensor cores read one operand straight from
//     shared memory, so no per-warp fragment traffic for it.
//  2. Roles swapped. wgmma .tf32 needs its shared-memory operands K-major (no transpose for 32-bit
//     types), and B (K x N row-major) is N-major. So each warpgroup computes a slice of
//     C^T = B^T * A^T: the wgmma "A" (64 x 8, from registers) is a 64-column slice of B, transposed,
//     which each thread loads with plain LDS from a row-major B tile; the wgmma "B" (8 x BM, shared
//     memory) is A^T, whose K-major form is A row-major, as it comes from global memory. The
//     accumulators hold C^T and the epilogue writes them transposed.
//  3. The A tile is copied (cp.async, 16 bytes) straight into the 128-byte swizzle layout the
//     descriptor names: BK = 32 fp32 = one 128-byte row per m, 16-byte chunk c of row r at chunk
//     c ^ (r % 8), each 8-row atom 1024-byte aligned (the base is rounded up at run time).
//  4. Pipeline: a STAGES-deep cp.async ring, prefetch distance STAGES - 2, and each K-tile's wgmma
//     group left in flight across the next K-tile's barrier and copy issue: at K-tile kt a
//     warpgroup waits for its K-tile kt - 1 group (wgmma.wait_group 0) only right before it
//     overwrites the fragment registers. No ordinary instruction may write a pending wgmma's input
//     or accumulator registers (ptxas would serialise every wgmma: C7513 / C7515), which also rules
//     out a zero-trip path around the K loop (hence the do-while).
// A_ROUND, the rounding of the shared-memory operand A (the register operand B is always rounded
// with cvt.rna): 0 not rounded (the tensor cores truncate: relative error 4.7e-4 instead of 2.9e-4);
// 1 rounded in place, each thread rounding the chunks it copied of K-tile kt + 1 (then
// fence.proxy.async) while the tensor cores run K-tile kt; 2 rounded on its way in, through
// registers (16-byte loads of K-tile kt + STAGES - 1 in flight while K-tile kt runs, cvt.rna,
// 16-byte stores into the swizzled stage) instead of cp.async.
//
// Template parameters: BM (block rows of C = the wgmma N: 128 or 256), WGS (warpgroups; each
// computes 64 columns of C, so BN = 64 * WGS), STAGES (>= 3), A_ROUND (0, 1, 2). Fixed: BK = 32.
// Launch: block = (128 * WGS, 1, 1); grid = (N / BN, M / BM, 1); dynamic shared memory
//   sgemm_wgmma_tf32_rs_smem_bytes<...> (RsSmem: STAGES * (BM * 32 + 32 * (BN + 8)) * 4 + 1024
//   bytes; raise the attribute above 48 KB).
// Preconditions (checked by the caller): M % BM == 0, N % BN == 0, K % 32 == 0, K >= 32; a, b, c
// 16-byte aligned; M * K, K * N, M * N < 2^31. Needs sm_90a (wgmma), compiled with -arch=sm_90a.
#include "../lib/barrier.cuh"
#include "../lib/cp_async.cuh"
#include "../lib/move.cuh"
#include "../lib/swizzle.cuh"
#include "wgmma_rs.cuh"

// Shared memory: the ring of BM x 32 A tiles and 32 x (BN + 8) B tiles (wgmma_rs.cuh), BN = 64 WGS.
template <int BM, int WGS, int STAGES>
using TF32RsSmem = cugemm_wgmma::RsSmem<BM, 64 * WGS, STAGES>;
template <int BM, int WGS, int STAGES, int A_ROUND>
__device__ constexpr int sgemm_wgmma_tf32_rs_smem_bytes = TF32RsSmem<BM, WGS, STAGES>::BYTES;

template <int BM, int WGS, int STAGES, int A_ROUND>
__global__ void __launch_bounds__(WGS * 128, 1)
    sgemm_wgmma_tf32_rs(const float* __restrict__ a, const float* __restrict__ b,
                        float* __restrict__ c, int M, int N, int K) {
  constexpr int BK = 32;                 // one 128-byte swizzle row of fp32 per m
  constexpr int NT = WGS * 128;          // threads per block
  constexpr int BN = 64 * WGS;           // block columns: 64 per warpgroup (the wgmma M)
  using Smem = TF32RsSmem<BM, WGS, STAGES>;
  constexpr int LDB = Smem::LDB;         // B tile row (floats): (LDB % 32) == 8, conflict-free LDS
  constexpr int A_STAGE = Smem::A_STAGE; // floats per stage (a multiple of 1024 bytes)
  constexpr int B_STAGE = Smem::B_STAGE;
  constexpr int NACC = BM / 2;           // accumulators per thread: 64 x BM over 128 threads
  constexpr int A_RPP = NT / 8;          // A rows copied per pass (8 chunks of 16 bytes per row)
  constexpr int A_PASSES = BM / A_RPP;
  constexpr int B_CPR = BN / 4;          // 16-byte chunks per B row
  constexpr int B_RPP = NT / B_CPR;
  constexpr int B_PASSES = BK / B_RPP;
  constexpr int PF = STAGES - 2;         // prefetch distance (K-tiles)

  static_assert(BM == 128 || BM == 256, "BM is the wgmma N: 128 or 256 here");
  static_assert(WGS >= 1 && WGS <= 4, "1 to 4 warpgroups");
  static_assert(A_ROUND >= 0 && A_ROUND <= 2, "A_ROUND: 0 truncate, 1 in-place pass, 2 via registers");
  static_assert(STAGES >= 3, "one stage computing, one in flight in the tensor cores, one filling");
  static_assert((A_STAGE * 4) % 1024 == 0, "swizzle atoms must stay 1024-byte aligned");
  static_assert(A_RPP % 8 == 0 && BM % A_RPP == 0, "A copy: whole swizzle atoms per pass");
  static_assert(NT % B_CPR == 0 && BK % B_RPP == 0, "B copy: whole rows per pass, whole passes");

  extern __shared__ float smem_raw[];
  float* const smem = align_1024(smem_raw);
  float* const sA = smem + Smem::A;      // STAGES x [BM][32], swizzled
  float* const sB = smem + Smem::B;      // STAGES x [32][LDB]
  const unsigned sA_addr = smem_addr(sA);

  const int m0 = blockIdx.y * BM;
  const int n0 = blockIdx.x * BN;
  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int wg = warp >> 2;              // warpgroup: columns n0 + 64 wg .. + 63
  const int wq = warp & 3;               // warp within the warpgroup: rows 16 wq of its 64
  const int g = lane >> 2, t = lane & 3;

  // ---- global -> shared (cp.async, 16 bytes) ---------------------------------------------------
  // A: chunk ac = tid % 8 (k 4ac .. 4ac + 3) of rows tid / 8 + i * A_RPP, stored swizzled; the row
  // index mod 8 is the same on every pass, so is the swizzled chunk.
  const int a_row = tid >> 3, a_chunk = tid & 7;
  const int a_dst = sw128_offset(a_row, a_chunk);  // floats within a stage
  const float* a_next = a + (m0 + a_row) * K + a_chunk * 4;
  const int a_pass = A_RPP * K;
  // B: row-major tile [32][LDB]
  const int b_row = tid / B_CPR, b_col = tid % B_CPR * 4;
  const int b_dst = b_row * LDB + b_col;
  const float* b_next = b + b_row * N + n0 + b_col;
  const int b_pass = B_RPP * N;
  const int num_kt = K / BK;

  auto issue = [&](int s) __attribute__((always_inline)) {
    if (A_ROUND != 2) {
      float* const ad = sA + s * A_STAGE + a_dst;
#pragma unroll
      for (int i = 0; i < A_PASSES; ++i) cp_async_16(ad + i * A_RPP * BK, a_next + i * a_pass);
      a_next += BK;
    }
    float* const bd = sB + s * B_STAGE + b_dst;
#pragma unroll
    for (int i = 0; i < B_PASSES; ++i) cp_async_16(bd + i * B_RPP * LDB, b_next + i * b_pass);
    b_next += BK * N;
  };

  // A_ROUND == 2: the A tile goes global -> registers (16-byte loads) -> rounded -> shared (16-byte
  // stores into the swizzled layout), one K-tile held in registers between the two
  float4 ra[A_PASSES];
  auto load_a_regs = [&]() __attribute__((always_inline)) {
#pragma unroll
    for (int i = 0; i < A_PASSES; ++i) ra[i] = load_f32x4(a_next + i * a_pass);
    a_next += BK;
  };
  auto store_a_regs = [&](int s) __attribute__((always_inline)) {
    float* const ad = sA + s * A_STAGE + a_dst;
#pragma unroll
    for (int i = 0; i < A_PASSES; ++i) store_f32x4(ad + i * A_RPP * BK, round_f32x4(ra[i]));
  };

  // round this thread's own A chunks of stage s to TF32 in place (A_ROUND == 1)
  auto round_a = [&](int s) __attribute__((always_inline)) {
    float* const ad = sA + s * A_STAGE + a_dst;
#pragma unroll
    for (int i = 0; i < A_PASSES; ++i)
      store_f32x4(ad + i * A_RPP * BK, round_f32x4(load_f32x4(ad + i * A_RPP * BK)));
  };

  // register operand: wgmma A = (B tile slice)^T, rows n = 64 wg + 16 wq + g (+8), cols k = t (+4)
  const float* const b_lane = sB + t * LDB + wg * 64 + wq * 16 + g;
  unsigned fa[BK / 8][4];
  float acc[NACC];
#pragma unroll
  for (int i = 0; i < NACC; ++i) acc[i] = 0.f;

  auto load_frags = [&](int s) __attribute__((always_inline)) {
    cugemm_wgmma::load_bt_fragments<BK, LDB>(fa, b_lane + s * B_STAGE);
  };

  // ---- prologue: K-tiles 0 .. PF - 1 in flight (A_ROUND 1: K-tile 0 rounded) -------
#pragma unroll
  for (int s = 0; s < PF; ++s) {
    if (s < num_kt) issue(s);
    cp_async_commit();
  }
  if (A_ROUND == 1) {
    cp_async_wait<PF - 1>();
    round_a(0);
    fence_proxy_async_shared();
  }
  if (A_ROUND == 2) {  // A of K-tiles 0 .. PF - 1 straight into their stages, K-tile PF to registers
#pragma unroll
    for (int s = 0; s < PF; ++s) {
      if (s < num_kt) {
        load_a_regs();
        store_a_regs(s);
      }
    }
    if (PF < num_kt) load_a_regs();
    fence_proxy_async_shared();
  }

  // K-tile kt (ring stage s = kt % STAGES)
  auto step = [&](const int kt, const int s) __attribute__((always_inline)) {
    if (A_ROUND != 1) {
      cp_async_wait<PF - 1>();  // this thread's copies of K-tile kt have landed
      fence_proxy_async_shared();
    }
    // (A_ROUND == 1: this thread rounded and fenced its K-tile kt chunks at the end of step kt - 1)
    __syncthreads();                   // every thread's K-tile kt is in; stage of kt - 2 is free
    {
      const int nk = kt + PF;
      int ns = s + PF;
      if (ns >= STAGES) ns -= STAGES;
      if (nk < num_kt) issue(ns);
      cp_async_commit();
    }
    cugemm_wgmma::wait_group<0>();     // K-tile kt - 1's wgmmas are done: fragments free
    load_frags(s);
    cugemm_wgmma::mma_ktile<BK>(acc, fa, sA_addr + s * (A_STAGE * 4));
    if (A_ROUND == 2) {
      // while the tensor cores run K-tile kt: K-tile kt + PF (in registers since step kt - 1) to
      // its stage, which held K-tile kt - 2 (free since the barrier), and K-tile kt + PF + 1 into
      // the registers
      int ns = s + PF;
      if (ns >= STAGES) ns -= STAGES;
      if (kt + PF < num_kt) store_a_regs(ns);
      fence_proxy_async_shared();
      if (kt + PF + 1 < num_kt) load_a_regs();
    }
    if (A_ROUND == 1) {
      // while the tensor cores run K-tile kt: round this thread's chunks of K-tile kt + 1 (its
      // stage is neither read by a pending wgmma nor refilled before the next barrier)
      cp_async_wait<PF - 1>();  // committed: K-tiles <= kt + PF; kt + 1 landed
      if (kt + 1 < num_kt) round_a(s + 1 == STAGES ? 0 : s + 1);
      fence_proxy_async_shared();
    }
  };

  // num_kt >= 1 (K >= BK): a do-while, so that no path skips the wgmmas and merges fresh zeros
  // into the accumulators (ptxas would serialize the wgmmas over such register moves)
  int kt = 0, s = 0;
  do {
    step(kt, s);
    s = (s + 1 == STAGES) ? 0 : s + 1;
  } while (++kt < num_kt);

  // ---- epilogue: C^T from the accumulators, once the last group is done (wgmma_rs.cuh) -----------
  cugemm_wgmma::store_ct<BM>(c + (m0 + 2 * t) * N + n0 + wg * 64 + wq * 16 + g, acc, N);
}
