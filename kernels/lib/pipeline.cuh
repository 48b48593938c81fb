// cugemm/kernels/lib/pipeline.cuh: the multi-stage cp.async ring over K-tiles, with fragments
// double-buffered in registers (the TF32 WMMA and mma.sync rungs use it).
#pragma once
#include "cp_async.cuh"

// STAGES ring stages of shared memory, KSTEPS k steps per K-tile, fragments double-buffered in
// two sets. The kernel supplies:
//   issue(s)              the cp.async copies of the next K-tile into ring stage s (no commit)
//   load_frags(s, kk, p)  k step kk of ring stage s into fragment set p
//   mma(p)                the MMAs of fragment set p into the accumulators
//   move_frags()          fragment set 1 -> set 0 (for an odd KSTEPS)
// Group accounting: every issue point commits one group (empty past the last K-tile), so at the
// barrier that publishes K-tile t >= 1 the groups committed are K-tiles 0 .. t + STAGES - 2, and
// cp_async_wait<STAGES - 2> leaves only the newer ones in flight (for t = 0: STAGES - 1).
template <int STAGES, int KSTEPS, class Issue, class LoadFrags, class Mma, class MoveFrags>
__device__ __forceinline__ void ring_pipeline(const int num_kt, Issue&& issue, LoadFrags&& load_frags,
                                              Mma&& mma, MoveFrags&& move_frags) {
  // prologue: K-tiles 0 .. STAGES-1 in flight (every stage is free), wait for K-tile 0
#pragma unroll
  for (int s = 0; s < STAGES; ++s) {
    if (s < num_kt) issue(s);
    cp_async_commit();
  }
  cp_async_wait<STAGES - 1>();
  __syncthreads();
  load_frags(0, 0, 0);

  int rd = 0;  // ring stage of the K-tile being computed

  // One K-tile. On entry fragment set 0 holds its k step 0. With has_next it ends with the
  // next K-tile published and its k step 0 in fragment set 0.
  auto tile = [&](const int kt, const bool has_next) __attribute__((always_inline)) {
#pragma unroll
    for (int kk = 0; kk < KSTEPS; ++kk) {
      const int p = kk & 1;
      if (kk + 1 < KSTEPS) {
        load_frags(rd, kk + 1, p ^ 1);
      } else if (has_next) {
        // K-tile kt + 1 has landed (this thread's copies), and after the barrier everyone's has,
        // and every warp has loaded its last fragments of stage rd: K-tile kt + STAGES goes there.
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        if (kt + STAGES < num_kt) issue(rd);
        cp_async_commit();
        rd = (rd + 1 == STAGES) ? 0 : rd + 1;
        load_frags(rd, 0, p ^ 1);
      }
      mma(p);
    }
    if ((KSTEPS & 1) && has_next) move_frags();  // odd k steps: the next tile's step 0 went to set 1
  };

  int kt = 0;
  for (; kt < num_kt - 1; ++kt) tile(kt, true);
  tile(kt, false);  // kt == num_kt - 1
}
