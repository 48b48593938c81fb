// cugemm/kernels/hgemm_wmma/06_stages.cu -- WMMA HGEMM, rung 6, above the notes: a multi-stage
// cp.async pipeline with large warp tiles: hgemm_wmma_m16n16k16_mma2x4_warp4x4x2_stage{3,4}, ...
// (the ladder's story, measurements and what was tried: docs/hgemm_wmma.md)
//
// C = A * B, fp16 row-major in and out, fp32 (or, F16ACC, fp16) accumulation on tensor cores.
//
// What this rung adds over rung 5 (two shared buffers, register-double-buffered fragments):
//  1. STAGES shared buffers (3 or 4) in dynamic shared memory (beyond the 48 KB static limit):
//     the copies of K-tile kt + STAGES - 1 are issued at the start of tile kt. One cp.async group
//     per tile (empty ones past the end keep the count uniform); at the last K step of tile kt,
//     cp_async_wait<STAGES-2>() means tile kt + 1 has landed, and one barrier per tile publishes
//     it and frees the stage that the next tile's copies overwrite (read in tile kt-1).
//  2. Large warp tiles: 64x64 per warp (4x4 fragments of 16x16); block tiles of 128x256 (mma2x4,
//     1 block/SM) or 128x128 (mma2x2, 2 blocks per SM), BK = 32 or 64.
//  3. Fragments of the next K step are loaded before the MMAs of the current one (as in rung 5),
//     across tile boundaries too.
//  4. Padded shared rows (PAD = 8 halves): every ldmatrix phase is conflict-free.
//  5. Optional block swizzle (SWIZZLE = G > 1 block rows per group; lib/raster.cuh) for L2 reuse.
//  6. Epilogue: fp32 accumulators -> fp16 through a per-warp shared-memory strip (warp_store_c),
//     the pipeline's shared memory reused for it.
//
// Template parameters: WMMA_M x WMMA_N x WMMA_K (fp16 WMMA shape), WARPS_M x WARPS_N warps,
// WARP_TILE_M x WARP_TILE_N fragments per warp, WARP_TILE_K K steps per tile (even: every tile
// starts on fragment set 0), STAGES >= 2 shared buffers, PAD halves per shared row (multiple of
// 8), SWIZZLE block rows per swizzle group (0 or 1: none), F16ACC.
//   BM = WMMA_M * WARP_TILE_M * WARPS_M, BN = WMMA_N * WARP_TILE_N * WARPS_N,
//   BK = WMMA_K * WARP_TILE_K.
// Preconditions: M % BM == 0, N % BN == 0, K % BK == 0, K >= BK; a, b, c 16-byte aligned;
//   32-bit indices; sm_80+ (cp.async).
// Launch: grid = (N / BN, M / BM, 1) (remapped inside when SWIZZLE > 1), block =
//   (32 * WARPS_M * WARPS_N, 1, 1), dynamic shared memory = hgemm_wmma_stages_smem_bytes<...>
//   (HgemmWmmaStagesSmem below); over 48 KB the caller raises
//   cudaFuncAttributeMaxDynamicSharedMemorySize first (cugemm's JIT does).
#include <mma.h>
#include <cuda_fp16.h>

#include "../lib/raster.cuh"
#include "wmma_common.cuh"

// Shared-memory layout of one block, the one declaration of it: STAGES stages, each an A tile
// (BM rows of LDA = BK + PAD halves) followed by a B tile (BK rows of LDB = BN + PAD halves);
// after the main loop the fp32 epilogue reuses the same bytes as one scratch strip per warp.
template <int WMMA_M, int WMMA_N, int WMMA_K, int WARPS_M, int WARPS_N, int WARP_TILE_M,
          int WARP_TILE_N, int WARP_TILE_K, int STAGES, int PAD, bool F16ACC>
struct HgemmWmmaStagesSmem {
  static constexpr int BM = WMMA_M * WARP_TILE_M * WARPS_M;
  static constexpr int BN = WMMA_N * WARP_TILE_N * WARPS_N;
  static constexpr int BK = WMMA_K * WARP_TILE_K;
  static constexpr int LDA = BK + PAD, LDB = BN + PAD;  // shared row strides (halves)
  static constexpr int A_OFF = 0;                       // A tile within a stage (halves)
  static constexpr int B_OFF = BM * LDA;                // B tile within a stage (halves)
  static constexpr int STAGE = BM * LDA + BK * LDB;     // halves per stage
  static constexpr int PIPE_BYTES = STAGES * STAGE * 2;
  // epilogue: warp w's strip starts at float w * SCRATCH
  static constexpr int SCRATCH = cugemm_wmma::scratch_floats(WMMA_M, WMMA_N, WARP_TILE_N);
  static constexpr int EPI_BYTES = F16ACC ? 0 : WARPS_M * WARPS_N * SCRATCH * 4;
  static constexpr int BYTES = PIPE_BYTES > EPI_BYTES ? PIPE_BYTES : EPI_BYTES;
  static_assert(B_OFF * 2 % 32 == 0 && STAGE * 2 % 32 == 0, "tiles must start 32-byte aligned");
  static_assert(BYTES <= 227 * 1024, "more shared memory than an SM offers a block");
};
// The block's dynamic shared memory (bytes), under the name the host side looks up.
template <int WMMA_M, int WMMA_N, int WMMA_K, int WARPS_M, int WARPS_N, int WARP_TILE_M,
          int WARP_TILE_N, int WARP_TILE_K, int STAGES, int PAD, int SWIZZLE, bool F16ACC>
__device__ constexpr int hgemm_wmma_stages_smem_bytes =
    HgemmWmmaStagesSmem<WMMA_M, WMMA_N, WMMA_K, WARPS_M, WARPS_N, WARP_TILE_M, WARP_TILE_N,
                        WARP_TILE_K, STAGES, PAD, F16ACC>::BYTES;
// Blocks per SM asked of the register allocator: 2 when the accumulators take at most 64
// registers per thread (up to 128 registers each), else 1 (up to 255).
__host__ __device__ constexpr int hgemm_wmma_stages_min_blocks(int frags, bool f16acc) {
  return frags * (f16acc ? 4 : 8) <= 32 ? 2 : 1;
}

template <int WMMA_M, int WMMA_N, int WMMA_K, int WARPS_M, int WARPS_N, int WARP_TILE_M,
          int WARP_TILE_N, int WARP_TILE_K, int STAGES, int PAD, int SWIZZLE, bool F16ACC>
__global__ void __launch_bounds__(32 * WARPS_M * WARPS_N,
                                  hgemm_wmma_stages_min_blocks(WARP_TILE_M * WARP_TILE_N, F16ACC))
hgemm_wmma_stages(const half* __restrict__ a, const half* __restrict__ b, half* __restrict__ c,
                  int M, int N, int K) {
  using namespace cugemm_wmma;
  static_assert(is_wmma_f16_shape(WMMA_M, WMMA_N, WMMA_K), "not an fp16 WMMA shape");
  static_assert(PAD >= 0 && PAD % 8 == 0, "padding must keep shared rows 16-byte aligned");
  static_assert(STAGES >= 2, "a pipeline needs at least two stages");
  static_assert(WARP_TILE_K % 2 == 0, "an even number of K steps per tile: each starts on set 0");
  constexpr int NT = 32 * WARPS_M * WARPS_N;
  constexpr int WTM = WARP_TILE_M, WTN = WARP_TILE_N, WTK = WARP_TILE_K;
  using Smem = HgemmWmmaStagesSmem<WMMA_M, WMMA_N, WMMA_K, WARPS_M, WARPS_N, WTM, WTN, WTK, STAGES,
                                   PAD, F16ACC>;
  constexpr int BM = Smem::BM, BN = Smem::BN, BK = Smem::BK;
  constexpr int LDA = Smem::LDA, LDB = Smem::LDB;
  using CopyA = TileCopy<BM, BK, LDA, NT>;
  using CopyB = TileCopy<BK, BN, LDB, NT>;
  extern __shared__ __align__(128) unsigned char smem[];  // Smem::BYTES, set by the launch
  half* const s_base = reinterpret_cast<half*>(smem);       // stage s at s_base + s * Smem::STAGE

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
  const TileCoord tile = block_tile_grouped<SWIZZLE>();
  const int m0 = tile.row * BM, n0 = tile.col * BN;
  const int wm0 = warp_m * WTM * WMMA_M, wn0 = warp_n * WTN * WMMA_N;

  const int a_dst = Smem::A_OFF + CopyA::smem_offset(tid);
  const int b_dst = Smem::B_OFF + CopyB::smem_offset(tid);
  const half* a_src = a + m0 * K + CopyA::gmem_offset(tid, K);
  const half* b_src = b + n0 + CopyB::gmem_offset(tid, N);
  // copies of K-tile kt into stage `stage` (not committed)
  auto issue = [&](int kt, int stage) __attribute__((always_inline)) {
    CopyA::async(s_base + stage * Smem::STAGE + a_dst, a_src + kt * BK, K);
    CopyB::async(s_base + stage * Smem::STAGE + b_dst, b_src + kt * BK * N, N);
  };

  FragA<WMMA_M, WMMA_N, WMMA_K> fa[2][WTM];
  FragB<WMMA_M, WMMA_N, WMMA_K> fb[2][WTN];
  auto load_frags = [&](int stage, int kk, int p) __attribute__((always_inline)) {
    const half* s_a = s_base + stage * Smem::STAGE + Smem::A_OFF;
    const half* s_b = s_base + stage * Smem::STAGE + Smem::B_OFF;
#pragma unroll
    for (int i = 0; i < WTM; ++i)
      wmma::load_matrix_sync(fa[p][i], s_a + (wm0 + i * WMMA_M) * LDA + kk * WMMA_K, LDA);
#pragma unroll
    for (int j = 0; j < WTN; ++j)
      wmma::load_matrix_sync(fb[p][j], s_b + kk * WMMA_K * LDB + wn0 + j * WMMA_N, LDB);
  };

  FragC<WMMA_M, WMMA_N, WMMA_K, F16ACC> acc[WTM][WTN];
#pragma unroll
  for (int i = 0; i < WTM; ++i)
#pragma unroll
    for (int j = 0; j < WTN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  const int num_kt = K / BK;
  // prologue: tiles 0 .. STAGES-2 into stages 0 .. STAGES-2, one group each
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < num_kt) issue(s, s);
    cp_async_commit();
  }
  cp_async_wait<STAGES - 2>();  // tile 0 has landed
  __syncthreads();
  load_frags(0, 0, 0);

  int read_stage = 0, write_stage = STAGES - 1;
  for (int kt = 0; kt < num_kt; ++kt) {
    // Tile kt + STAGES - 1 into the stage tile kt - 1 used (all its reads came before the last
    // barrier), issued first thing in the tile (why: docs/hgemm_wmma.md).
    if (kt + STAGES - 1 < num_kt) issue(kt + STAGES - 1, write_stage);
    cp_async_commit();
    write_stage = write_stage + 1 == STAGES ? 0 : write_stage + 1;
#pragma unroll
    for (int kk = 0; kk < WTK; ++kk) {
      const int p = kk & 1;
      if (kk + 1 < WTK) {
        load_frags(read_stage, kk + 1, p ^ 1);
      } else {
        // tile kt + 1 has landed (at most STAGES - 2 younger groups pending) and, after the
        // barrier, is visible to all; its first fragments load under this step's MMAs. (After
        // the last tile this reads a stale stage into fragments nobody uses.)
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        read_stage = read_stage + 1 == STAGES ? 0 : read_stage + 1;
        load_frags(read_stage, 0, p ^ 1);
      }
#pragma unroll
      for (int i = 0; i < WTM; ++i)
#pragma unroll
        for (int j = 0; j < WTN; ++j) wmma::mma_sync(acc[i][j], fa[p][i], fb[p][j], acc[i][j]);
    }
  }
  cp_async_wait<0>();  // only empty groups remain; drain them before the smem is reused
  __syncthreads();     // every warp's last fragment loads are done

  float* scratch = reinterpret_cast<float*>(smem) + warp * Smem::SCRATCH;
  warp_store_c<WMMA_M, WMMA_N, WMMA_K, WTM, WTN, F16ACC>(c + (m0 + wm0) * N + n0 + wn0, N, acc,
                                                         scratch, lane);
}
