// cugemm/kernels/lib/swizzle.cuh: shared-memory XOR swizzles, instead of padding, against bank
// conflicts, and the alignment the hardware's own swizzle (TMA, wgmma) needs.
//
// Shared memory has 32 banks of 4 bytes; a warp's 16-byte accesses (ldmatrix rows, cp.async
// chunks, LDS.128) go in phases of 8 lanes, conflict-free when the 8 addresses fall in 8 different
// 16-byte columns of a 128-byte line. A tile whose rows are a multiple of 128 bytes long puts
// column c of every row in the same banks; XOR-ing the 16-byte chunk index with the row index
// (mod 8) spreads any 8 consecutive rows over all 8 columns, without the wasted bytes of padding.
#pragma once
#include "core.cuh"

// The 128-byte swizzle (CUTLASS Swizzle<3,4,3>, TMA CU_TENSOR_MAP_SWIZZLE_128B, wgmma layout type
// 1): within each 1024-byte atom of 8 rows x 128 bytes, 16-byte chunk c of row r is stored at
// chunk c ^ (r % 8). Float offset of (row r, chunk c) in a tile of 32-float rows (the TF32 wgmma A
// tiles); xor_swizzle_chunk below is the same layout in 16-byte chunks for any row length.
CUGEMM_DEVICE int sw128_offset(int r, int c) { return r * 32 + ((c ^ (r & 7)) << 2); }

// The first 1024-byte-aligned address at or after p in shared memory (swizzle atoms of the
// hardware layouts must be 1024-byte aligned; the launch adds 1024 bytes of slack for this).
template <class T>
CUGEMM_DEVICE T* align_1024(T* p) {
  static_assert(1024 % sizeof(T) == 0, "whole elements per 1024 bytes");
  const unsigned addr = smem_addr(p);
  return p + ((1024u - (addr & 1023u)) & 1023u) / static_cast<unsigned>(sizeof(T));
}

// The 128-byte-line XOR swizzle for a tile of ROW_CHUNKS 16-byte chunks per row: 1, 2 or 4 (rows
// shorter than a line: 8 / ROW_CHUNKS consecutive rows share one line) or a multiple of 8.
// Returns the chunk index (16-byte units from the tile start) where chunk c of row r is stored
// (times 16: the byte offset; times 8 or 4: the element offset of 16-bit or fp32 elements).
//   ROW_CHUNKS % 8 == 0: chunk c ^ (r % 8) within its own group of 8 (the 128-byte swizzle above
//   for rows of 8 chunks).
//   ROW_CHUNKS < 8: the row-major chunk index L = r * ROW_CHUNKS + c keeps its line L / 8 and has
//   its column L % 8 XOR-ed with the line index (mod 8).
// Either way any 8 consecutive rows starting at a multiple of 8, read at one chunk column (an
// ldmatrix / stmatrix phase), fall in 8 distinct 16-byte columns, and 8 consecutive chunks of a
// row-major fill (cp.async) do too; the XOR only permutes chunks within a 128-byte line, so a
// chunk's column bits can be XOR-ed with a compile-time step (k step, fragment pair) afterwards.
template <int ROW_CHUNKS>
CUGEMM_DEVICE int xor_swizzle_chunk(int r, int c) {
  if constexpr (ROW_CHUNKS % 8 == 0) {
    return r * ROW_CHUNKS + (c ^ (r & 7));
  } else {
    static_assert(ROW_CHUNKS == 1 || ROW_CHUNKS == 2 || ROW_CHUNKS == 4,
                  "rows of 1, 2 or 4 chunks, or a multiple of 8");
    const int l = r * ROW_CHUNKS + c;
    return l ^ ((l >> 3) & 7);
  }
}
