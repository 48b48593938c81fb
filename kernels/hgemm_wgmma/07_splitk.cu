// cugemm/kernels/hgemm_wgmma/07_splitk.cu: Hopper HGEMM, split-K for products whose tiles do not
// fill the GPU: work units of (tile, K-slice), fp32 partials reduced deterministically by the last
// slice to finish (sm_90a).
//
// C = A * B, T = half or __nv_bfloat16 in and out (row-major; B column-major with B_COL), fp32
// accumulation, any M, and N and K that are multiples of 8 (16-byte rows): the copy engine
// zero-fills what lies past M, N or K and the stores are bounded. The block is rung 5's
// (04_persistent.cu, no clusters): a producer warpgroup (one thread issues TMA copies), two
// consumer warpgroups of 64 x BN slabs (wgmma m64nBNk16), FULL / EMPTY mbarriers around a
// STAGES-deep ring that runs on across work units, setmaxnreg 40 / 232, tiles in the grouped order
// of lib/raster.cuh.
//
// What this rung adds over rung 5: when a product has fewer 128 x BN tiles than the GPU has SMs
// (M = 128 tokens against a 4096 x 4096 weight: 16 tiles of 128 x 256 on 132 SMs), or a last wave
// of tiles that leaves most SMs idle, the K dimension of those tiles is split. The work is a list
// of units walked persistently (block b takes units b, b + gridDim.x, ...):
//   units 0 .. dp_tiles - 1         whole tiles (the full waves of a product with many tiles),
//   then `splits` units per remaining tile: slice s of tile t covers K-tiles
//                                   [s * kt / splits, (s + 1) * kt / splits) of its kt = ceil(K / 64).
// The host (cugemm/families/hgemm_wgmma_splitk.py) picks dp_tiles and splits from M, N, K and the
// SM count, with at most one wave of slices ((tiles - dp_tiles) * splits <= gridDim.x), so that a
// block's slice is its last unit. A whole tile is stored from registers (store_slab). A slice stores
// its slab's fp32 accumulators to its own slot of a workspace (store_partial: fragment order,
// 512-byte warp stores to L2); then one thread per consumer warpgroup fences and increments the
// slab's counter; the warpgroup that brings it to `splits` is the last of its slab: it resets the
// counter to 0 for the next launch, adds the other slices' partials to its own registers in slice
// order (p_0 + p_1 + ..., whatever order they finished in: the result does not depend on timing)
// and stores C. The partials come in by bulk copies into the ring, free by then (reduce_partials:
// half a slab per copy, double-buffered); loaded through registers (8 float4 per thread per L2 round
// trip) the reduction cost 2-20 us and made most splits slower than none (H100, 2026-11-23).
// Nobody waits for another block, so any grid is safe (no co-residency assumption).
// The workspace (splits * 128 * BN floats per split tile) and the counters (two per split tile,
// zero before the launch; the kernel leaves them zero) are device memory owned by the family
// module, one pair per (device, stream): two launches running at once must not share them.
//
// B_COL (the _bcol forms): B read column-major without a copy, as rung 7's B_COL (04_persistent.cu):
// B is the transposed view W.T of a row-major N x K array W (x @ W.T of a linear layer; memory: N
// rows of K elements). B's tensor map describes that N x K memory, box {64 k, 64 n}; a stage's B
// tile is K-major (BN rows of 128 bytes, 128-byte swizzled, like A's), one box per 64 rows, so panel
// p still starts at p * 8192 and the stage size, the expected bytes (the live panels), the ring and
// the reduction buffers in it are the row-major form's; the wgmmas take B untransposed (TRANS_B = 0,
// the K-major descriptor of hgemm_wgmma.cuh's layouts). Only the producer's box coordinates differ:
// (kt * 64, n0 + 64 p) of the N x K memory instead of (n0 + 64 p, kt * 64) of the K x N one.
//
// Template parameters: BN (128 or 256), STAGES, GROUP (tile rows per raster band), B_COL, T.
// Fixed: BM = 128 (2 x 64), BK = 64.
// Launch: block = (384, 1, 1), grid = (min(units, SMs), 1, 1), dynamic shared memory
//   hgemm_wgmma_splitk_smem_bytes<...> = STAGES * (128 + BN) * 128 + 1024 bytes; extra kernel
//   arguments: tensor maps of A (box {64, 128}) and B (box {64, 64}; B_COL: {64 k, 64 n} of the
//   N x K memory), 128-byte swizzled; the workspace (float*), the counters (unsigned*), dp_tiles,
//   splits (1 <= splits <= kt, and (tiles - dp_tiles) * splits <= gridDim.x when splits > 1).
// Preconditions: N % 8 == 0, K % 8 == 0 (B_COL: K % 8 == 0 is also TMA's 16-byte rule for the
//   N x K memory's rows); a, b, c 16-byte aligned; M * N, M * K, K * N < 2^31; sm_90a.
#include "../lib/barrier.cuh"
#include "../lib/raster.cuh"
#include "../lib/swizzle.cuh"
#include "../lib/tma.cuh"
#include "hgemm_wgmma.cuh"

template <int BN, int STAGES, int GROUP, bool B_COL, class T>
__device__ constexpr int hgemm_wgmma_splitk_smem_bytes = STAGES * (128 + BN) * 128 + 1024;

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
  constexpr int BM = 128;
  constexpr int A_STAGE = BM * A_ROW_BYTES;
  constexpr int B_STAGE = (BN / 64) * B_PANEL_BYTES;
  constexpr int NACC = BN / 2;
  constexpr int SLAB_FLOATS = 64 * BN, TILE_FLOATS = BM * BN;  // one partial slab / tile (fp32)
  constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
  static_assert(BN == 128 || BN == 256, "BN is a wgmma N with a 128-register accumulator at most");
  static_assert(2 * NACC * 256 <= STAGES * (A_STAGE + B_STAGE) / 2, "two half-slab buffers per consumer in the ring");
  static_assert(hgemm_wgmma_splitk_smem_bytes<BN, STAGES, GROUP, B_COL, T> == STAGES * (A_STAGE + B_STAGE) + 1024,
                "the declared dynamic shared memory is the ring and the alignment slack");

  extern __shared__ char smem_raw[];
  char* const sA = align_1024(smem_raw);
  char* const sB = sA + STAGES * A_STAGE;
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
