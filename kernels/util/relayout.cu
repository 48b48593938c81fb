// cugemm/kernels/util/relayout.cu: the one copy cugemm.matmul makes of an operand that no chosen
// kernel can read where it lies (rows that are not 16-byte aligned, a layout the kernel does not
// take, dimensions it must see zero-padded). Not a GEMM variant: a helper of cugemm/dispatch.py.
//
// Copies a rows x cols matrix with any element strides (src_rs between rows, src_cs between
// columns, in elements) into a row-major destination with leading dimension ld, and writes zeros
// over the rest of the destination's rows_p x cols_p (rows_p >= rows, cols_p >= cols). A column-
// major destination is the same copy of the transposed matrix. Each thread writes V = 16 /
// sizeof(T) consecutive destination elements with one 16-byte store; its loads are scalar, and
// coalesced across the warp when src_cs is 1 (the misaligned-rows case, the common one).
// Preconditions: dst 16-byte aligned, ld % V == 0, ld >= cols_p. T: unsigned short for the 16-bit
// types (the bits are copied, whatever they mean), unsigned int for float32.
// Launch: block (128), grid (ceil(cols_p / (128 V)), min(rows_p, 65535)); blocks stride over rows.
template <class T>
__global__ void relayout(const T* __restrict__ src, long long src_rs, long long src_cs, int rows, int cols,
                         T* __restrict__ dst, long long ld, int rows_p, int cols_p) {
  constexpr int V = 16 / sizeof(T);
  const int c0 = (blockIdx.x * blockDim.x + threadIdx.x) * V;
  if (c0 >= cols_p) return;
  for (int r = blockIdx.y; r < rows_p; r += gridDim.y) {
    union {
      uint4 chunk;
      T v[V];
    } u;
#pragma unroll
    for (int i = 0; i < V; ++i) {
      const int c = c0 + i;
      u.v[i] = (r < rows && c < cols) ? src[r * src_rs + c * src_cs] : T(0);
    }
    *reinterpret_cast<uint4*>(dst + r * ld + c0) = u.chunk;
  }
}
