#include "distarray/index_maps.h"

namespace distarray {
namespace {

v1::Slice ToSlice(const SliceSpec& spec) {
  v1::Slice s;
  if (spec.start) s.set_start(*spec.start);
  if (spec.stop) s.set_stop(*spec.stop);
  if (spec.step) s.set_step(*spec.step);
  return s;
}

// [begin, end) of block `i` of `n` near-equal blocks over `length`.
std::pair<int64_t, int64_t> Block(int64_t length, int n, int i) {
  return {length * i / n, length * (i + 1) / n};
}

}  // namespace

v1::Chunk MakeChunk(int device, const std::vector<SliceSpec>& slices) {
  v1::Chunk chunk;
  chunk.set_device(device);
  for (const SliceSpec& s : slices) *chunk.add_slices() = ToSlice(s);
  return chunk;
}

v1::IndexMap MakeIndexMap(const std::vector<v1::Chunk>& chunks) {
  v1::IndexMap map;
  for (const v1::Chunk& c : chunks) *map.add_chunks() = c;
  return map;
}

v1::Region MakeRegion(const std::vector<SliceSpec>& slices) {
  v1::Region region;
  for (const SliceSpec& s : slices) *region.add_slices() = ToSlice(s);
  return region;
}

v1::IndexMap OnDevice(int rank, int device) { return Replicated(rank, {device}); }

v1::IndexMap Replicated(int rank, const std::vector<int>& devices) {
  v1::IndexMap map;
  for (int d : devices) *map.add_chunks() = MakeChunk(d, std::vector<SliceSpec>(rank));
  return map;
}

v1::IndexMap Split(int rank, int axis, int64_t length, const std::vector<int>& devices) {
  v1::IndexMap map;
  const int n = static_cast<int>(devices.size());
  for (int i = 0; i < n; ++i) {
    auto [begin, end] = Block(length, n, i);
    if (begin == end) continue;  // more devices than elements
    std::vector<SliceSpec> slices(rank);
    slices[axis] = SliceSpec{begin, end, std::nullopt};
    *map.add_chunks() = MakeChunk(devices[i], slices);
  }
  return map;
}

v1::IndexMap BlockGrid2D(int64_t rows, int64_t cols, int grid_rows, int grid_cols,
                         const std::vector<int>& devices) {
  v1::IndexMap map;
  for (int i = 0; i < grid_rows; ++i) {
    for (int j = 0; j < grid_cols; ++j) {
      auto [r0, r1] = Block(rows, grid_rows, i);
      auto [c0, c1] = Block(cols, grid_cols, j);
      if (r0 == r1 || c0 == c1) continue;
      const int device = devices[(i * grid_cols + j) % devices.size()];
      *map.add_chunks() =
          MakeChunk(device, {SliceSpec{r0, r1, std::nullopt}, SliceSpec{c0, c1, std::nullopt}});
    }
  }
  return map;
}

}  // namespace distarray
