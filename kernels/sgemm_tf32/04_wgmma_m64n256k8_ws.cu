// cugemm/kernels/sgemm_tf32/04_wgmma_m64n256k8_ws.cu: TF32 SGEMM through Hopper wgmma with a
// warp-specialized producer (sm_90a), the rung above 03_wgmma_m64nNk8_rs.cu. Story and
// measurements: docs/sgemm_tf32.md.
//
// C = A * B, float32 in and out, row-major: A is M x K, B is K x N, C is M x N (overwritten).
// The multiplies are TF32 (tensor cores), the accumulation fp32.
//
// The MMA side is 03's: two consumer warpgroups, each computing a 64-column slice of C^T = B^T A^T
// with wgmma.mma_async m64n256k8 (the A tile, 256 x 32, from 128-byte-swizzled shared memory; the
// B slice, transposed, from registers, rounded with cvt.rna). What this rung changes is who moves
// the data. In 03 the same 256 threads copy, wait, round and compute, and every piece of work on
// the A tile sits between two block-wide barriers on the tensor cores' critical path.
//  1. A third warpgroup, the producer, does all the copying and the rounding: it cp.asyncs K-tile
//     j (A into the swizzled stage, B row-major) and, LAG = STAGES - 2 K-tiles behind, rounds its
//     own landed A chunks of K-tile j - LAG in place (ROUND; 16-byte load, cvt.rna, 16-byte store),
//     fences them for the async proxy and publishes the stage. The consumers only wait, load
//     their B fragments and issue wgmmas, so the rounding pass overlaps the tensor cores.
//  2. Named barriers instead of __syncthreads, two per ring stage: FULL[s] (the producer arrives
//     once stage s is filled; the consumers wait) and EMPTY[s] (the consumers arrive once the
//     wgmmas that read stage s have completed; the producer waits before refilling it). Each
//     counts all 384 threads; bar.arrive never blocks. Generation g of FULL[s] can only start
//     after generation g - 1 of EMPTY[s] completed, so the barriers are reused around the ring.
//  3. setmaxnreg: the producer gives registers back (PRODUCER_REGS) and the consumers may take
//     them (CONSUMER_REGS), as the 128 accumulators a consumer thread holds need the most.
// ROUND: true rounds A to TF32 (cvt.rna, as B always is); false (`_trunc`) leaves A's float32 bits
// for the tensor cores to truncate (rel. error ~4.7e-4 instead of ~2.9e-4).
//
// Template parameters: STAGES (ring stages, 3..7; LAG = STAGES - 2), ROUND. Fixed: BM = 256 (the
// wgmma N), BN = 128 (two consumer warpgroups of 64 columns), BK = 32 (one 128-byte swizzle row).
// Launch: block = (384, 1, 1): warpgroups 0 and 1 consume, 2 produces; grid = (N / 128, M / 256, 1);
//   dynamic shared memory sgemm_wgmma_tf32_ws_smem_bytes<...> (RsSmem: STAGES * (256 * 32 + 32 *
//   136) * 4 + 1024 bytes; raise the attribute).
// Preconditions (checked by the caller): M % 256 == 0, N % 128 == 0, K % 32 == 0, K >= 32; a, b, c
// 16-byte aligned; M * K, K * N, M * N < 2^31. Needs sm_90a (wgmma, setmaxnreg).
#include "../lib/barrier.cuh"
#include "../lib/cp_async.cuh"
#include "../lib/move.cuh"
#include "../lib/swizzle.cuh"
#include "wgmma_rs.cuh"

// Shared memory: the ring of 256 x 32 A tiles and 32 x 136 B tiles (wgmma_rs.cuh).
template <int STAGES>
using TF32WsSmem = cugemm_wgmma::RsSmem<256, 128, STAGES>;
template <int STAGES, bool ROUND>
__device__ constexpr int sgemm_wgmma_tf32_ws_smem_bytes = TF32WsSmem<STAGES>::BYTES;

template <int STAGES, bool ROUND>
__global__ void __launch_bounds__(384, 1)
    sgemm_wgmma_tf32_ws(const float* __restrict__ a, const float* __restrict__ b,
                        float* __restrict__ c, int M, int N, int K) {
  constexpr int BM = 256, BN = 128, BK = 32;
  using Smem = TF32WsSmem<STAGES>;
  constexpr int LDB = Smem::LDB;         // B tile row (floats): (LDB % 32) == 8, conflict-free LDS
  constexpr int A_STAGE = Smem::A_STAGE; // floats per stage (a multiple of 1024 bytes)
  constexpr int B_STAGE = Smem::B_STAGE;
  constexpr int NACC = BM / 2;           // accumulators per consumer thread: 64 x 256 over 128
  constexpr int THREADS = 384;           // every named barrier counts the whole block
  constexpr int FULL0 = 1, EMPTY0 = 1 + STAGES;  // named barrier ids
  constexpr int LAG = STAGES - 2;        // K-tiles the producer's copies run ahead of publishing
  // 65536 registers: 128 x (PRODUCER_REGS + 2 x CONSUMER_REGS) must fit what the launch holds,
  // 384 x 168 (the per-thread cap ptxas uses for 384 threads).
  constexpr int PRODUCER_REGS = 56, CONSUMER_REGS = 224;
  static_assert(PRODUCER_REGS + 2 * CONSUMER_REGS <= 3 * 168, "register budget");
  static_assert(STAGES >= 3 && 1 + 2 * STAGES <= 16, "3 to 7 stages (16 named barriers)");

  extern __shared__ float smem_raw[];
  float* const smem = align_1024(smem_raw);
  float* const sA = smem + Smem::A;      // STAGES x [BM][32], swizzled
  float* const sB = smem + Smem::B;      // STAGES x [32][LDB]

  const int m0 = blockIdx.y * BM;
  const int n0 = blockIdx.x * BN;
  const int num_kt = K / BK;
  const int wg = threadIdx.x >> 7;

  if (wg == 2) {
    // ---- producer ------------------------------------------------------------------------------
    setmaxnreg_dec<PRODUCER_REGS>();
    const int p = threadIdx.x & 127;
    // A: chunk p % 8 (k 4 (p % 8) .. + 3) of rows p / 8 + 16 i, i = 0..15. Every row has the same
    // index mod 8, so the same swizzled chunk.
    const int a_row = p >> 3, a_chunk = p & 7;
    const int a_dst = sw128_offset(a_row, a_chunk);
    const float* a_next = a + (m0 + a_row) * K + a_chunk * 4;
    // B: 16-byte chunk p % 32 of rows p / 32 + 4 i, i = 0..7
    const int b_row = p >> 5, b_col = (p & 31) * 4;
    const int b_dst = b_row * LDB + b_col;
    const float* b_next = b + b_row * N + n0 + b_col;

    // Iteration j copies K-tile j into stage j % STAGES (after the consumers released it) and
    // publishes K-tile j - LAG, whose copies have had LAG iterations to land: this thread rounds its
    // own chunks of it in place (ROUND), fences them for the tensor cores and arrives on FULL.
    // Deadlock-free for LAG <= STAGES - 2: the EMPTY wait of iteration j needs the consumers to be
    // at K-tile j - STAGES + 1, published at iteration j - STAGES + 1 + LAG < j.
    for (int j = 0; j < num_kt + LAG; ++j) {
      if (j < num_kt) {
        const int s = j % STAGES;
        if (j >= STAGES) named_barrier_sync(EMPTY0 + s, THREADS);  // K-tile j - STAGES consumed
        float* const ad = sA + s * A_STAGE + a_dst;
#pragma unroll
        for (int i = 0; i < 16; ++i) cp_async_16(ad + i * 16 * BK, a_next + i * 16 * K);
        float* const bd = sB + s * B_STAGE + b_dst;
#pragma unroll
        for (int i = 0; i < 8; ++i) cp_async_16(bd + i * 4 * LDB, b_next + i * 4 * N);
        a_next += BK;
        b_next += BK * N;
      }
      cp_async_commit();  // one group per iteration, empty past the last K-tile
      const int jp = j - LAG;
      if (jp >= 0) {
        cp_async_wait<LAG>();  // this thread's copies of K-tile jp have landed
        const int sp = jp % STAGES;
        if (ROUND) {
          float* const ad = sA + sp * A_STAGE + a_dst;
#pragma unroll
          for (int i = 0; i < 16; ++i) store_f32x4(ad + i * 16 * BK, round_f32x4(load_f32x4(ad + i * 16 * BK)));
        }
        fence_proxy_async_shared();  // cp.async data and rounded A -> tensor cores
        named_barrier_arrive(FULL0 + sp, THREADS);
      }
    }
    return;
  }

  // ---- consumers (warpgroups 0 and 1) ---------------------------------------------------------
  setmaxnreg_inc<CONSUMER_REGS>();
  const unsigned sA_addr = smem_addr(sA);
  const int lane = threadIdx.x & 31;
  const int wq = (threadIdx.x >> 5) & 3;  // warp within the warpgroup: rows 16 wq of its 64
  const int g = lane >> 2, t = lane & 3;
  // register operand: wgmma A = (B tile slice)^T, rows n = 64 wg + 16 wq + g (+8), cols k = t (+4)
  const float* const b_lane = sB + t * LDB + wg * 64 + wq * 16 + g;
  unsigned fa[BK / 8][4];
  float acc[NACC];
#pragma unroll
  for (int i = 0; i < NACC; ++i) acc[i] = 0.f;

  // num_kt >= 1: a do-while, so that no path merges fresh zeros into the accumulators while a
  // wgmma group may be pending (ptxas would serialize the wgmmas over such moves; see 03)
  int kt = 0, s = 0;
  do {
    named_barrier_sync(FULL0 + s, THREADS);       // K-tile kt is in stage s
    cugemm_wgmma::wait_group<0>();          // K-tile kt - 1's wgmmas are done: its stage and
    if (kt >= 1 && kt - 1 + STAGES < num_kt)  // the fragment registers are free
      named_barrier_arrive(EMPTY0 + (s == 0 ? STAGES - 1 : s - 1), THREADS);
    cugemm_wgmma::load_bt_fragments<BK, LDB>(fa, b_lane + s * B_STAGE);
    cugemm_wgmma::mma_ktile<BK>(acc, fa, sA_addr + s * (A_STAGE * 4));
    s = (s + 1 == STAGES) ? 0 : s + 1;
  } while (++kt < num_kt);

  // ---- epilogue: C^T from the accumulators, once the last group is done (wgmma_rs.cuh) -----------
  cugemm_wgmma::store_ct<BM>(c + (m0 + 2 * t) * N + n0 + wg * 64 + wq * 16 + g, acc, N);
}
