// cugemm/kernels/sgemm_tf32/tf32.cuh: the TF32 WMMA fragments of the sgemm_tf32 family
// (01_wmma_*.cu): fragment types, rounding a fragment to TF32, and fragment loads with the .shared
// state space. (The mma.sync, ldmatrix and cp.async pieces the family uses are in kernels/lib/.)
#pragma once
#include <mma.h>

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

}  // namespace cugemm_tf32
