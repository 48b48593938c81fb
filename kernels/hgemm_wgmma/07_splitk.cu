// cugemm/kernels/hgemm_wgmma/07_splitk.cu: Hopper HGEMM rung 9 (sm_90a), split-K for products whose
// tiles do not fill the GPU: work units of (tile, K-slice), fp32 partials reduced deterministically
// by the last slice to finish. Story and measurements: docs/hgemm_wgmma.md.
//
// C = A * B, T = half or __nv_bfloat16 in and out (row-major; B column-major with B_COL), fp32
// accumulation, any M, and N and K that are multiples of 8 (16-byte rows): the copy engine
// zero-fills what lies past M, N or K and the stores are bounded. The block is rung 5's
// (04_persistent.cu, no clusters): a producer warpgroup, two consumer warpgroups of 64 x BN slabs,
// FULL / EMPTY mbarriers around a STAGES-deep ring that runs on across work units, setmaxnreg 40 /
// 232, tiles in the grouped order of lib/raster.cuh.
//
// What this rung adds over rung 5: the K dimension of the tiles that would leave SMs idle is split.
// Block b walks the units b, b + gridDim.x, ... of the list
//   units 0 .. dp_tiles - 1         whole tiles (the full waves of a product with many tiles),
//   then `splits` units per remaining tile: slice s of tile t covers K-tiles
//                                   [s * kt / splits, (s + 1) * kt / splits) of its kt = ceil(K / 64).
// The host (cugemm/families/hgemm_wgmma_splitk.py) picks dp_tiles and splits with at most one wave of
// slices, so that a block's slice is its last unit. A whole tile is stored from registers. A slice
// stores its slab's fp32 accumulators to its own workspace slot (store_partial), then one thread per
// consumer warpgroup fences and increments the slab's counter; the warpgroup that brings it to
// `splits` resets it to 0, adds the other slices' partials to its registers in slice order (p_0 +
// p_1 + ...: the result does not depend on timing; reduce_partials streams them into the ring, free by
// then) and stores C. Nobody waits for another block, so any grid is safe. The workspace and the
// counters are device memory owned by the family module, one pair per (device, stream).
// B_COL: B read column-major without a copy (B = W.T of a row-major N x K array W); B's tensor map
// describes that N x K memory (box {64 k, 64 n}) and a stage's B tile is K-major (hgemm_wgmma.cuh),
// panel p still at p * 8192: stages, expected bytes and reduction buffers are the row-major form's,
// the wgmmas take B untransposed, and only the producer's box coordinates differ.
//
// Template parameters: BN (128 or 256), STAGES, GROUP (tile rows per raster band), B_COL, T.
// Fixed: BM = 128 (2 x 64), BK = 64.
// Launch: block = (384, 1, 1), grid = (min(units, SMs), 1, 1), dynamic shared memory
//   hgemm_wgmma_splitk_smem_bytes<...> (SplitkSmem: STAGES * (128 + BN) * 128 + 1024 bytes); extra
//   kernel arguments: tensor maps of A (box {64, 128}) and B (box {64, 64}; B_COL: {64 k, 64 n} of
//   the N x K memory), 128-byte swizzled; the workspace (float*, splits * 128 * BN floats per split
//   tile), the counters (unsigned*, two per split tile, zero; left zero), dp_tiles, splits (1 <=
//   splits <= kt, and (tiles - dp_tiles) * splits <= gridDim.x when splits > 1).
// Preconditions: N % 8 == 0, K % 8 == 0; a, b, c 16-byte aligned; M * N, M * K, K * N < 2^31; sm_90a.
#include "../lib/barrier.cuh"
#include "../lib/raster.cuh"
#include "../lib/swizzle.cuh"
#include "../lib/tma.cuh"
#include "hgemm_wgmma.cuh"

// Shared memory: the ring of 128 x 64 A and 64 x BN B tiles (the last slice's reduction buffers
// reuse it).
template <int BN, int STAGES>
using SplitkSmem =
    hgemm_wgmma::RingSmem<128 * hgemm_wgmma::A_ROW_BYTES, (BN / 64) * hgemm_wgmma::B_PANEL_BYTES, STAGES>;
template <int BN, int STAGES, int GROUP, bool B_COL, class T>
__device__ constexpr int hgemm_wgmma_splitk_smem_bytes = SplitkSmem<BN, STAGES>::BYTES;

namespace splitk {
// Work unit u of the list above: its tile, slice, K-tile range and (for a slice) its index q among
// the slices, which names its partial slot (q) and its tile's counters (q / splits).
struct Unit {
  int tile, slice, kt0, kt1, q;
  bool split;
};
__device__ __forceinline__ Unit unit_of(int u, int dp_tiles, int splits, int num_kt) {
  if (u < dp_tiles) return {u, 0, 0, num_kt, 0, false};
  const int q = u - dp_tiles;
  const int slice = q % splits;
  return {dp_tiles + q / splits, slice, slice * num_kt / splits, (slice + 1) * num_kt / splits, q, splits > 1};
}

}  // namespace splitk

template <int BN, int STAGES, int GROUP, bool B_COL, class T>
__global__ void __launch_bounds__(384, 1)
    hgemm_wgmma_splitk(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N, int K,
                       const __grid_constant__ TensorMap tmap_a, const __grid_constant__ TensorMap tmap_b,
                       float* __restrict__ partials, unsigned* __restrict__ counters, int dp_tiles, int splits) {
  using namespace hgemm_wgmma;
  using splitk::Unit;
  using splitk::unit_of;
  using Smem = SplitkSmem<BN, STAGES>;
  constexpr int BM = 128;
  constexpr int A_STAGE = Smem::A_STAGE;
  constexpr int B_STAGE = Smem::B_STAGE;
  constexpr int NACC = BN / 2;
  constexpr int SLAB_FLOATS = 64 * BN, TILE_FLOATS = BM * BN;  // one partial slab / tile (fp32)
  constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
  static_assert(BN == 128 || BN == 256, "BN is a wgmma N with a 128-register accumulator at most");
  static_assert(2 * NACC * 256 <= STAGES * (A_STAGE + B_STAGE) / 2, "two half-slab buffers per consumer in the ring");

  extern __shared__ char smem_raw[];
  char* const smem = align_1024(smem_raw);
  char* const sA = smem + Smem::A;
  char* const sB = smem + Smem::B;
  __shared__ alignas(8) unsigned long long full[STAGES], empty[STAGES];
  __shared__ alignas(8) unsigned long long red_bar[2][2];  // per consumer: its reduction buffers
  __shared__ int last_slice[2];  // per consumer warpgroup: this slab's slice finished last

  if (threadIdx.x == 0) {
    tma_prefetch_map(&tmap_a);
    tma_prefetch_map(&tmap_b);
#pragma unroll
    for (int i = 0; i < 4; ++i) mbarrier_init(&red_bar[i / 2][i % 2], 1);
    init_ring_barriers<STAGES>(full, empty, 2);  // the producer; both consumer warpgroups
  }
  __syncthreads();

  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const int num_tiles = tiles_m * tiles_n;
  const int num_kt = (K + BK - 1) / BK;
  const int num_units = dp_tiles + (num_tiles - dp_tiles) * splits;

  const int wg = warpgroup_index();
  if (wg == 0) {
    // ---- producer ------------------------------------------------------------------------------
    setmaxnreg_dec<PRODUCER_REGS>();
    if (threadIdx.x == 0) {
      const unsigned long long b_policy = l2_policy_stream();  // B's L2 lines: evict_first
      Ring<STAGES> ring;
      for (int u = blockIdx.x; u < num_units; u += gridDim.x) {
        const Unit w = unit_of(u, dp_tiles, splits, num_kt);
        const TileCoord tc = raster_grouped(w.tile, tiles_m, tiles_n, GROUP);
        produce_ktiles<BM, BN, STAGES, B_COL>(ring, full, empty, sA, sB, &tmap_a, &tmap_b, tc.row * BM,
                                              tc.col * BN, N, w.kt0, w.kt1, b_policy);
      }
    }
  } else {
    // ---- consumers -----------------------------------------------------------------------------
    setmaxnreg_inc<CONSUMER_REGS>();
    const int cw = wg - 1;  // slab: rows 64 cw .. 64 cw + 63 of the tile
    const int tid = threadIdx.x & 127;
    const int warp = tid >> 5, g = (tid & 31) >> 2, t4 = tid & 3;
    const unsigned sA_addr = smem_addr(sA) + cw * 64 * A_ROW_BYTES;
    const unsigned sB_addr = smem_addr(sB);
    auto release = [&](int s) {
      if (tid == 0) mbarrier_arrive(&empty[s]);
    };

    float acc[NACC];
    Ring<STAGES> ring;
    for (int u = blockIdx.x; u < num_units; u += gridDim.x) {
      const Unit w = unit_of(u, dp_tiles, splits, num_kt);
      const TileCoord tc = raster_grouped(w.tile, tiles_m, tiles_n, GROUP);
      // B_COL: the K-major B tile's descriptor, wgmma without the B transpose (mma_ktile)
      consume_ktiles<T, BN, STAGES, A_STAGE, B_STAGE, false, B_COL>(acc, ring, full, sA_addr, sB_addr,
                                                                    w.kt1 - w.kt0, release);

      if (w.split) {
        // this slice's partial, then one arrival per slab on its counter (CUTLASS's split-K barrier:
        // the warpgroup's stores, a barrier, one thread's fence and atomic)
        float* const slots = partials + cw * SLAB_FLOATS;
        store_partial(slots + static_cast<size_t>(w.q) * TILE_FLOATS, acc, tid);
        named_barrier_sync(3, 256);  // both slabs are done with the ring (its last user: see below)
        if (tid == 0) {
          unsigned* const counter = counters + 2 * (w.q / splits) + cw;
          __threadfence();  // release: the warpgroup's partial before the arrival that announces it
          const bool last = atomicAdd(counter, 1u) == static_cast<unsigned>(splits - 1);
          if (last) {
            *counter = 0;     // every slice has arrived: ready for the next launch
            __threadfence();  // acquire: the other slices' partials are read after their arrivals
          }
          last_slice[cw] = last;
        }
        named_barrier_sync(1 + cw, 128);
        if (!last_slice[cw]) continue;
        // A split unit is its block's last (the host's plan: at most one wave of slices), so the
        // ring is free: each consumer warpgroup streams the other partials through its half of it.
        reduce_partials(acc, slots + static_cast<size_t>(w.q - w.slice) * TILE_FLOATS, TILE_FLOATS, splits,
                        w.slice, tid, sA + cw * (STAGES * (A_STAGE + B_STAGE) / 2), red_bar[cw], 1 + cw);
      }
      store_slab<T>(c, acc, tc.row * BM + 64 * cw + 16 * warp + g, tc.col * BN + 2 * t4, M, N);
    }
  }
}
