// cugemm/kernels/sgemm_tf32/padded_ring.cuh: the shared-memory layout of the family's cp.async rungs
// (01_wmma_*, 02_mma_*), offsets in floats: STAGES A tiles (BM x BK, rows of LDA = BK + A_PAD floats),
// then STAGES B tiles (BK x BN, rows of LDB = BN + B_PAD floats); the padding staggers the rows' banks.
#pragma once

namespace cugemm_tf32 {

template <int BM, int BN, int BK, int STAGES, int A_PAD, int B_PAD>
struct PaddedRingSmem {
  static constexpr int LDA = BK + A_PAD, LDB = BN + B_PAD;      // shared row lengths (floats)
  static constexpr int A_STAGE = BM * LDA, B_STAGE = BK * LDB;  // floats per stage
  static constexpr int A = 0;                                   // STAGES x [BM][LDA]
  static constexpr int B = A + STAGES * A_STAGE;                // STAGES x [BK][LDB]
  static constexpr int FLOATS = B + STAGES * B_STAGE;
  static constexpr int BYTES = FLOATS * 4;
};

}  // namespace cugemm_tf32
