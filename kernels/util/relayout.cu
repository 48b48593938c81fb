// cugemm/kernels/util/relayout.cu: the copies cugemm.matmul makes of the operands that the chosen
// kernel cannot read where they lie (rows that are not 16-byte aligned, a layout the kernel does
// not take, dimensions it must see zero-padded). Not a GEMM variant: a helper of cugemm/dispatch.py,
// which makes both copies of a plan (A's and B's) in ONE launch: a table of two jobs, by value.
//
// A job copies a rows x cols source with any element strides (src_rs between rows, src_cs between
// columns) into a row-major destination with leading dimension ld, and writes zeros over the rest
// of the destination's rows_p x cols_p (rows_p >= rows, cols_p >= cols). A column-major
// destination is the same copy of the transposed source. The bits are copied, whatever they mean:
// T is unsigned short for the 16-bit types, unsigned int for float32.
//
// Work: every 16-byte chunk (V = 16 / sizeof(T) elements) of a destination row is written by one
// thread with one 16-byte store; a lane takes RELAYOUT_CHUNKS chunks, a warp a "unit":
//   along (source rows contiguous, or no contiguous direction): one destination row, lanes on 32
//     consecutive chunks, RELAYOUT_CHUNKS times (a segment of 32 * RELAYOUT_CHUNKS chunks);
//   across (source columns contiguous: a transposed view): 32 consecutive rows, one a lane, each
//     lane RELAYOUT_CHUNKS consecutive chunks of its row, so the warp's loads are coalesced.
// Warps walk the units of job a, then those of job b, with one grid stride (the work of both jobs
// is balanced over the whole grid). Each lane loads all its chunks, then stores them.
// Loads of a contiguous source row: the aligned 32-bit words that cover the chunk, 4 of them, or 5
// joined by funnel shifts when a 16-bit row starts in mid-word (the misaligned rows of an odd K or
// N); only words inside the row are read, so the first chunk of a mid-word row and the chunks
// at a row's end take element loads instead. Other sources: one element load each.
// Index math: 64-bit once per row (its source and destination addresses), 32-bit within a row.
//
// Preconditions (dispatch.py checks them): dst 16-byte aligned, ld % V == 0, ld >= cols_p; src
// and its strides aligned to sizeof(T); units of both jobs together < 2^31, chunks * V < 2^31.
// Launch: block (RELAYOUT_THREADS), any grid; dispatch.py launches one wave: RELAYOUT_BLOCKS_PER_SM
// blocks an SM, or fewer when there are fewer units than warps.
#include "../lib/core.cuh"

constexpr int RELAYOUT_THREADS = 256;       // threads per block
constexpr int RELAYOUT_CHUNKS = 4;          // 16-byte chunks a lane copies per unit
constexpr int RELAYOUT_BLOCKS_PER_SM = 4;   // resident blocks an SM must hold (64 registers a thread)

// One copy. dispatch.py's _RELAYOUT_JOB mirrors this layout (a test compares them).
struct RelayoutJob {
  long long src_rs, src_cs;  // the source's element strides: between its rows, between its columns
  long long ld;              // the destination's leading dimension, in elements
  int rows, cols;            // the source's extent
  int rows_p, chunks;        // the destination's rows, and its 16-byte chunks per row: ceil(cols_p / V)
  unsigned segs;             // units per band of rows (a band: 1 row along, 32 rows across)
  unsigned units;            // units in all (0: no job)
  int across;                // 1: lanes take rows (source columns contiguous); 0: lanes take chunks
  int reserved;
};
struct RelayoutJobs {
  RelayoutJob a, b;
};

// The aligned 32-bit words that hold the V elements of a contiguous source row at p: words
// [p, p + V) when p is word-aligned, else (a 16-bit row that starts in mid-word) the five words
// from element p - 1 to element p + V. join_words makes the 16 bytes of them.
template <class T>
CUGEMM_DEVICE void load_words(const T* p, unsigned (&w)[5]) {
  const unsigned skew = reinterpret_cast<size_t>(p) & 3;  // bytes past a word boundary: 0 or 2
  const unsigned* q = reinterpret_cast<const unsigned*>(reinterpret_cast<const char*>(p) - skew);
#pragma unroll
  for (int i = 0; i < 4; ++i) w[i] = q[i];
  w[4] = skew ? q[4] : 0u;
}
CUGEMM_DEVICE uint4 join_words(const unsigned (&w)[5], unsigned skew) {
  const unsigned s = skew * 8;
  return make_uint4(__funnelshift_r(w[0], w[1], s), __funnelshift_r(w[1], w[2], s),
                    __funnelshift_r(w[2], w[3], s), __funnelshift_r(w[3], w[4], s));
}

// The V elements of row `row` from column c0, one load each (stride cs), zeros from column `cols` on.
template <class T>
CUGEMM_DEVICE uint4 load_elements(const T* row, int c0, long long cs, int cols) {
  constexpr int V = 16 / sizeof(T);
  union {
    uint4 chunk;
    T v[V];
  } u;
#pragma unroll
  for (int i = 0; i < V; ++i) u.v[i] = c0 + i < cols ? row[(c0 + i) * cs] : T(0);
  return u.chunk;
}

// One unit of one job: this lane's RELAYOUT_CHUNKS chunks (see the header for the two shapes).
// The loads of all chunks are issued before any is used. A chunk past the row's end (k >= chunks)
// starts at a column >= cols, so its loads are all predicated off; only its store is skipped.
template <class T>
CUGEMM_DEVICE void relayout_unit(const RelayoutJob& job, const T* __restrict__ src, T* __restrict__ dst,
                                 unsigned unit, unsigned lane) {
  constexpr int V = 16 / sizeof(T), U = RELAYOUT_CHUNKS;
  const unsigned band = unit / job.segs, seg = unit - band * job.segs;
  const int r = job.across ? band * 32 + lane : band;
  const int k0 = job.across ? seg * U : seg * (32 * U) + lane;  // the lane's chunks: k0 + i * step
  const int step = job.across ? 1 : 32;
  if (r >= job.rows_p) return;
  const T* srow = src + r * job.src_rs;
  uint4 v[U];
  if (r >= job.rows) {  // a padding row
#pragma unroll
    for (int i = 0; i < U; ++i) v[i] = make_uint4(0u, 0u, 0u, 0u);
  } else if (job.src_cs == 1) {  // a contiguous row: whole chunks from words, its edges by element
    const unsigned skew = reinterpret_cast<size_t>(srow) & 3;
    unsigned w[U][5];
    bool whole[U];
#pragma unroll
    for (int i = 0; i < U; ++i) {
      const int c0 = (k0 + i * step) * V;  // the words read lie in the row: elements [c0 - 1, c0 + V]
      whole[i] = c0 + V + (skew != 0) <= job.cols && (skew == 0 || c0 > 0);
      if (whole[i]) load_words(srow + c0, w[i]);
    }
#pragma unroll
    for (int i = 0; i < U; ++i)
      v[i] = whole[i] ? join_words(w[i], skew) : load_elements(srow, (k0 + i * step) * V, 1, job.cols);
  } else {
#pragma unroll
    for (int i = 0; i < U; ++i) v[i] = load_elements(srow, (k0 + i * step) * V, job.src_cs, job.cols);
  }
  T* drow = dst + r * job.ld;
#pragma unroll
  for (int i = 0; i < U; ++i) {
    const int k = k0 + i * step;
    if (k < job.chunks) *reinterpret_cast<uint4*>(drow + k * V) = v[i];
  }
}

template <class T>
__global__ void __launch_bounds__(RELAYOUT_THREADS, RELAYOUT_BLOCKS_PER_SM)
    relayout(const RelayoutJobs jobs, const T* __restrict__ src_a, T* __restrict__ dst_a,
             const T* __restrict__ src_b, T* __restrict__ dst_b) {
  constexpr unsigned WARPS = RELAYOUT_THREADS / 32;
  const unsigned lane = threadIdx.x % 32, stride = gridDim.x * WARPS;
  unsigned u = blockIdx.x * WARPS + threadIdx.x / 32;
  for (; u < jobs.a.units; u += stride) relayout_unit(jobs.a, src_a, dst_a, u, lane);
  for (u -= jobs.a.units; u < jobs.b.units; u += stride) relayout_unit(jobs.b, src_b, dst_b, u, lane);
}
