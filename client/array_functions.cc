// NumPy functions composed from the daemon's ops (distarray/array_functions.h).
#include "distarray/array_functions.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/function_args.h"
#include "distarray/indexing.h"

namespace distarray {

namespace fills {

v1::Fill Zeros() {
  v1::Fill f;
  f.mutable_zeros();
  return f;
}
v1::Fill Ones() {
  v1::Fill f;
  f.mutable_ones();
  return f;
}
v1::Fill Full(double value) {
  v1::Fill f;
  *f.mutable_full()->mutable_value() = MakeScalar(value);
  return f;
}
v1::Fill Arange(double start, double step) {
  v1::Fill f;
  f.mutable_arange()->set_start(start);
  f.mutable_arange()->set_step(step);
  return f;
}
v1::Fill Linspace(double start, double stop, bool endpoint) {
  v1::Fill f;
  f.mutable_linspace()->set_start(start);
  f.mutable_linspace()->set_stop(stop);
  f.mutable_linspace()->set_endpoint(endpoint);
  return f;
}
v1::Fill Eye(int64_t k) {
  v1::Fill f;
  f.mutable_eye()->set_k(k);
  return f;
}
v1::Fill Tri(int64_t k) {
  v1::Fill f;
  f.mutable_tri()->set_k(k);
  return f;
}
v1::Fill Uniform(double low, double high, uint64_t seed) {
  v1::Fill f;
  f.mutable_uniform()->set_low(low);
  f.mutable_uniform()->set_high(high);
  f.mutable_uniform()->set_seed(seed);
  return f;
}
v1::Fill Normal(double mean, double stddev, uint64_t seed) {
  v1::Fill f;
  f.mutable_normal()->set_mean(mean);
  f.mutable_normal()->set_stddev(stddev);
  f.mutable_normal()->set_seed(seed);
  return f;
}
v1::Fill Integers(int64_t low, int64_t high, uint64_t seed) {
  v1::Fill f;
  f.mutable_integers()->set_low(low);
  f.mutable_integers()->set_high(high);
  f.mutable_integers()->set_seed(seed);
  return f;
}

}  // namespace fills

namespace {

using internal::AxisOf;
using internal::ShapeText;

// Every axis whole but `axis`, which takes `slice`.
std::vector<Index> AlongAxis(size_t rank, int axis, const Slice& slice) {
  std::vector<Index> key(rank, Index(Slice{}));
  key[axis] = slice;
  return key;
}

// The elements with column - row <= k kept (`keep_lower`), or the others.
absl::StatusOr<Array> Triangle(const Array& a, int64_t k, bool keep_lower, const char* what) {
  const std::vector<int64_t> shape = a.shape();
  if (shape.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a: ", what, " takes arrays of at least two axes, not shape ", ShapeText(shape)));
  }
  // tril keeps tri(k); triu keeps column - row >= k, which is where tri(k - 1) is 0.
  const ArrayOptions options{a.info().index_map(), v1::MODE_REPLICA, ""};
  absl::StatusOr<Array> mask =
      a.client().Create(shape, v1::DTYPE_BOOL, options, fills::Tri(keep_lower ? k : k - 1));
  if (!mask.ok()) return mask.status();
  // A bool 0: a weak scalar that never changes a's dtype (an int 0 would make a bool a int64).
  return keep_lower ? Ufunc(v1::ELEMENTWISE_OP_WHERE, {*mask, a, false})
                    : Ufunc(v1::ELEMENTWISE_OP_WHERE, {*mask, false, a});
}

}  // namespace

absl::StatusOr<Array> Flip(const Array& a, const std::vector<int32_t>& axes) {
  const size_t rank = a.shape().size();
  std::vector<Index> key(rank, Index(Slice{}));
  std::vector<bool> flipped(rank, axes.empty());
  for (int32_t axis : axes) {
    absl::StatusOr<int> d = AxisOf(axis, rank, "axes");
    if (!d.ok()) return d.status();
    if (flipped[*d] && !axes.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("axes: axis ", axis, " is listed twice"));
    }
    flipped[*d] = true;
  }
  for (size_t d = 0; d < rank; ++d) {
    if (flipped[d]) key[d] = Slice{.step = -1};
  }
  return GetItem(a, key);
}

absl::StatusOr<Array> Roll(const Array& a, int64_t shift, int32_t axis) {
  const std::vector<int64_t> shape = a.shape();
  absl::StatusOr<int> d = AxisOf(axis, shape.size(), "axis");
  if (!d.ok()) return d.status();
  const int64_t n = shape[*d];
  const int64_t s = n == 0 ? 0 : ((shift % n) + n) % n;
  if (s == 0) return GetItem(a, AlongAxis(shape.size(), *d, Slice{}));  // a copy
  absl::StatusOr<Array> tail = GetItem(a, AlongAxis(shape.size(), *d, Slice{.start = n - s}));
  if (!tail.ok()) return tail.status();
  absl::StatusOr<Array> head = GetItem(a, AlongAxis(shape.size(), *d, Slice{.stop = n - s}));
  if (!head.ok()) return head.status();
  return Concat({*tail, *head}, *d);
}

absl::StatusOr<Array> ExpandDims(const Array& a, int32_t axis) {
  std::vector<int64_t> shape = a.shape();
  absl::StatusOr<int> d = AxisOf(axis, shape.size() + 1, "axis");
  if (!d.ok()) return d.status();
  shape.insert(shape.begin() + *d, 1);
  return Reshape(a, shape);
}

absl::StatusOr<Array> Squeeze(const Array& a, const std::vector<int32_t>& axes) {
  const std::vector<int64_t> shape = a.shape();
  std::vector<bool> removed(shape.size(), false);
  for (size_t d = 0; d < shape.size() && axes.empty(); ++d) removed[d] = shape[d] == 1;
  for (int32_t axis : axes) {
    absl::StatusOr<int> d = AxisOf(axis, shape.size(), "axes");
    if (!d.ok()) return d.status();
    if (shape[*d] != 1) {
      return absl::InvalidArgumentError(absl::StrCat("axes: axis ", axis, " has length ", shape[*d],
                                                     " in shape ", ShapeText(shape),
                                                     "; squeeze removes only axes of length 1"));
    }
    if (removed[*d]) {
      return absl::InvalidArgumentError(absl::StrCat("axes: axis ", axis, " is listed twice"));
    }
    removed[*d] = true;
  }
  std::vector<int64_t> kept;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!removed[d]) kept.push_back(shape[d]);
  }
  return Reshape(a, kept);
}

absl::StatusOr<Array> MoveAxis(const Array& a, int32_t source, int32_t destination) {
  const size_t rank = a.shape().size();
  absl::StatusOr<int> from = AxisOf(source, rank, "source");
  if (!from.ok()) return from.status();
  absl::StatusOr<int> to = AxisOf(destination, rank, "destination");
  if (!to.ok()) return to.status();
  std::vector<int32_t> order;
  for (int d = 0; d < static_cast<int>(rank); ++d) {
    if (d != *from) order.push_back(d);
  }
  order.insert(order.begin() + *to, *from);
  return PermuteDims(a, order);
}

absl::StatusOr<Array> Diff(const Array& a, int n, int32_t axis) {
  if (n < 0) {
    return absl::InvalidArgumentError(absl::StrCat("n: ", n, " is negative; diff takes n >= 0"));
  }
  const size_t rank = a.shape().size();
  if (rank == 0) return absl::InvalidArgumentError("a: diff takes arrays of at least one axis");
  absl::StatusOr<int> d = AxisOf(axis, rank, "axis");
  if (!d.ok()) return d.status();
  const v1::ElementwiseOp op = a.info().dtype() == v1::DTYPE_BOOL ? v1::ELEMENTWISE_OP_NOT_EQUAL
                                                                  : v1::ELEMENTWISE_OP_SUBTRACT;
  absl::StatusOr<Array> out = GetItem(a, AlongAxis(rank, *d, Slice{}));
  for (int i = 0; i < n && out.ok(); ++i) {
    absl::StatusOr<Array> later = GetItem(*out, AlongAxis(rank, *d, Slice{.start = 1}));
    if (!later.ok()) return later.status();
    absl::StatusOr<Array> earlier = GetItem(*out, AlongAxis(rank, *d, Slice{.stop = -1}));
    if (!earlier.ok()) return earlier.status();
    out = Ufunc(op, {*later, *earlier});
  }
  return out;
}

absl::StatusOr<Array> Tril(const Array& a, int64_t k) { return Triangle(a, k, true, "tril"); }
absl::StatusOr<Array> Triu(const Array& a, int64_t k) { return Triangle(a, k, false, "triu"); }

absl::StatusOr<Array> Take(const Array& a, const Array& indices, int32_t axis) {
  const std::vector<int64_t> shape = a.shape();
  absl::StatusOr<int> d = AxisOf(axis, shape.size(), "axis");
  if (!d.ok()) return d.status();
  if (indices.shape().size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "indices: Take takes a 1-D integer array, not shape ", ShapeText(indices.shape())));
  }
  std::vector<Index> key(shape.size(), Index(Slice{}));
  key[*d] = HeldPositions{indices.handle()};
  return GetItem(a, key);
}

namespace {

// a's axis `axis` (of length s) becomes (s, 1), broadcast to (s, count), merged back to s * count:
// each element `count` times in a row (repeat), or, with the 1 first, the whole axis `count` times
// (tile).
absl::StatusOr<Array> Stretch(const Array& a, int axis, int64_t count, bool whole_axis) {
  std::vector<int64_t> shape = a.shape();
  std::vector<int64_t> split = shape, wide = shape;
  const size_t at = whole_axis ? axis : axis + 1;
  split.insert(split.begin() + at, 1);
  wide.insert(wide.begin() + at, count);
  absl::StatusOr<Array> opened = Reshape(a, split);
  if (!opened.ok()) return opened.status();
  absl::StatusOr<Array> repeated = BroadcastTo(*opened, wide);
  if (!repeated.ok()) return repeated.status();
  shape[axis] *= count;
  return Reshape(*repeated, shape);
}

}  // namespace

absl::StatusOr<Array> Tile(const Array& a, const std::vector<int64_t>& reps) {
  for (size_t i = 0; i < reps.size(); ++i) {
    if (reps[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("reps: reps[", i, "] is ", reps[i], "; tile takes counts >= 0"));
    }
  }
  std::vector<int64_t> shape = a.shape();
  std::vector<int64_t> counts = reps;
  while (counts.size() < shape.size()) counts.insert(counts.begin(), 1);
  // The latest result (none yet: `a` itself, widened with leading 1s where reps is longer).
  std::optional<Array> out;
  if (shape.size() < counts.size()) {
    shape.insert(shape.begin(), counts.size() - shape.size(), 1);
    absl::StatusOr<Array> widened = Reshape(a, shape);
    if (!widened.ok()) return widened.status();
    out = *std::move(widened);
  }
  for (size_t d = 0; d < counts.size(); ++d) {
    if (counts[d] == 1) continue;
    absl::StatusOr<Array> next =
        Stretch(out ? *out : a, static_cast<int>(d), counts[d], /*whole_axis=*/true);
    if (!next.ok()) return next.status();
    out = *std::move(next);
  }
  if (out) return *std::move(out);
  return GetItem(a, std::vector<Index>(shape.size(), Index(Slice{})));  // a copy
}

absl::StatusOr<Array> Repeat(const Array& a, int64_t repeats, int32_t axis) {
  if (repeats < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("repeats: ", repeats, "; repeat takes a count >= 0"));
  }
  absl::StatusOr<int> d = AxisOf(axis, a.shape().size(), "axis");
  if (!d.ok()) return d.status();
  return Stretch(a, *d, repeats, /*whole_axis=*/false);
}

absl::StatusOr<Array> Outer(const Array& a, const Array& b) {
  const std::vector<int64_t> a_shape = a.shape(), b_shape = b.shape();
  if (a_shape.size() != 1 || b_shape.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat("outer takes two 1-D arrays, not shapes ",
                                                   ShapeText(a_shape), " and ",
                                                   ShapeText(b_shape)));
  }
  absl::StatusOr<Array> column = Reshape(a, {a_shape[0], 1});
  if (!column.ok()) return column.status();
  absl::StatusOr<Array> row = Reshape(b, {1, b_shape[0]});
  if (!row.ok()) return row.status();
  return Ufunc(v1::ELEMENTWISE_OP_MULTIPLY, {*column, *row});
}

absl::StatusOr<Array> Variance(const Array& a, const std::vector<int32_t>& axes, double correction,
                               bool keepdims) {
  const std::vector<int64_t> shape = a.shape();
  if (!(correction >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("correction: ", correction, " is not a number >= 0"));
  }
  std::vector<bool> reduced(shape.size(), axes.empty());
  for (int32_t axis : axes) {
    absl::StatusOr<int> d = AxisOf(axis, shape.size(), "axes");
    if (!d.ok()) return d.status();
    if (reduced[*d]) {
      return absl::InvalidArgumentError(absl::StrCat("axes: axis ", axis, " is listed twice"));
    }
    reduced[*d] = true;
  }
  int64_t count = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (reduced[d]) count *= shape[d];
  }
  absl::StatusOr<Array> mean = Reduce(a, v1::REDUCE_OP_MEAN, axes, /*keepdims=*/true,
                                      /*combine=*/true);
  if (!mean.ok()) return mean.status();
  absl::StatusOr<Array> deviation = Ufunc(v1::ELEMENTWISE_OP_SUBTRACT, {a, *mean});
  if (!deviation.ok()) return deviation.status();
  // Complex: |deviation|^2, a real variance as NumPy's.
  absl::StatusOr<Array> squared = internal::IsComplexDType(a.info().dtype())
                                      ? internal::AbsSquared(*deviation)
                                      : Ufunc(v1::ELEMENTWISE_OP_SQUARE, {*deviation});
  if (!squared.ok()) return squared.status();
  absl::StatusOr<Array> sum = Reduce(*squared, v1::REDUCE_OP_SUM, axes, keepdims, true);
  if (!sum.ok()) return sum.status();
  // As NumPy's: the divisor is max(N - correction, 0), so too large a correction gives inf (or
  // NaN for an empty reduction), never a negative variance.
  const double divisor = std::max(static_cast<double>(count) - correction, 0.0);
  return Ufunc(v1::ELEMENTWISE_OP_DIVIDE, {*sum, divisor});
}

absl::StatusOr<Array> Std(const Array& a, const std::vector<int32_t>& axes, double correction,
                          bool keepdims) {
  absl::StatusOr<Array> variance = Variance(a, axes, correction, keepdims);
  if (!variance.ok()) return variance.status();
  return Ufunc(v1::ELEMENTWISE_OP_SQRT, {*variance});
}

}  // namespace distarray
