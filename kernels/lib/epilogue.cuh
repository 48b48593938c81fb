// cugemm/kernels/lib/epilogue.cuh: fused epilogues, composed at compile time from parts, applied to
// fp32 accumulators in registers before they are rounded and stored.
//
//   D   = act(alpha * acc + [beta * S]pre + bias) + [beta * S]post      (each bracket optional)
//   AUX = alpha * acc + [beta * S]pre + bias                             (the pre-activation, optional)
//
// A kernel takes `class EPI` (epilogue::None, or epilogue::Fused<ACT, BIAS, SRC, AUX>) and the
// runtime Args below (pointers, alpha, beta, row strides); where EPI::ACTIVE it calls
// epilogue::apply on each group of accumulator pairs before its store. The parts:
//   ACT   NONE, RELU (x < 0 ? 0 : x, NaN kept), GELU (erf: 0.5 x (1 + erf(x / sqrt 2))),
//         GELU_TANH (0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))), SILU (x / (1 + e^-x))
//   BIAS  NO_BIAS, BIAS_COL (one value per column of D: F.linear's bias), BIAS_ROW (per row)
//   SRC   NO_SRC, SRC_PRE (beta * S inside the activation: BLAS's beta * C), SRC_POST (beta * S added
//         after it: a residual); S is a T matrix of row stride ld_src (elements), read in pairs
//   AUX   the pre-activation stored to `aux` (row stride ld_aux) before the activation: what the
//         backward pass of an activation needs (dGELU, dSiLU)
// The vectors and matrices hold the kernel's output type T (half or __nv_bfloat16); the arithmetic is
// fp32 (what cuBLASLt's epilogues do), D and AUX rounded to T once. With BIAS or SRC absent nothing
// is read (BLAS: beta = 0 never reads C, so NaNs in an uninitialised C do not leak).
//
// The fragment: apply() takes JN 8-column groups of a thread's accumulators, group j's four values
// at acc[4j .. 4j + 3]: (row, col + 8j) and (row, col + 8j + 1), then (row + 8, col + 8j) and
// (row + 8, col + 8j + 1): the wgmma m64nNk16 fragment (hgemm_wgmma.cuh) and the mma.sync m16n8
// C fragment alike (g = lane / 4 is the row, 2 (lane % 4) the first column). Preconditions: col even,
// N even, bias / src / aux and ld_src / ld_aux such that each pair is one aligned 4-byte word
// (pointers 4-byte aligned, row strides even). Rows >= M and columns >= N read and write nothing.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core.cuh"
#include "mma.cuh"

namespace epilogue {

enum Act : int { NONE = 0, RELU = 1, GELU = 2, GELU_TANH = 3, SILU = 4 };
enum BiasKind : int { NO_BIAS = 0, BIAS_COL = 1, BIAS_ROW = 2 };
enum SrcKind : int { NO_SRC = 0, SRC_PRE = 1, SRC_POST = 2 };

// The runtime half: what the launch passes (the kernel's last seven parameters).
struct Args {
  const void* bias;  // BIAS_COL: N values of T; BIAS_ROW: M values
  const void* src;   // SRC: S, row stride ld_src
  void* aux;         // AUX: the pre-activation, row stride ld_aux
  float alpha, beta;
  int ld_src, ld_aux;
};

// No epilogue: the kernel stores alpha = 1 times its accumulators, as before.
struct None {
  static constexpr bool ACTIVE = false;
  static constexpr int ACT = NONE, BIAS = NO_BIAS, SRC = NO_SRC;
  static constexpr bool AUX = false;
};

template <int ACT_, int BIAS_, int SRC_, bool AUX_>
struct Fused {
  static constexpr bool ACTIVE = true;
  static constexpr int ACT = ACT_, BIAS = BIAS_, SRC = SRC_;
  static constexpr bool AUX = AUX_;
  static_assert(ACT >= NONE && ACT <= SILU && BIAS >= NO_BIAS && BIAS <= BIAS_ROW && SRC >= NO_SRC &&
                    SRC <= SRC_POST,
                "an activation, bias and source of the enums above");
  static_assert(!AUX || ACT != NONE, "an auxiliary output is the pre-activation: only with an activation");
};

// The activations run on the warps that issue the wgmmas, so their cost is instructions: each is
// written as x * sigmoid(z) = x / (1 + 2^-z'), two MUFU operations (ex2.approx, rcp.approx: relative
// errors of about 2^-22 and 1 ulp) and a few FMAs, instead of erff / tanhf / a rounded reciprocal
// (24, 20 and 17 SASS instructions an element, with branches, under NVRTC 13). The sigmoid form has
// no cancellation for x < 0 (0.5 x (1 + tanh) and 0.5 x (1 + erf) lose the small result's digits).
//   GELU (erf): Phi(x) = sigmoid(g(x)), g odd; the exponent -log2(e) g(x) = x P(x^2), P of degree 4
//     fitted to what an fp16 or bf16 result can show (scripts/fit_gelu.py: g's error within what
//     keeps the float32 result within 2^-12 of it relative, or 2e-7 max(1, |x|) where it is tiny);
//     every fp16 and bf16 value in [-12, 12] comes out within 0.76 of a spacing of the type (plus
//     2.5e-7 max(1, |x|)) of float64 x Phi(x) (tests/test_epilogue.py emulates it, the GPU test
//     runs it). Two FMAs an element fewer than the float32-accurate degree 6 (session 45).
//     x P(x^2) keeps its sign beyond the fitted range (the x^9 term leads), so large |x| give x
//     or -0 without a clamp.
//   GELU_TANH: 0.5 x (1 + tanh(u)) = x sigmoid(2 u), u = sqrt(2 / pi) (x + 0.044715 x^3).
//   SILU: x sigmoid(x).
CUGEMM_DEVICE float ex2_approx(float z) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(z));
  return r;
}
CUGEMM_DEVICE float rcp_approx(float y) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(y));
  return r;
}
// x / (1 + 2^z): x sigmoid(-z ln 2). z -> +inf: -0 or 0 (x finite); z -> -inf: x.
CUGEMM_DEVICE float times_sigmoid2(float x, float z) { return x * rcp_approx(1.f + ex2_approx(z)); }

// GELU (erf): the exponent x P(x^2), P's coefficients highest power first (printed by
// scripts/fit_gelu.py; tests/test_epilogue.py reads them from here)
CUGEMM_DEVICE float gelu_exponent(float x) {
  const float t = x * x;
  float p = -1.572033625e-06f;
  p = fmaf(p, t, 4.515278852e-05f);
  p = fmaf(p, t, 7.141646929e-04f);
  p = fmaf(p, t, -1.062586457e-01f);
  p = fmaf(p, t, -2.301240683e+00f);
  return x * p;
}

// CUGEMM_GELU_F32=1 (a -D switch, scripts/with_defines.py) builds session 45's exponent instead, the
// rung below: degree 6 fitted on [0, 9] for float32 results (within 2e-7 max(1, |x|)), to measure what
// the two FMAs an element cost.
#ifndef CUGEMM_GELU_F32
#define CUGEMM_GELU_F32 0
#endif
CUGEMM_DEVICE float gelu_exponent_f32(float x) {
  constexpr float P[] = {-5.244191303e-09f, 3.865658869e-07f, -1.147768489e-05f, 1.595883659e-04f,
                         9.481697634e-05f,  -1.048371792e-01f, -2.302208185e+00f};
  const float t = x * x;
  float p = P[0];
#pragma unroll
  for (int i = 1; i < 7; ++i) p = fmaf(p, t, P[i]);  // Horner, as gelu_exponent's written-out steps
  return x * p;
}

// CUGEMM_ACT_LIBM=1 (a -D switch, scripts/with_defines.py) builds the libm forms instead, the rung
// below, kept to measure what the sigmoid forms save (docs/epilogue.md).
#ifndef CUGEMM_ACT_LIBM
#define CUGEMM_ACT_LIBM 0
#endif
template <int ACT>
CUGEMM_DEVICE float activate(float x) {
  if constexpr (CUGEMM_ACT_LIBM && ACT == GELU) {
    return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
  } else if constexpr (CUGEMM_ACT_LIBM && ACT == GELU_TANH) {
    return 0.5f * x * (1.f + tanhf(0.79788456080286536f * fmaf(0.044715f * x, x * x, x)));
  } else if constexpr (CUGEMM_ACT_LIBM && ACT == SILU) {
    return x * __frcp_rn(1.f + __expf(-x));
  } else if constexpr (ACT == RELU) {
    return x < 0.f ? 0.f : x;  // NaN stays NaN, as torch.relu
  } else if constexpr (ACT == GELU) {
    return times_sigmoid2(x, CUGEMM_GELU_F32 ? gelu_exponent_f32(x) : gelu_exponent(x));
  } else if constexpr (ACT == GELU_TANH) {
    // -2 log2(e) u = x (K0 + K1 x^2), K0 = -2 log2(e) sqrt(2 / pi), K1 = 0.044715 K0
    return times_sigmoid2(x, x * fmaf(-0.10294324f, x * x, -2.3022082f));
  } else if constexpr (ACT == SILU) {
    return times_sigmoid2(x, -1.44269504f * x);
  } else {
    return x;
  }
}

// The two T values of one aligned 4-byte word, as floats.
template <class T>
CUGEMM_DEVICE float2 unpack2(unsigned w);
template <>
CUGEMM_DEVICE float2 unpack2<half>(unsigned w) {
  return __half22float2(*reinterpret_cast<const half2*>(&w));
}
template <>
CUGEMM_DEVICE float2 unpack2<__nv_bfloat16>(unsigned w) {
  // a bf16 is a float32's high half: one instruction a value (the intrinsic takes two for the high one)
  return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u));
}
CUGEMM_DEVICE float to_float(half x) { return __half2float(x); }
CUGEMM_DEVICE float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
template <class T>
CUGEMM_DEVICE float2 load_pair(const void* base, size_t offset) {
  return unpack2<T>(__ldg(reinterpret_cast<const unsigned*>(static_cast<const T*>(base) + offset)));
}

// When a tile starts (its K loop still ahead), the rows and columns its epilogue will read are
// fetched towards the SM: S's part of the slab (rows row0 .. row0 + 63, columns n0 .. n0 + BN - 1)
// into L2, one 128-byte line per thread and pass, and the tile's bias into L1. By the epilogue the
// loads find them there instead of idling the tensor cores for a DRAM trip. tid: 0 .. 127.
template <class EPI, class T, int BN>
CUGEMM_DEVICE void prefetch(int row0, int n0, int M, int N, int tid, const Args& a) {
  if constexpr (EPI::ACTIVE) {
    constexpr int PER_LINE = 128 / sizeof(T), LINES = (BN + PER_LINE - 1) / PER_LINE;  // lines of a row
    if constexpr (EPI::SRC != NO_SRC) {
#pragma unroll
      for (int i = tid; i < 64 * LINES; i += 128) {
        const int r = row0 + i / LINES, n = n0 + (i % LINES) * PER_LINE;
        if (r < M && n < N)
          asm volatile("prefetch.global.L2 [%0];" ::"l"(static_cast<const T*>(a.src) + static_cast<size_t>(r) * a.ld_src + n));
      }
    }
    if constexpr (EPI::BIAS == BIAS_COL) {
      if (tid < LINES && n0 + tid * PER_LINE < N)
        asm volatile("prefetch.global.L1 [%0];" ::"l"(static_cast<const T*>(a.bias) + n0 + tid * PER_LINE));
    } else if constexpr (EPI::BIAS == BIAS_ROW) {
      if (tid == 0 && row0 < M) asm volatile("prefetch.global.L1 [%0];" ::"l"(static_cast<const T*>(a.bias) + row0));
    }
  }
}

// A tile's column bias held in registers (BIAS_COL, where the kernel has NG registers to spare: ROOM;
// CUGEMM_BIAS_REGS=0 builds the loads in apply instead, to measure the difference): the packed pair of
// each of the thread's NG 8-column groups (columns col + 8 j and col + 8 j + 1; 0 past N), read when
// the tile's K loop starts, so that the epilogue's adds wait for no load after it. held(): the words
// for apply, or nullptr.
#ifndef CUGEMM_BIAS_REGS
#define CUGEMM_BIAS_REGS 1
#endif
template <class EPI, class T, int NG, bool ROOM = true>
struct TileBias {
  static constexpr bool HELD = EPI::ACTIVE && EPI::BIAS == BIAS_COL && ROOM && CUGEMM_BIAS_REGS;
  unsigned w[HELD ? NG : 1];
  CUGEMM_DEVICE void load(int col, int N, const Args& a) {
    if constexpr (HELD) {
#pragma unroll
      for (int j = 0; j < NG; ++j) {
        const int n = col + 8 * j;
        w[j] = n < N ? __ldg(reinterpret_cast<const unsigned*>(static_cast<const T*>(a.bias) + n)) : 0u;
      }
    }
  }
  CUGEMM_DEVICE const unsigned* held() const { return HELD ? w : nullptr; }
};

// JN 8-column groups j = j0 .. j0 + JN - 1 of the fragment (header), this thread's first row `row`
// and first column `col`: every load first (S's pairs, the bias), then the arithmetic and the AUX
// stores; D (fp32, rounded to T by the caller's store) goes to d, in acc's layout. d may be acc
// itself, except where acc are a wgmma's accumulators that a later K loop reuses (rung 7): a write
// into them by an ordinary instruction made ptxas serialise every wgmma of the kernel (a
// WARPGROUP.DEPBAR after each; tests/test_epilogue.py checks every covered member's SASS).
// DEFER: the activation and a post-activation S are left to finish_pair (the storing warps of an
// ANY_C form apply them to the staged, rounded pre-activation while the consumers go on).
// held: the tile's column bias already in registers (TileBias::held(), groups indexed from 0), or nullptr.
template <class EPI>
inline constexpr bool DEFERS = EPI::ACTIVE && (EPI::ACT != NONE || EPI::SRC == SRC_POST);
template <class EPI, class T, int JN, bool DEFER = false, int NACC>
CUGEMM_DEVICE void apply(const float (&acc)[NACC], float (&d)[NACC], int j0, int row, int col, int M, int N,
                         const Args& a, const unsigned* held = nullptr) {
  constexpr bool LOAD_S = EPI::SRC == SRC_PRE || (EPI::SRC == SRC_POST && !DEFER);
  if constexpr (EPI::ACTIVE) {
    float2 s[JN][2], bc[JN];
    float br[2] = {0.f, 0.f};
#pragma unroll
    for (int jj = 0; jj < JN; ++jj) {
      const int n = col + 8 * (j0 + jj);
      const bool in_n = n < N;
      bc[jj] = make_float2(0.f, 0.f);
      if constexpr (EPI::BIAS == BIAS_COL) {
        if (held) {
          bc[jj] = unpack2<T>(held[j0 + jj]);
        } else if (in_n) {
          bc[jj] = load_pair<T>(a.bias, n);
        }
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        s[jj][h] = make_float2(0.f, 0.f);
        if constexpr (LOAD_S) {
          const int r = row + 8 * h;
          if (in_n && r < M) s[jj][h] = load_pair<T>(a.src, static_cast<size_t>(r) * a.ld_src + n);
        }
      }
    }
    if constexpr (EPI::BIAS == BIAS_ROW) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = row + 8 * h;
        if (r < M) br[h] = to_float(static_cast<const T*>(a.bias)[r]);
      }
    }
#pragma unroll
    for (int jj = 0; jj < JN; ++jj) {
      const int j = j0 + jj, n = col + 8 * j;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float x0 = a.alpha * acc[4 * j + 2 * h], x1 = a.alpha * acc[4 * j + 2 * h + 1];
        if constexpr (EPI::SRC == SRC_PRE) {
          x0 = fmaf(a.beta, s[jj][h].x, x0);
          x1 = fmaf(a.beta, s[jj][h].y, x1);
        }
        if constexpr (EPI::BIAS == BIAS_COL) {
          x0 += bc[jj].x;
          x1 += bc[jj].y;
        } else if constexpr (EPI::BIAS == BIAS_ROW) {
          x0 += br[h];
          x1 += br[h];
        }
        if constexpr (EPI::AUX) {
          const int r = row + 8 * h;
          if (r < M && n < N)
            *reinterpret_cast<unsigned*>(static_cast<T*>(a.aux) + static_cast<size_t>(r) * a.ld_aux + n) =
                pack2<T>(x0, x1);
        }
        if constexpr (!DEFER) {
          x0 = activate<EPI::ACT>(x0);
          x1 = activate<EPI::ACT>(x1);
          if constexpr (EPI::SRC == SRC_POST) {
            x0 = fmaf(a.beta, s[jj][h].x, x0);
            x1 = fmaf(a.beta, s[jj][h].y, x1);
          }
        }
        d[4 * j + 2 * h] = x0;
        d[4 * j + 2 * h + 1] = x1;
      }
    }
  }
}

// The deferred half (DEFER above) on one staged pair v of T at row r, columns n, n + 1 (n even, N
// even): act(x) + beta * S, rounded again to T. S is read only where `in` (r < M and n < N: the
// caller's bounds); elsewhere the result is never stored.
template <class EPI, class T>
CUGEMM_DEVICE unsigned finish_pair(unsigned v, int r, int n, const Args& a, bool in = true) {
  float2 x = unpack2<T>(v);
  x.x = activate<EPI::ACT>(x.x);
  x.y = activate<EPI::ACT>(x.y);
  if constexpr (EPI::SRC == SRC_POST) {
    const float2 s = in ? load_pair<T>(a.src, static_cast<size_t>(r) * a.ld_src + n) : make_float2(0.f, 0.f);
    x.x = fmaf(a.beta, s.x, x.x);
    x.y = fmaf(a.beta, s.y, x.y);
  }
  return pack2<T>(x.x, x.y);
}

// All NG 8-column groups of a fragment, JN <= 8 at a time (so that one chunk's loads stay in
// registers), in place (acc's wgmmas done for good: the 64-row rung's SASS stays pipelined); held: as
// apply's.
template <class EPI, class T, int NG, int J0 = 0, int NACC>
CUGEMM_DEVICE void apply_groups(float (&acc)[NACC], int row, int col, int M, int N, const Args& a,
                                const unsigned* held = nullptr) {
  if constexpr (EPI::ACTIVE && J0 < NG) {
    constexpr int JN = NG - J0 < 8 ? NG - J0 : 8;
    apply<EPI, T, JN>(acc, acc, J0, row, col, M, N, a, held);
    apply_groups<EPI, T, NG, J0 + JN>(acc, row, col, M, N, a, held);
  }
}

}  // namespace epilogue
