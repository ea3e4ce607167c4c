// Boxes: one Range per axis, describing a strided sub-block of an N-d array. Used both in global
// coordinates (a chunk, an intersection) and in a chunk's local coordinates (where in its dense
// buffer an intersection sits).
#ifndef DISTARRAY_COMMON_BOX_H_
#define DISTARRAY_COMMON_BOX_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "common/range.h"
#include "common/strided_box.h"

namespace distarray {

using Shape = std::vector<int64_t>;
using Box = std::vector<Range>;

int64_t NumElements(const Shape& shape);
int64_t NumElements(const Box& box);
// The shape of the dense array that holds the box's elements.
Shape BoxShape(const Box& box);
// The whole of an array of this shape.
Box FullBox(const Shape& shape);

std::optional<Box> IntersectBoxes(const Box& a, const Box& b);
bool BoxContains(const Box& outer, const Box& inner);

// `global` (a subset of `chunk`, both in global coordinates) in the chunk's local coordinates,
// i.e. where its elements sit in the chunk's dense buffer.
Box ToLocal(const Box& chunk, const Box& global);

// When the box's elements are one contiguous run of a dense array of `shape`, the element offset
// of the run's first element; otherwise nullopt.
std::optional<int64_t> ContiguousOffset(const Shape& shape, const Box& box);

// C-order strides (in elements) of a dense array.
std::vector<int64_t> DenseStrides(const Shape& shape);

// The strided-box descriptor of `box` (local coordinates) inside a dense array of `shape`.
StridedBox MakeStridedBox(const Shape& shape, const Box& box);

}  // namespace distarray

#endif  // DISTARRAY_COMMON_BOX_H_
