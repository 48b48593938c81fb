// cugemm/kernels/sgemm/07_warp_tile.cu -- SGEMM, rung 7, above the notes: warp tiling with
// register-double-buffered fragments (sgemm_t_*_warp*_dbuf, their _edge forms for any shape)
// (the design in full, the loaders' index math, measurements and what was tried: docs/sgemm.md)
//
// C = A * B, fp32, row-major: A is M x K, B is K x N, C is M x N (C is overwritten).
//
// What this rung adds over rungs 5 and 6 (block tile, thread tile, double-buffered shared
// memory, A stored transposed):
//  1. Warp tiles: the BM x BN block tile is split into WARPS_M x WARPS_N warp tiles of WM x WN,
//     and the 32 lanes of a warp form a LANES_M x LANES_N grid inside one (LANES_M = WM / TM,
//     LANES_N = WN / TN).
//  2. Split thread tiles: a thread's TM x TN outputs are 4x4 sub-tiles whose 4-row groups sit
//     LANES_M*4 rows apart (columns: LANES_N*4), so every fragment load of a warp is one
//     conflict-free LDS.128 wavefront and every epilogue float4 store covers whole sectors.
//  3. Fragments of k step kk+1 are loaded while the FFMAs of step kk run.
//  4. Global loads one K-tile ahead, into registers, stored to the other shared buffer before
//     the tile's last k step; one __syncthreads per tile. The last tile is peeled off the loop.
//  5. EDGE: the same kernel for any M, N, K (guarded scalar loads and stores).
// Blocks per SM asked of the register allocator: warp_tile_min_blocks(TM, TN).
//
// Launch: grid = (ceil(N / BN), ceil(M / BM), 1), block = (WARPS_M * WARPS_N * 32, 1, 1),
//         no dynamic shared memory (2 * BK * (BM + 4 + BN) * 4 bytes of static shared memory).
// Preconditions:
//   EDGE = false: M % BM == 0, N % BN == 0, K % BK == 0, K >= BK; a, b, c 16-byte aligned
//                 (then every row of A, B and C starts 16-byte aligned, as K and N are
//                 multiples of 4).
//   EDGE = true : M, N, K >= 1, any alignment of a, b, c and of their rows. Global loads are
//                 guarded scalar loads (0 outside the matrix), C stores guarded scalar stores.
//   Both: 32-bit int indexing: M * K, K * N, M * N < 2^31; with EDGE also (M + BM) * K and
//         (K + BK) * N < 2^31 (offsets are formed, not dereferenced, up to one tile past the end).
// Shared memory (per buffer): As[k][m], the A tile transposed to k-major, rows padded to BM + 4
//   (conflict-free transposed stores, 16-byte aligned rows); Bs[k][n], the B tile as it is.
#include "../lib/move.cuh"

__host__ __device__ constexpr int warp_tile_min_blocks(int tm, int tn) {
  return tm * tn <= 64 ? 2 : 1;
}

// The block's work: its C tile of one M x N x K product (this file's kernel, and the batched form's
// in 08_warp_tile_batched.cu).
template <int BM, int BN, int BK, int WARPS_M, int WARPS_N, int TM, int TN, bool EDGE>
__device__ __forceinline__ void sgemm_warp_tile_dbuf_tile(const float* __restrict__ a, const float* __restrict__ b,
                                                          float* __restrict__ c, int M, int N, int K) {
  constexpr int NT = WARPS_M * WARPS_N * 32;  // threads per block
  constexpr int WM = BM / WARPS_M;            // warp tile
  constexpr int WN = BN / WARPS_N;
  constexpr int LANES_M = WM / TM;            // lane grid inside the warp tile
  constexpr int LANES_N = WN / TN;
  constexpr int AS_LD = BM + 4;               // padded row length of As
  constexpr int A_KQ = BK / 4;                // float4s per row of the A tile (along k)
  constexpr int B_NQ = BN / 4;                // float4s per row of the B tile (along n)

  static_assert(BM % WARPS_M == 0 && BN % WARPS_N == 0, "warps must split the block tile");
  static_assert(WM % TM == 0 && WN % TN == 0, "thread tiles must split the warp tile");
  static_assert(LANES_M * LANES_N == 32, "a warp tile must hold exactly 32 thread tiles");
  static_assert(TM % 4 == 0 && TN % 4 == 0, "thread tiles are made of 4x4 sub-tiles");
  static_assert(BK % 8 == 0, "A is loaded as float4 pairs along k (and BK must be even)");
  static_assert((BM * A_KQ) % NT == 0 && (BK * B_NQ) % NT == 0,
                "each thread must load a whole number of float4s of each tile");
  static_assert(2 * BK * (AS_LD + BN) * 4 <= 48 * 1024, "static shared memory is capped at 48 KB");

  __shared__ __align__(16) float As[2][BK][AS_LD];
  __shared__ __align__(16) float Bs[2][BK][BN];

  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int warp_m = warp % WARPS_M;
  const int warp_n = warp / WARPS_M;
  const int lane_m = lane % LANES_M;
  const int lane_n = lane / LANES_M;
  const int m0 = blockIdx.y * BM;  // block tile origin in C
  const int n0 = blockIdx.x * BN;
  // Row (in the block tile) of the thread's first 4-row group, column of its first 4-col group.
  // Its 4-row group i starts at tm0 + i * LANES_M * 4, its 4-col group j at tn0 + j * LANES_N * 4.
  const int tm0 = warp_m * WM + lane_m * 4;
  const int tn0 = warp_n * WN + lane_n * 4;

  // ---- global -> registers -> shared ----------------------------------------------------------
  // Per K-tile each thread moves A_EL floats of the A tile and B_EL floats of the B tile through
  // the staging registers sa[] / sb[]. Element u of a thread sits at a compile-time offset from
  // its element 0 (a_dr/a_dk/b_dk/b_dc). Fast path: float4 loads, a warp covering 16 rows x 2
  // float4s of A and 512 contiguous bytes of B; EDGE: guarded scalar loads, A in chunks 8 wide
  // along k. Both keep global loads coalesced and the transposed As stores conflict-free (the
  // index math: docs/sgemm.md).
  constexpr int A_EL = BM * BK / NT;
  constexpr int B_EL = BK * BN / NT;
  static_assert((NT / 2) % BM == 0 || BM % (NT / 2) == 0, "A loader: NT/2 and BM must nest");
  static_assert(NT % B_NQ == 0 || B_NQ % NT == 0, "B loader: NT and BN/4 must nest");
  static_assert((8 * BM) % NT == 0, "EDGE A loader: a pass of the block must fit in 8 k columns");
  static_assert(NT % BN == 0 || BN % NT == 0, "EDGE B loader: NT and BN must nest");
  // Element 0 of this thread: A row / k in the tile, B k row / column in the tile.
  const int a_row = EDGE ? tid / 8 : (tid >> 1) % BM;
  const int a_k = EDGE ? tid % 8 : 4 * (2 * ((tid >> 1) / BM) + (tid & 1));
  const int b_row = EDGE ? tid / BN : tid / B_NQ;
  const int b_col = EDGE ? tid % BN : tid % B_NQ * 4;
  // Offsets of element u from element 0 (compile-time constants once the loops are unrolled).
  // The nesting asserts above make them exact: adding u * NT never carries into the next row.
  auto a_dr = [](int u) { return EDGE ? (u * NT) % (8 * BM) / 8 : (u / 4 * (NT / 2)) % BM; };
  auto a_dk = [](int u) {
    return EDGE ? (u * NT) / (8 * BM) * 8 : (u / 4 * (NT / 2)) / BM * 8 + u % 4;
  };
  auto b_dk = [](int u) { return EDGE ? (u * NT) / BN : (u / 4 * NT) / B_NQ; };
  auto b_dc = [](int u) { return EDGE ? (u * NT) % BN : (u / 4 * NT) % B_NQ * 4 + u % 4; };
  const int a_off = (m0 + a_row) * K + a_k;  // a[a_off + k0]: element 0 of the K-tile at k0
  const int b_off = b_row * N + n0 + b_col;  // b[b_off + k0 * N]: same for B

  float sa[A_EL];
  float sb[B_EL];

  // fetch the A part of K-tile kt into sa
  auto load_global_a = [&](int kt) __attribute__((always_inline)) {
    const int k0 = kt * BK;
    if (!EDGE) {
#pragma unroll
      for (int u = 0; u < A_EL; u += 4) {
        const float4 v = load_f32x4(a + (a_off + a_dr(u) * K + a_dk(u) + k0));
        sa[u + 0] = v.x;
        sa[u + 1] = v.y;
        sa[u + 2] = v.z;
        sa[u + 3] = v.w;
      }
    } else {
#pragma unroll
      for (int u = 0; u < A_EL; ++u) {
        const int gm = m0 + a_row + a_dr(u);
        const int gk = k0 + a_k + a_dk(u);
        sa[u] = (gm < M && gk < K) ? a[a_off + a_dr(u) * K + a_dk(u) + k0] : 0.f;
      }
    }
  };
  // fetch the B part of K-tile kt into sb
  auto load_global_b = [&](int kt) __attribute__((always_inline)) {
    const int k0 = kt * BK;
    if (!EDGE) {
#pragma unroll
      for (int u = 0; u < B_EL; u += 4) {
        const float4 v = load_f32x4(b + (b_off + (k0 + b_dk(u)) * N + b_dc(u)));
        sb[u + 0] = v.x;
        sb[u + 1] = v.y;
        sb[u + 2] = v.z;
        sb[u + 3] = v.w;
      }
    } else {
#pragma unroll
      for (int u = 0; u < B_EL; ++u) {
        const int gk = k0 + b_row + b_dk(u);
        const int gn = n0 + b_col + b_dc(u);
        sb[u] = (gk < K && gn < N) ? b[b_off + (k0 + b_dk(u)) * N + b_dc(u)] : 0.f;
      }
    }
  };

  // write sa, transposed (k-major), into As[buf]
  auto store_shared_a = [&](int buf) __attribute__((always_inline)) {
#pragma unroll
    for (int u = 0; u < A_EL; ++u) As[buf][a_k + a_dk(u)][a_row + a_dr(u)] = sa[u];
  };
  // write sb into Bs[buf]
  auto store_shared_b = [&](int buf) __attribute__((always_inline)) {
    if (!EDGE) {
#pragma unroll
      for (int u = 0; u < B_EL; u += 4)
        store_f32x4(&Bs[buf][b_row + b_dk(u)][b_col + b_dc(u)],
                    make_float4(sb[u + 0], sb[u + 1], sb[u + 2], sb[u + 3]));
    } else {
#pragma unroll
      for (int u = 0; u < B_EL; ++u) Bs[buf][b_row + b_dk(u)][b_col + b_dc(u)] = sb[u];
    }
  };

  // ---- shared -> register fragments, double-buffered ------------------------------------------
  float fa[2][TM];  // fa[p][i*4 + r]: A(row tm0 + i*LANES_M*4 + r, k) of the k step held in p
  float fb[2][TN];  // fb[p][j*4 + q]: B(k, col tn0 + j*LANES_N*4 + q)

  // k-row k of buffer buf into fragment set p
  auto load_frag = [&](int buf, int k, int p) __attribute__((always_inline)) {
#pragma unroll
    for (int i = 0; i < TM / 4; ++i) {
      const float4 v = load_f32x4(&As[buf][k][tm0 + i * LANES_M * 4]);
      fa[p][i * 4 + 0] = v.x;
      fa[p][i * 4 + 1] = v.y;
      fa[p][i * 4 + 2] = v.z;
      fa[p][i * 4 + 3] = v.w;
    }
#pragma unroll
    for (int j = 0; j < TN / 4; ++j) {
      const float4 v = load_f32x4(&Bs[buf][k][tn0 + j * LANES_N * 4]);
      fb[p][j * 4 + 0] = v.x;
      fb[p][j * 4 + 1] = v.y;
      fb[p][j * 4 + 2] = v.z;
      fb[p][j * 4 + 3] = v.w;
    }
  };

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

  const int num_kt = EDGE ? (K + BK - 1) / BK : K / BK;

  // Staging: K-tile kt + 1 travels global -> registers while tile kt is computed, and goes to
  // shared buffer (kt + 1) & 1 before the tile's last k step (that buffer's last reader passed
  // the previous tile's barrier).
  // SPLIT_STAGING (BK >= 16): A is stored at k step BK/2, where B is fetched, so the staging
  // registers fit the 128-register budget of 2 blocks/SM.
  // FETCH_AFTER_BARRIER (fast path): the loads of K-tile kt + 1 are issued right after the
  // barrier that publishes K-tile kt, at the tail of the previous iteration, where ptxas cannot
  // sink them towards their use. EDGE issues them at the top of the tile (docs/sgemm.md).
  constexpr bool SPLIT_STAGING = BK >= 16;
  constexpr bool FETCH_AFTER_BARRIER = !EDGE;

  // next_fetch(t): the K-tile fetched after the barrier that publishes K-tile t, i.e. t + 1,
  // clamped to the last tile: the redundant fetch at the end is never stored.
  auto next_fetch = [&](int t) { return min(t + 1, num_kt - 1); };

  // Prologue: K-tile 0 into buffer 0, fetch of K-tile 1 issued, k step 0's fragments into set 0.
  load_global_a(0);
  load_global_b(0);
  store_shared_a(0);
  store_shared_b(0);
  __syncthreads();
  if (FETCH_AFTER_BARRIER) {
    load_global_a(next_fetch(0));
    if (!SPLIT_STAGING) load_global_b(next_fetch(0));
  }
  load_frag(0, 0, 0);

  // One K-tile of FFMAs. On entry: buffer kt & 1 holds K-tile kt, visible to all threads, and
  // fragment set 0 holds its k step 0; with FETCH_AFTER_BARRIER the loads of K-tile kt + 1 into
  // sa (and sb unless SPLIT_STAGING) are in flight too. On exit, if has_next, the same holds
  // for kt + 1.
  // (always_inline: it is called twice below, and must be inlined with has_next a constant.)
  auto tile = [&](const int kt, const bool has_next) __attribute__((always_inline)) {
    const int cur = kt & 1;
    if (!FETCH_AFTER_BARRIER && has_next) {
      load_global_a(kt + 1);
      if (!SPLIT_STAGING) load_global_b(kt + 1);
    }
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      const int p = kk & 1;  // fragment set used by this step; 1 - p is being filled
      if (SPLIT_STAGING && kk == BK / 2 && has_next) {
        store_shared_a(cur ^ 1);
        load_global_b(kt + 1);
      }
      if (kk < BK - 1) {
        load_frag(cur, kk + 1, 1 - p);
      } else if (has_next) {
        // Every thread has loaded its last fragment of buffer cur ^ 1 (in the previous tile,
        // before that tile's barrier), so it may be overwritten; the barrier then publishes
        // K-tile kt + 1, and its first fragment is fetched under this step's FFMAs.
        if (!SPLIT_STAGING) store_shared_a(cur ^ 1);
        store_shared_b(cur ^ 1);
        __syncthreads();
        if (FETCH_AFTER_BARRIER) {
          load_global_a(next_fetch(kt + 1));
          if (!SPLIT_STAGING) load_global_b(next_fetch(kt + 1));
        }
        load_frag(cur ^ 1, 0, 1 - p);  // 1 - p == 0 since BK is even
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(fa[p][i], fb[p][j], acc[i][j]);
    }
  };
  int kt = 0;
  for (; kt < num_kt - 1; ++kt) tile(kt, true);  // every tile but the last stores the next
  tile(kt, false);                                // kt == num_kt - 1 (0 when num_kt <= 1)

  // ---- epilogue: C(m0 + tm0 + i*LANES_M*4 + r, n0 + tn0 + j*LANES_N*4 + q) = acc[i*4+r][j*4+q]
#pragma unroll
  for (int i = 0; i < TM / 4; ++i) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int gm = m0 + tm0 + i * LANES_M * 4 + r;
      const float* acc_row = acc[i * 4 + r];
#pragma unroll
      for (int j = 0; j < TN / 4; ++j) {
        const int gn = n0 + tn0 + j * LANES_N * 4;
        if (!EDGE) {
          store_f32x4(c + gm * N + gn, make_float4(acc_row[j * 4 + 0], acc_row[j * 4 + 1],
                                                   acc_row[j * 4 + 2], acc_row[j * 4 + 3]));
        } else if (gm < M) {
#pragma unroll
          for (int q = 0; q < 4; ++q)
            if (gn + q < N) c[gm * N + gn + q] = acc_row[j * 4 + q];
        }
      }
    }
  }
}

template <int BM, int BN, int BK, int WARPS_M, int WARPS_N, int TM, int TN, bool EDGE>
__global__ void __launch_bounds__(WARPS_M * WARPS_N * 32, warp_tile_min_blocks(TM, TN))
    sgemm_warp_tile_dbuf(const float* __restrict__ a, const float* __restrict__ b,
                         float* __restrict__ c, int M, int N, int K) {
  sgemm_warp_tile_dbuf_tile<BM, BN, BK, WARPS_M, WARPS_N, TM, TN, EDGE>(a, b, c, M, N, K);
}
