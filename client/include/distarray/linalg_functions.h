// The array API's linear algebra that needs no factorization, composed from the daemon's ops as
// the Python SDK's namesakes are: products as Matmul over permuted and reshaped operands,
// diagonals as strided slices of the flattened matrices, norms as reductions of |a|. Each result
// is a new owned array on the operands' devices. Bad axes, shapes and orders are INVALID_ARGUMENT
// naming the argument, before any request is sent. Complex operands of Vecdot and Cross are
// INVALID_ARGUMENT (the conjugate is the Python SDK's; Matmul, Tensordot and the norms take them).
#ifndef DISTARRAY_CLIENT_LINALG_FUNCTIONS_H_
#define DISTARRAY_CLIENT_LINALG_FUNCTIONS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "distarray/client.h"

namespace distarray {

// The last two axes swapped (array API matrix_transpose; rank >= 2).
absl::StatusOr<Array> MatrixTranspose(const Array& a);
// The dot product of vectors along `axis` of a and b broadcast together (array API vecdot, real
// dtypes; the operands of one dtype). The array API defines negative axes, counted from the end
// of each operand; a non-negative one counts in the rank of the operand with fewer axes.
absl::StatusOr<Array> Vecdot(const Array& a, const Array& b, int32_t axis = -1);
// numpy.tensordot: a's `a_axes` contracted with b's `b_axes` (pairwise equal lengths); the result
// is a's other axes, then b's. The operands of one dtype.
absl::StatusOr<Array> Tensordot(const Array& a, const Array& b, const std::vector<int32_t>& a_axes,
                                const std::vector<int32_t>& b_axes);
// The last `n` axes of a with the first `n` of b (numpy.tensordot(a, b, axes=n)).
absl::StatusOr<Array> Tensordot(const Array& a, const Array& b, int n = 2);
// The `offset`-th diagonal of each matrix (the last two axes; above the main one for offset > 0),
// and its sum (array API linalg.diagonal and linalg.trace).
absl::StatusOr<Array> Diagonal(const Array& a, int64_t offset = 0);
absl::StatusOr<Array> Trace(const Array& a, int64_t offset = 0);
// The cross product of 3-element vectors along `axis` of a and b (real dtypes, one shape).
absl::StatusOr<Array> Cross(const Array& a, const Array& b, int32_t axis = -1);
// The vector `ord`-norm over `axes` (empty: every element): 2, 1, infinity, -infinity, 0 (the
// count of nonzero elements) or any other p (sum of |a|^p to the 1/p). Integers in float64.
absl::StatusOr<Array> VectorNorm(const Array& a, double ord = 2,
                                 const std::vector<int32_t>& axes = {}, bool keepdims = false);
// The matrix norms of the last two axes that need no singular values: Frobenius, and the largest
// or smallest column sum (ord 1, -1) or row sum (infinity, -infinity) of |a|.
enum class MatrixNormOrd { kFrobenius, kMaxColumnSum, kMinColumnSum, kMaxRowSum, kMinRowSum };
absl::StatusOr<Array> MatrixNorm(const Array& a, MatrixNormOrd ord = MatrixNormOrd::kFrobenius,
                                 bool keepdims = false);

}  // namespace distarray

#endif  // DISTARRAY_CLIENT_LINALG_FUNCTIONS_H_
