// cugemm/kernels/hgemm_wmma/wmma_common.cuh: helpers of the WMMA HGEMM family (kernels/hgemm_wmma/).
//
// It includes what it uses (the WMMA API from <mma.h>, fp16 types, the shared device library).
//
//   FragA / FragB / FragC    the WMMA fragment types of a WM x WN x WK shape (row-major A and B;
//                            the accumulator is float, or half when F16ACC)
//   TileCopy                 a ROWS x COLS tile of halves, global -> shared, by NT threads: through
//                            registers (sync) or cp.async (async, 16-byte chunks only)
//   warp_store_c             a warp's WTM x WTN accumulator fragments -> C as fp16: fp32 through a
//                            per-warp shared-memory scratch strip and 16-byte stores, fp16 directly
#pragma once
#include <cuda_fp16.h>
#include <mma.h>

#include "../lib/cp_async.cuh"
#include "../lib/mma.cuh"
#include "../lib/move.cuh"

namespace cugemm_wmma {

namespace wmma = nvcuda::wmma;

template <bool F16ACC> struct AccType { using type = float; };
template <> struct AccType<true> { using type = half; };

template <int WM, int WN, int WK>
using FragA = wmma::fragment<wmma::matrix_a, WM, WN, WK, half, wmma::row_major>;
template <int WM, int WN, int WK>
using FragB = wmma::fragment<wmma::matrix_b, WM, WN, WK, half, wmma::row_major>;
template <int WM, int WN, int WK, bool F16ACC>
using FragC = wmma::fragment<wmma::accumulator, WM, WN, WK, typename AccType<F16ACC>::type>;

// The fp16 shapes WMMA offers (sm_70+): 16x16x16, 32x8x16, 8x32x16.
__host__ __device__ constexpr bool is_wmma_f16_shape(int m, int n, int k) {
  return k == 16 && ((m == 16 && n == 16) || (m == 32 && n == 8) || (m == 8 && n == 32));
}

// Whether a shared-memory row stride of `ld` halves lets ldmatrix (what load_matrix_sync becomes on
// sm_80+) read its eight 16-byte rows from eight different 16-byte bank groups: stride/16 B odd.
__host__ __device__ constexpr bool ldsm_conflict_free(int ld) { return (ld * 2 / 16) % 2 == 1; }

// ---- global -> shared tile copies -----------------------------------------------------------
// A ROWS x COLS tile of halves whose rows are `ldg` halves apart in global memory goes to shared
// memory with rows LDS halves apart. Thread t moves chunks c = t + i * NT (i < ITERS) of CHUNK
// contiguous halves each: chunk c is row c / PER_ROW, columns (c % PER_ROW) * CHUNK onwards, so
// a warp reads whole rows (or runs of 32 chunks) of the tile: coalesced. NT % PER_ROW == 0 makes
// chunk i of a thread sit exactly ROW_STEP * i rows below its chunk 0.
template <int ROWS, int COLS, int LDS, int NT>
struct TileCopy {
  static constexpr int PER_THREAD = ROWS * COLS / NT;  // halves per thread
  static constexpr int CHUNK = PER_THREAD >= 8 ? 8 : PER_THREAD;
  static constexpr int PER_ROW = COLS / CHUNK;
  static constexpr int ITERS = PER_THREAD / CHUNK;
  static constexpr int ROW_STEP = NT / PER_ROW;
  static_assert(CHUNK == 8 || CHUNK == 4 || CHUNK == 2, "chunks of 16, 8 or 4 bytes");
  static_assert((ROWS * COLS) % (NT * CHUNK) == 0, "whole chunks per thread");
  static_assert(COLS % CHUNK == 0 && NT % PER_ROW == 0, "chunks must tile the rows evenly");
  static_assert(LDS % CHUNK == 0, "shared rows must keep each chunk aligned to its width");

  // offsets of the thread's chunk 0: in the shared tile and relative to the global tile origin
  CUGEMM_DEVICE static int smem_offset(int tid) { return tid / PER_ROW * LDS + tid % PER_ROW * CHUNK; }
  CUGEMM_DEVICE static int gmem_offset(int tid, int ldg) {
    return tid / PER_ROW * ldg + tid % PER_ROW * CHUNK;
  }

  // Through registers: loads then stores, CHUNK * 2 bytes at a time. `s` and `g` already include
  // the thread's chunk-0 offsets.
  CUGEMM_DEVICE static void sync(half* s, const half* g, int ldg) {
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
      half* d = s + i * ROW_STEP * LDS;
      const half* src = g + i * ROW_STEP * ldg;
      if (CHUNK == 8) copy_16B(d, src);
      else if (CHUNK == 4) copy_8B(d, src);
      else copy_4B(d, src);
    }
  }
  // cp.async, 16 bytes per chunk (L2 only); the caller commits and waits.
  CUGEMM_DEVICE static void async(half* s, const half* g, int ldg) {
    static_assert(CHUNK == 8, "cp.async copies go in 16-byte chunks: 8 halves per chunk");
#pragma unroll
    for (int i = 0; i < ITERS; ++i) cp_async_16(s + i * ROW_STEP * LDS, g + i * ROW_STEP * ldg);
  }
};

// ---- epilogue --------------------------------------------------------------------------------
// Floats in the per-warp scratch strip of the fp32 epilogue: WM rows of WTN*WN (+4) floats.
__host__ __device__ constexpr int scratch_floats(int wm, int wn, int wtn) { return wm * (wtn * wn + 4); }

// C tile of one warp (WTM x WTN fragments of WM x WN, fragment (i, j) at rows i*WM, columns j*WN
// from `c`, row stride ldc halves) = the accumulators, rounded to fp16.
//  F16ACC: store_matrix_sync straight to global memory, as the notes do.
//  fp32:   one strip of WM rows at a time: the WTN fragments go to the warp's scratch (row stride
//          W + 4 floats, W = WTN*WN), then each lane converts runs of 8 floats and writes them as
//          one 16-byte store. Run e = lane + 32*it is row e % WM, column 8 * (e / WM): the 8
//          lanes of an LDS.128 phase read 8 consecutive rows, whose 16-byte offsets (W/4 + 1)*r
//          + const are distinct mod 8 (W/4 + 1 is odd), so the reads are conflict-free, and lanes
//          e and e + WM write the two halves of one 32-byte sector of C.
// `scratch` is this warp's own region (scratch_floats(WM, WN, WTN) floats, 16-byte aligned).
template <int WM, int WN, int WK, int WTM, int WTN, bool F16ACC>
CUGEMM_DEVICE void warp_store_c(half* c, int ldc, FragC<WM, WN, WK, F16ACC> (&acc)[WTM][WTN],
                                float* scratch, int lane) {
  if constexpr (F16ACC) {
#pragma unroll
    for (int i = 0; i < WTM; ++i)
#pragma unroll
      for (int j = 0; j < WTN; ++j)
        wmma::store_matrix_sync(c + i * WM * ldc + j * WN, acc[i][j], ldc, wmma::mem_row_major);
  } else {
    constexpr int W = WTN * WN;      // strip width (floats)
    constexpr int LD = W + 4;        // scratch row stride (floats)
    constexpr int RUNS = WM * W / 8; // 8-float runs per strip
    static_assert(W % 8 == 0 && RUNS % 32 == 0, "a strip must split into 32-lane rounds of 8 floats");
    static_assert(scratch_floats(WM, WN, WTN) == WM * LD, "scratch size formula");
#pragma unroll
    for (int i = 0; i < WTM; ++i) {
#pragma unroll
      for (int j = 0; j < WTN; ++j)
        wmma::store_matrix_sync(scratch + j * WN, acc[i][j], LD, wmma::mem_row_major);
      __syncwarp();
#pragma unroll
      for (int it = 0; it < RUNS / 32; ++it) {
        const int e = lane + 32 * it;
        const int r = e % WM, col = 8 * (e / WM);
        const float4 lo = load_f32x4(scratch + r * LD + col);
        const float4 hi = load_f32x4(scratch + r * LD + col + 4);
        st_global_16B(c + (i * WM + r) * ldc + col, pack2<half>(lo.x, lo.y), pack2<half>(lo.z, lo.w),
                      pack2<half>(hi.x, hi.y), pack2<half>(hi.z, hi.w));
      }
      __syncwarp();  // the next strip overwrites the scratch
    }
  }
}

}  // namespace cugemm_wmma
