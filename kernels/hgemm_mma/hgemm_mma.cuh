// cugemm/kernels/hgemm_mma/hgemm_mma.cuh: the pieces of the swizzled mma.sync rungs
// (kernels/hgemm_mma/05_swizzle.cu): the accumulator tile (fp32 or fp16), the swizzled cp.async
// ring with its copies (zero-filling at the matrix edges) and ldmatrix fragment loads, and the
// epilogue through shared memory. The instructions themselves (mma.sync, ldmatrix, stmatrix,
// cp.async, the XOR swizzle) are in kernels/lib/.
//
// Shared-memory layouts (16-bit T, unpadded rows, lib/swizzle.cuh xor_swizzle_chunk):
//   A tile [BM][BK]: rows of BK / 8 = 4 or 8 chunks of 16 bytes (BK = 32 or 64)
//   B tile [BK][BN]: rows of BN / 8 chunks (a multiple of 8), row-major B as it is in memory
//   C tile [BM][BN]: the epilogue's staging tile, rows of BN / 8 chunks
// Every 8 consecutive rows read at one chunk column (an ldmatrix / stmatrix phase) and every 8
// consecutive chunks of a row-major fill (cp.async, the C copy-out) fall in 8 distinct 16-byte
// bank groups. Fragment coordinates: g = lane / 4, t = lane % 4 (lib/mma.cuh).
#pragma once
#include "../lib/cp_async.cuh"
#include "../lib/mma.cuh"
#include "../lib/move.cuh"
#include "../lib/swizzle.cuh"

namespace hgemm_mma {

// The accumulators of one 16 x 8 mma tile: four fp32 (rows g and g + 8, columns 2t and 2t + 1), or
// with F16ACC the same four values as two packed fp16 pairs. lo() / hi(): the row-g / row-(g + 8)
// pair as two 16-bit T, what C and stmatrix take.
template <bool F16ACC>
struct MmaTile {
  float d[4] = {0.f, 0.f, 0.f, 0.f};
  template <class T>
  __device__ __forceinline__ void mma(const unsigned (&a)[4], const unsigned (&b)[2]) {
    mma_m16n8k16<T>(d, a, b);
  }
  __device__ __forceinline__ void zero() { d[0] = d[1] = d[2] = d[3] = 0.f; }
  template <class T>
  __device__ __forceinline__ unsigned lo() const { return pack2<T>(d[0], d[1]); }
  template <class T>
  __device__ __forceinline__ unsigned hi() const { return pack2<T>(d[2], d[3]); }
};
template <>
struct MmaTile<true> {
  unsigned d[2] = {0u, 0u};
  template <class T>
  __device__ __forceinline__ void mma(const unsigned (&a)[4], const unsigned (&b)[2]) {
    mma_m16n8k16_f16acc(d, a, b);
  }
  __device__ __forceinline__ void zero() { d[0] = d[1] = 0u; }
  template <class T>
  __device__ __forceinline__ unsigned lo() const { return d[0]; }
  template <class T>
  __device__ __forceinline__ unsigned hi() const { return d[1]; }
};

// Blocks per SM asked of the register allocator: 2 for 4-warp blocks (up to 255 registers each,
// 64 x 64 warp tiles fit), else 1.
__host__ __device__ constexpr int min_blocks(int threads) { return threads <= 128 ? 2 : 1; }

// Byte offset of the chunk `c` columns right of a lane's swizzled chunk at `base` (bytes): XOR
// inside the 128-byte line, whole lines added. Exact (the swizzle only permutes the low 3 bits of
// the column) when the lane's unswizzled column has the bits of c % 8 clear, e.g. a column 8m + 1
// with c = 0, 2, 4, 6, or 4m + 1 with c = 0, 2 (the kernels' static_asserts guarantee it).
__device__ __forceinline__ unsigned chunk_step(unsigned base, int c) {
  return (base ^ ((c & 7) << 4)) + ((c & ~7) << 4);
}

// The ring's layout in shared memory (bytes from its base): STAGES swizzled A tiles [BM][BK], then
// STAGES swizzled B tiles [BK][BN], 16-bit elements.
template <int BM, int BN, int BK, int STAGES>
struct RingLayout {
  static constexpr int A_STAGE = BM * BK * 2, B_STAGE = BK * BN * 2;  // per stage
  static constexpr int A = 0, B = A + STAGES * A_STAGE;              // the two rings
  static constexpr int BYTES = B + STAGES * B_STAGE;
};

// The operands of one block: a STAGES-deep ring of swizzled A and B tiles (RingLayout) at shared
// address `ring`, the cp.async copies that fill it (one K-tile per issue(), in order; with EDGE
// chunks outside the matrices are zero-filled) and the ldmatrix loads of a warp's fragments.
//   WARPS_M x WARPS_N warps of FRAGS_M x FRAGS_N mma tiles; BK = 32 or 64.
template <int WARPS_M, int WARPS_N, int FRAGS_M, int FRAGS_N, int BK, int STAGES, bool EDGE, class T>
struct Operands {
  static constexpr int NT = 32 * WARPS_M * WARPS_N;
  static constexpr int WM = 16 * FRAGS_M, WN = 8 * FRAGS_N;  // warp tile
  static constexpr int BM = WM * WARPS_M, BN = WN * WARPS_N;
  static constexpr int KSTEPS = BK / 16;
  static constexpr int A_CPR = BK / 8, B_CPR = BN / 8;        // 16-byte chunks per row
  static constexpr int A_RPP = NT / A_CPR, B_RPP = NT / B_CPR;  // tile rows copied per pass
  static constexpr int A_PASSES = BM / A_RPP, B_PASSES = BK / B_RPP;
  using Layout = RingLayout<BM, BN, BK, STAGES>;
  static constexpr int A_STAGE = Layout::A_STAGE, B_STAGE = Layout::B_STAGE;  // bytes per stage
  static_assert(sizeof(T) == 2, "16-bit elements");
  static_assert(BK == 32 || BK == 64, "A rows of 4 or 8 chunks; k step kk XORs chunk 2 kk < 8");
  static_assert(FRAGS_N % 2 == 0 && (WN == 32 || WN % 64 == 0),
                "B fragment pairs; warp columns of 4 chunks or whole 8-chunk groups");
  static_assert(BN % 64 == 0 && WM % 16 == 0, "swizzled rows are whole 128-byte lines");
  static_assert(STAGES >= 2 && STAGES <= 5, "2 to 5 stages");
  static_assert(A_PASSES * A_RPP == BM && B_PASSES * B_RPP == BK && NT % A_CPR == 0 && NT % B_CPR == 0,
                "whole rows per copy pass, whole passes per tile");
  static_assert(NT % 64 == 0 && A_RPP % 8 == 0 && B_RPP % 8 == 0,
                "a copy pass spans whole swizzle periods (8 lines), so its offset is a constant");

  const T* a;
  const T* b;
  int M, N, K;
  unsigned sA, sB;            // ring bases (shared window)
  unsigned a_dst, b_dst;      // this thread's copy destinations in stage 0 (pass 0)
  unsigned a_lane, b_lane;    // this lane's ldmatrix offsets (k step 0, fragment 0 / pair 0)
  int a_r, a_c, b_r, b_c;     // this thread's copy chunk: A row, k column; B k row, column
  const T* a_src;             // the next K-tile's chunks (pass 0)
  const T* b_src;
  int k_next;                 // first k of the next K-tile
  unsigned a_rows_in;         // EDGE: bit i = pass i's A row is inside M
  bool b_col_in;              // EDGE: the B column chunk is inside N
  bool interior;              // EDGE: the whole C tile is inside M x N (only K can end inside it)

  __device__ __forceinline__ Operands(const T* a_, const T* b_, int M_, int N_, int K_, unsigned ring,
                                      int tid, int lane, int wm0, int wn0)
      : a(a_), b(b_), M(M_), N(N_), K(K_), sA(ring + Layout::A), sB(ring + Layout::B) {
    a_r = tid / A_CPR;
    a_c = tid % A_CPR * 8;
    b_r = tid / B_CPR;
    b_c = tid % B_CPR * 8;
    a_dst = sA + xor_swizzle_chunk<A_CPR>(a_r, tid % A_CPR) * 16;
    b_dst = sB + xor_swizzle_chunk<B_CPR>(b_r, tid % B_CPR) * 16;
    // ldmatrix: lane l addresses row l % 16, chunk column l / 16 of its 16 x 16 block
    a_lane = xor_swizzle_chunk<A_CPR>(wm0 + (lane & 15), lane >> 4) * 16;
    b_lane = xor_swizzle_chunk<B_CPR>(lane & 15, wn0 / 8 + (lane >> 4)) * 16;
  }

  // Start copying the C tile at (m0, n0) from its first K-tile.
  __device__ __forceinline__ void begin_tile(int m0, int n0) {
    a_src = a + (m0 + a_r) * K + a_c;
    b_src = b + b_r * N + n0 + b_c;
    k_next = 0;
    if (EDGE) {
      a_rows_in = 0;
#pragma unroll
      for (int i = 0; i < A_PASSES; ++i) a_rows_in |= (m0 + a_r + i * A_RPP < M ? 1u : 0u) << i;
      b_col_in = n0 + b_c < N;
      interior = m0 + BM <= M && n0 + BN <= N;
    }
  }

  // The copies of the next K-tile into ring stage s (not committed). EDGE: a K-tile wholly inside
  // the matrices (every one of an interior C tile but a last partial one) takes the plain copies
  // too; the others predicate each chunk (zero-fill from a clamped address when outside).
  __device__ __forceinline__ void issue(int s) {
    if (!EDGE || (interior && k_next + BK <= K)) {
#pragma unroll
      for (int i = 0; i < A_PASSES; ++i) cp_async_16(a_dst + s * A_STAGE + i * NT * 16, a_src + i * A_RPP * K);
#pragma unroll
      for (int i = 0; i < B_PASSES; ++i) cp_async_16(b_dst + s * B_STAGE + i * NT * 16, b_src + i * B_RPP * N);
    } else {
#pragma unroll
      for (int i = 0; i < A_PASSES; ++i) {
        const bool in = ((a_rows_in >> i) & 1) && k_next + a_c < K;
        cp_async_16_zfill(a_dst + s * A_STAGE + i * NT * 16, in ? a_src + i * A_RPP * K : a, in ? 16 : 0);
      }
#pragma unroll
      for (int i = 0; i < B_PASSES; ++i) {
        const bool in = b_col_in && k_next + b_r + i * B_RPP < K;
        cp_async_16_zfill(b_dst + s * B_STAGE + i * NT * 16, in ? b_src + i * B_RPP * N : b, in ? 16 : 0);
      }
    }
    a_src += BK;
    b_src += BK * N;
    k_next += BK;
  }

  // k step kk of ring stage s: ldmatrix.x4 per 16 x 16 A fragment, ldmatrix.x4.trans per pair of
  // 16 x 8 B fragments. The k step's chunk column 2 kk is an XOR on the A offset (within the
  // line), the B fragment pair's an XOR / add; the 16-row steps are constant offsets.
  __device__ __forceinline__ void load_frags(int s, int kk, unsigned (&fa)[FRAGS_M][4],
                                             unsigned (&fb)[FRAGS_N][2]) const {
    const unsigned a_s = sA + s * A_STAGE + (a_lane ^ (kk * 32));
#pragma unroll
    for (int i = 0; i < FRAGS_M; ++i) ldmatrix_x4(fa[i], a_s + i * 16 * BK * 2);
    const unsigned b_s = sB + s * B_STAGE + kk * 16 * BN * 2;
#pragma unroll
    for (int jp = 0; jp < FRAGS_N / 2; ++jp) {
      unsigned r[4];
      ldmatrix_x4_trans(r, b_s + chunk_step(b_lane, 2 * jp));
      fb[2 * jp][0] = r[0];
      fb[2 * jp][1] = r[1];
      fb[2 * jp + 1][0] = r[2];
      fb[2 * jp + 1][1] = r[3];
    }
  }
};

// A warp's accumulators (FRAGS_M x FRAGS_N mma tiles at (wm0, wn0) of the block tile) into the
// swizzled C tile [BM][BN] of T at shared address sC: stmatrix.x4 per 16 x 16 block (mma tiles
// 2jp, 2jp + 1; matrices rows 0-7 / 8-15 x tile 2jp / 2jp + 1, lane l gives row l % 16, chunk
// column l / 16) on sm_90, else lane (g, t)'s 32-bit pairs (rows g and g + 8, columns 2t, 2t + 1).
template <int BN, int FRAGS_M, int FRAGS_N, bool F16ACC, class T>
__device__ __forceinline__ void stage_c(const MmaTile<F16ACC> (&acc)[FRAGS_M][FRAGS_N], unsigned sC,
                                        int lane, int wm0, int wn0) {
  constexpr int C_CPR = BN / 8;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned c_lane = xor_swizzle_chunk<C_CPR>(wm0 + (lane & 15), wn0 / 8 + (lane >> 4)) * 16;
#pragma unroll
  for (int i = 0; i < FRAGS_M; ++i)
#pragma unroll
    for (int jp = 0; jp < FRAGS_N / 2; ++jp) {
      const unsigned r[4] = {acc[i][2 * jp].template lo<T>(), acc[i][2 * jp].template hi<T>(),
                             acc[i][2 * jp + 1].template lo<T>(), acc[i][2 * jp + 1].template hi<T>()};
      stmatrix_x4(sC + chunk_step(c_lane, 2 * jp) + i * 16 * BN * 2, r);
    }
#else
  const int g = lane >> 2, t = lane & 3;
  const unsigned c_lane = xor_swizzle_chunk<C_CPR>(wm0 + g, wn0 / 8) * 16;
#pragma unroll
  for (int i = 0; i < FRAGS_M; ++i)
#pragma unroll
    for (int j = 0; j < FRAGS_N; ++j) {
      const unsigned p = sC + chunk_step(c_lane, j) + t * 4 + i * 16 * BN * 2;
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(p), "r"(acc[i][j].template lo<T>()) : "memory");
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(p + 8 * BN * 2), "r"(acc[i][j].template hi<T>())
                   : "memory");
    }
#endif
}

// The staged C tile [BM][BN] at sC to C (row stride N) at (m0, n0), by NT threads: 16-byte chunks,
// consecutive threads on consecutive chunks of a row (whole sectors, coalesced rows). EDGE: only
// the chunks inside M x N (a chunk is all in or all out: N % 8 == 0).
template <int BM, int BN, int NT, bool EDGE, class T>
__device__ __forceinline__ void store_c(unsigned sC, T* c, int m0, int n0, int M, int N, int tid) {
  constexpr int C_CPR = BN / 8;
  static_assert(BM * C_CPR % NT == 0, "whole chunks per thread");
#pragma unroll
  for (int i = 0; i < BM * C_CPR / NT; ++i) {
    const int q = tid + i * NT, row = q / C_CPR, cc = q % C_CPR;
    if (EDGE && (m0 + row >= M || n0 + cc * 8 >= N)) continue;
    copy_shared_to_global_16B(c + (m0 + row) * N + n0 + cc * 8, sC + xor_swizzle_chunk<C_CPR>(row, cc) * 16);
  }
}

}  // namespace hgemm_mma
