// cugemm/kernels/sgemm_tf32/wgmma.cuh: Hopper warpgroup MMA (wgmma, sm_90a) building blocks for
// the TF32 rung 03_wgmma_*.cu: shared-memory matrix descriptors for the 128-byte swizzle, the
// fence / commit / wait instructions, and wgmma.mma_async m64nNk8 .tf32 with A from registers.
//
// PTX ISA references: "Asynchronous Warpgroup Level Matrix Multiply-Accumulate" (wgmma.mma_async,
// wgmma.fence, wgmma.commit_group, wgmma.wait_group), "Matrix Descriptor Format", "Shared Memory
// Matrix Layout" (swizzling modes), "Register Fragments" for .tf32 m64nNk8.
//
// Fragments (one warpgroup = 4 consecutive warps, warp w = 0..3 of it; g = lane / 4, t = lane % 4):
//   A (64 x 8, registers): warp w holds rows 16w .. 16w + 15 as the mma.sync m16n8k8 A fragment:
//     a0 (16w + g, t), a1 (16w + g + 8, t), a2 (16w + g, t + 4), a3 (16w + g + 8, t + 4).
//   D (64 x N, fp32 registers d[N / 2]): d[i] is (16w + g + 8 * ((i >> 1) & 1), 8 * (i >> 2) + 2t + (i & 1)).
//   B (8 x N, shared memory): "K-major" (each of the N columns stores its 8 k values contiguously,
//     32 bytes), described by a 64-bit descriptor (make_desc_sw128 below).
#pragma once

namespace cugemm_wgmma {

// Descriptor of a K-major operand tile in the 128-byte swizzle layout: rows of 128 bytes (32 fp32
// k values), 8-row atoms of 1024 bytes, within each atom the 16-byte chunk c of row r stored at
// chunk c ^ r (Swizzle<3,4,3> on byte addresses: bits 4-6 ^= bits 7-9). The atom must be
// 1024-byte aligned (base offset 0). Fields: start address >> 4 (bits 0-13), leading byte offset
// >> 4 (bits 16-29; unused for K-major swizzled layouts whose k extent fits in one row: 1 by
// convention), stride byte offset >> 4 (bits 32-45: 1024 B from one 8-row group to the next),
// layout type (bits 62-63: 1 = 128-byte swizzle). `addr` is the shared-window address of the
// first k value of the step; stepping k by 8 fp32 inside the 128-byte row adds 32 bytes (the
// hardware applies the swizzle to the address bits it forms).
__device__ __forceinline__ unsigned long long make_desc_sw128(unsigned addr) {
  return static_cast<unsigned long long>((addr & 0x3FFFF) >> 4) |
         (static_cast<unsigned long long>(1) << 16) |
         (static_cast<unsigned long long>(1024 >> 4) << 32) |
         (static_cast<unsigned long long>(1) << 62);
}

// The 128-byte-swizzle layout in float offsets: 16-byte chunk c (k 4c .. 4c + 3) of row r of a
// tile of 32-float rows, stored at chunk c ^ (r % 8) of its row (what make_desc_sw128 describes).
__device__ __forceinline__ int sw128_offset(int r, int c) { return r * 32 + ((c ^ (r & 7)) << 2); }

// The first 1024-byte-aligned float of dynamic shared memory at or after p (swizzle atoms must be
// 1024-byte aligned; the launch adds 1024 bytes of slack for this).
__device__ __forceinline__ float* align_1024(float* p) {
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(p));
  return p + (((1024u - (addr & 1023u)) & 1023u) >> 2);
}

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
// Make this thread's generic-proxy shared-memory writes (st.shared, cp.async) visible to the async
// proxy (the wgmma operand reads); each writing thread, before the barrier.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// Keep the compiler from moving ordinary code across an accumulator while a wgmma owns it.
__device__ __forceinline__ void fence_operand(float& r) { asm volatile("" : "+f"(r)::"memory"); }

// wgmma.mma_async m64nNk8 .f32.tf32.tf32, A from registers (TF32 bit patterns), B from shared
// memory; d += A * B (scale-d = 1). The overload is picked by the accumulator count (N / 2).
// d[0..63] (+)= A (64 x 8, registers a) * B (8 x 128, smem descriptor desc_b)
__device__ __forceinline__ void wgmma_tf32_rs(float (&d)[64], const unsigned (&a)[4],
                                                   unsigned long long desc_b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
      "{"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, {%64, %65, %66, %67}, %68, p, 1, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}

// d[0..127] (+)= A (64 x 8, registers a) * B (8 x 256, smem descriptor desc_b)
__device__ __forceinline__ void wgmma_tf32_rs(float (&d)[128], const unsigned (&a)[4],
                                                   unsigned long long desc_b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %133, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 "
      "{"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, {%128, %129, %130, %131}, %132, p, 1, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}

// ---- the "rs" GEMM pieces shared by 03_wgmma_m64nNk8_rs.cu and 04_wgmma_m64n256k8_ws.cu ---------
// They compute C^T = B^T A^T per warpgroup: the register operand is a 64-column slice of the
// row-major B tile (BK x LDB floats in shared memory), transposed.

// The register fragments of the BK / 8 k steps of a K-tile, rounded to TF32 (cvt.rna).
// b_lane: the B tile at row t = lane % 4, column (slice start) + 16 w + g, w the warp within the
// warpgroup, g = lane / 4: fragment (row n, col k) of the wgmma A operand is B(k, n).
template <int BK, int LDB>
__device__ __forceinline__ void load_bt_fragments(unsigned (&fa)[BK / 8][4], const float* b_lane) {
#pragma unroll
  for (int kk = 0; kk < BK / 8; ++kk) {
    fa[kk][0] = cugemm_tf32::f32_to_tf32(__float_as_uint(b_lane[kk * 8 * LDB]));
    fa[kk][1] = cugemm_tf32::f32_to_tf32(__float_as_uint(b_lane[kk * 8 * LDB + 8]));
    fa[kk][2] = cugemm_tf32::f32_to_tf32(__float_as_uint(b_lane[(kk * 8 + 4) * LDB]));
    fa[kk][3] = cugemm_tf32::f32_to_tf32(__float_as_uint(b_lane[(kk * 8 + 4) * LDB + 8]));
  }
}

// One K-tile of MMAs: the BK / 8 k steps of wgmma m64nNk8 (N = 2 x the accumulator count) with
// the fragments fa and the 128-byte-swizzled shared-memory tile at a_stage (shared-window address),
// issued as one committed group. The operand fences keep the compiler from touching the
// accumulators while the group may be pending; the caller waits (wait_group) before it rewrites fa.
template <int BK, int NACC>
__device__ __forceinline__ void mma_ktile(float (&acc)[NACC], const unsigned (&fa)[BK / 8][4],
                                          unsigned a_stage) {
#pragma unroll
  for (int i = 0; i < NACC; ++i) fence_operand(acc[i]);
  fence();
#pragma unroll
  for (int kk = 0; kk < BK / 8; ++kk) wgmma_tf32_rs(acc, fa[kk], make_desc_sw128(a_stage + kk * 32));
  commit_group();
#pragma unroll
  for (int i = 0; i < NACC; ++i) fence_operand(acc[i]);
}

// Epilogue: the accumulators hold C^T, d[i] being (n = 16 w + g + 8 ((i >> 1) & 1),
// m = 8 (i >> 2) + 2t + (i & 1)) of the warpgroup's 64 x BM slice; c_lane = &C(m0 + 2t, n0 + slice
// start + 16 w + g). 8 lanes of equal t write 32 contiguous bytes of one C row.
// Waits for the warpgroup's last wgmma group first.
template <int BM>
__device__ __forceinline__ void store_ct(float* c_lane, float (&acc)[BM / 2], int N) {
  wait_group<0>();
#pragma unroll
  for (int i = 0; i < BM / 2; ++i) fence_operand(acc[i]);
#pragma unroll
  for (int j = 0; j < BM / 8; ++j) {
    float* const q = c_lane + j * 8 * N;
    q[0] = acc[4 * j + 0];
    q[N] = acc[4 * j + 1];
    q[8] = acc[4 * j + 2];
    q[N + 8] = acc[4 * j + 3];
  }
}

}  // namespace cugemm_wgmma
