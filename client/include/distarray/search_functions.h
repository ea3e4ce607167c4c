// The array API's searching and set functions whose result lengths depend on the values, composed
// from the daemon's ops as the Python SDK's are: a running count of a mask (the daemon's scan)
// and a search into it find the True positions without gathering the mask anywhere; the one
// value read back is their count, which sets the result's length. Each result is a new owned
// array on the operand's devices.
#ifndef DISTARRAY_CLIENT_SEARCH_FUNCTIONS_H_
#define DISTARRAY_CLIENT_SEARCH_FUNCTIONS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "distarray/client.h"

namespace distarray {

// numpy.nonzero: the indices of a's elements that are not zero (True for bool; NaN is not zero),
// one int64 array per axis, in C order. A 0-d `a` is INVALID_ARGUMENT (the array API leaves it
// out). Reads back one element: the count.
absl::StatusOr<std::vector<Array>> Nonzero(const Array& a);

// a[mask] for a bool `mask` of a's shape: the elements where mask is True, in C order, as a 1-D
// array split over a's devices. Reads back one element (their count).
absl::StatusOr<Array> MaskedGet(const Array& a, const Array& mask);

// The array API's unique_values and unique_counts of a flattened: the distinct values sorted
// ascending (NaNs last, each NaN a value of its own, -0.0 and 0.0 one value), and how many
// elements equal each (int64). Every dtype: complex numbers in NumPy's order (real part, then
// imaginary). Reads back one element.
absl::StatusOr<Array> UniqueValues(const Array& a);
struct UniqueCountsResult {
  Array values;
  Array counts;
};
absl::StatusOr<UniqueCountsResult> UniqueCounts(const Array& a);

// The array API's unique_inverse: UniqueValues, and for each element of `a` (int64, a's shape)
// the position of its value in `values`, so values[inverse_indices] rebuilds `a` (each NaN its
// own value). The sort is stable: an argsort of the flattened `a`, whose inverse permutation (an
// argsort of it) carries each sorted element's value number back to the element's place.
struct UniqueInverseResult {
  Array values;
  Array inverse_indices;
};
absl::StatusOr<UniqueInverseResult> UniqueInverse(const Array& a);

// The array API's unique_all: UniqueInverse and UniqueCounts, with `indices`, the position in
// the flattened `a` of each value's first occurrence (int64).
struct UniqueAllResult {
  Array values;
  Array indices;
  Array inverse_indices;
  Array counts;
};
absl::StatusOr<UniqueAllResult> UniqueAll(const Array& a);

// a[mask] = value in place (the handle stays; a becomes REPLICA), for a bool `mask` of a's shape,
// as NumPy's: `value` is an array of one element (shape () or (1,)), written to every selected
// element, or a 1-D array with one element per selected element, in C order. The value is
// converted to a's dtype. Written as where(mask, v, a) into a; a value per selected element is
// first gathered to a's positions by the mask's running count, whose total (read back) must
// match its length: INVALID_ARGUMENT naming `value` otherwise.
absl::Status MaskedSet(Array& a, const Array& mask, const Array& value);
// The same with a scalar written to every selected element.
absl::Status MaskedSet(Array& a, const Array& mask, const Operand& scalar);

// numpy.repeat with a count per element: a's element i along `axis` repeated counts[i] times, in
// order (a single count repeats every element, as Repeat(a, count, axis)). Counts here: the
// positions are listed in the requests (at most 2^26 of them in all). Negative counts, or a
// number of counts other than 1 or the axis' length, are INVALID_ARGUMENT naming `repeats`.
absl::StatusOr<Array> Repeat(const Array& a, const std::vector<int64_t>& counts, int32_t axis);
// The same with the counts held in the daemon (a 1-D integer array, or one count): position j of
// the result takes the element searchsorted(cumulative_sum(counts), j, right). Reads back two
// elements, the counts' total (the result's length) and the smallest (which must be >= 0).
absl::StatusOr<Array> Repeat(const Array& a, const Array& counts, int32_t axis);

}  // namespace distarray

#endif  // DISTARRAY_CLIENT_SEARCH_FUNCTIONS_H_
