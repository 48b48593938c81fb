// cugemm/kernels/hgemm/08_warp_tile.cu -- HGEMM (CUDA cores), above the notes: warp tiling with
// register-double-buffered half2 fragments. Variants hgemm_t_{8x8,8x16,16x16}_warp2x4_
// sliced_k16_f16x8_pack_dbuf and their `_dup_a` siblings (DUP_A); the fastest,
// hgemm_t_16x16_warp2x4_sliced_k16_f16x8_pack_dbuf_dup_a, is aliased hgemm_warp_tile.
// (the design in full, the HFMA2 profile behind DUP_A and measurements: docs/hgemm.md)
//
// C = A * B, all row-major fp16: A is MxK, B is KxN, C is MxN (C is overwritten); fp16 products
// and fp16 accumulation, two per instruction (__hfma2 on half2 pairs).
//
// What this rung adds over rungs 5-7: the structure of the FP32 warp-tiled kernel (sgemm rung 7),
// in half2.
//  1. Warp tiles: WARPS_M x WARPS_N warp tiles of WM x WN, the 32 lanes of a warp a
//     LANES_M x LANES_N grid inside one (LANES_M = WM / TM, LANES_N = WN / TN).
//  2. Thread tiles of 8x8 sub-tiles (8-row groups LANES_M*8 rows apart, 8-column groups
//     LANES_N*8 columns apart): every fragment read is one conflict-free 16-byte vector
//     wavefront, every epilogue 16-byte store covers whole 32-byte sectors of C.
//  3. Packed products: acc[i][j] += (a_i, a_i) * (b_2j, b_2j+1), half2 acc[TM][TN/2].
//  4. Fragments of k step kk+1 are read while the __hfma2 of step kk run.
//  5. Global loads one K slice ahead, into registers, fetched right after the barrier that
//     publishes the previous slice; one __syncthreads per slice; the last slice peeled off.
//  6. A transposed on its way into shared memory (As[k][m]), conflict-free without padding.
//  7. DUP_A: A stored in shared memory as the half2 (a, a) of each element (AW = 2 halves per
//     element), so the HFMA2 needs no operand selector; a thread's rows then come in groups of
//     RG = 4 (one 16-byte fragment read per 4 rows of A).
// Blocks per SM asked of the register allocator: hgemm_warp_tile_min_blocks(TM, TN, DUP_A).
//
// Launch: grid = (N / BN, M / BM, 1), block = (WARPS_M * WARPS_N * 32, 1, 1), no dynamic shared
//         memory (2 * BK * (AW * BM + BN) * 2 bytes of static shared memory).
// Preconditions (checked by the caller): M % BM == 0, N % BN == 0, K % BK == 0; a, b, c 16-byte
//   aligned (then every row of A, B and C starts 16-byte aligned, K and N being multiples of 8).
//   K = 0 writes zeros. 32-bit int indexing: M * K, K * N, M * N < 2^31.
#include <cuda_fp16.h>
#include "../lib/half.cuh"

__host__ __device__ constexpr int hgemm_warp_tile_min_blocks(int tm, int tn, bool dup_a) {
  return tm * tn * (dup_a ? 2 : 1) <= 128 ? 2 : 1;
}

template <int BM, int BN, int BK, int WARPS_M, int WARPS_N, int TM, int TN, bool DUP_A>
__global__ void __launch_bounds__(WARPS_M * WARPS_N * 32, hgemm_warp_tile_min_blocks(TM, TN, DUP_A))
    hgemm_warp_tile_f16x8_pack_dbuf(const half* __restrict__ a, const half* __restrict__ b,
                                    half* __restrict__ c, int M, int N, int K) {
  constexpr int NT = WARPS_M * WARPS_N * 32;  // threads per block
  constexpr int WM = BM / WARPS_M;            // warp tile
  constexpr int WN = BN / WARPS_N;
  constexpr int LANES_M = WM / TM;            // lane grid inside the warp tile
  constexpr int LANES_N = WN / TN;
  constexpr int A_KV = BK / 8;                // 8-half vectors per row of the A tile (along k)
  constexpr int B_NV = BN / 8;                // 8-half vectors per row of the B tile (along n)
  constexpr int A_EL = BM * A_KV / NT;        // A vectors each thread moves per K slice
  constexpr int B_EL = BK * B_NV / NT;        // B vectors each thread moves per K slice
  constexpr int AW = DUP_A ? 2 : 1;           // halves per A element in As: (a, a) when DUP_A
  constexpr int RG = 8 / AW;                  // rows of A in one 16-byte fragment read

  static_assert(BM % WARPS_M == 0 && BN % WARPS_N == 0, "warps must split the block tile");
  static_assert(WM % TM == 0 && WN % TN == 0, "thread tiles must split the warp tile");
  static_assert(LANES_M * LANES_N == 32, "a warp tile must hold exactly 32 thread tiles");
  static_assert(TM % 8 == 0 && TN % 8 == 0, "thread tiles are made of 8x8 sub-tiles");
  static_assert(TM % RG == 0, "a thread's rows are whole fragment reads");
  static_assert(LANES_N >= 2, "a warp's 16-byte C stores must cover whole 32-byte sectors");
  static_assert(BK % 8 == 0, "A rows are loaded as 8-half vectors along k (and BK is even)");
  static_assert((BM * A_KV) % NT == 0 && (BK * B_NV) % NT == 0,
                "each thread must move a whole number of vectors of each tile");
  static_assert(NT % BM == 0 || BM % NT == 0, "A loader: NT and BM must nest");
  static_assert(NT % B_NV == 0 || B_NV % NT == 0, "B loader: NT and BN/8 must nest");
  static_assert(2 * BK * (AW * BM + BN) * 2 <= 48 * 1024, "static shared memory is capped at 48 KB");

  // A slice, transposed: A(m, k) at As[buf][k][AW*m] (DUP_A: as the half2 (a, a) there)
  __shared__ __align__(16) half As[2][BK][AW * BM];
  __shared__ __align__(16) half Bs[2][BK][BN];  // B slice: Bs[buf][k][n]

  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int warp_m = warp % WARPS_M;
  const int warp_n = warp / WARPS_M;
  const int lane_m = lane % LANES_M;
  const int lane_n = lane / LANES_M;
  const int m0 = blockIdx.y * BM;  // block tile origin in C
  const int n0 = blockIdx.x * BN;
  const int tm0 = warp_m * WM + lane_m * RG;  // block-tile row of the thread's first row group
  const int tn0 = warp_n * WN + lane_n * 8;  // block-tile column of its first 8-column group

  // ---- global -> registers -> shared ----------------------------------------------------------
  // A vector u of this thread is v = tid + u*NT: tile row v % BM, k columns (v / BM)*8 .. +7.
  // B vector u is v = tid + u*NT: tile row v / B_NV, columns (v % B_NV)*8 .. +7. The nesting
  // asserts make the offset of vector u from vector 0 a compile-time constant (no carry).
  const int a_row = tid % BM;
  const int a_k = (tid / BM) * 8;
  const int b_row = tid / B_NV;
  const int b_col = (tid % B_NV) * 8;
  auto a_dr = [](int u) { return (u * NT) % BM; };
  auto a_dk = [](int u) { return (u * NT) / BM * 8; };
  auto b_dk = [](int u) { return (u * NT) / B_NV; };
  auto b_dc = [](int u) { return (u * NT) % B_NV * 8; };
  const half* a_thr = a + (m0 + a_row) * K + a_k;  // + kt*BK + a_dr(u)*K + a_dk(u): vector u
  const half* b_thr = b + b_row * N + n0 + b_col;  // + (kt*BK + b_dk(u))*N + b_dc(u)

  uint4 ga[A_EL], gb[B_EL];  // staging registers: one K slice of this thread's share

  // fetch K slice kt into ga / gb
  auto load_global = [&](int kt) __attribute__((always_inline)) {
    const int k0 = kt * BK;
#pragma unroll
    for (int u = 0; u < A_EL; ++u)
      ga[u] = *reinterpret_cast<const uint4*>(a_thr + a_dr(u) * K + a_dk(u) + k0);
#pragma unroll
    for (int u = 0; u < B_EL; ++u)
      gb[u] = *reinterpret_cast<const uint4*>(b_thr + (k0 + b_dk(u)) * N + b_dc(u));
  };
  // write ga (transposed: 8 rows of As) and gb (as is) into buffer buf
  auto store_shared = [&](int buf) __attribute__((always_inline)) {
#pragma unroll
    for (int u = 0; u < A_EL; ++u) {
      const unsigned w[4] = {ga[u].x, ga[u].y, ga[u].z, ga[u].w};
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const half2 h = u32_as_half2(w[e]);
        half* lo = &As[buf][a_k + a_dk(u) + 2 * e][AW * (a_row + a_dr(u))];
        half* hi = &As[buf][a_k + a_dk(u) + 2 * e + 1][AW * (a_row + a_dr(u))];
        if (DUP_A) {
          *reinterpret_cast<half2*>(lo) = __half2half2(h.x);
          *reinterpret_cast<half2*>(hi) = __half2half2(h.y);
        } else {
          *lo = h.x;
          *hi = h.y;
        }
      }
    }
#pragma unroll
    for (int u = 0; u < B_EL; ++u)
      *reinterpret_cast<uint4*>(&Bs[buf][b_row + b_dk(u)][b_col + b_dc(u)]) = gb[u];
  };

  // ---- shared -> register fragments, double-buffered ------------------------------------------
  // fa[p][i*4 + e]: the 16-byte read i of A(k) of the step held in p: rows tm0 + i*LANES_M*8 + 2e
  // and +1 as a pair, or with DUP_A row tm0 + i*LANES_M*4 + e as (a, a)
  half2 fa[2][AW * TM / 2];
  half2 fb[2][TN / 2];  // fb[p][j*4 + e]: B(k; columns tn0 + j*LANES_N*8 + 2e, +1)

  // k-row k of buffer buf into fragment set p
  auto load_frag = [&](int buf, int k, int p) __attribute__((always_inline)) {
#pragma unroll
    for (int i = 0; i < TM / RG; ++i)
      load_f16xN<8>(fa[p] + i * 4, &As[buf][k][AW * (tm0 + i * LANES_M * RG)]);
#pragma unroll
    for (int j = 0; j < TN / 8; ++j) load_f16xN<8>(fb[p] + j * 4, &Bs[buf][k][tn0 + j * LANES_N * 8]);
  };

  // acc[i*RG + r][j*4 + e]: C(block row tm0 + i*LANES_M*RG + r; cols tn0 + j*LANES_N*8 + 2e, +1)
  half2 acc[TM][TN / 2];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN / 2; ++j) acc[i][j] = __float2half2_rn(0.f);

  const int num_kt = K / BK;
  if (num_kt > 0) {  // K = 0: nothing to load, C is all zeros
    // Prologue: K slice 0 into buffer 0, the fetch of slice 1 issued (slice 0 again when there is
    // no slice 1: never stored), k step 0's fragments into set 0.
    load_global(0);
    store_shared(0);
    __syncthreads();
    load_global(min(1, num_kt - 1));
    load_frag(0, 0, 0);

    // One K slice of __hfma2. On entry: buffer kt & 1 holds slice kt, visible to all threads;
    // fragment set 0 holds its k step 0; the fetch of slice kt + 1 into ga / gb is in flight.
    // On exit, if has_next, the same holds for kt + 1 (and the fetch of kt + 2, clamped).
    // Buffer kt & 1 ^ 1 was last read (its k step BK-1 fragment) before the previous slice's
    // barrier, so every thread may overwrite it during slice kt.
    auto slice = [&](const int kt, const bool has_next) __attribute__((always_inline)) {
      const int cur = kt & 1;
#pragma unroll
      for (int kk = 0; kk < BK; ++kk) {
        const int p = kk & 1;  // fragment set used by this step; p ^ 1 is being filled
        if (kk < BK - 1) {
          load_frag(cur, kk + 1, p ^ 1);
        } else if (has_next) {
          store_shared(cur ^ 1);
          __syncthreads();
          load_global(min(kt + 2, num_kt - 1));
          load_frag(cur ^ 1, 0, p ^ 1);  // p ^ 1 == 0 since BK is even
        }
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < TN / 2; ++j)
            acc[i][j] = __hfma2(DUP_A ? fa[p][i] : bcast_f16(fa[p], i), fb[p][j], acc[i][j]);
      }
    };
    int kt = 0;
    for (; kt < num_kt - 1; ++kt) slice(kt, true);  // every slice but the last stores the next
    slice(kt, false);                                // kt == num_kt - 1
  }

  // ---- epilogue: 8 halves (one 16-byte store) per row of each 8x8 sub-tile ---------------------
#pragma unroll
  for (int i = 0; i < TM / RG; ++i) {
#pragma unroll
    for (int r = 0; r < RG; ++r) {
      const int gm = m0 + tm0 + i * LANES_M * RG + r;
#pragma unroll
      for (int j = 0; j < TN / 8; ++j) {
        const int gn = n0 + tn0 + j * LANES_N * 8;
        store_f16xN<8>(c + gm * N + gn, &acc[i * RG + r][j * 4]);
      }
    }
  }
}
