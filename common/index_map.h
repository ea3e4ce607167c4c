// Index maps: validation and normalization of the wire form, and the chunk type the engine uses.
#ifndef DISTARRAY_COMMON_INDEX_MAP_H_
#define DISTARRAY_COMMON_INDEX_MAP_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/box.h"
#include "common/dtype.h"
#include "common/strided_box.h"
#include "distarray/v1/distarray.pb.h"

namespace distarray {

// One chunk of a normalized index map: the elements `box` (global coordinates) on `device`.
struct ChunkSpec {
  int device = 0;
  Box box;
  friend bool operator==(const ChunkSpec&, const ChunkSpec&) = default;
};
using IndexMap = std::vector<ChunkSpec>;

// The most chunks an index map may have unless the daemon is configured otherwise.
inline constexpr int64_t kDefaultMaxChunks = 65536;
// The largest array in bytes: half of int64, so offsets derived from byte counts never wrap.
inline constexpr int64_t kMaxArrayBytes = INT64_MAX / 2;

// A normalized slice and whether the client walked it downwards (a negative step).
struct DirectedRange {
  Range range;
  bool descending = false;
};

// Normalizes a Python-style slice of an axis of size `dim` (negative bounds count from the end,
// negative steps select the same set in ascending order). Out-of-bounds bounds, a zero step and
// an empty selection are INVALID_ARGUMENT naming `field`.
absl::StatusOr<Range> NormalizeSlice(const v1::Slice& slice, int64_t dim, absl::string_view field);
// The same, keeping the direction.
absl::StatusOr<DirectedRange> NormalizeDirectedSlice(const v1::Slice& slice, int64_t dim,
                                                     absl::string_view field);

// Validates a shape (rank <= kMaxRank, every dim >= 0) and the size of an array of it in bytes
// (for a zero-size array, of its axes of nonzero length, as NumPy counts).
absl::Status ValidateShape(const Shape& shape, DType dtype, absl::string_view field);

// Validates and normalizes an index map for an array of `shape` on devices [0, num_devices).
// More than `max_chunks` chunks is INVALID_ARGUMENT. Errors are INVALID_ARGUMENT naming the
// chunk and axis, e.g.
// "index_map.chunks[2].slices[1]: stop 12 is out of bounds for axis 1 of size 10".
// A zero-size array's map normalizes to no chunks (its chunks are checked, then dropped).
absl::StatusOr<IndexMap> NormalizeIndexMap(const v1::IndexMap& index_map, const Shape& shape,
                                           int num_devices, absl::string_view field = "index_map",
                                           int64_t max_chunks = kDefaultMaxChunks);

// A region as NumPy selects it: the ascending box of its elements, and per axis whether the
// client's slice walks it downwards (a negative step), in which case the region's values are
// sent and received in descending order along that axis, as NumPy's a[::-1] would give them.
struct RegionSelection {
  Box box;
  std::vector<bool> descending;
  bool any_descending() const {
    for (bool d : descending)
      if (d) return true;
    return false;
  }
};
// Normalizes a region (unset: the whole array). Bounds outside the array are OUT_OF_RANGE.
absl::StatusOr<RegionSelection> NormalizeRegionSelection(const v1::Region& region,
                                                         const Shape& shape,
                                                         absl::string_view field = "region");
// The same, without the direction (its box only).
absl::StatusOr<Box> NormalizeRegion(const v1::Region& region, const Shape& shape,
                                    absl::string_view field = "region");

}  // namespace distarray

#endif  // DISTARRAY_COMMON_INDEX_MAP_H_
