// cugemm/kernels/sgemm_tf32/tf32.cuh: TF32 tensor-core helpers for the sgemm_tf32 family: wmma
// fragments (01_wmma_*.cu) and the mma.sync m16n8k8 building blocks (02_mma_*.cu).
//
// The kernel source includes <mma.h> before this header (the JIT pastes this file in place of its
// #include line, so the CUDA header must come first, from the kernel file).
#pragma once

namespace cugemm_tf32 {

using FragA = nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 8, nvcuda::wmma::precision::tf32,
                                     nvcuda::wmma::row_major>;
using FragB = nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 8, nvcuda::wmma::precision::tf32,
                                     nvcuda::wmma::row_major>;
using FragC = nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 8, float>;

// Round every element of a fragment loaded from float32 data to TF32 (round to nearest, ties away
// from zero: cvt.rna.tf32.f32), as the TF32 wmma.mma expects.
template <class Frag>
__device__ __forceinline__ void round_to_tf32(Frag& f) {
#pragma unroll
  for (int e = 0; e < f.num_elements; ++e) f.x[e] = nvcuda::wmma::__float_to_tf32(f.x[e]);
}

// load_matrix_sync from shared memory, with the .shared state space spelled out.
//
// wmma::load_matrix_sync takes a generic pointer, and NVRTC/NVVM emit the generic form of
// wmma.load even for a __shared__ operand; ptxas then lowers each fragment element to a 64-bit
// address computation (IMAD.WIDE) plus a generic load (LD). These emit the same PTX instruction,
// wmma.load.{a,b}.sync.aligned.row.m16n16k8.shared.tf32, with a 32-bit shared address: one LEA
// plus one LDS per element. The fragment registers come back in the PTX operand order, which is
// the order load_matrix_sync stores them in x[] (its builtin returns exactly these operands).
// p must point into shared memory, 32-byte aligned; ldm (elements) a multiple of 4. (volatile and
// the memory clobber keep NVVM from moving the load across the barriers and cp.async waits.)
__device__ __forceinline__ void load_matrix_sync_shared(FragA& f, const float* p, unsigned ldm) {
  unsigned r0, r1, r2, r3;
  asm volatile("wmma.load.a.sync.aligned.row.m16n16k8.shared.tf32 {%0, %1, %2, %3}, [%4], %5;\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(static_cast<unsigned>(__cvta_generic_to_shared(p))), "r"(ldm)
               : "memory");
  f.x[0] = __uint_as_float(r0);
  f.x[1] = __uint_as_float(r1);
  f.x[2] = __uint_as_float(r2);
  f.x[3] = __uint_as_float(r3);
}
__device__ __forceinline__ void load_matrix_sync_shared(FragB& f, const float* p, unsigned ldm) {
  unsigned r0, r1, r2, r3;
  asm volatile("wmma.load.b.sync.aligned.row.m16n16k8.shared.tf32 {%0, %1, %2, %3}, [%4], %5;\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(static_cast<unsigned>(__cvta_generic_to_shared(p))), "r"(ldm)
               : "memory");
  f.x[0] = __uint_as_float(r0);
  f.x[1] = __uint_as_float(r1);
  f.x[2] = __uint_as_float(r2);
  f.x[3] = __uint_as_float(r3);
}

static_assert(sizeof(FragA::x) == 4 * sizeof(float) && sizeof(FragB::x) == 4 * sizeof(float),
              "tf32 m16n16k8 a/b fragments hold 4 elements per thread");

// ---- mma.sync m16n8k8 TF32 (PTX ISA "Matrix fragments for mma.m16n8k8", .tf32) -----------------
// g = lane / 4, t = lane % 4. A (16 x 8, row): a0 (g, t), a1 (g + 8, t), a2 (g, t + 4),
// a3 (g + 8, t + 4). B (8 x 8, k x n): b0 (t, g), b1 (t + 4, g). C/D (16 x 8): c0 (g, 2t),
// c1 (g, 2t + 1), c2 (g + 8, 2t), c3 (g + 8, 2t + 1).

// float32 bits -> TF32 bits, round to nearest, ties away from zero (as wmma::__float_to_tf32)
__device__ __forceinline__ unsigned f32_to_tf32(unsigned x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(__uint_as_float(x)));
  return r;
}

// the four floats of a 16-byte chunk, each rounded as f32_to_tf32
__device__ __forceinline__ float4 round_f32x4(float4 v) {
  v.x = __uint_as_float(f32_to_tf32(__float_as_uint(v.x)));
  v.y = __uint_as_float(f32_to_tf32(__float_as_uint(v.y)));
  v.z = __uint_as_float(f32_to_tf32(__float_as_uint(v.z)));
  v.w = __uint_as_float(f32_to_tf32(__float_as_uint(v.w)));
  return v;
}

// ldmatrix .x4: lanes 8q .. 8q + 7 give the row addresses of 8 x 16-byte matrix q, and r[q] gets
// the 32 bits at (row lane / 4, word lane % 4) of matrix q. For a 16 x 8 fp32 A tile with
// matrices (rows 0-7, k 0-3), (rows 8-15, k 0-3), (rows 0-7, k 4-7), (rows 8-15, k 4-7) that is
// exactly a0..a3 above. p: this lane's row address in shared memory, 16-byte aligned.
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const float* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(static_cast<unsigned>(__cvta_generic_to_shared(p)))
               : "memory");
}

// d = a * b + d, 16 x 8 x 8, TF32 inputs, fp32 accumulators
__device__ __forceinline__ void mma_m16n8k8_tf32(float (&d)[4], const unsigned (&a)[4],
                                                 const unsigned (&b)[2]) {
  asm(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// ---- the cp.async ring over K-tiles, shared by 01_wmma and 02_mma ------------------------------
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

}  // namespace cugemm_tf32
