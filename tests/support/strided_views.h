// Strided views of the simple shapes tests and benchmarks use: reduction geometries (everything of
// a dense 1-d chunk, one axis of a dense matrix) and a transposed matrix. (The engine's planners
// build the general case.)
#ifndef DISTARRAY_TESTS_SUPPORT_STRIDED_VIEWS_H_
#define DISTARRAY_TESTS_SUPPORT_STRIDED_VIEWS_H_

#include <cstdint>

#include "common/strided_box.h"
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

// A rows x cols view, in C order, of the dense cols x rows matrix it transposes.
inline StridedBox TransposedView(int64_t rows, int64_t cols) {
  StridedBox view;
  view.rank = 2;
  view.count[0] = rows;
  view.count[1] = cols;
  view.stride[0] = 1;
  view.stride[1] = rows;
  return view;
}

}  // namespace distarray::testing

#endif  // DISTARRAY_TESTS_SUPPORT_STRIDED_VIEWS_H_
