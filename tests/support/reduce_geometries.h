// Reduction geometries of the simple shapes tests and benchmarks use: everything of a dense 1-d
// chunk, and one axis of a dense matrix. (The engine's planner builds the general case.)
#ifndef DISTARRAY_TESTS_SUPPORT_REDUCE_GEOMETRIES_H_
#define DISTARRAY_TESTS_SUPPORT_REDUCE_GEOMETRIES_H_

#include <cstdint>

#include "server/kernels/reduce_ops.h"

namespace distarray::testing {

// All n consecutive elements into one output.
inline ReduceGeometry AllOf(int64_t n) {
  ReduceGeometry g;
  g.reduced.rank = 1;
  g.reduced.count[0] = n;
  g.reduced.stride[0] = 1;
  g.index = g.reduced;
  g.reduced_contiguous = true;
  return g;
}

// A dense rows x cols matrix reduced over `axis`: axis 1 reads each output's elements
// consecutively (the block path), axis 0 a column per output (the thread path where outputs are
// many). argmax's index of reduced element r is r.
inline ReduceGeometry OverMatrixAxis(int64_t rows, int64_t cols, int axis) {
  ReduceGeometry g;
  g.kept.rank = 1;
  g.reduced.rank = 1;
  g.kept.count[0] = axis == 1 ? rows : cols;
  g.kept.stride[0] = axis == 1 ? cols : 1;
  g.reduced.count[0] = axis == 1 ? cols : rows;
  g.reduced.stride[0] = axis == 1 ? 1 : cols;
  g.index.rank = 1;
  g.index.count[0] = g.reduced.count[0];
  g.index.stride[0] = 1;
  g.reduced_contiguous = axis == 1 || rows == 1;
  return g;
}

}  // namespace distarray::testing

#endif  // DISTARRAY_TESTS_SUPPORT_REDUCE_GEOMETRIES_H_
