// Runs of consecutive elements in C order, as boxes: what reshape needs, since a reshape keeps
// every element's C-order (flat) position and only relabels it under a new shape. Pure functions.
#ifndef DISTARRAY_SERVER_OPS_FLAT_RUNS_H_
#define DISTARRAY_SERVER_OPS_FLAT_RUNS_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "common/box.h"

namespace distarray {

// The fewest boxes whose elements, box after box and each in C order, are the flat positions
// [start, start + count) of an array of `shape`: at most 2 * rank - 1 of them (a partial row, full
// rows, a partial row, recursively). Empty for count 0.
std::vector<Box> FlatRunBoxes(const Shape& shape, int64_t start, int64_t count);

// The box whose elements are exactly the flat positions [start, start + count) of `shape`, in
// C order, or nullopt when they are not one box.
std::optional<Box> FlatRunAsBox(const Shape& shape, int64_t start, int64_t count);

}  // namespace distarray

#endif  // DISTARRAY_SERVER_OPS_FLAT_RUNS_H_
