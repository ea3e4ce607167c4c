// The C++ SDK's Nonzero, MaskedGet, MaskedSet, the Unique functions and Repeat with counts
// (distarray/search_functions.h) against host references on fresh random data in several layouts:
// sparse and dense masks of every rank, none and all True; repeated integers, floats with NaNs and
// signed zeros, bool; more distinct values than one gather batch holds; and the refusals by name.
#include <algorithm>
#include <cmath>
#include <complex>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "distarray/index_maps.h"
#include "distarray/search_functions.h"
#include "tests/support/backend_fixture.h"

namespace distarray::testing {
namespace {

class SearchFunctionsTest : public BackendTest {
 protected:
  // `values` of `shape` split along axis 0 over two devices, along the last axis over three, and
  // on one device.
  template <typename T>
  std::vector<Array> Layouts(const std::vector<T>& values, const std::vector<int64_t>& shape) {
    const int rank = static_cast<int>(shape.size());
    std::vector<Array> out;
    for (const v1::IndexMap& map :
         {Split(rank, 0, shape[0], {dev(0), dev(1)}),
          Split(rank, rank - 1, shape[rank - 1], {dev(2), dev(0), dev(1)}),
          OnDevice(rank, dev(1))}) {
      absl::StatusOr<Array> a = client().Upload<T>(values, shape, {map});
      EXPECT_TRUE(a.ok()) << a.status();
      if (a.ok()) out.push_back(*std::move(a));
    }
    return out;
  }
  std::mt19937_64 rng_{97};
};

TEST_P(SearchFunctionsTest, NonzeroMatchesTheHost) {
  for (const std::vector<int64_t>& shape :
       {std::vector<int64_t>{37}, std::vector<int64_t>{9, 8}, std::vector<int64_t>{4, 5, 6}}) {
    int64_t n = 1;
    for (int64_t e : shape) n *= e;
    for (double density : {0.0, 0.1, 0.7, 1.0}) {
      std::vector<double> values(n);
      std::uniform_real_distribution<double> u(0, 1);
      for (double& v : values) v = u(rng_) < density ? u(rng_) - 2 : 0.0;
      if (density > 0 && density < 1) values[n / 2] = NAN;  // NaN is not zero
      // The reference: each nonzero element's multi-index, in C order.
      std::vector<std::vector<int64_t>> want(shape.size());
      for (int64_t i = 0; i < n; ++i) {
        if (values[i] == 0) continue;
        int64_t rest = i;
        for (size_t d = shape.size(); d-- > 0;) {
          want[d].push_back(rest % shape[d]);
          rest /= shape[d];
        }
      }
      for (const Array& a : Layouts(values, shape)) {
        const std::string what = absl::StrCat(shape.size(), "-D, density ", density);
        ASSERT_OK_AND_ASSIGN(std::vector<Array> got, Nonzero(a));
        ASSERT_EQ(got.size(), shape.size()) << what;
        for (size_t d = 0; d < shape.size(); ++d) {
          EXPECT_EQ(got[d].info().dtype(), v1::DTYPE_INT64) << what;
          EXPECT_EQ(*got[d].Download<int64_t>(), want[d]) << what << ", axis " << d;
        }
      }
    }
  }
  // A bool mask is its own mask.
  const bool mask[] = {true, false, false, true, true, false};
  ASSERT_OK_AND_ASSIGN(Array b, client().Upload<bool>(std::span<const bool>(mask), {2, 3},
                                                      {Split(2, 0, 2, {dev(0), dev(1)})}));
  ASSERT_OK_AND_ASSIGN(std::vector<Array> got, Nonzero(b));
  EXPECT_EQ(*got[0].Download<int64_t>(), (std::vector<int64_t>{0, 1, 1}));
  EXPECT_EQ(*got[1].Download<int64_t>(), (std::vector<int64_t>{0, 0, 1}));
}

TEST_P(SearchFunctionsTest, UniqueValuesAndCountsMatchTheHost) {
  std::vector<int32_t> ints(7 * 11);
  for (int32_t& v : ints) v = static_cast<int32_t>(rng_() % 13) - 6;
  std::map<int32_t, int64_t> int_counts;
  for (int32_t v : ints) ++int_counts[v];
  for (const Array& a : Layouts(ints, {7, 11})) {
    ASSERT_OK_AND_ASSIGN(UniqueCountsResult got, UniqueCounts(a));
    std::vector<int32_t> values;
    std::vector<int64_t> counts;
    for (const auto& [v, c] : int_counts) {
      values.push_back(v);
      counts.push_back(c);
    }
    EXPECT_EQ(*got.values.Download<int32_t>(), values);
    EXPECT_EQ(*got.counts.Download<int64_t>(), counts);
    ASSERT_OK_AND_ASSIGN(Array only, UniqueValues(a));
    EXPECT_EQ(*only.Download<int32_t>(), values);
  }
  // Floats: -0.0 and 0.0 one value, each NaN its own (last).
  const std::vector<double> floats = {2.5, NAN, -0.0, 1.0, 0.0, 2.5, NAN, -7.0};
  for (const Array& a : Layouts(floats, {8})) {
    ASSERT_OK_AND_ASSIGN(UniqueCountsResult got, UniqueCounts(a));
    ASSERT_OK_AND_ASSIGN(std::vector<double> values, got.values.Download<double>());
    ASSERT_EQ(values.size(), 6u);
    EXPECT_EQ(std::vector<double>(values.begin(), values.begin() + 4),
              (std::vector<double>{-7.0, 0.0, 1.0, 2.5}));
    EXPECT_TRUE(std::isnan(values[4]) && std::isnan(values[5]));
    EXPECT_EQ(*got.counts.Download<int64_t>(), (std::vector<int64_t>{1, 2, 1, 2, 1, 1}));
  }
}

TEST_P(SearchFunctionsTest, MaskedGetMatchesTheHost) {
  const std::vector<int64_t> shape = {9, 7};
  std::vector<double> values(63);
  std::uniform_real_distribution<double> u(-1, 1);
  for (double& v : values) v = u(rng_);
  // The mask is values > threshold: none, some and all of the elements.
  for (double threshold : {2.0, 0.3, -2.0}) {
    std::vector<double> want;
    for (double v : values) {
      if (v > threshold) want.push_back(v);
    }
    for (const Array& a : Layouts(values, shape)) {
      ASSERT_OK_AND_ASSIGN(Array mask, Ufunc(v1::ELEMENTWISE_OP_GREATER, {a, threshold}));
      ASSERT_OK_AND_ASSIGN(Array got, MaskedGet(a, mask));
      EXPECT_EQ(got.shape(), (std::vector<int64_t>{static_cast<int64_t>(want.size())}));
      EXPECT_EQ(*got.Download<double>(), want) << "threshold " << threshold;
    }
  }
  ASSERT_OK_AND_ASSIGN(Array a, client().Upload<double>(values, shape, {OnDevice(2, dev(0))}));
  absl::StatusOr<Array> not_bool = MaskedGet(a, a);
  EXPECT_EQ(not_bool.status().code(), absl::StatusCode::kInvalidArgument) << not_bool.status();
  EXPECT_TRUE(absl::StartsWith(not_bool.status().message(), "mask:")) << not_bool.status();
  ASSERT_OK_AND_ASSIGN(
      Array row, client().Upload<double>(std::vector<double>(7, 1.0), {7}, {OnDevice(1, dev(0))}));
  ASSERT_OK_AND_ASSIGN(Array row_mask, Ufunc(v1::ELEMENTWISE_OP_GREATER, {row, 0.0}));
  absl::StatusOr<Array> wrong_shape = MaskedGet(a, row_mask);
  EXPECT_EQ(wrong_shape.status().code(), absl::StatusCode::kInvalidArgument)
      << wrong_shape.status();
}

// UniqueInverse and UniqueAll against the host: values ascending; inverse_indices of a's shape
// rebuild a through values; indices are first occurrences; counts add up. Repeated integers in
// three layouts, floats with NaNs (each its own value) and signed zeros (one value), and empty.
TEST_P(SearchFunctionsTest, UniqueInverseAndAllMatchTheHost) {
  std::vector<int32_t> ints(7 * 11);
  for (int32_t& v : ints) v = static_cast<int32_t>(rng_() % 13) - 6;
  std::vector<int32_t> want_values = ints;
  std::sort(want_values.begin(), want_values.end());
  want_values.erase(std::unique(want_values.begin(), want_values.end()), want_values.end());
  for (const Array& a : Layouts(ints, {7, 11})) {
    ASSERT_OK_AND_ASSIGN(UniqueAllResult all, UniqueAll(a));
    ASSERT_OK_AND_ASSIGN(std::vector<int32_t> values, all.values.Download<int32_t>());
    EXPECT_EQ(values, want_values);
    EXPECT_EQ(all.inverse_indices.shape(), (std::vector<int64_t>{7, 11}));
    ASSERT_OK_AND_ASSIGN(std::vector<int64_t> inverse, all.inverse_indices.Download<int64_t>());
    ASSERT_OK_AND_ASSIGN(std::vector<int64_t> indices, all.indices.Download<int64_t>());
    ASSERT_OK_AND_ASSIGN(std::vector<int64_t> counts, all.counts.Download<int64_t>());
    ASSERT_EQ(inverse.size(), ints.size());
    ASSERT_EQ(indices.size(), values.size());
    ASSERT_EQ(counts.size(), values.size());
    std::vector<int64_t> seen(values.size(), 0);
    for (size_t i = 0; i < ints.size(); ++i) {
      ASSERT_GE(inverse[i], 0);
      ASSERT_LT(inverse[i], static_cast<int64_t>(values.size()));
      EXPECT_EQ(values[inverse[i]], ints[i]) << i;
      ++seen[inverse[i]];
    }
    EXPECT_EQ(counts, seen);
    for (size_t k = 0; k < values.size(); ++k) {
      const auto first = std::find(ints.begin(), ints.end(), values[k]) - ints.begin();
      EXPECT_EQ(indices[k], first) << k;
    }
    ASSERT_OK_AND_ASSIGN(UniqueInverseResult inv, UniqueInverse(a));
    EXPECT_EQ(*inv.values.Download<int32_t>(), want_values);
    EXPECT_EQ(*inv.inverse_indices.Download<int64_t>(), inverse);
  }
  const std::vector<double> floats = {2.5, NAN, -0.0, 1.0, 0.0, 2.5, NAN, -7.0};
  for (const Array& a : Layouts(floats, {8})) {
    ASSERT_OK_AND_ASSIGN(UniqueAllResult all, UniqueAll(a));
    ASSERT_OK_AND_ASSIGN(std::vector<double> values, all.values.Download<double>());
    ASSERT_EQ(values.size(), 6u);
    EXPECT_EQ(std::vector<double>(values.begin(), values.begin() + 4),
              (std::vector<double>{-7.0, 0.0, 1.0, 2.5}));
    EXPECT_EQ(*all.counts.Download<int64_t>(), (std::vector<int64_t>{1, 2, 1, 2, 1, 1}));
    EXPECT_EQ(*all.indices.Download<int64_t>(), (std::vector<int64_t>{7, 2, 3, 0, 1, 6}));
    // Each NaN its own value, in order; -0.0 and 0.0 the same.
    EXPECT_EQ(*all.inverse_indices.Download<int64_t>(),
              (std::vector<int64_t>{3, 4, 1, 2, 1, 3, 5, 0}));
  }
  ASSERT_OK_AND_ASSIGN(Array empty, client().Create({0, 3}, v1::DTYPE_FLOAT32, {}));
  ASSERT_OK_AND_ASSIGN(UniqueAllResult none, UniqueAll(empty));
  EXPECT_EQ(none.values.shape(), (std::vector<int64_t>{0}));
  EXPECT_EQ(none.inverse_indices.shape(), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(none.counts.shape(), (std::vector<int64_t>{0}));
}

// a[mask] = value in place against the host: a scalar, a one-element array, one value per
// selected element (through the running count), none selected; then the refusals by name.
TEST_P(SearchFunctionsTest, MaskedSetMatchesTheHost) {
  const std::vector<int64_t> shape = {9, 7};
  std::vector<double> values(63);
  std::uniform_real_distribution<double> u(-1, 1);
  for (double& v : values) v = u(rng_);
  for (double threshold : {0.3, 2.0}) {
    std::vector<double> selected;
    for (double v : values) {
      if (v > threshold) selected.push_back(v);
    }
    const int64_t count = static_cast<int64_t>(selected.size());
    for (Array& a : Layouts(values, shape)) {
      const std::string handle = a.handle();
      ASSERT_OK_AND_ASSIGN(Array mask, Ufunc(v1::ELEMENTWISE_OP_GREATER, {a, threshold}));
      // One value per selected element: 100 + its rank among them.
      std::vector<double> per(count);
      for (int64_t i = 0; i < count; ++i) per[i] = 100.0 + static_cast<double>(i);
      ASSERT_OK_AND_ASSIGN(Array per_array,
                           client().Upload<double>(per, {count}, {OnDevice(1, dev(2))}));
      ASSERT_OK(MaskedSet(a, mask, per_array));
      std::vector<double> want = values;
      int64_t rank = 0;
      for (double& v : want) {
        if (v > threshold) v = 100.0 + static_cast<double>(rank++);
      }
      EXPECT_EQ(a.handle(), handle);
      EXPECT_EQ(*a.Download<double>(), want) << "threshold " << threshold;
      // A scalar, then a one-element array, to every selected element.
      ASSERT_OK(MaskedSet(a, mask, -5.0));
      for (double& v : want) {
        if (v >= 100.0) v = -5.0;
      }
      EXPECT_EQ(*a.Download<double>(), want);
      ASSERT_OK_AND_ASSIGN(
          Array one, client().Upload<double>(std::vector<double>{7.0}, {1}, {OnDevice(1, dev(0))}));
      ASSERT_OK(MaskedSet(a, mask, one));
      for (double& v : want) {
        if (v == -5.0) v = 7.0;
      }
      EXPECT_EQ(*a.Download<double>(), want);
    }
  }
  ASSERT_OK_AND_ASSIGN(Array a, client().Upload<double>(values, shape, {OnDevice(2, dev(0))}));
  ASSERT_OK_AND_ASSIGN(Array mask, Ufunc(v1::ELEMENTWISE_OP_GREATER, {a, 0.0}));
  const absl::Status not_bool = MaskedSet(a, a, 1.0);
  EXPECT_EQ(not_bool.code(), absl::StatusCode::kInvalidArgument) << not_bool;
  EXPECT_TRUE(absl::StartsWith(not_bool.message(), "mask:")) << not_bool;
  ASSERT_OK_AND_ASSIGN(Array three, client().Upload<double>(std::vector<double>{1, 2, 3}, {3},
                                                            {OnDevice(1, dev(0))}));
  const absl::Status wrong_length = MaskedSet(a, mask, three);
  EXPECT_EQ(wrong_length.code(), absl::StatusCode::kInvalidArgument) << wrong_length;
  EXPECT_TRUE(absl::StartsWith(wrong_length.message(), "value:")) << wrong_length;
  EXPECT_EQ(*a.Download<double>(), values);  // untouched by the refusals
}

// Complex values: in NumPy's order (real part, then imaginary), equal numbers one value; counts,
// first occurrences and inverse indices as for real ones.
TEST_P(SearchFunctionsTest, ComplexUniqueFunctionsMatchTheHost) {
  using C = std::complex<double>;
  const std::vector<C> z = {{1, 2}, {0, -1}, {1, 2}, {3, 0}, {-2, 0}, {0, -1}, {1, 2}, {5, 2}};
  for (const Array& a : Layouts(z, {2, 4})) {
    ASSERT_OK_AND_ASSIGN(UniqueAllResult all, UniqueAll(a));
    EXPECT_EQ(*all.values.Download<C>(),
              (std::vector<C>{{-2, 0}, {0, -1}, {1, 2}, {3, 0}, {5, 2}}));
    EXPECT_EQ(*all.counts.Download<int64_t>(), (std::vector<int64_t>{1, 2, 3, 1, 1}));
    EXPECT_EQ(*all.indices.Download<int64_t>(), (std::vector<int64_t>{4, 1, 0, 3, 7}));
    EXPECT_EQ(*all.inverse_indices.Download<int64_t>(),
              (std::vector<int64_t>{2, 1, 2, 3, 0, 1, 2, 4}));
    ASSERT_OK_AND_ASSIGN(UniqueCountsResult counts, UniqueCounts(a));
    EXPECT_EQ(*counts.values.Download<C>(), *all.values.Download<C>());
    EXPECT_EQ(*counts.counts.Download<int64_t>(), (std::vector<int64_t>{1, 2, 3, 1, 1}));
  }
}

// More distinct values than one take of positions holds (8,192), over several devices.
TEST_P(SearchFunctionsTest, ManyDistinctValuesAreGatheredInBatches) {
  const int64_t n = 30000;
  std::vector<int64_t> values(n);
  for (int64_t& v : values) v = static_cast<int64_t>(rng_() % 20000);
  std::vector<int64_t> want = values;
  std::sort(want.begin(), want.end());
  want.erase(std::unique(want.begin(), want.end()), want.end());
  ASSERT_GT(want.size(), 8192u);
  ASSERT_OK_AND_ASSIGN(
      Array a, client().Upload<int64_t>(values, {n}, {Split(1, 0, n, {dev(0), dev(1), dev(2)})}));
  ASSERT_OK_AND_ASSIGN(Array got, UniqueValues(a));
  EXPECT_EQ(*got.Download<int64_t>(), want);
}

// numpy.repeat of a (6, 5) float64 array along each axis with a count per element (zeros among
// them), the counts given here and held in the daemon, in three layouts; all-zero counts give an
// empty axis; one count repeats every element; more positions than one gather batch.
TEST_P(SearchFunctionsTest, RepeatWithACountPerElementMatchesTheHost) {
  const std::vector<int64_t> shape = {6, 5};
  std::vector<double> values(30);
  std::uniform_real_distribution<double> u(-1, 1);
  for (double& v : values) v = u(rng_);
  // NumPy's repeat on the host: row-major (6, 5), along `axis`.
  auto host_repeat = [&](const std::vector<int64_t>& counts, int axis) {
    std::vector<double> out;
    for (int64_t i = 0; i < shape[0]; ++i) {
      for (int64_t r = 0; r < (axis == 0 ? counts[i] : 1); ++r) {
        for (int64_t j = 0; j < shape[1]; ++j) {
          for (int64_t c = 0; c < (axis == 1 ? counts[j] : 1); ++c) {
            out.push_back(values[i * shape[1] + j]);
          }
        }
      }
    }
    return out;
  };
  for (int axis : {0, 1, -1}) {
    const int d = axis < 0 ? axis + 2 : axis;
    std::vector<int64_t> counts(shape[d]);
    for (int64_t& c : counts) c = static_cast<int64_t>(rng_() % 4);  // 0 to 3
    counts[1] = 0;
    const std::vector<double> want = host_repeat(counts, d);
    int64_t total = 0;
    for (int64_t c : counts) total += c;
    std::vector<int64_t> want_shape = shape;
    want_shape[d] = total;
    ASSERT_OK_AND_ASSIGN(Array held,
                         client().Upload<int64_t>(counts, {shape[d]}, {OnDevice(1, dev(1))}));
    for (const Array& a : Layouts(values, shape)) {
      SCOPED_TRACE(absl::StrCat("axis ", axis, ", layout ", a.info().index_map().DebugString()));
      ASSERT_OK_AND_ASSIGN(Array listed, Repeat(a, counts, axis));
      EXPECT_EQ(listed.shape(), want_shape);
      EXPECT_EQ(*listed.Download<double>(), want);
      ASSERT_OK_AND_ASSIGN(Array from_held, Repeat(a, held, axis));
      EXPECT_EQ(from_held.shape(), want_shape);
      EXPECT_EQ(*from_held.Download<double>(), want);
    }
  }
  ASSERT_OK_AND_ASSIGN(Array a, client().Upload<double>(values, shape, {OnDevice(2, dev(0))}));
  // All zero: an empty axis.
  const std::vector<int64_t> zeros(5, 0);
  ASSERT_OK_AND_ASSIGN(Array none, Repeat(a, zeros, 1));
  EXPECT_EQ(none.shape(), (std::vector<int64_t>{6, 0}));
  ASSERT_OK_AND_ASSIGN(Array held_zeros,
                       client().Upload<int64_t>(zeros, {5}, {OnDevice(1, dev(0))}));
  ASSERT_OK_AND_ASSIGN(Array none_held, Repeat(a, held_zeros, 1));
  EXPECT_EQ(none_held.shape(), (std::vector<int64_t>{6, 0}));
  // One count (here, and held as a 0-d int32 array) repeats every element.
  const std::vector<int64_t> twice_each = {2, 2, 2, 2, 2};
  ASSERT_OK_AND_ASSIGN(Array one, Repeat(a, std::vector<int64_t>{2}, 1));
  EXPECT_EQ(*one.Download<double>(), host_repeat(twice_each, 1));
  ASSERT_OK_AND_ASSIGN(
      Array two, client().Upload<int32_t>(std::vector<int32_t>{2}, {}, {OnDevice(0, dev(0))}));
  ASSERT_OK_AND_ASSIGN(Array one_held, Repeat(a, two, 1));
  EXPECT_EQ(*one_held.Download<double>(), host_repeat(twice_each, 1));
  // More positions than one gather batch (8192), over three devices.
  const int64_t n = 4000;  // about 10,000 positions
  std::vector<int64_t> row(n), many(n);
  std::vector<int64_t> want;
  for (int64_t i = 0; i < n; ++i) {
    row[i] = static_cast<int64_t>(rng_() % 1000000);
    many[i] = static_cast<int64_t>(rng_() % 6);
    want.insert(want.end(), many[i], row[i]);
  }
  ASSERT_GT(want.size(), 8192u);
  ASSERT_OK_AND_ASSIGN(
      Array r, client().Upload<int64_t>(row, {n}, {Split(1, 0, n, {dev(0), dev(1), dev(2)})}));
  ASSERT_OK_AND_ASSIGN(Array held_many,
                       client().Upload<int64_t>(many, {n}, {Split(1, 0, n, {dev(2), dev(0)})}));
  ASSERT_OK_AND_ASSIGN(Array long_listed, Repeat(r, many, 0));
  EXPECT_EQ(*long_listed.Download<int64_t>(), want);
  ASSERT_OK_AND_ASSIGN(Array long_held, Repeat(r, held_many, 0));
  EXPECT_EQ(*long_held.Download<int64_t>(), want);
}

TEST_P(SearchFunctionsTest, RepeatRefusesBadCountsByName) {
  ASSERT_OK_AND_ASSIGN(Array a, client().Upload<double>(std::vector<double>(12, 1.0), {3, 4},
                                                        {OnDevice(2, dev(0))}));
  auto refused = [](const absl::StatusOr<Array>& got, const std::string& field) {
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << got.status();
    EXPECT_TRUE(absl::StartsWith(got.status().message(), field + ":")) << got.status();
  };
  refused(Repeat(a, std::vector<int64_t>{1, 2}, 0), "repeats");      // 2 counts for 3
  refused(Repeat(a, std::vector<int64_t>{1, -1, 2}, 0), "repeats");  // negative
  refused(Repeat(a, std::vector<int64_t>{1, 1, 1}, 2), "axis");      // no axis 2
  ASSERT_OK_AND_ASSIGN(Array negative, client().Upload<int64_t>(std::vector<int64_t>{1, -2, 1}, {3},
                                                                {OnDevice(1, dev(1))}));
  refused(Repeat(a, negative, 0), "repeats");
  ASSERT_OK_AND_ASSIGN(Array floats, client().Upload<double>(std::vector<double>{1, 2, 1}, {3},
                                                             {OnDevice(1, dev(1))}));
  refused(Repeat(a, floats, 0), "repeats");
  refused(Repeat(a, negative, 1), "repeats");  // 3 counts for 4
}

TEST_P(SearchFunctionsTest, BadArgumentsAreRefusedByName) {
  ASSERT_OK_AND_ASSIGN(Array scalar,
                       client().Upload<double>(std::vector<double>{1}, {}, {OnDevice(0, dev(0))}));
  absl::StatusOr<std::vector<Array>> nz = Nonzero(scalar);
  EXPECT_EQ(nz.status().code(), absl::StatusCode::kInvalidArgument) << nz.status();
  EXPECT_TRUE(absl::StartsWith(nz.status().message(), "a:")) << nz.status();
  // Empty arrays: no values, no counts.
  ASSERT_OK_AND_ASSIGN(Array empty,
                       client().Upload<double>(std::vector<double>{}, {0, 4}, {MakeIndexMap({})}));
  ASSERT_OK_AND_ASSIGN(UniqueCountsResult none, UniqueCounts(empty));
  EXPECT_EQ(none.values.shape(), (std::vector<int64_t>{0}));
  EXPECT_EQ(none.counts.shape(), (std::vector<int64_t>{0}));
  ASSERT_OK_AND_ASSIGN(std::vector<Array> no_positions, Nonzero(empty));
  EXPECT_EQ(no_positions.size(), 2u);
  EXPECT_EQ(no_positions[0].shape(), (std::vector<int64_t>{0}));
}

DISTARRAY_INSTANTIATE_BACKENDS(SearchFunctionsTest);

}  // namespace
}  // namespace distarray::testing
