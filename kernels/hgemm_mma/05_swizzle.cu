// cugemm/kernels/hgemm_mma/05_swizzle.cu -- mma.sync HGEMM, rungs 5 to 11: XOR-swizzled shared
// memory and everything above it, hgemm_mma_m16n8k16_..._swizzle[_bswizzle][_rbuf][_epi][_f16acc]
// [_edge] and the bf16 siblings bgemm_mma_m16n8k16_... .
//
// C = A * B, 16-bit T in and out (half, or __nv_bfloat16 for the bgemm_ siblings), fp32
// accumulation (F16ACC: fp16) through inline PTX mma.sync.m16n8k16, ldmatrix (.trans for the
// row-major B) and a STAGES-deep cp.async ring in dynamic shared memory, as in rung 4. One template;
// each rung is a template argument that switches on one more idea (the pieces: hgemm_mma.cuh):
//  5. _swizzle (always on): unpadded shared rows, each 16-byte chunk XOR-permuted within its
//     128-byte line (lib/swizzle.cuh, xor_swizzle_chunk), so ldmatrix and cp.async phases are
//     conflict-free; a lane's address for a later k step or fragment pair is its first address XOR
//     a compile-time constant: the main loop computes no swizzle.
//  6. _bswizzle (GROUP > 1): blocks walk the C tiles in bands of GROUP tile rows (lib/raster.cuh).
//  7. _rbuf (RBUF): fragments double-buffered in registers (lib/pipeline.cuh, ring_pipeline).
//  8. _epi (EPI_SMEM): the accumulators go through a swizzled C tile over the ring (stmatrix.x4 on
//     sm_90, st.shared.b32 on sm_80), then to C in coalesced 16-byte chunks.
//  9. 64 x 64 warp tiles (warp4x8): 128 x 256, 128 x 128 or 256 x 128 blocks, BK 32 or 64.
// 10. _f16acc (F16ACC): fp16 accumulators, half the registers (T = half only).
// 11. _edge (EDGE): any M, N, K with N % 8 == 0 and K % 8 == 0. Chunks of A or B outside the
//     matrices are zero-filled by cp.async (lib/cp_async.cuh, cp_async_16_zfill), predicated only
//     in K-tiles that cross an edge; the epilogue stores only the chunks inside C. Needs EPI_SMEM.
// bf16 changes only the mma type and the rounding of C. Each rung's story and measurements:
// docs/hgemm_mma.md.
// A fused epilogue (EPI, lib/epilogue.cuh: None, or Fused<ACT, BIAS, SRC, AUX>; cugemm.epilogue names
// the members <variant>_ep_<tag>): after the main loop each m16n8 accumulator tile (fp32; F16ACC:
// its fp16 pairs widened, the result rounded to half once) goes through epilogue::apply before it is
// staged (EPI_SMEM) or stored, rows >= M and columns >= N reading and writing nothing. Every form
// takes it; with EPI_SMEM the tiles go a few at a time in a chain ptxas cannot reorder (below) and
// each warp row of tiles is staged right after its epilogue (no spills in any composition).
//
// Template parameters: WARPS_M x WARPS_N warps, each FRAGS_M x FRAGS_N mma tiles of 16 x 8 (FRAGS_N
// even; warp tile WM = 16 FRAGS_M by WN = 8 FRAGS_N, WN = 32 or a multiple of 64); BK (32 or 64: 4 or
// 8 chunks per A row); STAGES (2..5); GROUP (tile rows per raster band; 0 or 1: row-major); RBUF,
// EPI_SMEM, EDGE, F16ACC (half only) flags; T; EPI (epilogue::None unless named).
//   BM = WARPS_M * WM, BN = WARPS_N * WN (a multiple of 64).
// Launch: grid = (ceil(N / BN), ceil(M / BM), 1), block = (32 * WARPS_M * WARPS_N, 1, 1), dynamic
//   shared memory hgemm_mma_swizzle_smem_bytes (the layout: hgemm_mma_swizzle_smem below; over
//   48 KB the caller raises the attribute, the JIT does); extra arguments after K: the epilogue's
//   bias, src, aux, alpha, beta, ld_src, ld_aux (epilogue::Args; ignored where EPI is None: cugemm
//   passes 0s and 1, 0, args rule epilogue_defaults).
// Preconditions: without EDGE M % BM == 0, N % BN == 0, K % BK == 0; with EDGE N % 8 == 0 and
//   K % 8 == 0; a, b, c 16-byte aligned; M * K, K * N, M * N (rounded up to tiles) < 2^31; sm_80+;
//   EPI: lib/epilogue.cuh's (bias / src / aux 4-byte aligned, ld_src and ld_aux even).
#include "../lib/epilogue.cuh"
#include "../lib/pipeline.cuh"
#include "../lib/raster.cuh"
#include "hgemm_mma.cuh"

// The dynamic shared memory (bytes): the operand ring (hgemm_mma.cuh, RingLayout) during the main
// loop; with EPI_SMEM the swizzled C tile [BM][BN] of 16-bit T over it in the epilogue.
template <int BM, int BN, int BK, int STAGES, bool EPI_SMEM>
struct hgemm_mma_swizzle_smem {
  using OperandRing = hgemm_mma::RingLayout<BM, BN, BK, STAGES>;
  static constexpr int RING = 0, C = 0;
  static constexpr int C_BYTES = EPI_SMEM ? BM * BN * 2 : 0;
  static constexpr int BYTES = OperandRing::BYTES > C_BYTES ? OperandRing::BYTES : C_BYTES;
};

template <int WARPS_M, int WARPS_N, int FRAGS_M, int FRAGS_N, int BK, int STAGES, int GROUP, bool RBUF,
          bool EPI_SMEM, bool EDGE, bool F16ACC, class T, class EPI = epilogue::None>
__device__ constexpr int hgemm_mma_swizzle_smem_bytes =
    hgemm_mma_swizzle_smem<16 * FRAGS_M * WARPS_M, 8 * FRAGS_N * WARPS_N, BK, STAGES, EPI_SMEM>::BYTES;

// The block's work: its C tile of one M x N x K product (this file's kernel, and the batched form's in
// 08_swizzle_batched.cu, which keeps EPI = None), the fused epilogue EPI with the arguments `ep`.
template <int WARPS_M, int WARPS_N, int FRAGS_M, int FRAGS_N, int BK, int STAGES, int GROUP, bool RBUF,
          bool EPI_SMEM, bool EDGE, bool F16ACC, class T, class EPI = epilogue::None>
__device__ __forceinline__ void hgemm_mma_swizzle_tile(const T* __restrict__ a, const T* __restrict__ b,
                                                       T* __restrict__ c, int M, int N, int K,
                                                       const epilogue::Args& ep = epilogue::Args{}) {
  using namespace hgemm_mma;
  using Ops = Operands<WARPS_M, WARPS_N, FRAGS_M, FRAGS_N, BK, STAGES, EDGE, T>;
  constexpr int NT = Ops::NT, BM = Ops::BM, BN = Ops::BN, KSTEPS = Ops::KSTEPS;
  static_assert(!F16ACC || !IsBf16<T>::value, "fp16 accumulation takes fp16 inputs");
  static_assert(!EDGE || EPI_SMEM, "the edge rung stores C through the shared-memory epilogue");
  using Smem = hgemm_mma_swizzle_smem<BM, BN, BK, STAGES, EPI_SMEM>;
  extern __shared__ __align__(128) unsigned char smem[];

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm0 = warp / WARPS_N * Ops::WM, wn0 = warp % WARPS_N * Ops::WN;
  const TileCoord tile = block_tile_grouped<GROUP>();  // rung 6: GROUP > 1 walks bands of tile rows
  const int m0 = tile.row * BM, n0 = tile.col * BN;

  Ops ops(a, b, M, N, K, smem_addr(smem + Smem::RING), tid, lane, wm0, wn0);
  ops.begin_tile(m0, n0);
  unsigned fa[RBUF ? 2 : 1][FRAGS_M][4];
  unsigned fb[RBUF ? 2 : 1][FRAGS_N][2];
  MmaTile<F16ACC> acc[FRAGS_M][FRAGS_N];
  auto issue = [&](int s) __attribute__((always_inline)) { ops.issue(s); };
  auto load_frags = [&](int s, int kk, int p) __attribute__((always_inline)) {
    ops.load_frags(s, kk, fa[p], fb[p]);
  };
  auto mma = [&](int p) __attribute__((always_inline)) {
#pragma unroll
    for (int i = 0; i < FRAGS_M; ++i)
#pragma unroll
      for (int j = 0; j < FRAGS_N; ++j) acc[i][j].template mma<T>(fa[p][i], fb[p][j]);
  };

  const int num_kt = (K + BK - 1) / BK;
  if constexpr (RBUF) {  // rung 7: the ring pipeline with register double buffering
    static_assert(KSTEPS % 2 == 0, "BK = 32 or 64: an even number of k steps");
    ring_pipeline<STAGES, KSTEPS>(num_kt, issue, load_frags, mma, [] {});
  } else {  // rung 4's loop: fragments of k step kk loaded right before its MMAs
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < num_kt) issue(s);
      cp_async_commit();
    }
    int rd = 0, wr = STAGES - 1;
    for (int kt = 0; kt < num_kt; ++kt) {
      cp_async_wait<STAGES - 2>();
      __syncthreads();
      if (kt + STAGES - 1 < num_kt) issue(wr);
      cp_async_commit();
      wr = wr + 1 == STAGES ? 0 : wr + 1;
#pragma unroll
      for (int kk = 0; kk < KSTEPS; ++kk) {
        load_frags(rd, kk, 0);
        mma(0);
      }
      rd = rd + 1 == STAGES ? 0 : rd + 1;
    }
  }

  // The fused epilogue (EPI) on the final accumulators of mma tiles (i, j0 .. j0 + JN - 1), before
  // they are rounded to T. zp and za are zeros the compiler cannot see through (0 where no chain is
  // needed): the tiles' positions (the addresses of the loads and AUX stores) are offset by zp,
  // alpha by za.
  auto fused_epilogue = [&](int JN, int i, int j0, int zp, int za) __attribute__((always_inline)) {
    const int g = lane >> 2, t = lane & 3;
    epilogue::Args ep_z = ep;
    ep_z.alpha = __int_as_float(__float_as_int(ep.alpha) + za);
#pragma unroll
    for (int j = j0; j < j0 + JN; ++j) {
      const int row = m0 + wm0 + 16 * i + g + zp, col = n0 + wn0 + 8 * j + 2 * t + zp;
      if constexpr (F16ACC) {  // the fp16 pairs as fp32, D rounded to half once
        const float2 lo = __half22float2(*reinterpret_cast<const half2*>(&acc[i][j].d[0]));
        const float2 hi = __half22float2(*reinterpret_cast<const half2*>(&acc[i][j].d[1]));
        float f[4] = {lo.x, lo.y, hi.x, hi.y};
        epilogue::apply<EPI, T, 1>(f, f, 0, row, col, M, N, ep_z);
        acc[i][j].d[0] = pack2<T>(f[0], f[1]);
        acc[i][j].d[1] = pack2<T>(f[2], f[3]);
      } else {
        epilogue::apply<EPI, T, 1>(acc[i][j].d, acc[i][j].d, 0, row, col, M, N, ep_z);
      }
    }
  };
  // One accumulator word of mma tile (i, j) (k = 0: the first row's pair, 1: the second's), as bits
  auto acc_bits = [&](int i, int j, int k) __attribute__((always_inline)) -> unsigned {
    if constexpr (F16ACC) return acc[i][j].d[k];
    else return __float_as_uint(acc[i][j].d[2 * k + 1]);
  };

  if constexpr (EPI_SMEM) {  // rung 8: through a swizzled C tile over the ring, 16-byte stores
    cp_async_wait<0>();  // only empty groups can remain; drained before the ring is overwritten
    // EPI: the fused epilogue runs as a chain, EG tiles a link: a link's arithmetic waits for a zero
    // read back from shared memory after the previous link's results were stored there, its loads'
    // and AUX stores' addresses for the zero of the link before (a link of prefetch). Without the
    // chain ptxas sinks the last k step's MMAs (plain register instructions) into the epilogue and
    // hoists every link's loads and arithmetic together: the heavier compositions spill 16-400 bytes.
    constexpr int EG = FRAGS_N % 4 == 0 ? 4 : FRAGS_N;
    unsigned v = 0u;  // the chain's first link: every tile's last MMA done
    if constexpr (EPI::ACTIVE) {
#pragma unroll
      for (int i = 0; i < FRAGS_M; ++i)
#pragma unroll
        for (int j = 0; j < FRAGS_N; ++j) v ^= acc_bits(i, j, 0);
    }
    __syncthreads();     // every warp is done reading fragments
    const unsigned sC = smem_addr(smem + Smem::C);
    if constexpr (EPI::ACTIVE) {
      // the chain's word: one a thread after the C tile (the ring's, free after the barrier)
      static_assert(Smem::BYTES >= Smem::C_BYTES + 4 * NT, "a word a thread after the C tile");
      const unsigned link = sC + Smem::C_BYTES + 4 * tid;
      auto zero_after = [&](unsigned bits) __attribute__((always_inline)) -> int {
        unsigned back;
        asm volatile("st.volatile.shared.u32 [%0], %1;\n" ::"r"(link), "r"(bits) : "memory");
        asm volatile("ld.volatile.shared.u32 %0, [%1];\n" : "=r"(back) : "r"(link) : "memory");
        return static_cast<int>(back - bits);
      };
      int z = zero_after(v), zp = z;
#pragma unroll
      for (int i = 0; i < FRAGS_M; ++i) {  // row i: 16 rows of the C tile from (wm0 + 16 i, wn0)
#pragma unroll
        for (int j0 = 0; j0 < FRAGS_N; j0 += EG) {
          fused_epilogue(EG, i, j0, zp, z);
          v = 0u;
#pragma unroll
          for (int j = j0; j < j0 + EG; ++j) v ^= acc_bits(i, j, 1);
          zp = z;
          z = zero_after(v);
        }
        MmaTile<F16ACC> acc_i[1][FRAGS_N];  // row i staged now: its registers free for the next rows
#pragma unroll
        for (int j = 0; j < FRAGS_N; ++j) acc_i[0][j] = acc[i][j];
        stage_c<BN, 1, FRAGS_N, F16ACC, T>(acc_i, sC, lane + zp, wm0 + 16 * i, wn0);
      }
      __syncthreads();
      store_c<BM, BN, NT, EDGE, T>(sC, c, m0, n0, M, N, tid + z);  // its addresses after the chain too
    } else {
      stage_c<BN, FRAGS_M, FRAGS_N, F16ACC, T>(acc, sC, lane, wm0, wn0);
      __syncthreads();
      store_c<BM, BN, NT, EDGE, T>(sC, c, m0, n0, M, N, tid);
    }
  } else {  // rung 4's epilogue: one 32-bit store per lane and row pair
    const int g = lane >> 2, t = lane & 3;
    T* c_lane = c + (m0 + wm0 + g) * N + n0 + wn0 + 2 * t;
#pragma unroll
    for (int i = 0; i < FRAGS_M; ++i) {
      if constexpr (EPI::ACTIVE) fused_epilogue(FRAGS_N, i, 0, 0, 0);
#pragma unroll
      for (int j = 0; j < FRAGS_N; ++j) {
        T* p = c_lane + i * 16 * N + j * 8;
        *reinterpret_cast<unsigned*>(p) = acc[i][j].template lo<T>();
        *reinterpret_cast<unsigned*>(p + 8 * N) = acc[i][j].template hi<T>();
      }
    }
  }
}

template <int WARPS_M, int WARPS_N, int FRAGS_M, int FRAGS_N, int BK, int STAGES, int GROUP, bool RBUF,
          bool EPI_SMEM, bool EDGE, bool F16ACC, class T, class EPI = epilogue::None>
__global__ void __launch_bounds__(32 * WARPS_M * WARPS_N, hgemm_mma::min_blocks(32 * WARPS_M * WARPS_N))
hgemm_mma_swizzle(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N, int K,
                  const void* ep_bias, const void* ep_src, void* ep_aux, float ep_alpha, float ep_beta,
                  int ep_ld_src, int ep_ld_aux) {
  const epilogue::Args ep{ep_bias, ep_src, ep_aux, ep_alpha, ep_beta, ep_ld_src, ep_ld_aux};
  hgemm_mma_swizzle_tile<WARPS_M, WARPS_N, FRAGS_M, FRAGS_N, BK, STAGES, GROUP, RBUF, EPI_SMEM, EDGE, F16ACC, T,
                         EPI>(a, b, c, M, N, K, ep);
}
