// cugemm/kernels/lib/raster.cuh: grid rasterisation, the order in which blocks (or a persistent
// block's successive tiles) visit the tiles of C.
//
// Blocks start roughly in their linear launch order. In plain row-major order the blocks resident
// at one time cover a few rows of tiles across the whole width of C: they share A's row panels
// but read all of B, which then no longer fits in L2. Grouping fixes that: the tile grid is split
// into bands of `group` tile rows and each band is walked column by column, `group` tiles down
// before the next column, so the resident blocks share `group` row panels of A and a narrow band
// of B's column panels, and most of their operand reads hit L2. Called with rows and columns
// swapped, the same walk goes through bands of `group` tile columns, row by row (the TF32
// notes' "block swizzle" in bands of swizzle_stride columns).
#pragma once
#include "core.cuh"

struct TileCoord {
  int row, col;
};

// The tile visited `id`-th (0 <= id < rows * cols) by the grouped walk above; the last band may
// be shorter than `group`. group <= 1: row-major order.
CUGEMM_DEVICE TileCoord raster_grouped(int id, int rows, int cols, int group) {
  if (group <= 1) return {id / cols, id % cols};
  const int per_band = group * cols;
  const int first = id / per_band * group;
  const int height = min(rows - first, group);
  const int in_band = id % per_band;
  return {first + in_band % height, in_band / height};
}

// This block's tile of a (gridDim.y x gridDim.x)-tile launch, walked in bands of G tile rows; for
// G <= 1 simply (blockIdx.y, blockIdx.x).
template <int G>
CUGEMM_DEVICE TileCoord block_tile_grouped() {
  if constexpr (G <= 1) {
    return {static_cast<int>(blockIdx.y), static_cast<int>(blockIdx.x)};
  } else {
    return raster_grouped(blockIdx.y * gridDim.x + blockIdx.x, gridDim.y, gridDim.x, G);
  }
}

// The column-band walk (bands of tile columns, each walked row by row: raster_grouped over tile
// columns, the TF32 notes' block swizzle) for a launch whose grid does the dividing: grid (band,
// tile rows, number of bands), which CUDA starts x fastest, then y, then z, i.e. in the walk's
// order. Block (x, y, z) gets tile row y, column z * band + x; a block whose column lies past the
// last one (the last band may be narrower) must return. This costs no run-time division (why that
// matters: docs/kernels_lib.md).
CUGEMM_DEVICE TileCoord block_tile_column_bands() {
  return {static_cast<int>(blockIdx.y), static_cast<int>(blockIdx.z * gridDim.x + blockIdx.x)};
}

// A persistent grid's walk over C's tiles, CLUSTER tiles at a time: the blocks of one cluster take
// one cluster tile together, stacked along M (ALONG_M: they share B's columns) or along N (they
// share A's rows). Cluster tiles go in the grouped order above (bands of `group` rows of cluster
// tiles); the blocks of cluster b / CLUSTER take cluster tiles b / CLUSTER, + stride, + 2 stride, ...
// (stride: the clusters of the grid), each the tile of its rank in the cluster (tile()).
//   for (int t = walk.first(); t < walk.count; t += walk.stride) {
//     const TileCoord ct = walk.cluster_tile(t, GROUP); ...
template <int CLUSTER, bool ALONG_M>
struct ClusterTileWalk {
  int rows, cols;     // the grid of cluster tiles
  int count, stride;  // cluster tiles in all; clusters in the grid
  CUGEMM_DEVICE ClusterTileWalk(int tiles_m, int tiles_n)
      : rows(ALONG_M ? (tiles_m + CLUSTER - 1) / CLUSTER : tiles_m),
        cols(ALONG_M ? tiles_n : (tiles_n + CLUSTER - 1) / CLUSTER),
        count(rows * cols),
        stride(gridDim.x / CLUSTER) {}
  CUGEMM_DEVICE int first() const { return blockIdx.x / CLUSTER; }
  CUGEMM_DEVICE TileCoord cluster_tile(int t, int group) const { return raster_grouped(t, rows, cols, group); }

  // For a grid whose last column of cluster tiles is cheaper than the others (a narrow right-edge
  // tile whose K loop issues narrower wgmmas), two changes that fill the last, partial round of a
  // persistent grid with the cheap tiles instead of leaving it to whole ones:
  //  - edge last: cluster tile t < count - rows is tile t of the grouped walk over the other
  //    columns; the last column's tiles come after all of them, row by row (cluster_tile_edge_last);
  //  - serpentine rounds: this cluster's k-th cluster tile is round k's entry first() in even
  //    rounds and stride - 1 - first() in odd ones (nth). The same tiles share a round (and L2) as
  //    in the plain walk; but the clusters that got no whole tile in the last full round are the
  //    ones that get the cheap tiles of the round after it (an example: docs/kernels_lib.md).
  // A cluster's tiles still increase with k, so a loop may stop at the first nth(k) >= count.
  //   for (int k = 0, t; (t = walk.nth(k, serp)) < walk.count; ++k) { ... cluster_tile_edge_last(t, G) ...
  CUGEMM_DEVICE int nth(int k, bool serpentine) const {
    return k * stride + (serpentine && (k & 1) ? stride - 1 - first() : first());
  }
  CUGEMM_DEVICE TileCoord cluster_tile_edge_last(int t, int group) const {
    const int inner = count - rows;  // cluster tiles outside the last column
    if (t >= inner) return {t - inner, cols - 1};
    return raster_grouped(t, rows, cols - 1, group);
  }
  // the tile (row, column in tiles) that block `rank` of the cluster takes in cluster tile ct
  CUGEMM_DEVICE TileCoord tile(TileCoord ct, int rank) const {
    return ALONG_M ? TileCoord{ct.row * CLUSTER + rank, ct.col} : TileCoord{ct.row, ct.col * CLUSTER + rank};
  }
};
