// cugemm/kernels/hgemm_wgmma/hgemm_wgmma.cuh: the pieces the Hopper fp16/bf16 GEMM rungs
// (kernels/hgemm_wgmma/0*.cu) share: the shared-memory tile layouts and their wgmma descriptors,
// one K-tile of wgmmas, the ring position of an mbarrier pipeline, and the epilogues (bounded
// stores from registers; 64 x 64 swizzled staging boxes for TMA stores, written by 4-byte shared
// stores or, transposing, by stmatrix). The instructions themselves (wgmma, TMA, mbarriers) are in
// kernels/lib/.
//
// Tile layouts in shared memory (16-bit T; every tile 1024-byte aligned, 128-byte swizzled):
//   A  BM x 64 (K-major): row m is 128 bytes (64 k values) at m * 128, 16-byte chunk c stored at
//      chunk c ^ (m % 8). It is what a TMA box {64, BM} of a row-major M x K matrix with
//      CU_TENSOR_MAP_SWIZZLE_128B writes. wgmma descriptor: SBO = 1024 (8 rows), LBO unused; the
//      k16 step kk starts 32 kk bytes into the row.
//   B  64 x BN (N-major): BN / 64 panels of 64 columns, each 64 k rows of 128 bytes (8 KB), chunk
//      c of row k at c ^ (k % 8): one TMA box {64, 64} per panel. wgmma descriptor (TRANS_B = 1):
//      LBO = 8192 (panel to panel), SBO = 1024 (8 k rows); the k16 step kk starts 2048 kk bytes in.
//
// Accumulator fragment of a 64 x N wgmma (lib/wgmma.cuh), warp w of the warpgroup, g = lane / 4,
// t = lane % 4: acc[4j + 2h + e] is row 16w + g + 8h, column 8j + 2t + e (h, e in {0, 1}).
#pragma once
#include "../lib/barrier.cuh"
#include "../lib/mma.cuh"
#include "../lib/wgmma.cuh"

namespace hgemm_wgmma {

inline constexpr int BK = 64;                 // k values per K-tile: one 128-byte row of 16-bit elements
inline constexpr int A_ROW_BYTES = 128;       // one row of an A tile
inline constexpr int B_PANEL_BYTES = BK * 128;  // one 64-column panel of a B tile

// ---- the ring of an mbarrier pipeline: stage index and the parity of its current phase -----------
template <int STAGES>
struct Ring {
  int stage = 0;
  unsigned phase = 0;
  __device__ __forceinline__ void advance() {
    if (++stage == STAGES) {
      stage = 0;
      phase ^= 1;
    }
  }
};

// ---- one K-tile (64 k values) of a 64 x BN warpgroup slab: four wgmma m64nBNk16 -----------------
// a_addr: the slab's first A row (shared-window address), b_addr: the B tile. accumulate = false
// on a tile's first K-tile: its first wgmma overwrites the accumulators (scale-d = 0), so they
// need no zeroing. The caller brackets one K-tile's wgmmas (of every slab it owns) with
// begin_group / end_group and waits (wait_group) before it reuses the stage or reads the
// accumulators.
template <class T, int BN>
__device__ __forceinline__ void mma_ktile(float (&acc)[BN / 2], unsigned a_addr, unsigned b_addr,
                                          bool accumulate) {
#pragma unroll
  for (int kk = 0; kk < BK / 16; ++kk) {
    cugemm_wgmma::wgmma_ss<T, 0, 1>(acc, cugemm_wgmma::make_desc_sw128(a_addr + 32 * kk),
                                    cugemm_wgmma::make_desc_sw128_mn(b_addr + 2048 * kk, B_PANEL_BYTES),
                                    (accumulate || kk > 0) ? 1 : 0);
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
template <class T, int NACC>
__device__ __forceinline__ void store_slab(T* __restrict__ c, const float (&acc)[NACC], int row, int col,
                                           int M, int N) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = row + 8 * h;
    if (r < M) {
      T* const c_row = c + static_cast<size_t>(r) * N;
#pragma unroll
      for (int j = 0; j < NACC / 4; ++j) {
        const int n = col + 8 * j;
        if (n < N) *reinterpret_cast<unsigned*>(c_row + n) = pack2<T>(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
      }
    }
  }
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

// The warp-uniform warpgroup index (the role branch ptxas must see as uniform for setmaxnreg).
__device__ __forceinline__ int warpgroup_index() {
  return __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x) / 128, 0);
}

}  // namespace hgemm_wgmma
