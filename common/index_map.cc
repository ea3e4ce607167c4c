#include "common/index_map.h"
#include "absl/strings/string_view.h"

#include <limits>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace distarray {
namespace {

absl::Status OutOfBounds(absl::string_view field, absl::string_view what, int64_t value,
                         int64_t dim) {
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": ", what, " ", value, " is out of bounds for an axis of size ", dim));
}

}  // namespace

absl::StatusOr<Range> NormalizeSlice(const v1::Slice& slice, int64_t dim, absl::string_view field) {
  const int64_t step = slice.has_step() ? slice.step() : 1;
  if (step == 0) return absl::InvalidArgumentError(absl::StrCat(field, ": step must not be zero"));
  if (step > 0) {
    int64_t start = slice.has_start() ? slice.start() : 0;
    int64_t stop = slice.has_stop() ? slice.stop() : dim;
    if (start < 0) start += dim;
    if (stop < 0) stop += dim;
    if (start < 0 || start > dim) return OutOfBounds(field, "start", slice.start(), dim);
    if (stop < 0 || stop > dim) return OutOfBounds(field, "stop", slice.stop(), dim);
    if (stop <= start) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": slice ", start, ":", stop, ":", step, " selects no elements"));
    }
    return Range{start, step, (stop - start + step - 1) / step};
  }
  // Negative step: walk down from start to just above stop, then describe the same set upwards.
  int64_t start = slice.has_start() ? slice.start() : dim - 1;
  if (start < 0) start += dim;
  if (start < 0 || start >= dim) return OutOfBounds(field, "start", slice.start(), dim);
  int64_t stop = -1;  // unset stop: down to index 0 inclusive
  if (slice.has_stop()) {
    stop = slice.stop() < 0 ? slice.stop() + dim : slice.stop();
    if (stop < -1 || stop >= dim) return OutOfBounds(field, "stop", slice.stop(), dim);
  }
  if (start <= stop) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": slice ", start, ":", stop, ":", step, " selects no elements"));
  }
  const int64_t count = (start - stop + (-step) - 1) / (-step);
  return Range{start + (count - 1) * step, -step, count};
}

absl::Status ValidateShape(const Shape& shape, DType dtype, absl::string_view field) {
  if (shape.size() > static_cast<size_t>(kMaxRank)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": rank ", shape.size(), " exceeds the maximum of ", kMaxRank));
  }
  __int128 bytes = DTypeSize(dtype);
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".dims[", d, "]: must be at least 1, got ", shape[d]));
    }
    bytes *= shape[d];
    if (bytes > std::numeric_limits<int64_t>::max() / 2) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": the array is too large"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<IndexMap> NormalizeIndexMap(const v1::IndexMap& index_map, const Shape& shape,
                                           int num_devices, absl::string_view field) {
  IndexMap chunks;
  chunks.reserve(index_map.chunks_size());
  for (int c = 0; c < index_map.chunks_size(); ++c) {
    const v1::Chunk& chunk = index_map.chunks(c);
    const std::string chunk_field = absl::StrCat(field, ".chunks[", c, "]");
    if (chunk.device() < 0 || chunk.device() >= num_devices) {
      return absl::InvalidArgumentError(absl::StrCat(chunk_field, ".device: device ",
                                                     chunk.device(), " does not exist (",
                                                     num_devices, " devices)"));
    }
    if (chunk.slices_size() != static_cast<int>(shape.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat(chunk_field, ".slices: has ", chunk.slices_size(),
                       " slices for an array of rank ", shape.size()));
    }
    ChunkSpec spec{chunk.device(), {}};
    for (int d = 0; d < chunk.slices_size(); ++d) {
      ASSIGN_OR_RETURN(Range r, NormalizeSlice(chunk.slices(d), shape[d],
                                               absl::StrCat(chunk_field, ".slices[", d, "]")));
      spec.box.push_back(r);
    }
    chunks.push_back(std::move(spec));
  }
  return chunks;
}

absl::StatusOr<Box> NormalizeRegion(const v1::Region& region, const Shape& shape,
                                    absl::string_view field) {
  if (region.slices_size() == 0) return FullBox(shape);
  if (region.slices_size() != static_cast<int>(shape.size())) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".slices: has ", region.slices_size(),
                                                   " slices for an array of rank ", shape.size()));
  }
  Box box;
  for (int d = 0; d < region.slices_size(); ++d) {
    auto r = NormalizeSlice(region.slices(d), shape[d], absl::StrCat(field, ".slices[", d, "]"));
    // A region outside the array is OUT_OF_RANGE, not a malformed request.
    if (!r.ok()) {
      if (absl::StrContains(r.status().message(), "out of bounds")) {
        return absl::OutOfRangeError(r.status().message());
      }
      return r.status();
    }
    box.push_back(*r);
  }
  return box;
}

}  // namespace distarray
