// cugemm/kernels/fp8_wgmma/fp8_wgmma.cuh: the pieces the Hopper FP8 rungs (kernels/fp8_wgmma/0*.cu)
// share: their shared memory, the producer (one thread walking the persistent tile order and
// issuing the TMA copies of every K-tile, B multicast in clusters along M), the scales in the
// epilogue, and the store of a slab through staging boxes and TMA, for 16- and 32-bit outputs.
//
// Operands (8-bit TA, TB: fp8_e4m3 or fp8_e5m2, lib/wgmma.cuh): A is M x K row-major and B is given
// as its N x K memory (B = W.T, the layout torch._scaled_mm asks for), both K-major, as 8-bit
// wgmma requires. One K-tile is 128 k values, one 128-byte row per row of A and per column of B:
// the byte layout of hgemm_wgmma's K-major tiles (hgemm_wgmma.cuh: A BM x 128 bytes, B BN x 128
// bytes, 128-byte swizzled, 1024-byte aligned), so its mma_ktile / consume_ktiles run them
// (four wgmma m64nBNk32 per K-tile).
// C (TC = __nv_bfloat16, half or float) leaves through 64-row boxes of 128-byte rows: 64 columns of
// a 16-bit type or 32 of float, 128-byte swizzled, one TMA store each (bounded by C's map), or, for a
// C whose rows TMA cannot store, written from the box by the consumer's warps (write_box).
#pragma once
#include "../lib/barrier.cuh"
#include "../lib/raster.cuh"
#include "../lib/swizzle.cuh"
#include "../lib/tma.cuh"
#include "../hgemm_wgmma/hgemm_wgmma.cuh"

namespace fp8_wgmma {

// the scale a null scale pointer stands for (02_promoted.cu's block scales read it with strides 0)
__device__ const float kUnitScale = 1.f;

inline constexpr int BK = 128;          // k values (bytes) per K-tile and per row of a tile
inline constexpr int ROW_BYTES = 128;   // one row of an A tile, one column of a B tile
inline constexpr int BOX_BYTES = 64 * 128;  // one staging box of C: 64 rows of 128 bytes

// The ring of BM x 128 A and BN x 128 B tiles, then two staging boxes per consumer warpgroup.
template <int BM, int BN, int STAGES>
using Smem = hgemm_wgmma::RingSmem<BM * ROW_BYTES, BN * ROW_BYTES, STAGES, 2 * (BM / 64) * BOX_BYTES>;

// The block's start (both kernels): thread 0 prefetches the tensor maps (C's only where C goes
// through it) and makes the ring's barriers (a stage is released by every consumer warpgroup of the
// cluster); then every block of the cluster waits for the others' before any copy or arrival.
template <int STAGES, int CLUSTER_M>
CUGEMM_DEVICE void start_block(const TensorMap* tmap_a, const TensorMap* tmap_b, const TensorMap* tmap_c, bool c_map,
                               unsigned long long* full, unsigned long long* empty, int consumers) {
  if (threadIdx.x == 0) {
    tma_prefetch_map(tmap_a);
    tma_prefetch_map(tmap_b);
    if (c_map) tma_prefetch_map(tmap_c);
    init_ring_barriers<STAGES>(full, empty, consumers * CLUSTER_M);
  }
  sync_cta_or_cluster<CLUSTER_M>();
}

// Tile t of the persistent walk (clusters of CLUSTER_M tiles stacked in M, grouped order), for block
// `rank` of its cluster: C's first row m0 and column n0, and the first row of A it loads (a block
// whose tile lies past M loads its cluster's first tile's rows: it computes a copy, stores nothing).
struct Placed {
  int m0, n0, m_load;
};
template <int BM, int BN, int CLUSTER_M, int GROUP>
CUGEMM_DEVICE Placed place(const ClusterTileWalk<CLUSTER_M, true>& walk, int t, int rank, int M) {
  const TileCoord ct = walk.cluster_tile(t, GROUP);
  Placed p;
  p.m0 = (ct.row * CLUSTER_M + rank) * BM;
  p.n0 = ct.col * BN;
  p.m_load = p.m0 < M ? p.m0 : ct.row * CLUSTER_M * BM;
  return p;
}

// ---- the producer: one thread, every tile of the block's walk, every K-tile ----------------------
// Per K-tile: wait for the stage (EMPTY, every consumer of the cluster), arm FULL with the bytes
// that will land, copy the A box {128 k, BM rows} and this block's piece of the B tile: block r of
// the cluster copies B's n rows r * PIECE .. + PIECE - 1 (PIECE = BN / CLUSTER_M, a whole number of
// 8-row swizzle atoms) as one box {128 k, PIECE n}, multicast to every block of the cluster, so
// each block's FULL counts every piece that starts inside N. Boxes are zero-filled past M, N and K
// (a K tail adds zeros); B is loaded evict_first where clusters read each B piece once.
template <int BM, int BN, int STAGES, int GROUP, int CLUSTER_M>
CUGEMM_DEVICE void produce(const TensorMap* tmap_a, const TensorMap* tmap_b, unsigned long long* full,
                           unsigned long long* empty, char* sA, char* sB, int M, int N, int K) {
  using S = Smem<BM, BN, STAGES>;
  constexpr int PIECE = BN / CLUSTER_M;
  static_assert(PIECE % 8 == 0, "whole 8-row swizzle atoms per block of the cluster");
  const ClusterTileWalk<CLUSTER_M, true> walk((M + BM - 1) / BM, (N + BN - 1) / BN);
  const int rank = CLUSTER_M > 1 ? static_cast<int>(cluster_ctarank()) : 0;
  const int num_kt = (K + BK - 1) / BK;
  const unsigned long long b_policy = CLUSTER_M > 1 ? l2_policy_stream() : 0;
  grid_dependency_wait();
  Ring<STAGES> ring;
  for (int k = 0, t; (t = walk.nth(k, false)) < walk.count; ++k) {
    const Placed p = place<BM, BN, CLUSTER_M, GROUP>(walk, t, rank, M);
    const int live = min(CLUSTER_M, (N - p.n0 + PIECE - 1) / PIECE);  // pieces that start inside N
    const unsigned tx = S::A_STAGE + live * PIECE * ROW_BYTES;
    for (int kt = 0; kt < num_kt; ++kt) {
      const int s = ring.stage;
      mbarrier_wait(&empty[s], ring.phase ^ 1);
      mbarrier_arrive_expect_tx(&full[s], tx);
      tma_load_2d(sA + s * S::A_STAGE, tmap_a, &full[s], kt * BK, p.m_load);
      if (rank < live) {
        char* const dst = sB + s * S::B_STAGE + rank * PIECE * ROW_BYTES;
        if constexpr (CLUSTER_M > 1) {
          tma_load_2d_multicast(dst, tmap_b, &full[s], kt * BK, p.n0 + rank * PIECE,
                                static_cast<unsigned short>((1u << CLUSTER_M) - 1), b_policy);
        } else {
          tma_load_2d(dst, tmap_b, &full[s], kt * BK, p.n0);
        }
      }
      ring.advance();
    }
  }
  // the cluster's arrivals on this block's ring are all in before it may leave (no end barrier)
  if constexpr (CLUSTER_M > 1) drain_ring(ring, empty);
}

// ---- the epilogue's vectors fetched into L1 when a tile starts ---------------------------------------
// The epilogue's per-row and per-column scales and bias are read after the tile's K loop, when both
// consumers have stopped issuing wgmmas: an L2 trip there idles the tensor cores. So when the tile
// starts, lane l of each consumer warp fetches line l of the tile's BN column scales and bias (128
// bytes: 32 floats per line) and each thread its two rows' scales, into L1 (prefetch.global.L1).
template <int BN>
CUGEMM_DEVICE void prefetch_epilogue(const float* rows, const float* cols, const float* bias, int row, int n0, int M,
                                     int N, int lane) {
  if (rows != nullptr) {
    if (row < M) asm volatile("prefetch.global.L1 [%0];" ::"l"(rows + row));
    if (row + 8 < M) asm volatile("prefetch.global.L1 [%0];" ::"l"(rows + row + 8));
  }
  const int n = n0 + 32 * lane;
  if (lane < BN / 32 && n < N) {
    if (cols != nullptr) asm volatile("prefetch.global.L1 [%0];" ::"l"(cols + n));
    if (bias != nullptr) asm volatile("prefetch.global.L1 [%0];" ::"l"(bias + n));
  }
}

// ---- the epilogue's scales: acc = acc * scale + bias, one staging box's columns at a time ----------
// The accumulator fragment (hgemm_wgmma.cuh): this thread's rows `row`, row + 8 and columns col +
// 8j + e for the JN 8-column groups j = j0 .. j0 + JN - 1. rs[h]: the scale of row row + 8h (the
// tensor's, or with per-row scales s * scale_a[row + 8h]); cs: per-column scales (N floats, or
// null: 1); bias: N floats added after the scales, or null. Columns >= N read nothing (they are
// never stored). Done per box, so that only one box's column scales are live in registers.
// The columns' pair (n, n + 1) of a vector v (scales or bias): one 8-byte load where both lie
// inside N and v is 8-byte aligned (ALIGNED: the caller checked it once), else bounded loads.
template <bool ALIGNED>
CUGEMM_DEVICE float2 pair_at(const float* __restrict__ v, int n, int N) {
  if (ALIGNED && n + 1 < N) return *reinterpret_cast<const float2*>(v + n);
  return make_float2(n < N ? v[n] : 0.f, n + 1 < N ? v[n + 1] : 0.f);
}
template <int JN, bool CS, bool BIAS, bool ALIGNED, int NACC>
CUGEMM_DEVICE void scale_cols_as(float (&acc)[NACC], int j0, const float (&rs)[2], const float* __restrict__ cs,
                                 const float* __restrict__ bias, int col, int N) {
  float2 c[JN], b[JN];  // every load of the groups first, then the arithmetic
#pragma unroll
  for (int jj = 0; jj < JN; ++jj) {
    const int n = col + 8 * (j0 + jj);
    c[jj] = CS ? pair_at<ALIGNED>(cs, n, N) : make_float2(1.f, 1.f);
    b[jj] = BIAS ? pair_at<ALIGNED>(bias, n, N) : make_float2(0.f, 0.f);
  }
#pragma unroll
  for (int jj = 0; jj < JN; ++jj) {
    const int j = j0 + jj;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      acc[4 * j + 2 * h] = fmaf(acc[4 * j + 2 * h], rs[h] * c[jj].x, b[jj].x);
      acc[4 * j + 2 * h + 1] = fmaf(acc[4 * j + 2 * h + 1], rs[h] * c[jj].y, b[jj].y);
    }
  }
}
// One uniform branch picks the form (column scales or not, a bias or not, 8-byte aligned vectors
// or not): each is straight-line code whose loads are all issued before the first multiply.
template <int JN, int NACC>
CUGEMM_DEVICE void scale_cols(float (&acc)[NACC], int j0, const float (&rs)[2], const float* __restrict__ cs,
                              const float* __restrict__ bias, int col, int N) {
  const bool aligned = ((reinterpret_cast<size_t>(cs) | reinterpret_cast<size_t>(bias)) & 7) == 0;
  if (cs != nullptr) {
    if (bias != nullptr) {
      if (aligned) scale_cols_as<JN, true, true, true>(acc, j0, rs, cs, bias, col, N);
      else scale_cols_as<JN, true, true, false>(acc, j0, rs, cs, bias, col, N);
    } else {
      if (aligned) scale_cols_as<JN, true, false, true>(acc, j0, rs, cs, bias, col, N);
      else scale_cols_as<JN, true, false, false>(acc, j0, rs, cs, bias, col, N);
    }
  } else if (bias != nullptr) {
    if (aligned) scale_cols_as<JN, false, true, true>(acc, j0, rs, cs, bias, col, N);
    else scale_cols_as<JN, false, true, false>(acc, j0, rs, cs, bias, col, N);
  } else {
    scale_cols_as<JN, false, false, true>(acc, j0, rs, cs, bias, col, N);
  }
}

// ---- the epilogue's store: a 64 x BN slab through the consumer's two staging boxes -----------------
// One box of 64 rows x 128 bytes at a time: columns 32p .. 32p + 31 of float (8-byte stores of the
// pairs, 16-byte chunk c of row r at c ^ (r % 8)), or 64p .. 64p + 63 of a 16-bit type
// (hgemm_wgmma::stage_panel). A box is rewritten once the store that last read it is done reading
// (wait_group.read 1: the two boxes alternate, `flip` carrying the turn from one slab to the next);
// named barrier `bar` (the consumer's 128 threads) orders the writes before the store, which thread
// 0 issues (boxes wholly past M or N: none).
template <int NACC>
CUGEMM_DEVICE void stage_panel_f32(char* box, const float (&acc)[NACC], int p, int w, int g, int t) {
#pragma unroll
  for (int jj = 0; jj < 4; ++jj) {
    const int j = 4 * p + jj;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = 16 * w + g + 8 * h;  // r % 8 == g
      *reinterpret_cast<float2*>(box + r * 128 + (((2 * jj + (t >> 1)) ^ g) << 4) + 8 * (t & 1)) =
          make_float2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
    }
  }
}
// A C that TMA cannot store (ldc > 0: its row stride in elements, not a multiple of 16 bytes, as a C
// of odd N): the consumer's four warps write each staged box themselves, warp w rows w, w + 4, ..,
// lane l columns l, l + 32 (16-bit) or l (float) of the row, bounded: every store instruction of a
// warp covers 64 (or 128) contiguous bytes of C, whatever its alignment.
template <class TC>
CUGEMM_DEVICE void write_box(TC* __restrict__ c, int ldc, const char* box, int row0, int col0, int M, int N, int w,
                             int lane) {
  constexpr int COLS = 128 / sizeof(TC);
  for (int r = w; r < 64 && row0 + r < M; r += 4) {
    TC* const dst = c + static_cast<size_t>(row0 + r) * ldc + col0;
#pragma unroll
    for (int q = lane; q < COLS; q += 32) {
      const int byte = q * static_cast<int>(sizeof(TC));
      if (col0 + q < N) dst[q] = *reinterpret_cast<const TC*>(box + r * 128 + (((byte >> 4) ^ (r & 7)) << 4) + (byte & 15));
    }
  }
}

// before_box(p, JN): called with the box index and its 8-column groups' count before box p is staged
// (the scales of its columns: scale_cols). ldc > 0: C's row stride (write_box), TMA stores otherwise.
template <class TC, int NACC, class BeforeBox>
CUGEMM_DEVICE void store_slab_staged(float (&acc)[NACC], char* boxes, int& flip, const TensorMap* tmap_c, TC* c,
                                     int ldc, int row0, int n0, int M, int N, int bar, int tid, BeforeBox&& before_box) {
  constexpr int COLS = 128 / sizeof(TC);  // columns per box
  static_assert((2 * NACC) % COLS == 0, "whole boxes per slab");
  const int w = tid >> 5, g = (tid & 31) >> 2, t4 = tid & 3;
#pragma unroll
  for (int p = 0; p < 2 * NACC / COLS; ++p) {
    char* const box = boxes + flip * BOX_BYTES;
    flip ^= 1;
    before_box(p, hgemm_wgmma::Cols<COLS / 8>{});
    if (tid == 0) tma_store_wait_read<1>();
    named_barrier_sync(bar, 128);
    if constexpr (sizeof(TC) == 4) {
      stage_panel_f32(box, acc, p, w, g, t4);
    } else {
      hgemm_wgmma::stage_panel<TC>(box, acc, p, w, g, t4);
    }
    if (ldc > 0) {  // the box is rewritten two boxes on, after the first barrier of that turn
      named_barrier_sync(bar, 128);
      if (n0 + COLS * p < N) write_box<TC>(c, ldc, box, row0, n0 + COLS * p, M, N, w, tid & 31);
      continue;
    }
    fence_proxy_async_shared();
    named_barrier_sync(bar, 128);
    if (tid == 0) {
      if (row0 < M && n0 + COLS * p < N) tma_store_2d(tmap_c, box, n0 + COLS * p, row0);
      tma_store_commit();
    }
  }
}

}  // namespace fp8_wgmma
