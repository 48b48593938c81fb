// cugemm/kernels/hgemm_skinny/01_splitk.cu -- skinny products (M <= 64, large N and K), the
// memory-bound end of the LLM shapes: hgemm_skinny_splitk_m<MAXM>_n<BN>k<BK>_stage<S>[_bcol] and the
// bf16 siblings bgemm_skinny_splitk_... .
//
// C = A * B, 16-bit T in and out (half or __nv_bfloat16), fp32 accumulation, A M x K row-major with
// M <= 8 MT, B K x N row-major or (BCOL) column-major: memory holding N rows of K, the W of `x @ W.T`
// (W N x K row-major, a linear layer's weight). Such a product is a stream of B; what this kernel
// adds over the square-tile ladder (hgemm_mma) is the way it streams B:
//  - swapped operands: the block computes C^T = B^T A^T, so B's side is the 16-row mma operand and
//    A's rows the 8-wide one (an M of 1..8 pads to 8 rows, not 16);
//  - split-K: the grid is (N slabs of BN columns) x (S K-slices), S chosen by the launcher
//    (cugemm/families/hgemm_skinny.py, plan) so that every SM has whole blocks of work;
//  - a STAGES-deep cp.async ring of XOR-swizzled B tiles (and the few A rows of the same k range)
//    per block, B's copies tagged evict_first in L2 (lib/core.cuh, l2_policy_stream); fragments by
//    ldmatrix (row-major B: .trans; BCOL: plain);
//  - a deterministic split-K reduction in the same kernel: every K-slice writes its M x BN fp32
//    partial to a workspace; the last block of a slab to arrive (a per-slab counter, which that
//    block resets to zero) adds the S partials in split order and writes C. S = 1 writes C directly.
// A's rows past M are zero-filled in shared memory and their m8 tiles skipped (no ldmatrix, no mma):
// M is a run-time argument; MT bounds it at compile time. Story and measurements: docs/hgemm_skinny.md.
//
// Template parameters: NF (n16 tiles per warp; BN = 64 NF, 4 warps side by side in n), MT (m8 tiles:
// M <= 8 MT, MT even), BK (k per ring stage, 64 or 128), STAGES (2..8), BCOL (B column-major), T.
// Launch: grid = (ceil(N / BN), S, 1) with every K-slice non-empty (S = ceil(kt / ceil(kt / S)),
//   kt = ceil(K / BK)), block = (128, 1, 1), dynamic shared memory hgemm_skinny_splitk_smem_bytes
//   (the layout: hgemm_skinny_splitk_smem below).
//   Extra arguments: ws (fp32, S * ceil(N / BN) * M * BN floats; unused when S = 1) and counters
//   (ceil(N / BN) unsigned, zero before the first launch; the kernel leaves them zero). Launches
//   that share ws / counters must not run concurrently (the launcher keeps one pair per stream).
// Preconditions: 1 <= M <= 8 MT, N % 8 == 0, K % 8 == 0 (16-byte rows of A and of B, 8-byte groups
//   of 4 in C), a, b, c 16-byte aligned and dense; N K < 2^31; sm_80+.
#include "../lib/cp_async.cuh"
#include "../lib/mma.cuh"
#include "../lib/pipeline.cuh"
#include "../lib/swizzle.cuh"

// The dynamic shared memory (bytes): during the K loop a ring of STAGES swizzled A tiles [BM][BK],
// then STAGES swizzled B tiles ([BK][BN], BCOL [BN][BK]), 16-bit elements; in the epilogue the
// block's fp32 partial [BM][P] over it (rows padded to P = BN + 4 floats).
template <int BM, int BN, int BK, int STAGES>
struct hgemm_skinny_splitk_smem {
  static constexpr int A_STAGE = BM * BK * 2, B_STAGE = BN * BK * 2;  // per ring stage
  static constexpr int A = 0, B = A + STAGES * A_STAGE;              // the two rings
  static constexpr int RING_BYTES = B + STAGES * B_STAGE;
  static constexpr int P = BN + 4;
  static constexpr int PART = 0, PART_BYTES = BM * P * 4;
  static constexpr int BYTES = RING_BYTES > PART_BYTES ? RING_BYTES : PART_BYTES;
};

template <int NF, int MT, int BK, int STAGES, bool BCOL, class T>
__device__ constexpr int hgemm_skinny_splitk_smem_bytes =
    hgemm_skinny_splitk_smem<8 * MT, 64 * NF, BK, STAGES>::BYTES;

template <int NF, int MT, int BK, int STAGES, bool BCOL, class T>
__global__ void __launch_bounds__(128, 2)
hgemm_skinny_splitk(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N,
                    int K, float* __restrict__ ws, unsigned* __restrict__ counters) {
  constexpr int NT = 128, BN = 64 * NF, BM = 8 * MT, KSTEPS = BK / 16;
  constexpr int A_CPR = BK / 8;                    // 16-byte chunks per A row ([BM][BK])
  constexpr int B_CPR = BCOL ? BK / 8 : BN / 8;    // per B row: [BN][BK] (BCOL) or [BK][BN]
  constexpr int A_RPP = NT / A_CPR, B_RPP = NT / B_CPR;  // rows per copy pass
  constexpr int A_PASSES = BM / A_RPP, B_PASSES = (BCOL ? BN : BK) / B_RPP;
  using Smem = hgemm_skinny_splitk_smem<BM, BN, BK, STAGES>;
  constexpr int A_STAGE = Smem::A_STAGE, B_STAGE = Smem::B_STAGE;
  constexpr int P = Smem::P;                       // row pitch (floats) of the partial tile
  static_assert(sizeof(T) == 2, "16-bit elements");
  static_assert(MT % 2 == 0 && MT >= 2 && MT <= 8, "A fragments come in pairs of m8 tiles");
  static_assert(BK == 64 || BK == 128, "k steps of 16, rows of 8 or 16 chunks");
  static_assert(STAGES >= 2 && STAGES <= 8, "2 to 8 stages");
  static_assert(A_RPP % 8 == 0 && B_RPP % 8 == 0 && A_PASSES * A_RPP == BM &&
                    B_PASSES * B_RPP == (BCOL ? BN : BK),
                "whole swizzle periods per copy pass, whole passes per tile");
  extern __shared__ __align__(128) unsigned char smem[];

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int slab = blockIdx.x, split = blockIdx.y, splits = gridDim.y;
  const int n0 = slab * BN;
  const int mtiles = (M + 7) >> 3;  // m8 tiles holding rows of A
  const int num_kt_all = (K + BK - 1) / BK;
  const int kt_per = (num_kt_all + splits - 1) / splits;
  const int kt0 = split * kt_per;
  const int num_kt = min(kt_per, num_kt_all - kt0);  // >= 1: the launcher leaves no slice empty

  const unsigned base = smem_addr(smem), sA = base + Smem::A, sB = base + Smem::B;

  // ---- copies: this thread's chunks of every stage (pass i: rows + i * RPP) --------------------
  const int a_r = tid / A_CPR, a_c = tid % A_CPR;
  const int b_r = tid / B_CPR, b_c = tid % B_CPR;
  const unsigned a_dst = sA + xor_swizzle_chunk<A_CPR>(a_r, a_c) * 16;
  const unsigned b_dst = sB + xor_swizzle_chunk<B_CPR>(b_r, b_c) * 16;
  int k_next = kt0 * BK;  // first k of the next K-tile to copy
  const T* a_src = a + a_r * K + k_next + 8 * a_c;
  const T* b_src = BCOL ? b + (n0 + b_r) * K + k_next + 8 * b_c : b + (k_next + b_r) * N + n0 + 8 * b_c;
  unsigned a_rows_in = 0, b_rows_in = 0;  // bit i: pass i's row is inside M (A) / N (BCOL B)
#pragma unroll
  for (int i = 0; i < A_PASSES; ++i) a_rows_in |= (a_r + i * A_RPP < M ? 1u : 0u) << i;
  if (BCOL) {
#pragma unroll
    for (int i = 0; i < B_PASSES; ++i) b_rows_in |= (n0 + b_r + i * B_RPP < N ? 1u : 0u) << i;
  }
  const bool b_col_in = BCOL || n0 + 8 * b_c < N;  // row-major B: this thread's n chunk
  const unsigned long long b_policy = l2_policy_stream();  // B is read once: its L2 lines evict_first

  // One K-tile into ring stage s; chunks outside the matrices are zero-filled (nothing is read).
  auto issue = [&](int s) __attribute__((always_inline)) {
#pragma unroll
    for (int i = 0; i < A_PASSES; ++i) {
      const bool in = ((a_rows_in >> i) & 1) && k_next + 8 * a_c < K;
      cp_async_16_zfill(a_dst + s * A_STAGE + i * NT * 16, in ? a_src + i * A_RPP * K : a, in ? 16 : 0);
    }
#pragma unroll
    for (int i = 0; i < B_PASSES; ++i) {
      const bool in = BCOL ? ((b_rows_in >> i) & 1) && k_next + 8 * b_c < K
                           : b_col_in && k_next + b_r + i * B_RPP < K;
      const T* src = BCOL ? b_src + i * B_RPP * K : b_src + i * B_RPP * N;
      cp_async_16_zfill(b_dst + s * B_STAGE + i * NT * 16, in ? src : b, in ? 16 : 0, b_policy);
    }
    a_src += BK;
    b_src += BCOL ? BK : BK * N;
    k_next += BK;
  };

  // ---- fragments ----------------------------------------------------------------------------
  // B^T (16 columns of C x 16 k) is the m16n8k16 A operand: BCOL, tile [BN][BK]: lane l addresses
  // row nl + l % 16 at chunk 2 kk + l / 16 (plain ldmatrix); row-major B, tile [BK][BN]: k row
  // 16 kk + l % 8 + 8 (l / 16) at n chunk nl / 8 + (l / 8) % 2 (ldmatrix .trans).
  // A^T (16 k x 8 rows of A) is the B operand: a pair of m8 tiles per ldmatrix.x4, lane l addresses
  // A row 16 mp + l % 8 + 8 (l / 16) at chunk 2 kk + (l / 8) % 2.
  const int nw = warp * 16 * NF;  // the warp's first column in the slab
  auto b_frag_addr = [&](int s, int kk, int j) __attribute__((always_inline)) {
    const int nl = nw + 16 * j;
    const int chunk = BCOL ? xor_swizzle_chunk<B_CPR>(nl + (lane & 15), 2 * kk + (lane >> 4))
                           : xor_swizzle_chunk<B_CPR>(16 * kk + (lane & 7) + ((lane >> 4) << 3),
                                                      nl / 8 + ((lane >> 3) & 1));
    return sB + s * B_STAGE + chunk * 16;
  };
  auto a_frag_addr = [&](int s, int kk, int mp) __attribute__((always_inline)) {
    const int chunk = xor_swizzle_chunk<A_CPR>(16 * mp + (lane & 7) + ((lane >> 4) << 3),
                                               2 * kk + ((lane >> 3) & 1));
    return sA + s * A_STAGE + chunk * 16;
  };

  unsigned fb[2][NF][4];     // B^T fragments (mma A operand), two sets
  unsigned fa[2][MT][2];     // A^T fragments (mma B operand), two sets
  float acc[NF][MT][4] = {};  // C^T tiles: (column nl + g (+8), rows 8 mt + 2t, 2t + 1)

  auto load_frags = [&](int s, int kk, int p) __attribute__((always_inline)) {
#pragma unroll
    for (int j = 0; j < NF; ++j) {
      if (BCOL) ldmatrix_x4(fb[p][j], b_frag_addr(s, kk, j));
      else ldmatrix_x4_trans(fb[p][j], b_frag_addr(s, kk, j));
    }
#pragma unroll
    for (int mp = 0; mp < MT / 2; ++mp) {
      if (2 * mp < mtiles) {
        unsigned r[4];
        ldmatrix_x4(r, a_frag_addr(s, kk, mp));
        fa[p][2 * mp][0] = r[0];
        fa[p][2 * mp][1] = r[1];
        fa[p][2 * mp + 1][0] = r[2];
        fa[p][2 * mp + 1][1] = r[3];
      }
    }
  };
  auto mma = [&](int p) __attribute__((always_inline)) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
      if (mt < mtiles) {
#pragma unroll
        for (int j = 0; j < NF; ++j) mma_m16n8k16<T>(acc[j][mt], fb[p][j], fa[p][mt]);
      }
  };
  static_assert(KSTEPS % 2 == 0, "an even number of k steps per K-tile");
  ring_pipeline<STAGES, KSTEPS>(num_kt, issue, load_frags, mma, [] {});

  // ---- epilogue: the block's M x BN partial through shared memory --------------------------------
  cp_async_wait<0>();  // only empty groups remain; drained before the ring is overwritten
  __syncthreads();     // every warp is done with its last fragments
  float* part = reinterpret_cast<float*>(smem + Smem::PART);  // [BM][P]
  {
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
      if (mt < mtiles) {
#pragma unroll
        for (int j = 0; j < NF; ++j) {
          float* p = part + (8 * mt + 2 * t) * P + nw + 16 * j + g;
          p[0] = acc[j][mt][0];
          p[P] = acc[j][mt][1];
          p[8] = acc[j][mt][2];
          p[P + 8] = acc[j][mt][3];
        }
      }
  }
  __syncthreads();

  constexpr int C4 = BN / 4;  // groups of 4 columns per row (all inside N or all outside: N % 8 == 0)
  auto store_c = [&](int m, int n, float4 v) __attribute__((always_inline)) {
    *reinterpret_cast<uint2*>(c + m * N + n) = make_uint2(pack2<T>(v.x, v.y), pack2<T>(v.z, v.w));
  };
  if (splits == 1) {
    for (int idx = tid; idx < M * C4; idx += NT) {
      const int m = idx / C4, q = idx % C4;
      if (n0 + 4 * q < N) store_c(m, n0 + 4 * q, *reinterpret_cast<const float4*>(part + m * P + 4 * q));
    }
    return;
  }
  const int slabs = gridDim.x;
  for (int idx = tid; idx < M * C4; idx += NT) {
    const int m = idx / C4, q = idx % C4;
    if (n0 + 4 * q < N)
      __stcg(reinterpret_cast<float4*>(ws + ((split * slabs + slab) * M + m) * BN + 4 * q),
             *reinterpret_cast<const float4*>(part + m * P + 4 * q));
  }
  __threadfence();  // this thread's partial is visible device-wide before the block counts itself
  __syncthreads();
  __shared__ bool last;
  if (tid == 0) {
    const unsigned arrived = atomicAdd(counters + slab, 1u);
    last = arrived == static_cast<unsigned>(splits - 1);
    if (last) counters[slab] = 0;  // every slice has counted: zero for the next launch
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  for (int idx = tid; idx < M * C4; idx += NT) {
    const int m = idx / C4, q = idx % C4;
    if (n0 + 4 * q >= N) continue;
    float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int s = 0; s < splits; ++s) {  // split order: the same sum whichever block is last
      const float4 v = __ldcg(reinterpret_cast<const float4*>(ws + ((s * slabs + slab) * M + m) * BN + 4 * q));
      sum.x += v.x;
      sum.y += v.y;
      sum.z += v.z;
      sum.w += v.w;
    }
    store_c(m, n0 + 4 * q, sum);
  }
}
