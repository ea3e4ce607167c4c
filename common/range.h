// One axis of a chunk: the arithmetic progression start, start+step, ... (count elements).
// CUDA-safe header.
#ifndef DISTARRAY_COMMON_RANGE_H_
#define DISTARRAY_COMMON_RANGE_H_

#include <cstdint>
#include <optional>

namespace distarray {

// A normalized slice: start >= 0, step >= 1, count >= 1. Python slices with negative steps
// select the same set of indices as some positive-step range, and a chunk is a set of elements,
// so negative steps are normalized away (a chunk's buffer holds its elements in ascending order).
struct Range {
  int64_t start = 0;
  int64_t step = 1;
  int64_t count = 0;

  int64_t last() const { return start + (count - 1) * step; }
  bool Contains(int64_t index) const {
    return index >= start && index <= last() && (index - start) % step == 0;
  }
  friend bool operator==(const Range&, const Range&) = default;
};

// The indices in both ranges, or nullopt when they share none.
std::optional<Range> Intersect(const Range& a, const Range& b);

// Whether every index of `inner` is in `outer`.
bool ContainsRange(const Range& outer, const Range& inner);

}  // namespace distarray

#endif  // DISTARRAY_COMMON_RANGE_H_
