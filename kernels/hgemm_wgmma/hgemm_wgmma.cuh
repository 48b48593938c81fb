// cugemm/kernels/hgemm_wgmma/hgemm_wgmma.cuh: the pieces the Hopper fp16/bf16 GEMM rungs
// (kernels/hgemm_wgmma/0*.cu) share: the shared-memory tile layouts, their wgmma descriptors and the
// dynamic shared memory of a ring kernel (RingSmem), one K-tile of wgmmas (and the narrow-edge width
// dispatch), and the epilogues (bounded stores from registers; 64 x 64 swizzled staging boxes for
// TMA stores, written by 4-byte shared stores or, transposing, by stmatrix; staged boxes written to
// a C of any alignment by plain warps), and the grouped forms' tables of the groups' rows and tiles.
// The instructions themselves (wgmma, TMA, mbarriers) are in kernels/lib/.
//
// Tile layouts in shared memory (16-bit T; every tile 1024-byte aligned, 128-byte swizzled):
//   A  BM x 64 (K-major): row m is 128 bytes (64 k values) at m * 128, 16-byte chunk c stored at
//      chunk c ^ (m % 8). It is what a TMA box {64, BM} of a row-major M x K matrix with
//      CU_TENSOR_MAP_SWIZZLE_128B writes. wgmma descriptor: SBO = 1024 (8 rows), LBO unused; the
//      k16 step kk starts 32 kk bytes into the row.
//   B  64 x BN (N-major): BN / 64 panels of 64 columns, each 64 k rows of 128 bytes (8 KB), chunk
//      c of row k at c ^ (k % 8): one TMA box {64, 64} per panel. wgmma descriptor (TRANS_B = 1):
//      LBO = 8192 (panel to panel), SBO = 1024 (8 k rows); the k16 step kk starts 2048 kk bytes in.
//   B_P32 (08_small_m.cu, tiles of any multiple of 32 columns): BN / 32 panels of 32 columns, each
//      64 k rows of 64 bytes (4 KB), chunk c of row k at c ^ (k / 2 % 4): one TMA box {32, 64} with
//      CU_TENSOR_MAP_SWIZZLE_64B per panel. Descriptor (TRANS_B = 1): LBO = 4096, SBO = 512; the
//      k16 step kk starts 1024 kk bytes in.
// The transposed operand forms of 04_persistent.cu swap the two layouts:
//   A_COL  A read from a column-major M x K (memory: K rows of M): the A tile is M-major, BM / 64
//      panels of 64 m x 64 k rows laid out like B's panels above (one TMA box {64 m, 64 k} each);
//      a warpgroup's 64-row slab is one panel. Descriptor as B's (TRANS_A = 1).
//   B_COL  B read from a column-major K x N (memory: N rows of K, the W of x @ W.T): the B tile is
//      K-major, BN rows of 128 bytes laid out like A's above (one TMA box {64 k, 64 n} per 64 rows,
//      so panel p still starts at p * 8192). Descriptor as A's (TRANS_B = 0).
//
// Accumulator fragment of a 64 x N wgmma (lib/wgmma.cuh), warp w of the warpgroup, g = lane / 4,
// t = lane % 4: acc[4j + 2h + e] is row 16w + g + 8h, column 8j + 2t + e (h, e in {0, 1}).
#pragma once
#include "../lib/barrier.cuh"
#include "../lib/epilogue.cuh"
#include "../lib/mma.cuh"
#include "../lib/wgmma.cuh"

namespace hgemm_wgmma {

inline constexpr int BK = 64;                 // k values per K-tile: one 128-byte row of 16-bit elements
inline constexpr int A_ROW_BYTES = 128;       // one row of an A tile
inline constexpr int B_PANEL_BYTES = BK * 128;  // one 64-column panel of a B tile
inline constexpr int BOX_BYTES = 64 * 128;      // one 64 x 64 staging box of C (the staged epilogues)

// ---- the dynamic shared memory of a ring kernel: one declaration per kernel -----------------------
// Byte offsets from the 1024-aligned base (align_1024 of the dynamic array; swizzle atoms are 1024
// bytes): STAGES A tiles of A_STAGE bytes, then STAGES B tiles of B_STAGE, then EPI bytes for the
// epilogue (staging boxes or slabs). BYTES, the launch's dynamic shared memory, adds the 1024 bytes
// of slack the alignment may skip. A kernel file names its layout once (an alias of this), defines
// `<template>_smem_bytes` as its BYTES (cugemm reads that number from the compiled PTX) and carves
// its shared memory from the same members.
template <int A_STAGE_, int B_STAGE_, int STAGES, int EPI_BYTES = 0>
struct RingSmem {
  static constexpr int A_STAGE = A_STAGE_, B_STAGE = B_STAGE_;
  static constexpr int A = 0;                          // STAGES x A tile
  static constexpr int B = A + STAGES * A_STAGE;       // STAGES x B tile
  static constexpr int EPI = B + STAGES * B_STAGE;     // the epilogue's staging
  static constexpr int BYTES = EPI + EPI_BYTES + 1024;
};

// ---- one K-tile (64 k values) of a 64 x BN warpgroup slab: four wgmma m64nBNk16 -----------------
// a_addr: the slab's first A row (A_COL: its A panel), b_addr: the B tile (shared-window
// addresses). accumulate = false on a tile's first K-tile: its first wgmma overwrites the
// accumulators (scale-d = 0), so they need no zeroing. The caller brackets one K-tile's wgmmas (of
// every slab it owns) with begin_group / end_group and waits (wait_group) before it reuses the stage
// or reads the accumulators. A_COL / B_COL: the transposed tile layouts (header comment).
// B_P32 (08_small_m.cu, B row-major): the B tile is BN / 32 panels of 32 columns, 64-byte
// swizzled (make_desc_sw64_mn), B_P32_PANEL_BYTES apart, so BN may be any multiple of 32.
// 8-bit T (fp8_e4m3 / fp8_e5m2, kernels/fp8_wgmma/; B's type TB): the same 128-byte K-major rows
// hold 128 k values, four wgmma m64nBNk32 steps of 32 bytes, A K-major and B_COL only.
inline constexpr int B_P32_PANEL_BYTES = BK * 64;  // one 32-column panel of a B_P32 tile
template <class T, int BN, bool A_COL = false, bool B_COL = false, bool B_P32 = false, class TB = T>
__device__ __forceinline__ void mma_ktile(float (&acc)[BN / 2], unsigned a_addr, unsigned b_addr,
                                          bool accumulate) {
  using namespace cugemm_wgmma;
  static_assert(!(B_P32 && B_COL), "B_P32 is a layout of a row-major B");
  static_assert(!IsFp8<T>::value || (!A_COL && B_COL), "8-bit operands are K-major (A row-major, B_COL)");
#pragma unroll
  for (int kk = 0; kk < BK / 16; ++kk) {
    const unsigned long long da = A_COL ? make_desc_sw128_mn(a_addr + 2048 * kk, B_PANEL_BYTES)
                                        : make_desc_sw128(a_addr + 32 * kk);
    const unsigned long long db = B_COL   ? make_desc_sw128(b_addr + 32 * kk)
                                  : B_P32 ? make_desc_sw64_mn(b_addr + 1024 * kk, B_P32_PANEL_BYTES)
                                          : make_desc_sw128_mn(b_addr + 2048 * kk, B_PANEL_BYTES);
    if constexpr (IsFp8<T>::value) {
      wgmma_fp8_ss<T, TB>(acc, da, db, (accumulate || kk > 0) ? 1 : 0);
    } else {
      wgmma_ss<T, A_COL ? 1 : 0, B_COL ? 0 : 1>(acc, da, db, (accumulate || kk > 0) ? 1 : 0);
    }
  }
}

// The first N of an accumulator array, as an array (the fragment of a 64 x N wgmma is the first
// N / 2 registers of a wider one's: columns 0 .. N - 1).
template <int N, int NACC>
__device__ __forceinline__ float (&acc_prefix(float (&acc)[NACC]))[N] {
  static_assert(N <= NACC, "a prefix of the accumulators");
  return *reinterpret_cast<float(*)[N]>(&acc[0]);
}

// ---- the wgmma width of a tile of which only `live` (1 .. 4) 64-column panels lie inside N --------
// A 128 x 256 tile at the right edge of C may hold 1, 2 or 3 live panels (N % 256 in 1 .. 192): its
// wgmmas can be m64n64 / n128 / n192 on the first accumulators (acc_prefix), 1/4 to 3/4 of the
// tensor work; the dead panels' accumulators keep stale values, their columns are never stored.
// with_live_width calls f(Cols<W>{}) once with the narrowest such W, so the caller's whole K loop
// is instantiated per width and chosen once per tile (a branch inside the K loop made ptxas join
// the wgmma groups of the four widths at every K-tile).
template <int W>
struct Cols {
  static constexpr int value = W;
};
template <class F>
__device__ __forceinline__ void with_live_width(int live, F&& f) {
  if (live >= 4) {
    f(Cols<256>{});
  } else if (live == 3) {
    f(Cols<192>{});
  } else if (live == 2) {
    f(Cols<128>{});
  } else {
    f(Cols<64>{});
  }
}

// wgmma.fence before a K-tile's wgmmas (the accumulators were last touched by ordinary code, or by
// wgmmas of the same shape, which are ordered anyway), and the commit after them. The operand
// fences keep the compiler from moving accumulator accesses across the asynchronous group.
template <int NACC>
__device__ __forceinline__ void begin_group(float (&acc)[NACC]) {
  cugemm_wgmma::fence_operands(acc);
  cugemm_wgmma::fence();
}
template <int NACC>
__device__ __forceinline__ void end_group(float (&acc)[NACC]) {
  cugemm_wgmma::commit_group();
  cugemm_wgmma::fence_operands(acc);
}

// ---- epilogue 1: bounded 4-byte stores straight from the accumulators ----------------------------
// c_row: row `row` of C (this thread's row 16w + g of the slab, offset to the tile); col: the
// thread's first column (n0 + 2t). Rows >= M and columns >= N are not written (N % 2 == 0, so a
// pair is either wholly inside or wholly outside). The accumulators must be final (wait_group<0>).
// store_slab_from<T, J0>: only the 8-column groups J0 .. of the slab (columns 8 J0 ..: a fitted tile's
// last columns, after its whole 64-column panels went out through TMA).
template <class T, int J0, int NACC>
__device__ __forceinline__ void store_slab_from(T* __restrict__ c, const float (&acc)[NACC], int row, int col,
                                                int M, int N) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = row + 8 * h;
    if (r < M) {
      T* const c_row = c + static_cast<size_t>(r) * N;
#pragma unroll
      for (int j = J0; j < NACC / 4; ++j) {
        const int n = col + 8 * j;
        if (n < N) *reinterpret_cast<unsigned*>(c_row + n) = pack2<T>(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
      }
    }
  }
}
template <class T, int NACC>
__device__ __forceinline__ void store_slab(T* __restrict__ c, const float (&acc)[NACC], int row, int col,
                                           int M, int N) {
  store_slab_from<T, 0>(c, acc, row, col, M, N);
}

// ---- epilogue 2: one 64 x 64 panel of the slab into a 128-byte-swizzled staging box -------------
// box: 8 KB of shared memory (1024-aligned) laid out as a TMA box {64, 64} with
// CU_TENSOR_MAP_SWIZZLE_128B: row r at r * 128, 16-byte chunk c at c ^ (r % 8). Columns 64p ..
// 64p + 63 of the slab; w = warp in the warpgroup. Each 4-byte store of a warp covers 8 rows x 4
// chunks that the swizzle spreads over all 32 banks (conflict-free).
template <class T, int NACC>
__device__ __forceinline__ void stage_panel(char* box, const float (&acc)[NACC], int p, int w, int g, int t) {
#pragma unroll
  for (int jj = 0; jj < 8; ++jj) {
    const int j = 8 * p + jj;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = 16 * w + g + 8 * h;  // r % 8 == g
      *reinterpret_cast<unsigned*>(box + r * 128 + ((jj ^ g) << 4) + 4 * t) =
          pack2<T>(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
    }
  }
}

// ---- epilogue 3: eight 8-column groups of the slab into a staging box with stmatrix ------------
// The same boxes as stage_panel, written with stmatrix.x4 (four 8 x 8 matrices of 16-bit pairs
// per instruction: 4 instructions per box instead of 16 4-byte stores). Groups j = jbase ..
// jbase + 7 of the fragment (acc[4j + 2h + e]). TRANS = false: the fragment rows are the box rows
// (fragment row 16w + 8h + i -> box row, group j -> 16-byte chunk j % 8). TRANS = true (the
// fragment holds C^T, 06_persistent_bt.cu): stmatrix .trans stores each 8 x 8 matrix transposed, so
// fragment column 8j + i becomes box row 8 (j % 8) + i and fragment rows 16w + 8h .. + 7 its
// 16-byte chunk 2w + h. Either way the 8 rows of one matrix fall in 8 different chunk columns of
// the 128-byte swizzle: conflict-free. (stmatrix_x4 and stmatrix_x4_trans: lib/mma.cuh.)
template <bool TRANS, class T, int NACC>
__device__ __forceinline__ void stage_box_stmatrix(unsigned box, const float (&acc)[NACC], int jbase, int w,
                                                   int lane) {
  const int q = lane >> 3, i = lane & 7;  // this lane addresses row i of matrix q
#pragma unroll
  for (int jp = 0; jp < 4; ++jp) {
    const int j = jbase + 2 * jp;
    // matrices (h = 0, j), (h = 1, j), (h = 0, j + 1), (h = 1, j + 1)
    const unsigned r[4] = {pack2<T>(acc[4 * j], acc[4 * j + 1]), pack2<T>(acc[4 * j + 2], acc[4 * j + 3]),
                           pack2<T>(acc[4 * j + 4], acc[4 * j + 5]), pack2<T>(acc[4 * j + 6], acc[4 * j + 7])};
    const int hq = q & 1, jj = 2 * jp + (q >> 1);  // matrix q's h and its group within the box
    const int row = TRANS ? 8 * jj + i : 16 * w + 8 * hq + i;
    const int chunk = TRANS ? 2 * w + hq : jj;
    const unsigned addr = box + row * 128 + ((chunk ^ i) << 4);  // row % 8 == i
    if constexpr (TRANS) {
      stmatrix_x4_trans(addr, r);
    } else {
      stmatrix_x4(addr, r);
    }
  }
}

// The byte offset of lane `lane`'s 4-byte pair (columns 2 lane, 2 lane + 1) of row r in a staging box
// of stage_panel's layout: a row's 32 words lie in 32 banks.
__device__ __forceinline__ int staged_pair(int r, int lane) {
  return r * 128 + (((lane >> 2) ^ (r & 7)) << 4) + 4 * (lane & 3);
}

// ---- epilogue 4: a staged slab to a C of any alignment, by plain warps ---------------------------
// `live` staging boxes (stage_panel's layout, 8 KB apart from `slab`: columns 64p .. 64p + 63 of a
// 64-row slab) whose element (0, 0) is C's (row0, n0); C has row stride ldc elements and may be only
// 2-byte aligned (neither TMA nor 16-byte stores can write it). Warp w of nw takes slab rows w,
// w + nw, ...: lane l reads 4 bytes of each box row (columns 2l, 2l + 1: the swizzle puts a row's 32
// words in 32 banks), all boxes' first, then writes them, one 4-byte store per box where the pair is
// 4-byte aligned in C (the whole row alike), two 2-byte stores where not: each store instruction
// of a warp covers 128 contiguous bytes of C. Rows >= M and columns >= N are not written. The
// stores are st.global.cs (streaming: C is not read again). Two rows per iteration fit the storing
// warps' 40 registers (setmaxnreg) without spills. What the stores cost and the alternatives that
// measured slower: docs/hgemm_wgmma.md (rung 7's ANY_C form).
// EPI (lib/epilogue.cuh) whose DEFERS holds: each pair read from the slab is finished (the activation
// and a post-activation source) before it is stored; the rows then go one at a time (40 registers).
template <class T, int PANELS, class EPI = epilogue::None>
__device__ __forceinline__ void store_staged_slab(T* __restrict__ c, int ldc, const char* slab, int row0,
                                                  int n0, int live, int M, int N, int w, int nw, int lane,
                                                  const epilogue::Args& ep = epilogue::Args{}) {
  constexpr bool FINISH = epilogue::DEFERS<EPI>;
  const int rows = min(64, M - row0);
  const int col = n0 + 2 * lane;  // the lane's first column in box 0
#pragma unroll(FINISH ? 1 : 2)
  for (int r = w; r < rows; r += nw) {
    const char* const src = slab + staged_pair(r, lane);
    unsigned v[PANELS];
#pragma unroll
    for (int p = 0; p < PANELS; ++p) {
      if (p < live) v[p] = *reinterpret_cast<const unsigned*>(src + p * B_PANEL_BYTES);
    }
    if constexpr (FINISH) {
#pragma unroll
      for (int p = 0; p < PANELS; ++p) {
        if (p < live && col + 64 * p < N) v[p] = epilogue::finish_pair<EPI, T>(v[p], row0 + r, col + 64 * p, ep);
      }
    }
    T* const dst = c + static_cast<size_t>(row0 + r) * ldc + col;
    const bool pairs = (reinterpret_cast<size_t>(dst) & 3) == 0;
#pragma unroll
    for (int p = 0; p < PANELS; ++p) {
      const int n = col + 64 * p;
      if (p >= live) break;
      if (pairs && n + 1 < N) {
        __stcs(reinterpret_cast<unsigned*>(dst + 64 * p), v[p]);
      } else {
        if (n < N) __stcs(reinterpret_cast<unsigned short*>(dst + 64 * p), static_cast<unsigned short>(v[p]));
        if (n + 1 < N) __stcs(reinterpret_cast<unsigned short*>(dst + 64 * p + 1), static_cast<unsigned short>(v[p] >> 16));
      }
    }
  }
}

// ---- epilogue 5: a staged slab finished in place, for a TMA store (04_persistent.cu's STAGED form) --
// The deferred half of EPI (epilogue::finish_pair: the activation, a post-activation source) on the
// pairs of `slab` (store_staged_slab's layout, row0 and n0), written back where they were read.
// Warp w of nw takes ROWS rows at a time (rows ROWS w .., then ROWS nw further on): ROWS x PANELS
// pairs, 8 (4 with a residual's loads: the storing warps have 56 registers), are read, finished and
// written back together, with no branch between them, so that their activations' MUFU and FMA chains
// interleave: one warp a scheduler has no other warp to hide their latency. Boxes past the live ones
// and rows past M are finished too (their results are never stored; S is read only inside M and N),
// rows past the slab's 64 are not touched.
template <class T, int PANELS, class EPI>
__device__ __forceinline__ void finish_staged_slab(char* slab, int row0, int n0, int M, int N, int w, int nw,
                                                   int lane, const epilogue::Args& ep) {
  constexpr int PAIRS = EPI::SRC == epilogue::SRC_POST ? 4 : 8;
  constexpr int ROWS = PAIRS / PANELS >= 1 ? PAIRS / PANELS : 1;
  static_assert(64 % ROWS == 0, "whole groups of rows in a slab");
  const int col = n0 + 2 * lane;  // the lane's first column in box 0
#pragma unroll 1
  for (int r0 = ROWS * w; r0 < 64 && row0 + r0 < M; r0 += ROWS * nw) {
    unsigned v[ROWS][PANELS];
#pragma unroll
    for (int i = 0; i < ROWS; ++i) {
#pragma unroll
      for (int p = 0; p < PANELS; ++p)
        v[i][p] = *reinterpret_cast<const unsigned*>(slab + p * B_PANEL_BYTES + staged_pair(r0 + i, lane));
    }
#pragma unroll
    for (int i = 0; i < ROWS; ++i) {
#pragma unroll
      for (int p = 0; p < PANELS; ++p) {
        const int r = row0 + r0 + i, n = col + 64 * p;
        v[i][p] = epilogue::finish_pair<EPI, T>(v[i][p], r, n, ep, r < M && n < N);
      }
    }
#pragma unroll
    for (int i = 0; i < ROWS; ++i) {
#pragma unroll
      for (int p = 0; p < PANELS; ++p)
        *reinterpret_cast<unsigned*>(slab + p * B_PANEL_BYTES + staged_pair(r0 + i, lane)) = v[i][p];
    }
  }
}

// The warp-uniform warpgroup index (the role branch ptxas must see as uniform for setmaxnreg).
__device__ __forceinline__ int warpgroup_index() {
  return __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x) / 128, 0);
}

}  // namespace hgemm_wgmma

// ==== appended for the split-K rung (07_splitk.cu): the mainloop of one tile over a K range, and
// fp32 partial tiles in global memory ===============================================================
#include "../lib/tma.cuh"

namespace hgemm_wgmma {

// ---- the producer side of one BM x BN tile over K-tiles [kt0, kt1), one thread, no clusters -------
// For each K-tile: wait until the ring stage is free (EMPTY, parity of its previous use), arm FULL
// with the bytes that will land (the A box {64, BM} and the B panels not wholly past N: a panel past
// N is not copied, its stale columns only reach columns of C that are never stored) and issue the
// copies. A rows from m0, B columns from n0, B's with the L2 eviction policy b_policy.
// B_COL: B's map describes the N x K memory of W (B = W.T): panel p is the box {64 k, 64 n} at
// (kt * BK, n0 + 64 p), K-major, the same 8 KB at the same place in the stage.
// The ring runs on across calls.
template <int BM, int BN, int STAGES, bool B_COL = false>
__device__ __forceinline__ void produce_ktiles(Ring<STAGES>& ring, unsigned long long* full,
                                               unsigned long long* empty, char* sA, char* sB,
                                               const TensorMap* tmap_a, const TensorMap* tmap_b, int m0,
                                               int n0, int N, int kt0, int kt1, unsigned long long b_policy) {
  constexpr int A_STAGE = BM * A_ROW_BYTES;
  constexpr int PANELS = BN / 64;
  constexpr int B_STAGE = PANELS * B_PANEL_BYTES;
  const int live = min(PANELS, (N - n0 + 63) / 64);
  const unsigned tx = A_STAGE + live * B_PANEL_BYTES;
  for (int kt = kt0; kt < kt1; ++kt) {
    const int s = ring.stage;
    mbarrier_wait(&empty[s], ring.phase ^ 1);
    mbarrier_arrive_expect_tx(&full[s], tx);
    tma_load_2d(sA + s * A_STAGE, tmap_a, &full[s], kt * BK, m0);
#pragma unroll
    for (int p = 0; p < PANELS; ++p) {
      if (p >= live) break;
      const int c0 = B_COL ? kt * BK : n0 + 64 * p, c1 = B_COL ? n0 + 64 * p : kt * BK;
      tma_load_2d(sB + s * B_STAGE + p * B_PANEL_BYTES, tmap_b, &full[s], c0, c1, b_policy);
    }
    ring.advance();
  }
}

// ---- the consumer side: `count` (>= 1) K-tiles of wgmmas into one 64 x BN slab --------------------
// a_addr: the slab's first A row in stage 0 (stages A_STAGE bytes apart), b_addr: stage 0's B tile
// (stages B_STAGE apart). One K-tile of wgmmas in flight: after issuing K-tile i the consumer waits
// for K-tile i - 1's and releases its stage (release(stage): the caller's arrival on EMPTY). The
// first K-tile overwrites the accumulators. On return they are final and every stage released.
// A_COL / B_COL / B_P32: the operand layouts of mma_ktile; TB: B's element type where it differs (8-bit).
// SLABS > 1 (acc[SLABS][BN / 2]): one warpgroup owns SLABS 64-row slabs of the tile (a ping-pong
// consumer, 04_persistent.cu), slab r's A rows 64 r on (A_COL: its panel, the same offset); a K-tile's
// wgmmas of every slab form one group. issued(): called once the last K-tile's wgmmas are issued, after
// the consumer's last wait on a FULL barrier (where a ping-pong consumer hands the turn over).
template <class T, int BN, int STAGES, int A_STAGE, int B_STAGE, bool A_COL = false, bool B_COL = false,
          bool B_P32 = false, class TB = T, int SLABS, class Release, class Issued>
__device__ __forceinline__ void consume_ktiles(float (&acc)[SLABS][BN / 2], Ring<STAGES>& ring,
                                               unsigned long long* full, unsigned a_addr, unsigned b_addr,
                                               int count, Release&& release, Issued&& issued) {
  static_assert(64 * A_ROW_BYTES == B_PANEL_BYTES, "a slab's A rows (A_COL: its panel) are 8 KB on");
  int prev = 0;
  for (int i = 0; i < count; ++i) {
    mbarrier_wait(&full[ring.stage], ring.phase);
#pragma unroll
    for (int r = 0; r < SLABS; ++r) cugemm_wgmma::fence_operands(acc[r]);
    cugemm_wgmma::fence();
#pragma unroll
    for (int r = 0; r < SLABS; ++r)
      mma_ktile<T, BN, A_COL, B_COL, B_P32, TB>(acc[r], a_addr + ring.stage * A_STAGE + r * B_PANEL_BYTES,
                                                b_addr + ring.stage * B_STAGE, i > 0);
    cugemm_wgmma::commit_group();
#pragma unroll
    for (int r = 0; r < SLABS; ++r) cugemm_wgmma::fence_operands(acc[r]);
    if (i == count - 1) issued();
    cugemm_wgmma::wait_group<1>();
    if (i > 0) release(prev);
    prev = ring.stage;
    ring.advance();
  }
  cugemm_wgmma::wait_group<0>();
#pragma unroll
  for (int r = 0; r < SLABS; ++r) cugemm_wgmma::fence_operands(acc[r]);
  release(prev);
}
// One 64 x BN slab (every rung's consumer but the ping-pong one).
template <class T, int BN, int STAGES, int A_STAGE, int B_STAGE, bool A_COL = false, bool B_COL = false,
          bool B_P32 = false, class TB = T, class Release>
__device__ __forceinline__ void consume_ktiles(float (&acc)[BN / 2], Ring<STAGES>& ring,
                                               unsigned long long* full, unsigned a_addr, unsigned b_addr,
                                               int count, Release&& release) {
  consume_ktiles<T, BN, STAGES, A_STAGE, B_STAGE, A_COL, B_COL, B_P32, TB>(
      *reinterpret_cast<float(*)[1][BN / 2]>(&acc), ring, full, a_addr, b_addr, count, release, [] {});
}

// ---- fp32 partial slabs in global memory, in fragment order -----------------------------------
// A 64 x BN slab's accumulators (NACC = BN / 2 per thread of the warpgroup) stored as NACC / 4
// float4 per thread: float4 j of thread tid at index j * 128 + tid, so each warp store or load
// covers 512 contiguous bytes (no row or column arithmetic, no bounds: a partial is always whole).
// Stores and loads go through L2 only (.cg): the partials are written by one block and read by
// another of the same launch.
template <int NACC>
__device__ __forceinline__ void store_partial(float* __restrict__ p, const float (&acc)[NACC], int tid) {
  float4* const q = reinterpret_cast<float4*>(p) + tid;
#pragma unroll
  for (int j = 0; j < NACC / 4; ++j)
    __stcg(q + j * 128, make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]));
}
// The last slice's reduction: acc = p_0 + p_1 + ... + p_(S-1), added in that order whatever order
// the slices finished in (a deterministic result). p_s is the partial slab at base + s * slot_floats
// (store_partial's layout), except p_mine, which is acc itself. The other slices' slabs are streamed
// into shared memory by bulk copies (cp.async.bulk, thread tid == 0 issues them), half a slab at a
// time, double-buffered in `bufs` (2 x NACC * 256 bytes, 16-byte aligned) on the mbarriers bars[2]
// (count 1, fresh: phases start at 0): loading through registers kept too few bytes in flight (one
// L2 round trip per 8 float4 per thread). Per half: x = p_0 + ... + p_(mine-1) (from 0), then acc
// = x + acc, then acc += p_(mine+1), ... `bar_id`: a named barrier of the 128 threads (a buffer is
// refilled only after every thread has read it). The caller's global-memory acquire (after the
// arrivals) precedes the call; the bulk copies read global memory through the async proxy, hence
// fence_proxy_async_global first.
template <int NACC>
__device__ __forceinline__ void reduce_partials(float (&acc)[NACC], const float* __restrict__ base,
                                                size_t slot_floats, int S, int mine, int tid, char* bufs,
                                                unsigned long long* bars, int bar_id) {
  constexpr int HALF = NACC / 2;          // accumulators per thread in half a slab
  constexpr int PIECE = HALF * 128 * 4;   // bytes of half a slab
  const int total = 2 * (S - 1);          // copies: (half, other slice) in that order
  auto issue = [&](int n) {
    const int h = n / (S - 1), i = n % (S - 1);
    const int s = i < mine ? i : i + 1;
    mbarrier_arrive_expect_tx(&bars[n & 1], PIECE);
    bulk_load(bufs + (n & 1) * PIECE, base + s * slot_floats + h * (PIECE / 4), PIECE, &bars[n & 1]);
  };
  if (tid == 0) {
    fence_proxy_async_global();
    issue(0);
    if (total > 1) issue(1);
  }
  int n = 0;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float x[HALF];
#pragma unroll
    for (int i = 0; i < HALF; ++i) x[i] = 0.f;
    for (int s = 0; s < S; ++s) {
      if (s == mine) {
#pragma unroll
        for (int i = 0; i < HALF; ++i) acc[h * HALF + i] = x[i] + acc[h * HALF + i];
        continue;
      }
      mbarrier_wait(&bars[n & 1], (n >> 1) & 1);
      const float4* const buf = reinterpret_cast<const float4*>(bufs + (n & 1) * PIECE) + tid;
      if (s < mine) {
#pragma unroll
        for (int j = 0; j < HALF / 4; ++j) {
          const float4 v = buf[j * 128];
          x[4 * j] += v.x;
          x[4 * j + 1] += v.y;
          x[4 * j + 2] += v.z;
          x[4 * j + 3] += v.w;
        }
      } else {
#pragma unroll
        for (int j = 0; j < HALF / 4; ++j) {
          const float4 v = buf[j * 128];
          acc[h * HALF + 4 * j] += v.x;
          acc[h * HALF + 4 * j + 1] += v.y;
          acc[h * HALF + 4 * j + 2] += v.z;
          acc[h * HALF + 4 * j + 3] += v.w;
        }
      }
      named_barrier_sync(bar_id, 128);  // every thread has read this buffer: it may be refilled
      if (tid == 0 && n + 2 < total) issue(n + 2);
      ++n;
    }
  }
}

}  // namespace hgemm_wgmma

// ---- grouped products: the groups' rows and tiles (04_persistent.cu and 05_tf32.cu with GROUPS) ----
// Group g's first row: g * masked_m (the masked layout: group g's rows start at a fixed stride),
// else where the group before it ended.
CUGEMM_DEVICE int group_row0(const int* group_end, int g, int masked_m) {
  return masked_m > 0 ? g * masked_m : g > 0 ? group_end[g - 1] : 0;
}

// The group whose tiles hold walk tile t: the last g with group_first[g] <= t (empty groups share
// their successor's first tile), by bisection over group_first[0 .. groups].
CUGEMM_DEVICE int find_group(const int* group_first, int groups, int t) {
  int lo = 0, hi = groups;  // group_first[lo] <= t < group_first[hi]
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (group_first[mid] <= t) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// One warp fills the groups' tables from `ends` (global memory, possibly written by the kernel
// before: it waits for that kernel first). Contiguous layout (masked_m == 0): ends[g] is the row
// after group g's last (torch._grouped_mm's offsets); each end is clamped into [the previous group's
// end, M], so decreasing ends give empty groups and no row lies in two groups or past M. Masked
// layout (masked_m > 0): ends[g] counts group g's valid rows of its masked_m, clamped into [0,
// masked_m]. ends == nullptr: one group of all M rows. Then group_first[g] = the tiles of the groups
// before g (a group of r rows has ceil(r / BM) x tiles_n tiles): warp scans, 32 groups at a time.
template <int BM>
CUGEMM_DEVICE void group_table(int* group_end, int* group_first, const int* __restrict__ ends, int groups,
                               int masked_m, int M, int tiles_n) {
  const int lane = threadIdx.x & 31;
  grid_dependency_wait();
  for (int g = lane; g < groups; g += 32) group_end[g] = ends != nullptr ? ends[g] : M;
  __syncwarp();
  if (lane == 0) group_first[0] = 0;
  int end_before = 0, tiles_before = 0;
  for (int base = 0; base < groups; base += 32) {
    const int g = base + lane;
    const int raw = g < groups ? group_end[g] : 0;
    int row0, end;
    if (masked_m > 0) {
      row0 = g * masked_m;
      end = row0 + min(max(raw, 0), masked_m);
    } else {
      end = min(max(raw, end_before), M);
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {  // a running maximum: no group ends before the one before it
        const int other = __shfl_up_sync(0xffffffffu, end, d);
        if (lane >= d) end = max(end, other);
      }
      row0 = __shfl_up_sync(0xffffffffu, end, 1);
      if (lane == 0) row0 = end_before;
    }
    int tiles = g < groups ? (end - row0 + BM - 1) / BM * tiles_n : 0;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {  // inclusive sum of the tiles
      const int other = __shfl_up_sync(0xffffffffu, tiles, d);
      if (lane >= d) tiles += other;
    }
    if (g < groups) {
      group_end[g] = end;
      group_first[g + 1] = tiles_before + tiles;
    }
    end_before = __shfl_sync(0xffffffffu, end, 31);
    tiles_before += __shfl_sync(0xffffffffu, tiles, 31);
  }
}
