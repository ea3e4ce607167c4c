// Linear algebra composed from the daemon's ops (distarray/linalg_functions.h).
#include "distarray/linalg_functions.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/function_args.h"
#include "distarray/indexing.h"

namespace distarray {
namespace {

using internal::AxisOf;
using internal::ShapeText;

absl::Status NeedsMatrices(const Array& a, const char* what) {
  if (a.shape().size() >= 2) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "a: ", what, " takes arrays of at least two axes, not shape ", ShapeText(a.shape())));
}

absl::Status SameDType(const Array& a, const Array& b, const char* what) {
  if (a.info().dtype() == b.info().dtype()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "b: ", what, " takes operands of one dtype, not ", v1::DType_Name(a.info().dtype()), " and ",
      v1::DType_Name(b.info().dtype()), " (convert one with AsType)"));
}

// |a| in a floating dtype: complex magnitudes; integers and bool through float64 first.
absl::StatusOr<Array> FloatAbs(const Array& a) {
  const v1::DType dtype = a.info().dtype();
  const bool floating = dtype == v1::DTYPE_FLOAT16 || dtype == v1::DTYPE_BFLOAT16 ||
                        dtype == v1::DTYPE_FLOAT32 || dtype == v1::DTYPE_FLOAT64 ||
                        internal::IsComplexDType(dtype);
  if (floating) return Ufunc(v1::ELEMENTWISE_OP_ABS, {a});
  absl::StatusOr<Array> wide = AsType(a, v1::DTYPE_FLOAT64);
  if (!wide.ok()) return wide.status();
  return Ufunc(v1::ELEMENTWISE_OP_ABS, {*wide});
}

// Normalized, distinct axes (INVALID_ARGUMENT naming `what` otherwise).
absl::StatusOr<std::vector<int>> AxesOf(const std::vector<int32_t>& axes, size_t rank,
                                        const std::string& what) {
  std::vector<int> out;
  for (int32_t axis : axes) {
    absl::StatusOr<int> d = AxisOf(axis, rank, what);
    if (!d.ok()) return d.status();
    if (std::find(out.begin(), out.end(), *d) != out.end()) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": axis ", axis, " is listed twice"));
    }
    out.push_back(*d);
  }
  return out;
}

// Element `i` of `axis` kept as an axis of length 1.
absl::StatusOr<Array> Component(const Array& a, int axis, int64_t i) {
  std::vector<Index> key(a.shape().size(), Index(Slice{}));
  key[axis] = Slice{.start = i, .stop = i + 1};
  return GetItem(a, key);
}

}  // namespace

absl::StatusOr<Array> MatrixTranspose(const Array& a) {
  if (absl::Status s = NeedsMatrices(a, "MatrixTranspose"); !s.ok()) return s;
  const int rank = static_cast<int>(a.shape().size());
  std::vector<int32_t> order(rank);
  std::iota(order.begin(), order.end(), 0);
  std::swap(order[rank - 2], order[rank - 1]);
  return PermuteDims(a, order);
}

absl::StatusOr<Array> Vecdot(const Array& a, const Array& b, int32_t axis) {
  if (absl::Status s = SameDType(a, b, "Vecdot"); !s.ok()) return s;
  const std::vector<int64_t> a_shape = a.shape(), b_shape = b.shape();
  const size_t rank = std::max(a_shape.size(), b_shape.size());
  absl::StatusOr<int> d = AxisOf(axis, std::min(a_shape.size(), b_shape.size()), "axis");
  if (!d.ok()) return d.status();
  // The axis counts from the end of each operand (as the array API's vecdot).
  const int from_end = *d - static_cast<int>(std::min(a_shape.size(), b_shape.size()));
  if (a_shape[a_shape.size() + from_end] != b_shape[b_shape.size() + from_end]) {
    return absl::InvalidArgumentError(absl::StrCat("b: shapes ", ShapeText(a_shape), " and ",
                                                   ShapeText(b_shape), " differ along axis ",
                                                   axis));
  }
  // Complex: sum(conj(a) * b), as the array API's.
  std::optional<Array> conjugated;
  if (internal::IsComplexDType(a.info().dtype())) {
    absl::StatusOr<Array> c = internal::Conjugate(a);
    if (!c.ok()) return c.status();
    conjugated.emplace(*std::move(c));
  }
  absl::StatusOr<Array> product =
      Ufunc(v1::ELEMENTWISE_OP_MULTIPLY, {conjugated ? *conjugated : a, b});
  if (!product.ok()) return product.status();
  absl::StatusOr<Array> sum =
      Reduce(*product, v1::REDUCE_OP_SUM, {static_cast<int32_t>(rank) + from_end},
             /*keepdims=*/false, /*combine=*/true);
  // The operands' dtype, as the array API's (a sum widens narrow integers).
  if (!sum.ok() || sum->info().dtype() == a.info().dtype()) return sum;
  return AsType(*sum, a.info().dtype());
}

absl::StatusOr<Array> Tensordot(const Array& a, const Array& b, const std::vector<int32_t>& a_axes,
                                const std::vector<int32_t>& b_axes) {
  if (absl::Status s = SameDType(a, b, "Tensordot"); !s.ok()) return s;
  const std::vector<int64_t> a_shape = a.shape(), b_shape = b.shape();
  if (a_axes.size() != b_axes.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("b_axes: ", b_axes.size(), " axes against a_axes' ", a_axes.size()));
  }
  absl::StatusOr<std::vector<int>> ca = AxesOf(a_axes, a_shape.size(), "a_axes");
  if (!ca.ok()) return ca.status();
  absl::StatusOr<std::vector<int>> cb = AxesOf(b_axes, b_shape.size(), "b_axes");
  if (!cb.ok()) return cb.status();
  int64_t k = 1;
  for (size_t i = 0; i < ca->size(); ++i) {
    if (a_shape[(*ca)[i]] != b_shape[(*cb)[i]]) {
      return absl::InvalidArgumentError(
          absl::StrCat("b_axes: axis ", b_axes[i], " of shape ", ShapeText(b_shape), " has length ",
                       b_shape[(*cb)[i]], ", but axis ", a_axes[i], " of shape ",
                       ShapeText(a_shape), " has ", a_shape[(*ca)[i]]));
    }
    k *= a_shape[(*ca)[i]];
  }
  // a as (free, contracted) and b as (contracted, free): one matrix product.
  std::vector<int32_t> a_order, b_order;
  std::vector<int64_t> out_shape;
  int64_t m = 1, n = 1;
  for (int d = 0; d < static_cast<int>(a_shape.size()); ++d) {
    if (std::find(ca->begin(), ca->end(), d) != ca->end()) continue;
    a_order.push_back(d);
    out_shape.push_back(a_shape[d]);
    m *= a_shape[d];
  }
  for (int d : *ca) a_order.push_back(d);
  for (int d : *cb) b_order.push_back(d);
  for (int d = 0; d < static_cast<int>(b_shape.size()); ++d) {
    if (std::find(cb->begin(), cb->end(), d) != cb->end()) continue;
    b_order.push_back(d);
    out_shape.push_back(b_shape[d]);
    n *= b_shape[d];
  }
  absl::StatusOr<Array> a_moved = PermuteDims(a, a_order);
  if (!a_moved.ok()) return a_moved.status();
  absl::StatusOr<Array> a_matrix = Reshape(*a_moved, {m, k});
  if (!a_matrix.ok()) return a_matrix.status();
  absl::StatusOr<Array> b_moved = PermuteDims(b, b_order);
  if (!b_moved.ok()) return b_moved.status();
  absl::StatusOr<Array> b_matrix = Reshape(*b_moved, {k, n});
  if (!b_matrix.ok()) return b_matrix.status();
  absl::StatusOr<Array> product = Matmul(*a_matrix, *b_matrix);
  if (!product.ok()) return product.status();
  return Reshape(*product, out_shape);
}

absl::StatusOr<Array> Tensordot(const Array& a, const Array& b, int n) {
  const auto a_rank = static_cast<int>(a.shape().size());
  const auto b_rank = static_cast<int>(b.shape().size());
  if (n < 0 || n > a_rank || n > b_rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("n: ", n, " axes to contract, but a has ", a_rank, " and b ", b_rank));
  }
  std::vector<int32_t> a_axes, b_axes;
  for (int i = 0; i < n; ++i) {
    a_axes.push_back(a_rank - n + i);
    b_axes.push_back(i);
  }
  return Tensordot(a, b, a_axes, b_axes);
}

absl::StatusOr<Array> Diagonal(const Array& a, int64_t offset) {
  if (absl::Status s = NeedsMatrices(a, "Diagonal"); !s.ok()) return s;
  std::vector<int64_t> shape = a.shape();
  const int64_t rows = shape[shape.size() - 2], cols = shape.back();
  const int64_t length = std::max<int64_t>(
      0, offset >= 0 ? std::min(rows, cols - offset) : std::min(rows + offset, cols));
  // In each matrix flattened, the diagonal is every (cols + 1)-th element from its first.
  shape.pop_back();
  shape.back() = rows * cols;
  absl::StatusOr<Array> flat = Reshape(a, shape);
  if (!flat.ok()) return flat.status();
  const int64_t start = offset >= 0 ? offset : -offset * cols;
  std::vector<Index> key(shape.size(), Index(Slice{}));
  key.back() =
      length == 0
          ? Slice{.start = 0, .stop = 0}
          : Slice{.start = start, .stop = start + (length - 1) * (cols + 1) + 1, .step = cols + 1};
  return GetItem(*flat, key);
}

absl::StatusOr<Array> Trace(const Array& a, int64_t offset) {
  absl::StatusOr<Array> diagonal = Diagonal(a, offset);
  if (!diagonal.ok()) return diagonal.status();
  return Reduce(*diagonal, v1::REDUCE_OP_SUM, {-1}, /*keepdims=*/false, /*combine=*/true);
}

absl::StatusOr<Array> Cross(const Array& a, const Array& b, int32_t axis) {
  // Complex operands as NumPy's: the same products, nothing conjugated.
  if (absl::Status s = SameDType(a, b, "Cross"); !s.ok()) return s;
  const std::vector<int64_t> shape = a.shape();
  if (b.shape() != shape) {
    return absl::InvalidArgumentError(
        absl::StrCat("b: shape ", ShapeText(b.shape()), " differs from a's ", ShapeText(shape)));
  }
  absl::StatusOr<int> d = AxisOf(axis, shape.size(), "axis");
  if (!d.ok()) return d.status();
  if (shape[*d] != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("axis: Cross takes vectors of 3 elements, but axis ", axis, " of shape ",
                     ShapeText(shape), " has ", shape[*d]));
  }
  std::vector<Array> ac, bc;
  for (int64_t i = 0; i < 3; ++i) {
    absl::StatusOr<Array> x = Component(a, *d, i);
    if (!x.ok()) return x.status();
    absl::StatusOr<Array> y = Component(b, *d, i);
    if (!y.ok()) return y.status();
    ac.push_back(*std::move(x));
    bc.push_back(*std::move(y));
  }
  // c_i = a_j b_k - a_k b_j for (i, j, k) the cyclic orders of (0, 1, 2).
  std::vector<Array> parts;  // owned here: an Operand only names its array
  for (int i = 0; i < 3; ++i) {
    const int j = (i + 1) % 3, k = (i + 2) % 3;
    absl::StatusOr<Array> left = Ufunc(v1::ELEMENTWISE_OP_MULTIPLY, {ac[j], bc[k]});
    if (!left.ok()) return left.status();
    absl::StatusOr<Array> right = Ufunc(v1::ELEMENTWISE_OP_MULTIPLY, {ac[k], bc[j]});
    if (!right.ok()) return right.status();
    absl::StatusOr<Array> part = Ufunc(v1::ELEMENTWISE_OP_SUBTRACT, {*left, *right});
    if (!part.ok()) return part.status();
    parts.push_back(*std::move(part));
  }
  return Concat({parts[0], parts[1], parts[2]}, *d);
}

absl::StatusOr<Array> VectorNorm(const Array& a, double ord, const std::vector<int32_t>& axes,
                                 bool keepdims) {
  if (std::isnan(ord)) return absl::InvalidArgumentError("ord: NaN is no norm order");
  absl::StatusOr<std::vector<int>> checked = AxesOf(axes, a.shape().size(), "axes");
  if (!checked.ok()) return checked.status();
  absl::StatusOr<Array> magnitude = FloatAbs(a);
  if (!magnitude.ok()) return magnitude.status();
  auto reduce = [&](const Array& x, v1::ReduceOp op) {
    return Reduce(x, op, axes, keepdims, /*combine=*/true);
  };
  if (ord == INFINITY) return reduce(*magnitude, v1::REDUCE_OP_MAX);
  if (ord == -INFINITY) return reduce(*magnitude, v1::REDUCE_OP_MIN);
  if (ord == 1) return reduce(*magnitude, v1::REDUCE_OP_SUM);
  if (ord == 0) {
    absl::StatusOr<Array> nonzero = Ufunc(v1::ELEMENTWISE_OP_NOT_EQUAL, {*magnitude, 0.0});
    if (!nonzero.ok()) return nonzero.status();
    absl::StatusOr<Array> counted = AsType(*nonzero, magnitude->info().dtype());
    if (!counted.ok()) return counted.status();
    return reduce(*counted, v1::REDUCE_OP_SUM);
  }
  if (ord == 2) {
    absl::StatusOr<Array> squared = Ufunc(v1::ELEMENTWISE_OP_SQUARE, {*magnitude});
    if (!squared.ok()) return squared.status();
    absl::StatusOr<Array> sum = reduce(*squared, v1::REDUCE_OP_SUM);
    if (!sum.ok()) return sum.status();
    return Ufunc(v1::ELEMENTWISE_OP_SQRT, {*sum});
  }
  absl::StatusOr<Array> powered = Ufunc(v1::ELEMENTWISE_OP_POWER, {*magnitude, ord});
  if (!powered.ok()) return powered.status();
  absl::StatusOr<Array> sum = reduce(*powered, v1::REDUCE_OP_SUM);
  if (!sum.ok()) return sum.status();
  return Ufunc(v1::ELEMENTWISE_OP_POWER, {*sum, 1.0 / ord});
}

absl::StatusOr<Array> MatrixNorm(const Array& a, MatrixNormOrd ord, bool keepdims) {
  if (absl::Status s = NeedsMatrices(a, "MatrixNorm"); !s.ok()) return s;
  if (ord == MatrixNormOrd::kFrobenius) return VectorNorm(a, 2, {-2, -1}, keepdims);
  absl::StatusOr<Array> magnitude = FloatAbs(a);
  if (!magnitude.ok()) return magnitude.status();
  // Column sums reduce the rows (axis -2), row sums the columns (axis -1); then the extreme over
  // the other axis, which with keepdims is where the first reduction left a 1.
  const bool columns = ord == MatrixNormOrd::kMaxColumnSum || ord == MatrixNormOrd::kMinColumnSum;
  const bool largest = ord == MatrixNormOrd::kMaxColumnSum || ord == MatrixNormOrd::kMaxRowSum;
  absl::StatusOr<Array> sums =
      Reduce(*magnitude, v1::REDUCE_OP_SUM, {columns ? -2 : -1}, /*keepdims=*/true, true);
  if (!sums.ok()) return sums.status();
  absl::StatusOr<Array> extreme =
      Reduce(*sums, largest ? v1::REDUCE_OP_MAX : v1::REDUCE_OP_MIN, {columns ? -1 : -2},
             /*keepdims=*/true, true);
  if (!extreme.ok() || keepdims) return extreme;
  std::vector<int64_t> shape = a.shape();
  shape.resize(shape.size() - 2);
  return Reshape(*extreme, shape);
}

}  // namespace distarray
