// cugemm/kernels/lib/wgmma.cuh: Hopper warpgroup MMA (wgmma.mma_async, sm_90a): shared-memory
// matrix descriptors, the fence / commit / wait instructions, and the instruction wrappers.
//
// One warpgroup (4 consecutive warps whose first warp index is a multiple of 4, 128 threads)
// issues a 64 x N x K product per instruction, asynchronously. B always comes from shared memory
// through a 64-bit descriptor; A from shared memory too ("ss") or from registers ("rs").
// PTX ISA: "Asynchronous Warpgroup Level Matrix Multiply-Accumulate" (wgmma.mma_async, .fence,
// .commit_group, .wait_group), "Matrix Descriptor Format", "Shared Memory Matrix Layout".
//
// Accumulator fragment (fp32, N/2 registers d[] per thread; warp w = 0..3 of the warpgroup,
// g = lane / 4, t = lane % 4): d[i] is row 16w + g + 8 ((i >> 1) & 1), column 8 (i >> 2) + 2t + (i & 1).
// Register A fragment (.tf32 m64nNk8): warp w holds rows 16w .. 16w + 15 as the mma.sync m16n8k8
// A fragment: a0 (16w + g, t), a1 (16w + g + 8, t), a2 (16w + g, t + 4), a3 (16w + g + 8, t + 4).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core.cuh"
#include "mma.cuh"

namespace cugemm_wgmma {

// ---- shared-memory matrix descriptors ----------------------------------------------------------
// Fields: start address >> 4 (bits 0-13), leading-dimension byte offset >> 4 (bits 16-29), stride
// byte offset >> 4 (bits 32-45), layout type (bits 62-63: 1 = 128-byte swizzle, 2 = 64-byte,
// 3 = 32-byte, 0 = none). With the 128-byte swizzle the tile is made of 1024-byte atoms of 8 rows
// x 128 bytes (16-byte chunk c of row r at chunk c ^ (r % 8), lib/swizzle.cuh), 1024-byte aligned:
//   K-major operand (k contiguous, one 128-byte row holds the k extent of one instruction group):
//     SBO = 1024 (from one 8-row group of m/n to the next), LBO unused (1 by convention); stepping
//     k inside the 128-byte row adds the byte offset to the start address (the hardware applies
//     the swizzle to the address bits it forms).
//   MN-major operand (16-bit types only; m/n contiguous, rows of 64 elements = 128 bytes, one per
//     k): LBO = byte distance between 64-wide m/n panels, SBO = 1024 (from one 8-k group to the next).
__device__ __forceinline__ unsigned long long make_smem_desc(unsigned addr, unsigned lbo, unsigned sbo,
                                                             unsigned layout) {
  return static_cast<unsigned long long>((addr & 0x3FFFF) >> 4) |
         (static_cast<unsigned long long>(lbo >> 4) << 16) |
         (static_cast<unsigned long long>(sbo >> 4) << 32) |
         (static_cast<unsigned long long>(layout) << 62);
}
// A K-major 128-byte-swizzled operand (the TF32 rungs' A tiles: 32 fp32 k values per row).
__device__ __forceinline__ unsigned long long make_desc_sw128(unsigned addr) {
  return make_smem_desc(addr, 16, 1024, 1);
}
// An MN-major 128-byte-swizzled operand of a 16-bit type (B of a row-major K x N matrix): panels
// of 64 m/n columns, each a stack of k rows of 128 bytes (what a TMA box of 64 x rows with
// CU_TENSOR_MAP_SWIZZLE_128B writes), `panel_bytes` apart (PTX canonical layout
// ((8,8,m),(8,k)):((1,8,LBO),(64,SBO)) in elements): LBO = panel_bytes, SBO = 1024 (8 k rows).
// addr must stay 1024-aligned (k steps of 16 rows move it by 2048 bytes).
__device__ __forceinline__ unsigned long long make_desc_sw128_mn(unsigned addr, unsigned panel_bytes) {
  return make_smem_desc(addr, panel_bytes, 1024, 1);
}
// The same with the 64-byte swizzle: panels of 32 m/n columns, each a stack of k rows of 64 bytes
// (a TMA box of 32 x rows with CU_TENSOR_MAP_SWIZZLE_64B: 16-byte chunk c of row k at c ^ (k / 2 % 4)),
// canonical layout ((8,4,m),(8,k)):((1,8,LBO),(32,SBO)) in elements: LBO = panel_bytes, SBO = 512
// (8 k rows of 64 bytes). addr must stay 512-aligned (k steps of 16 rows move it by 1024 bytes).
__device__ __forceinline__ unsigned long long make_desc_sw64_mn(unsigned addr, unsigned panel_bytes) {
  return make_smem_desc(addr, panel_bytes, 512, 2);
}

// ---- ordering ----------------------------------------------------------------------------------
// Order this warpgroup's register writes (A fragments, accumulators) before the wgmma that reads
// them. Needed before the first wgmma and after any ordinary access to its registers.
__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void commit_group() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
// Wait until at most N committed wgmma groups of this warpgroup are still pending.
template <int N>
__device__ __forceinline__ void wait_group() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keep the compiler from moving ordinary code across an accumulator while a wgmma owns it.
__device__ __forceinline__ void fence_operand(float& r) { asm volatile("" : "+f"(r)::"memory"); }
template <int N>
__device__ __forceinline__ void fence_operands(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) fence_operand(d[i]);
}

// ---- instruction wrappers ----------------------------------------------------------------------
// The accumulator operand lists of a wgmma with NACC accumulators: the register names
// "{%0, ..., %(NACC - 1)}" (CUGEMM_WGMMA_ACC<NACC>) and the matching "+f"(d[i]) constraints
// (CUGEMM_WGMMA_ACC<NACC>_OPERANDS(d)), composed of runs of 4 names and of 4 and 16 constraints.
#define CUGEMM_R4_0 "%0, %1, %2, %3"
#define CUGEMM_R4_4 "%4, %5, %6, %7"
#define CUGEMM_R4_8 "%8, %9, %10, %11"
#define CUGEMM_R4_12 "%12, %13, %14, %15"
#define CUGEMM_R4_16 "%16, %17, %18, %19"
#define CUGEMM_R4_20 "%20, %21, %22, %23"
#define CUGEMM_R4_24 "%24, %25, %26, %27"
#define CUGEMM_R4_28 "%28, %29, %30, %31"
#define CUGEMM_R4_32 "%32, %33, %34, %35"
#define CUGEMM_R4_36 "%36, %37, %38, %39"
#define CUGEMM_R4_40 "%40, %41, %42, %43"
#define CUGEMM_R4_44 "%44, %45, %46, %47"
#define CUGEMM_R4_48 "%48, %49, %50, %51"
#define CUGEMM_R4_52 "%52, %53, %54, %55"
#define CUGEMM_R4_56 "%56, %57, %58, %59"
#define CUGEMM_R4_60 "%60, %61, %62, %63"
#define CUGEMM_R4_64 "%64, %65, %66, %67"
#define CUGEMM_R4_68 "%68, %69, %70, %71"
#define CUGEMM_R4_72 "%72, %73, %74, %75"
#define CUGEMM_R4_76 "%76, %77, %78, %79"
#define CUGEMM_R4_80 "%80, %81, %82, %83"
#define CUGEMM_R4_84 "%84, %85, %86, %87"
#define CUGEMM_R4_88 "%88, %89, %90, %91"
#define CUGEMM_R4_92 "%92, %93, %94, %95"
#define CUGEMM_R4_96 "%96, %97, %98, %99"
#define CUGEMM_R4_100 "%100, %101, %102, %103"
#define CUGEMM_R4_104 "%104, %105, %106, %107"
#define CUGEMM_R4_108 "%108, %109, %110, %111"
#define CUGEMM_R4_112 "%112, %113, %114, %115"
#define CUGEMM_R4_116 "%116, %117, %118, %119"
#define CUGEMM_R4_120 "%120, %121, %122, %123"
#define CUGEMM_R4_124 "%124, %125, %126, %127"
#define CUGEMM_F4(d, i) "+f"(d[i]), "+f"(d[(i) + 1]), "+f"(d[(i) + 2]), "+f"(d[(i) + 3])
#define CUGEMM_F16(d, i) CUGEMM_F4(d, i), CUGEMM_F4(d, (i) + 4), CUGEMM_F4(d, (i) + 8), CUGEMM_F4(d, (i) + 12)
#define CUGEMM_NAMES16 CUGEMM_R4_0 ", " CUGEMM_R4_4 ", " CUGEMM_R4_8 ", " CUGEMM_R4_12
#define CUGEMM_FS16(d) CUGEMM_F16(d, 0)
#define CUGEMM_NAMES32 CUGEMM_NAMES16 ", " CUGEMM_R4_16 ", " CUGEMM_R4_20 ", " CUGEMM_R4_24 ", " CUGEMM_R4_28
#define CUGEMM_FS32(d) CUGEMM_FS16(d), CUGEMM_F16(d, 16)
#define CUGEMM_NAMES48 CUGEMM_NAMES32 ", " CUGEMM_R4_32 ", " CUGEMM_R4_36 ", " CUGEMM_R4_40 ", " CUGEMM_R4_44
#define CUGEMM_FS48(d) CUGEMM_FS32(d), CUGEMM_F16(d, 32)
#define CUGEMM_NAMES64 CUGEMM_NAMES48 ", " CUGEMM_R4_48 ", " CUGEMM_R4_52 ", " CUGEMM_R4_56 ", " CUGEMM_R4_60
#define CUGEMM_FS64(d) CUGEMM_FS48(d), CUGEMM_F16(d, 48)
#define CUGEMM_NAMES80 CUGEMM_NAMES64 ", " CUGEMM_R4_64 ", " CUGEMM_R4_68 ", " CUGEMM_R4_72 ", " CUGEMM_R4_76
#define CUGEMM_FS80(d) CUGEMM_FS64(d), CUGEMM_F16(d, 64)
#define CUGEMM_NAMES96 CUGEMM_NAMES80 ", " CUGEMM_R4_80 ", " CUGEMM_R4_84 ", " CUGEMM_R4_88 ", " CUGEMM_R4_92
#define CUGEMM_FS96(d) CUGEMM_FS80(d), CUGEMM_F16(d, 80)
#define CUGEMM_NAMES112 CUGEMM_NAMES96 ", " CUGEMM_R4_96 ", " CUGEMM_R4_100 ", " CUGEMM_R4_104 ", " CUGEMM_R4_108
#define CUGEMM_FS112(d) CUGEMM_FS96(d), CUGEMM_F16(d, 96)
#define CUGEMM_NAMES128 CUGEMM_NAMES112 ", " CUGEMM_R4_112 ", " CUGEMM_R4_116 ", " CUGEMM_R4_120 ", " CUGEMM_R4_124
#define CUGEMM_FS128(d) CUGEMM_FS112(d), CUGEMM_F16(d, 112)
#define CUGEMM_WGMMA_ACC16 "{" CUGEMM_NAMES16 "}"
#define CUGEMM_WGMMA_ACC16_OPERANDS(d) CUGEMM_FS16(d)
#define CUGEMM_WGMMA_ACC20 "{" CUGEMM_NAMES16 ", " CUGEMM_R4_16 "}"
#define CUGEMM_WGMMA_ACC20_OPERANDS(d) CUGEMM_FS16(d), CUGEMM_F4(d, 16)
#define CUGEMM_WGMMA_ACC24 "{" CUGEMM_NAMES16 ", " CUGEMM_R4_16 ", " CUGEMM_R4_20 "}"
#define CUGEMM_WGMMA_ACC24_OPERANDS(d) CUGEMM_FS16(d), CUGEMM_F4(d, 16), CUGEMM_F4(d, 20)
#define CUGEMM_WGMMA_ACC32 "{" CUGEMM_NAMES32 "}"
#define CUGEMM_WGMMA_ACC32_OPERANDS(d) CUGEMM_FS32(d)
#define CUGEMM_WGMMA_ACC40 "{" CUGEMM_NAMES32 ", " CUGEMM_R4_32 ", " CUGEMM_R4_36 "}"
#define CUGEMM_WGMMA_ACC40_OPERANDS(d) CUGEMM_FS32(d), CUGEMM_F4(d, 32), CUGEMM_F4(d, 36)
#define CUGEMM_WGMMA_ACC48 "{" CUGEMM_NAMES48 "}"
#define CUGEMM_WGMMA_ACC48_OPERANDS(d) CUGEMM_FS48(d)
#define CUGEMM_WGMMA_ACC56 "{" CUGEMM_NAMES48 ", " CUGEMM_R4_48 ", " CUGEMM_R4_52 "}"
#define CUGEMM_WGMMA_ACC56_OPERANDS(d) CUGEMM_FS48(d), CUGEMM_F4(d, 48), CUGEMM_F4(d, 52)
#define CUGEMM_WGMMA_ACC64 "{" CUGEMM_NAMES64 "}"
#define CUGEMM_WGMMA_ACC64_OPERANDS(d) CUGEMM_FS64(d)
#define CUGEMM_WGMMA_ACC72 "{" CUGEMM_NAMES64 ", " CUGEMM_R4_64 ", " CUGEMM_R4_68 "}"
#define CUGEMM_WGMMA_ACC72_OPERANDS(d) CUGEMM_FS64(d), CUGEMM_F4(d, 64), CUGEMM_F4(d, 68)
#define CUGEMM_WGMMA_ACC80 "{" CUGEMM_NAMES80 "}"
#define CUGEMM_WGMMA_ACC80_OPERANDS(d) CUGEMM_FS80(d)
#define CUGEMM_WGMMA_ACC96 "{" CUGEMM_NAMES96 "}"
#define CUGEMM_WGMMA_ACC96_OPERANDS(d) CUGEMM_FS96(d)
#define CUGEMM_WGMMA_ACC104 "{" CUGEMM_NAMES96 ", " CUGEMM_R4_96 ", " CUGEMM_R4_100 "}"
#define CUGEMM_WGMMA_ACC104_OPERANDS(d) CUGEMM_FS96(d), CUGEMM_F4(d, 96), CUGEMM_F4(d, 100)
#define CUGEMM_WGMMA_ACC112 "{" CUGEMM_NAMES112 "}"
#define CUGEMM_WGMMA_ACC112_OPERANDS(d) CUGEMM_FS112(d)
#define CUGEMM_WGMMA_ACC128 "{" CUGEMM_NAMES128 "}"
#define CUGEMM_WGMMA_ACC128_OPERANDS(d) CUGEMM_FS128(d)
#define CUGEMM_STR_(x) #x
#define CUGEMM_STR(x) CUGEMM_STR_(x)

// d (+)= A * B, wgmma m64nNk8 .f32.tf32.tf32: A (64 x 8) from registers a (TF32 bit patterns), B
// (8 x N) from shared memory (descriptor desc_b, K-major). scale_d = 1 accumulates (d += A * B),
// 0 overwrites d (d = A * B: a new tile's first k step needs no zeroing pass over the accumulators);
// a run-time value (the predicate is formed in the asm block). NACC = N / 2 floats; the remaining
// macro arguments are the asm operand numbers after the accumulators.
#define CUGEMM_WGMMA_TF32_RS(N, NACC, A0, A1, A2, A3, DESC, SCALE)                                \
  __device__ __forceinline__ void wgmma_tf32_rs(float (&d)[NACC], const unsigned (&a)[4],         \
                                                unsigned long long desc_b, int scale_d) {         \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE ", 0;\n"                               \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k8.f32.tf32.tf32 " CUGEMM_WGMMA_ACC##NACC \
                 ", {" A0 ", " A1 ", " A2 ", " A3 "}, " DESC ", p, 1, 1;\n}\n"                    \
                 : CUGEMM_WGMMA_ACC##NACC##_OPERANDS(d)                                           \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));       \
  }
CUGEMM_WGMMA_TF32_RS(128, 64, "%64", "%65", "%66", "%67", "%68", "%69")
CUGEMM_WGMMA_TF32_RS(256, 128, "%128", "%129", "%130", "%131", "%132", "%133")

// d (+)= A * B, wgmma m64nNk8 .f32.tf32.tf32 with A (64 x 8) and B (8 x N) both from shared memory,
// both K-major (TF32 operands are read K-major only); scale_d as above.
#define CUGEMM_WGMMA_TF32_SS(N, NACC, DA, DB, SCALE)                                               \
  __device__ __forceinline__ void wgmma_tf32_ss(float (&d)[NACC], unsigned long long desc_a,      \
                                                unsigned long long desc_b, int scale_d) {         \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE ", 0;\n"                               \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k8.f32.tf32.tf32 " CUGEMM_WGMMA_ACC##NACC \
                 ", " DA ", " DB ", p, 1, 1;\n}\n"                                                \
                 : CUGEMM_WGMMA_ACC##NACC##_OPERANDS(d)                                           \
                 : "l"(desc_a), "l"(desc_b), "r"(scale_d));                                       \
  }
CUGEMM_WGMMA_TF32_SS(128, 64, "%64", "%65", "%66")
CUGEMM_WGMMA_TF32_SS(256, 128, "%128", "%129", "%130")

// 16-bit element types: T = half or __nv_bfloat16 (IsBf16: lib/mma.cuh).

// d (+)= A * B, wgmma m64nNk16 .f32.{f16,bf16}: A (64 x 16) and B (16 x N) both from shared memory
// (descriptors desc_a, desc_b); scale_d = 0 overwrites d (d = A * B), 1 accumulates. TRANS_A /
// TRANS_B = 1 say the operand is MN-major (m or n contiguous) instead of K-major. NACC = N / 2.
#define CUGEMM_WGMMA_SS16(N, NACC, DA, DB, SCALE, TA, TB)                                           \
  template <class T, int TRANS_A, int TRANS_B>                                                     \
  __device__ __forceinline__ void wgmma_ss(float (&d)[NACC], unsigned long long desc_a,            \
                                           unsigned long long desc_b, int scale_d) {               \
    if constexpr (IsBf16<T>::value) {                                                              \
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE ", 0;\n"                              \
                   "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.bf16.bf16 "                     \
                   CUGEMM_WGMMA_ACC##NACC ", " DA ", " DB ", p, 1, 1, " TA ", " TB ";\n}\n"        \
                   : CUGEMM_WGMMA_ACC##NACC##_OPERANDS(d)                                          \
                   : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TRANS_A), "n"(TRANS_B));          \
    } else {                                                                                       \
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE ", 0;\n"                              \
                   "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.f16.f16 "                       \
                   CUGEMM_WGMMA_ACC##NACC ", " DA ", " DB ", p, 1, 1, " TA ", " TB ";\n}\n"        \
                   : CUGEMM_WGMMA_ACC##NACC##_OPERANDS(d)                                          \
                   : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TRANS_A), "n"(TRANS_B));          \
    }                                                                                              \
  }
CUGEMM_WGMMA_SS16(32, 16, "%16", "%17", "%18", "%19", "%20")
// widths between, for tiles fitted to the SMs (08_small_m.cu's B_COL tiles: 64 x 48 tiles of N = 2560
// at M <= 128)
CUGEMM_WGMMA_SS16(40, 20, "%20", "%21", "%22", "%23", "%24")
CUGEMM_WGMMA_SS16(48, 24, "%24", "%25", "%26", "%27", "%28")
CUGEMM_WGMMA_SS16(80, 40, "%40", "%41", "%42", "%43", "%44")
// (04_persistent.cu's fitted widths for 128-row tiles: 48 and 80 above, and these)
CUGEMM_WGMMA_SS16(112, 56, "%56", "%57", "%58", "%59", "%60")
CUGEMM_WGMMA_SS16(144, 72, "%72", "%73", "%74", "%75", "%76")
CUGEMM_WGMMA_SS16(160, 80, "%80", "%81", "%82", "%83", "%84")
CUGEMM_WGMMA_SS16(208, 104, "%104", "%105", "%106", "%107", "%108")
CUGEMM_WGMMA_SS16(224, 112, "%112", "%113", "%114", "%115", "%116")
CUGEMM_WGMMA_SS16(64, 32, "%32", "%33", "%34", "%35", "%36")
CUGEMM_WGMMA_SS16(96, 48, "%48", "%49", "%50", "%51", "%52")
CUGEMM_WGMMA_SS16(128, 64, "%64", "%65", "%66", "%67", "%68")
CUGEMM_WGMMA_SS16(192, 96, "%96", "%97", "%98", "%99", "%100")
CUGEMM_WGMMA_SS16(256, 128, "%128", "%129", "%130", "%131", "%132")

// 8-bit float element types (FP8, sm_89+ tensor cores): the kernels never compute with them, they
// only pass their bytes to wgmma and TMA, so a 1-byte tag type each is all they need (the C++ name
// a variant is instantiated with: cugemm/dtypes.py).
struct fp8_e4m3 {
  unsigned char bits;
};
struct fp8_e5m2 {
  unsigned char bits;
};
template <class T> struct IsFp8 { static constexpr bool value = false; };
template <> struct IsFp8<fp8_e4m3> { static constexpr bool value = true; };
template <> struct IsFp8<fp8_e5m2> { static constexpr bool value = true; };
template <class T> struct IsE5m2 { static constexpr bool value = false; };
template <> struct IsE5m2<fp8_e5m2> { static constexpr bool value = true; };

// d (+)= A * B, wgmma m64nNk32 .f32 with 8-bit A (64 x 32) and B (32 x N), TA / TB = fp8_e4m3 or
// fp8_e5m2 each (the four combinations the instruction takes), both from shared memory and both
// K-major (8-bit operands have no transposed form): a K-major 128-byte row holds 128 k values, so
// the k32 step kk starts 32 kk bytes into it, as the 16-bit k16 step does. scale_d as above.
#define CUGEMM_WGMMA_FP8_ASM(N, NACC, TYPES, DA, DB, SCALE)                                        \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE ", 0;\n"                                  \
               "wgmma.mma_async.sync.aligned.m64n" #N "k32.f32." TYPES " " CUGEMM_WGMMA_ACC##NACC   \
               ", " DA ", " DB ", p, 1, 1;\n}\n"                                                   \
               : CUGEMM_WGMMA_ACC##NACC##_OPERANDS(d)                                              \
               : "l"(desc_a), "l"(desc_b), "r"(scale_d))
#define CUGEMM_WGMMA_SS8(N, NACC, DA, DB, SCALE)                                                   \
  template <class TA, class TB>                                                                    \
  __device__ __forceinline__ void wgmma_fp8_ss(float (&d)[NACC], unsigned long long desc_a,        \
                                               unsigned long long desc_b, int scale_d) {           \
    static_assert(IsFp8<TA>::value && IsFp8<TB>::value, "8-bit operands: fp8_e4m3 or fp8_e5m2");  \
    if constexpr (IsE5m2<TA>::value && IsE5m2<TB>::value) {                                        \
      CUGEMM_WGMMA_FP8_ASM(N, NACC, "e5m2.e5m2", DA, DB, SCALE);                                   \
    } else if constexpr (IsE5m2<TA>::value) {                                                      \
      CUGEMM_WGMMA_FP8_ASM(N, NACC, "e5m2.e4m3", DA, DB, SCALE);                                   \
    } else if constexpr (IsE5m2<TB>::value) {                                                      \
      CUGEMM_WGMMA_FP8_ASM(N, NACC, "e4m3.e5m2", DA, DB, SCALE);                                   \
    } else {                                                                                       \
      CUGEMM_WGMMA_FP8_ASM(N, NACC, "e4m3.e4m3", DA, DB, SCALE);                                   \
    }                                                                                              \
  }
CUGEMM_WGMMA_SS8(64, 32, "%32", "%33", "%34")
CUGEMM_WGMMA_SS8(96, 48, "%48", "%49", "%50")
CUGEMM_WGMMA_SS8(112, 56, "%56", "%57", "%58")
CUGEMM_WGMMA_SS8(128, 64, "%64", "%65", "%66")
CUGEMM_WGMMA_SS8(192, 96, "%96", "%97", "%98")
CUGEMM_WGMMA_SS8(256, 128, "%128", "%129", "%130")

}  // namespace cugemm_wgmma
