// cugemm/kernels/hgemm_mma/tma_ring.cuh: what the warp-specialised mma.sync rungs (06_ws.cu,
// 07_persistent.cu; sm_90a) share: the consumers' view of the TMA-filled ring (128-byte swizzled A
// and B stages and a warp's ldmatrix loads from them) and one tile's K loop of a consumer warp
// on the ring's FULL / EMPTY mbarriers.
//
// Layouts (the TMA 128-byte swizzle, lib/swizzle.cuh): an A stage is [BM][64] (row r, 16-byte chunk
// c at c ^ r % 8); a B stage is BN / 64 panels of [64 k][64 columns], 8 KB each (chunk c of k row r
// at c ^ r % 8). A warp's 64 columns are one B panel.
#pragma once
#include "../lib/barrier.cuh"
#include "hgemm_mma.cuh"

namespace hgemm_mma {

// The ring's layout (bytes from its 1024-byte-aligned base): STAGES A stages [BM][64], then STAGES
// B stages of BN / 64 panels [64][64], 16-bit elements.
template <int BM, int BN, int STAGES>
struct TmaRingLayout {
  static constexpr int A_STAGE = BM * 128, B_PANEL = 64 * 128, B_STAGE = BN / 64 * B_PANEL;
  static constexpr int A = 0, B = A + STAGES * A_STAGE;  // the two rings
  static constexpr int BYTES = B + STAGES * B_STAGE;
};

// The ring's A and B stages (TmaRingLayout) at shared-window addresses, and a warp's ldmatrix
// loads of one k step.
template <int BM, int BN, int FRAGS_M, int FRAGS_N, int STAGES>
struct TmaRing : TmaRingLayout<BM, BN, STAGES> {
  using Layout = TmaRingLayout<BM, BN, STAGES>;
  using Layout::A_STAGE, Layout::B_PANEL, Layout::B_STAGE;
  unsigned sA, sB;            // ring bases (shared window, 1024-byte aligned)
  unsigned a_lane, b_lane;    // this lane's offsets for k step 0, fragment 0 / pair 0

  __device__ __forceinline__ TmaRing(unsigned ring, int lane, int wm0, int wn0)
      : sA(ring + Layout::A), sB(ring + Layout::B) {
    // lane l addresses row l % 16 of its 16 x 16 block, chunk column l / 16 (wm0 % 8 == 0)
    const int sw = ((lane >> 4) ^ (lane & 7)) * 16;
    a_lane = (wm0 + (lane & 15)) * 128 + sw;
    b_lane = wn0 / 64 * B_PANEL + (lane & 15) * 128 + sw;
  }

  // k step kk of stage s: ldmatrix.x4 per 16 x 16 A fragment, ldmatrix.x4.trans per pair of 16 x 8
  // B fragments (chunk column 2 kk of A / 2 jp of the panel: an XOR inside the 128-byte line).
  __device__ __forceinline__ void load_frags(int s, int kk, unsigned (&fa)[FRAGS_M][4],
                                             unsigned (&fb)[FRAGS_N][2]) const {
    const unsigned a_s = sA + s * A_STAGE + (a_lane ^ (kk * 32));
#pragma unroll
    for (int i = 0; i < FRAGS_M; ++i) ldmatrix_x4(fa[i], a_s + i * 16 * 128);
    const unsigned b_s = sB + s * B_STAGE + kk * 16 * 128;
#pragma unroll
    for (int jp = 0; jp < FRAGS_N / 2; ++jp) {
      unsigned r[4];
      ldmatrix_x4_trans(r, b_s + (b_lane ^ (jp * 32)));
      fb[2 * jp][0] = r[0];
      fb[2 * jp][1] = r[1];
      fb[2 * jp + 1][0] = r[2];
      fb[2 * jp + 1][1] = r[3];
    }
  }
};

// One consumer warp's K loop over num_kt K-tiles of 64 from the ring, starting at `ring` (advanced
// past them on return), adding into acc. A K-tile waits on FULL[s] (every lane polls the parity);
// its 4 k steps run ldmatrix + FRAGS_M x FRAGS_N mma.sync each with the fragments double-buffered
// in registers (k step kk + 1 loads under kk's MMAs; the last step waits for the next K-tile and
// loads its step 0). Once the stage's last fragments are consumed, lane 0 (lanes 0..CLUSTER_M - 1:
// one arrival in each block of the cluster) arrives on EMPTY[s].
template <class T, int CLUSTER_M, int STAGES, class Tiles, bool F16ACC, int FRAGS_M, int FRAGS_N>
__device__ __forceinline__ void consume_ring(const Tiles& ops, MmaTile<F16ACC> (&acc)[FRAGS_M][FRAGS_N],
                                             unsigned long long* full, unsigned long long* empty,
                                             Ring<STAGES>& ring, int num_kt, int lane) {
  constexpr int KSTEPS = 4;
  if (num_kt <= 0) return;
  unsigned fa[2][FRAGS_M][4];
  unsigned fb[2][FRAGS_N][2];
  auto mma = [&](int p) __attribute__((always_inline)) {
#pragma unroll
    for (int i = 0; i < FRAGS_M; ++i)
#pragma unroll
      for (int j = 0; j < FRAGS_N; ++j) acc[i][j].template mma<T>(fa[p][i], fb[p][j]);
  };
  int s = ring.stage;
  unsigned phase = ring.phase;
  mbarrier_wait(&full[s], phase);
  ops.load_frags(s, 0, fa[0], fb[0]);
  // One K-tile in stage s; on entry fragment set 0 holds its k step 0. With has_next, k step 3
  // waits for the next K-tile and loads its step 0 into set 0 under its own MMAs.
  auto ktile = [&](const bool has_next) __attribute__((always_inline)) {
    const int ns = s + 1 == STAGES ? 0 : s + 1;
    const unsigned nphase = ns == 0 ? phase ^ 1 : phase;
#pragma unroll
    for (int kk = 0; kk < KSTEPS; ++kk) {
      const int p = kk & 1;
      if (kk + 1 < KSTEPS) {
        ops.load_frags(s, kk + 1, fa[p ^ 1], fb[p ^ 1]);
      } else if (has_next) {
        mbarrier_wait(&full[ns], nphase);
        ops.load_frags(ns, 0, fa[p ^ 1], fb[p ^ 1]);
      }
      mma(p);
    }
    // k step 3's fragments were consumed by the MMAs above: this warp is done with stage s
    __syncwarp();
    if constexpr (CLUSTER_M > 1) {  // the stage is free when every consumer warp of the cluster says so
      if (lane < CLUSTER_M) mbarrier_arrive_remote(&empty[s], lane);
    } else {
      if (lane == 0) mbarrier_arrive(&empty[s]);
    }
    s = ns;
    phase = nphase;
  };
  for (int kt = 0; kt < num_kt - 1; ++kt) ktile(true);
  ktile(false);
  ring.stage = s;
  ring.phase = phase;
}

}  // namespace hgemm_mma
