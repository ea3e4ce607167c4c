// NumPy functions the C++ SDK composes from the daemon's ops (the Python SDK's namesakes do the
// same): axis shuffles and slices as get_item/reshape/concat, triangles as a where over a Tri
// fill, statistics as reductions. Each result is a new owned array on the operand's devices.
// Bad axes and arguments are INVALID_ARGUMENT naming the argument, before any request is sent.
#ifndef DISTARRAY_CLIENT_ARRAY_FUNCTIONS_H_
#define DISTARRAY_CLIENT_ARRAY_FUNCTIONS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "distarray/client.h"

namespace distarray {

// Fills for Client::Create (v1::Fill's kinds): the random ones depend only on the seed and each
// element's linear index, so the same seed gives the same array in any layout.
namespace fills {
v1::Fill Zeros();
v1::Fill Ones();
v1::Fill Full(double value);
v1::Fill Arange(double start, double step = 1.0);
v1::Fill Linspace(double start, double stop, bool endpoint = true);
v1::Fill Eye(int64_t k = 0);  // numpy.eye's diagonal k over the last two axes
v1::Fill Tri(int64_t k = 0);  // numpy.tri: 1 where column - row <= k
v1::Fill Uniform(double low, double high, uint64_t seed);
v1::Fill Normal(double mean, double stddev, uint64_t seed);
v1::Fill Integers(int64_t low, int64_t high, uint64_t seed);  // [low, high)
}  // namespace fills

// numpy.flip along `axes` (empty: every axis).
absl::StatusOr<Array> Flip(const Array& a, const std::vector<int32_t>& axes = {});
// numpy.roll of `shift` places along `axis` (elements pushed past the end come back first).
absl::StatusOr<Array> Roll(const Array& a, int64_t shift, int32_t axis);
// numpy.expand_dims: a new axis of length 1 at `axis` (-ndim - 1 to ndim).
absl::StatusOr<Array> ExpandDims(const Array& a, int32_t axis);
// numpy.squeeze: the length-1 `axes` removed (empty: every length-1 axis).
absl::StatusOr<Array> Squeeze(const Array& a, const std::vector<int32_t>& axes = {});
// numpy.moveaxis for one axis: `source` becomes axis `destination`, the others keep their order.
absl::StatusOr<Array> MoveAxis(const Array& a, int32_t source, int32_t destination);
// numpy.diff: the n-th discrete difference along `axis` (bool: not_equal, as NumPy's).
absl::StatusOr<Array> Diff(const Array& a, int n = 1, int32_t axis = -1);
// numpy.tril / numpy.triu over the last two axes: the elements with column - row <= k (tril) or
// >= k (triu) kept, the others 0.
absl::StatusOr<Array> Tril(const Array& a, int64_t k = 0);
absl::StatusOr<Array> Triu(const Array& a, int64_t k = 0);
// numpy.take along `axis`: a's elements at `indices` (a 1-D integer array held in the daemon;
// negative positions count from the end, out-of-range ones are OUT_OF_RANGE).
absl::StatusOr<Array> Take(const Array& a, const Array& indices, int32_t axis = 0);
// numpy.tile: a repeated `reps[i]` times along axis i (reps shorter than a's rank are padded with
// leading 1s; longer ones give a leading 1s to a's shape).
absl::StatusOr<Array> Tile(const Array& a, const std::vector<int64_t>& reps);
// numpy.repeat with one count: each element repeated `repeats` times along `axis`.
absl::StatusOr<Array> Repeat(const Array& a, int64_t repeats, int32_t axis);
// numpy.outer of two 1-D arrays: (m, n), element (i, j) = a[i] * b[j].
absl::StatusOr<Array> Outer(const Array& a, const Array& b);
// numpy.var and numpy.std over `axes` (empty: all) with the array API's `correction` (NumPy's
// ddof): the sum of squared deviations from the mean divided by max(N - correction, 0). Real
// dtypes; integers are computed in float64. (Variance, not Var: graph::Var is the traced value.)
absl::StatusOr<Array> Variance(const Array& a, const std::vector<int32_t>& axes = {},
                               double correction = 0.0, bool keepdims = false);
absl::StatusOr<Array> Std(const Array& a, const std::vector<int32_t>& axes = {},
                          double correction = 0.0, bool keepdims = false);

}  // namespace distarray

#endif  // DISTARRAY_CLIENT_ARRAY_FUNCTIONS_H_
