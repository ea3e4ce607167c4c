#include "common/index_map.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/checked.h"
#include "common/status_macros.h"

namespace distarray {
namespace {

absl::Status OutOfBounds(absl::StatusCode code, absl::string_view field, absl::string_view what,
                         int64_t value, int64_t dim) {
  return absl::Status(code, absl::StrCat(field, ": ", what, " ", value,
                                         " is out of bounds for an axis of size ", dim));
}

// NormalizeDirectedSlice with the code of a bound outside the axis chosen by the caller: an index
// map's chunk outside its array is a malformed map (INVALID_ARGUMENT), a region outside it is
// OUT_OF_RANGE. Every other error is INVALID_ARGUMENT either way.
// With `allow_empty` (a zero-size array, where every chunk and region holds nothing), a slice
// that selects nothing, an axis of size 0 included, is a range of count 0 instead of an error.
absl::StatusOr<DirectedRange> NormalizeDirectedSliceWithCode(const v1::Slice& slice, int64_t dim,
                                                             absl::string_view field,
                                                             absl::StatusCode out_of_bounds,
                                                             bool allow_empty = false) {
  // Every subtraction below is of two values in [-1, dim], and a step's magnitude is only used
  // in a division, so nothing here can wrap whatever int64 the client sent (a step of
  // -(2^63-1) or INT64_MIN included).
  const int64_t step = slice.has_step() ? slice.step() : 1;
  if (step == 0) return absl::InvalidArgumentError(absl::StrCat(field, ": step must not be zero"));
  if (dim < 0) return absl::InvalidArgumentError(absl::StrCat(field, ": axis of size ", dim));
  if (dim == 0) {
    // Every bound of an empty axis is 0 (or unset, or -0 counted from the end).
    if (!allow_empty) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": axis of size 0 has no elements"));
    }
    if (slice.has_start() && slice.start() != 0) {
      return OutOfBounds(out_of_bounds, field, "start", slice.start(), dim);
    }
    if (slice.has_stop() && slice.stop() != 0) {
      return OutOfBounds(out_of_bounds, field, "stop", slice.stop(), dim);
    }
    return DirectedRange{Range{0, 1, 0}, /*descending=*/false};
  }
  if (step > 0) {
    int64_t start = slice.has_start() ? slice.start() : 0;
    int64_t stop = slice.has_stop() ? slice.stop() : dim;
    if (start < 0) start += dim;  // a negative plus a positive never wraps
    if (stop < 0) stop += dim;
    if (start < 0 || start > dim) {
      return OutOfBounds(out_of_bounds, field, "start", slice.start(), dim);
    }
    if (stop < 0 || stop > dim) return OutOfBounds(out_of_bounds, field, "stop", slice.stop(), dim);
    if (stop <= start) {
      if (allow_empty) return DirectedRange{Range{start, 1, 0}, /*descending=*/false};
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": slice ", start, ":", stop, ":", step, " selects no elements"));
    }
    const int64_t count = (stop - start - 1) / step + 1;
    return DirectedRange{Range{start, count == 1 ? 1 : step, count}, /*descending=*/false};
  }
  // Negative step: walk down from start to just above stop, then describe the same set upwards.
  int64_t start = slice.has_start() ? slice.start() : dim - 1;
  if (start < 0) start += dim;
  if (start < 0 || start >= dim) {
    return OutOfBounds(out_of_bounds, field, "start", slice.start(), dim);
  }
  int64_t stop = -1;  // unset stop: down to index 0 inclusive
  if (slice.has_stop()) {
    stop = slice.stop() < 0 ? slice.stop() + dim : slice.stop();
    if (stop < -1 || stop >= dim) {
      return OutOfBounds(out_of_bounds, field, "stop", slice.stop(), dim);
    }
  }
  if (start <= stop) {
    if (allow_empty) return DirectedRange{Range{start, 1, 0}, /*descending=*/false};
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": slice ", start, ":", stop, ":", step, " selects no elements"));
  }
  // |step| > start - stop - 1 >= 0 for every step whose magnitude does not fit (INT64_MIN).
  const int64_t span = start - stop - 1;
  const int64_t count = step == INT64_MIN ? 1 : span / -step + 1;
  if (count == 1) return DirectedRange{Range{start, 1, 1}, /*descending=*/true};
  return DirectedRange{Range{start + (count - 1) * step, -step, count}, /*descending=*/true};
}

}  // namespace

absl::StatusOr<Range> NormalizeSlice(const v1::Slice& slice, int64_t dim, absl::string_view field) {
  ASSIGN_OR_RETURN(DirectedRange r, NormalizeDirectedSlice(slice, dim, field));
  return r.range;
}

absl::StatusOr<DirectedRange> NormalizeDirectedSlice(const v1::Slice& slice, int64_t dim,
                                                     absl::string_view field) {
  return NormalizeDirectedSliceWithCode(slice, dim, field, absl::StatusCode::kInvalidArgument);
}

absl::Status ValidateShape(const Shape& shape, DType dtype, absl::string_view field) {
  if (shape.size() > static_cast<size_t>(kMaxRank)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": rank ", shape.size(), " exceeds the maximum of ", kMaxRank));
  }
  Shape nonzero;  // a zero-size array's other axes still bound every stride and offset
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".dims[", d, "]: must not be negative, got ", shape[d]));
    }
    if (shape[d] > 0) nonzero.push_back(shape[d]);
  }
  // Half of int64 leaves room for offsets computed from byte counts without a further check. As
  // in NumPy, the axes of length 0 are left out: (2**62, 2**62, 0) is too large, not empty, so
  // no product of a zero-size array's extents (strides, a box's size) can wrap either.
  if (!CheckedProductOf(nonzero, DTypeSize(dtype), field, kMaxArrayBytes).ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": the array is too large (more than ", kMaxArrayBytes, " bytes)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<IndexMap> NormalizeIndexMap(const v1::IndexMap& index_map, const Shape& shape,
                                           int num_devices, absl::string_view field,
                                           int64_t max_chunks) {
  if (index_map.chunks_size() > max_chunks) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".chunks: ", index_map.chunks_size(),
                                                   " chunks exceed the limit of ", max_chunks));
  }
  // A zero-size array has no elements to place: its chunks are checked (device, one slice per
  // axis, bounds) and dropped, so its normalized map has no chunks.
  const bool zero_size = NumElements(shape) == 0;
  IndexMap chunks;
  chunks.reserve(zero_size ? 0 : index_map.chunks_size());
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
      ASSIGN_OR_RETURN(DirectedRange r,
                       NormalizeDirectedSliceWithCode(
                           chunk.slices(d), shape[d], absl::StrCat(chunk_field, ".slices[", d, "]"),
                           absl::StatusCode::kInvalidArgument, /*allow_empty=*/zero_size));
      spec.box.push_back(r.range);
    }
    if (!zero_size) chunks.push_back(std::move(spec));
  }
  return chunks;
}

absl::StatusOr<RegionSelection> NormalizeRegionSelection(const v1::Region& region,
                                                         const Shape& shape,
                                                         absl::string_view field) {
  RegionSelection selection;
  if (region.slices_size() == 0) {
    selection.box = FullBox(shape);
    selection.descending.assign(shape.size(), false);
    return selection;
  }
  if (region.slices_size() != static_cast<int>(shape.size())) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".slices: has ", region.slices_size(),
                                                   " slices for an array of rank ", shape.size()));
  }
  // A region of a zero-size array selects nothing whatever its slices.
  const bool zero_size = NumElements(shape) == 0;
  for (int d = 0; d < region.slices_size(); ++d) {
    // A region outside the array is OUT_OF_RANGE, not a malformed request.
    ASSIGN_OR_RETURN(DirectedRange r,
                     NormalizeDirectedSliceWithCode(region.slices(d), shape[d],
                                                    absl::StrCat(field, ".slices[", d, "]"),
                                                    absl::StatusCode::kOutOfRange, zero_size));
    selection.box.push_back(r.range);
    selection.descending.push_back(r.descending && r.range.count > 1);
  }
  return selection;
}

absl::StatusOr<Box> NormalizeRegion(const v1::Region& region, const Shape& shape,
                                    absl::string_view field) {
  ASSIGN_OR_RETURN(RegionSelection selection, NormalizeRegionSelection(region, shape, field));
  return std::move(selection.box);
}

}  // namespace distarray
