// cugemm/kernels/util/relayout.cu: the copies cugemm.matmul makes of the operands that the chosen
// kernel cannot read where they lie (rows that are not 16-byte aligned, a layout the kernel does
// not take, dimensions it must see zero-padded). Not a GEMM variant: a helper of cugemm/relayout.py,
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
// is balanced over the whole grid). A lane issues every load of its unit before it uses any: one
// memory round trip a unit, the latency of which the other resident warps' loads cover.
// Loads of a contiguous source row (load_row_chunks): the aligned 16-byte blocks that cover it,
// one 16-byte load each, a chunk being 16 bytes of two neighbouring blocks (the next lane's block
// comes by a warp shuffle); a row that starts in mid-block joins them with word selects and funnel
// shifts. Only bytes of the row are read: its first and last blocks (partly outside it) and the
// block after the segment are loaded an element a lane and handed over by shuffles. Other
// sources: one element load each.
// Index math: 64-bit once per row (its source and destination addresses), 32-bit within a row.
// Measurements: docs/kernels_lib.md.
//
// Preconditions (relayout.py checks them): dst 16-byte aligned, ld % V == 0, ld >= cols_p; src
// and its strides aligned to sizeof(T); units of both jobs together < 2^31, (chunks + 32 *
// RELAYOUT_CHUNKS) * V < 2^31.
// Launch: block (RELAYOUT_THREADS), any grid; relayout.py launches one wave: RELAYOUT_BLOCKS_PER_SM
// blocks an SM, or fewer when there are fewer units than warps.
#include "../lib/core.cuh"

constexpr int RELAYOUT_THREADS = 256;       // threads per block
constexpr int RELAYOUT_CHUNKS = 4;          // 16-byte chunks a lane copies per unit
constexpr int RELAYOUT_BLOCKS_PER_SM = 5;   // resident blocks an SM must hold (48 registers a thread)

// One copy. relayout.py's JOB mirrors this layout (tests/test_relayout.py compares them).
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

// The V elements of row `row` from column c0 (>= 0), one load each (stride cs), zeros from column
// `cols` on.
template <class T>
CUGEMM_DEVICE uint4 load_elements(const T* row, int c0, long long cs, int cols) {
  constexpr int V = 16 / sizeof(T);
  union {
    uint4 chunk;
    T v[V];
  } u;
  const T* p = row + c0 * cs;
  const int n = cols - c0;  // the chunk's elements inside the row
#pragma unroll
  for (int i = 0; i < V; ++i, p += cs) u.v[i] = i < n ? *p : T(0);
  return u.chunk;
}

// Bytes [o, o + 16) of the 32 bytes lo, hi (o < 16, a multiple of sizeof(T)): the chunk that
// starts o bytes into block lo. Whole words first (8, then 4 bytes), then 2 bytes by funnel shifts.
CUGEMM_DEVICE uint4 join_blocks(uint4 lo, uint4 hi, unsigned o) {
  if (o & 8) lo = make_uint4(lo.z, lo.w, hi.x, hi.y), hi.x = hi.z, hi.y = hi.w;
  if (o & 4) lo = make_uint4(lo.y, lo.z, lo.w, hi.x), hi.x = hi.y;
  const unsigned s = (o & 3) * 8;
  return make_uint4(__funnelshift_r(lo.x, lo.y, s), __funnelshift_r(lo.y, lo.z, s),
                    __funnelshift_r(lo.z, lo.w, s), __funnelshift_r(lo.w, hi.x, s));
}

// The 16-byte block b that lanes b V .. b V + V - 1 hold an element each (e: the element in the
// low bits; with 16-bit elements the even lanes hold pairs, e | next lane's e << 16), in every lane.
template <int V>
CUGEMM_DEVICE uint4 gather_block(unsigned e, int b) {
  constexpr int S = V / 4;  // lanes from one word to the next
  return make_uint4(__shfl_sync(~0u, e, b * V), __shfl_sync(~0u, e, b * V + S),
                    __shfl_sync(~0u, e, b * V + 2 * S), __shfl_sync(~0u, e, b * V + 3 * S));
}

// Segment `seg` of a contiguous source row, all 32 lanes (along): the lane's chunks k0 + 32 i
// (k0 = 32 U seg + lane). The row starts o bytes past a 16-byte boundary: chunk k is bytes
// [o, o + 16) of the aligned blocks k and k + 1 (block j holds the V elements from column
// j V - o / sizeof(T)). The lane loads block k, one 16-byte load when it lies in the row, and gets
// block k + 1 from lane + 1 by shuffles (lane 31 from lane 0's next block). Three blocks are
// loaded an element a lane instead, zeros outside the row: block 0 (lanes 0..V-1), the row's last
// block (V..2V-1), both partly outside the row when they do not start and end it on a 16-byte
// boundary, and block "after" = 32 U (seg + 1), which lane 31's last chunk needs (2V..3V-1).
// Shuffles hand them over: block 0 to lane 0, the last block to the lane that holds it, block
// after to lane 31. So no byte outside the row is read, and a lane has all its loads (U blocks,
// one element) in flight before it waits for one.
template <class T, int U>
CUGEMM_DEVICE void load_row_chunks(const T* row, int seg, int cols, unsigned lane, uint4 (&v)[U]) {
  constexpr int V = 16 / sizeof(T);
  const unsigned o = reinterpret_cast<size_t>(row) & 15;
  const int skew = o / sizeof(T);  // the column block 0 starts at is -skew
  const int j0 = seg * 32 * U, last = (cols + skew - 1) / V, after = j0 + 32 * U;
  uint4 lo[U];
#pragma unroll
  for (int i = 0; i < U; ++i) {
    const int c = (j0 + lane + 32 * i) * V - skew;  // where block k0 + 32 i starts
    const bool inside = c >= 0 && c + V <= cols;
    lo[i] = inside ? *reinterpret_cast<const uint4*>(row + c) : make_uint4(0u, 0u, 0u, 0u);
  }
  const int b = lane / V, c = (b == 0 ? 0 : b == 1 ? last : after) * V + lane % V - skew;
  unsigned e = b < 3 && unsigned(c) < unsigned(cols) ? row[c] : 0u;
  // Every load is issued; now the three blocks, word w of block b from lane b V + w V / 4.
  if (sizeof(T) == 2) e |= __shfl_down_sync(~0u, e, 1) << 16;
  const uint4 edge = gather_block<V>(e, lane == 31 ? 2 : 0);  // lane 31: block after; others: 0
  const uint4 tail = gather_block<V>(e, 1);
  if (seg == 0 && lane == 0) lo[0] = edge;  // (the same bytes when block 0 lies in the row)
#pragma unroll
  for (int i = 0; i < U; ++i)
    if (j0 + lane + 32 * i == last) lo[i] = tail;
  const unsigned next = (lane + 1) % 32;
#pragma unroll
  for (int i = 0; i < U; ++i) {
    const uint4 give = lane == 0 && i + 1 < U ? lo[i + 1] : lo[i];  // block k + 1 of lane - 1
    uint4 hi = make_uint4(__shfl_sync(~0u, give.x, next), __shfl_sync(~0u, give.y, next),
                          __shfl_sync(~0u, give.z, next), __shfl_sync(~0u, give.w, next));
    if (lane == 31 && i == U - 1) hi = edge;
    v[i] = join_blocks(lo[i], hi, o);
  }
}

// One unit of one job: this lane's RELAYOUT_CHUNKS chunks (see the header for the two shapes).
// A chunk past the row's end (k >= chunks) is not stored (along, its block may still hold the
// row's last elements, which the previous lane's chunk needs).
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
  } else if (job.src_cs == 1 && !job.across) {  // a contiguous row; r is the warp's: all lanes come
    load_row_chunks(srow, int(seg), job.cols, lane, v);
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
  grid_launch_dependents();  // a GEMM launched with PDL may take each SM as its blocks here leave
  const unsigned lane = threadIdx.x % 32, stride = gridDim.x * WARPS;
  unsigned u = blockIdx.x * WARPS + threadIdx.x / 32;
  for (; u < jobs.a.units; u += stride) relayout_unit(jobs.a, src_a, dst_a, u, lane);
  for (u -= jobs.a.units; u < jobs.b.units; u += stride) relayout_unit(jobs.b, src_b, dst_b, u, lane);
}
