// Helpers that build index maps, the layouts of distributed arrays.
#ifndef DISTARRAY_CLIENT_INDEX_MAPS_H_
#define DISTARRAY_CLIENT_INDEX_MAPS_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "distarray/v1/distarray.pb.h"

namespace distarray {

// A Python-style slice: Slice{} is `:`, Slice{2, 5} is `2:5`, Slice{std::nullopt, std::nullopt, -1}
// is `::-1`.
struct SliceSpec {
  std::optional<int64_t> start;
  std::optional<int64_t> stop;
  std::optional<int64_t> step;
};

v1::Chunk MakeChunk(int device, const std::vector<SliceSpec>& slices);
v1::IndexMap MakeIndexMap(const std::vector<v1::Chunk>& chunks);
v1::Region MakeRegion(const std::vector<SliceSpec>& slices);

// The whole array on one device.
v1::IndexMap OnDevice(int rank, int device);
// Every device holds the whole array (a REPLICA layout).
v1::IndexMap Replicated(int rank, const std::vector<int>& devices);
// Axis `axis` of length `length` split into near-equal contiguous blocks, one per device in
// order; the other axes whole.
v1::IndexMap Split(int rank, int axis, int64_t length, const std::vector<int>& devices);
// A rows x cols array tiled by a grid_rows x grid_cols grid of blocks; block (i, j) goes to
// devices[(i * grid_cols + j) % devices.size()].
v1::IndexMap BlockGrid2D(int64_t rows, int64_t cols, int grid_rows, int grid_cols,
                         const std::vector<int>& devices);

}  // namespace distarray

#endif  // DISTARRAY_CLIENT_INDEX_MAPS_H_
