// The C++ SDK's composed NumPy functions (distarray/array_functions.h) against a host reference
// on fresh random float64 data, rows split and columns split over devices: flip, roll,
// expand_dims, squeeze, moveaxis, diff, tril, triu (also of bool and int32 arrays, which keep
// their dtype), outer, variance and std (also with a correction past N); the fills helpers
// against their definitions; and the refusals of bad axes and arguments by name.
#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "distarray/array_functions.h"
#include "distarray/index_maps.h"
#include "tests/support/backend_fixture.h"
#include "tests/support/compute_reference.h"
#include "tests/support/server_state.h"

namespace distarray::testing {
namespace {

constexpr int64_t kRows = 6, kCols = 7;

// A kRows x kCols matrix, row-major, and its elements by (row, column).
struct Matrix {
  std::vector<double> v;
  double at(int64_t r, int64_t c) const { return v[r * kCols + c]; }
};

class ArrayFunctionsTest : public BystanderTest {
 protected:
  void SetUp() override {
    BystanderTest::SetUp();
    if (IsSkipped()) return;
    std::mt19937_64 rng(91);
    std::uniform_real_distribution<double> u(-1, 1);
    for (int64_t i = 0; i < kRows * kCols; ++i) host_.v.push_back(u(rng));
  }

  // The matrix split by rows, then by columns.
  std::vector<std::pair<std::string, Array>> Layouts() {
    std::vector<int> on = {dev(0)};
    if (devices() > 1) on.push_back(dev(1));
    std::vector<std::pair<std::string, Array>> out;
    for (int axis : {0, 1}) {
      absl::StatusOr<Array> a = client().Upload<double>(
          host_.v, {kRows, kCols}, {Split(2, axis, axis == 0 ? kRows : kCols, on)});
      EXPECT_TRUE(a.ok()) << a.status();
      if (a.ok()) out.emplace_back(axis == 0 ? "rows split" : "columns split", *std::move(a));
    }
    return out;
  }

  // Checks `got` is `shape` with element i equal to want(i) (C order) within `tolerance`.
  static void Expect(const absl::StatusOr<Array>& got, const std::vector<int64_t>& shape,
                     const std::function<double(int64_t)>& want, const std::string& what,
                     double tolerance = 0) {
    ASSERT_TRUE(got.ok()) << what << ": " << got.status();
    EXPECT_EQ(got->shape(), shape) << what;
    ASSERT_OK_AND_ASSIGN(std::vector<double> values, got->Download<double>());
    for (size_t i = 0; i < values.size(); ++i) {
      EXPECT_NEAR(values[i], want(static_cast<int64_t>(i)), tolerance) << what << " at " << i;
    }
  }

  Matrix host_;
};

TEST_P(ArrayFunctionsTest, ShapeFunctionsMatchTheHost) {
  for (const auto& [layout, a] : Layouts()) {
    const Matrix& m = host_;
    Expect(
        Flip(a), {kRows, kCols},
        [&](int64_t i) { return m.at(kRows - 1 - i / kCols, kCols - 1 - i % kCols); },
        layout + " flip");
    Expect(
        Flip(a, {1}), {kRows, kCols},
        [&](int64_t i) { return m.at(i / kCols, kCols - 1 - i % kCols); }, layout + " flip axis 1");
    for (int64_t shift : {2, -3, 15, 0}) {
      Expect(
          Roll(a, shift, 1), {kRows, kCols},
          [&](int64_t i) {
            const int64_t c = ((i % kCols - shift) % kCols + kCols) % kCols;
            return m.at(i / kCols, c);
          },
          absl::StrCat(layout, " roll ", shift, " axis 1"));
    }
    Expect(
        Roll(a, 1, 0), {kRows, kCols},
        [&](int64_t i) { return m.at((i / kCols + kRows - 1) % kRows, i % kCols); },
        layout + " roll 1 axis 0");
    const auto same = [&](int64_t i) { return m.v[i]; };
    Expect(ExpandDims(a, 1), {kRows, 1, kCols}, same, layout + " expand_dims 1");
    Expect(ExpandDims(a, -1), {kRows, kCols, 1}, same, layout + " expand_dims -1");
    ASSERT_OK_AND_ASSIGN(Array expanded, ExpandDims(a, 0));
    Expect(Squeeze(expanded), {kRows, kCols}, same, layout + " squeeze");
    Expect(Squeeze(expanded, {0}), {kRows, kCols}, same, layout + " squeeze axis 0");
    Expect(
        MoveAxis(a, 0, 1), {kCols, kRows}, [&](int64_t i) { return m.at(i % kRows, i / kRows); },
        layout + " moveaxis");
    Expect(
        Diff(a), {kRows, kCols - 1},
        [&](int64_t i) {
          const int64_t r = i / (kCols - 1), c = i % (kCols - 1);
          return m.at(r, c + 1) - m.at(r, c);
        },
        layout + " diff", 1e-15);
    Expect(
        Diff(a, 2, 0), {kRows - 2, kCols},
        [&](int64_t i) {
          const int64_t r = i / kCols, c = i % kCols;
          return m.at(r + 2, c) - 2 * m.at(r + 1, c) + m.at(r, c);
        },
        layout + " diff 2 axis 0", 1e-15);
    for (int64_t k : {0, 2, -1}) {
      Expect(
          Tril(a, k), {kRows, kCols},
          [&](int64_t i) { return i % kCols - i / kCols <= k ? m.v[i] : 0.0; },
          absl::StrCat(layout, " tril ", k));
      Expect(
          Triu(a, k), {kRows, kCols},
          [&](int64_t i) { return i % kCols - i / kCols >= k ? m.v[i] : 0.0; },
          absl::StrCat(layout, " triu ", k));
    }
  }
  ExpectBystanderIntact();
}

// tril and triu keep the dtype: NumPy's tril of a bool array is bool.
TEST_P(ArrayFunctionsTest, TrianglesKeepTheDtype) {
  std::mt19937_64 rng(92);
  std::bernoulli_distribution coin(0.5);
  std::vector<bool> flags_host;
  std::vector<int32_t> ints_host;
  for (int64_t i = 0; i < kRows * kCols; ++i) {
    flags_host.push_back(coin(rng));
    ints_host.push_back(static_cast<int32_t>(rng() % 100) - 50);
  }
  std::unique_ptr<bool[]> flags(new bool[flags_host.size()]);
  std::copy(flags_host.begin(), flags_host.end(), flags.get());
  const v1::IndexMap map = Split(2, 0, kRows, {dev(0)});
  ASSERT_OK_AND_ASSIGN(Array b,
                       client().Upload<bool>(std::span<const bool>(flags.get(), flags_host.size()),
                                             {kRows, kCols}, {map}));
  ASSERT_OK_AND_ASSIGN(Array n, client().Upload<int32_t>(ints_host, {kRows, kCols}, {map}));
  ASSERT_OK_AND_ASSIGN(Array tb, Tril(b, 1));
  EXPECT_EQ(tb.info().dtype(), v1::DTYPE_BOOL);
  ASSERT_OK_AND_ASSIGN(std::vector<bool> got_b, tb.Download<bool>());
  ASSERT_OK_AND_ASSIGN(Array tn, Triu(n, -1));
  EXPECT_EQ(tn.info().dtype(), v1::DTYPE_INT32);
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> got_n, tn.Download<int32_t>());
  for (int64_t i = 0; i < kRows * kCols; ++i) {
    const int64_t above = i % kCols - i / kCols;
    EXPECT_EQ(got_b[i], above <= 1 && flags_host[i]) << i;
    EXPECT_EQ(got_n[i], above >= -1 ? ints_host[i] : 0) << i;
  }
  ExpectBystanderIntact();
}

TEST_P(ArrayFunctionsTest, StatisticsAndOuterMatchTheHost) {
  for (const auto& [layout, a] : Layouts()) {
    const Matrix& m = host_;
    // Along axis 0 (columns' variance) with correction 1, and over everything with 0.
    std::vector<double> var_cols(kCols);
    for (int64_t c = 0; c < kCols; ++c) {
      long double mean = 0;
      for (int64_t r = 0; r < kRows; ++r) mean += m.at(r, c);
      mean /= kRows;
      long double s = 0;
      for (int64_t r = 0; r < kRows; ++r) s += (m.at(r, c) - mean) * (m.at(r, c) - mean);
      var_cols[c] = static_cast<double>(s / (kRows - 1));
    }
    Expect(
        Variance(a, {0}, 1.0), {kCols}, [&](int64_t i) { return var_cols[i]; },
        layout + " var axis 0 correction 1", 1e-14);
    Expect(
        Std(a, {0}, 1.0, /*keepdims=*/true), {1, kCols},
        [&](int64_t i) { return std::sqrt(var_cols[i]); }, layout + " std keepdims", 1e-14);
    long double mean = 0;
    for (double x : m.v) mean += x;
    mean /= static_cast<long double>(m.v.size());
    long double s = 0;
    for (double x : m.v) s += (x - mean) * (x - mean);
    const double var_all = static_cast<double>(s / static_cast<long double>(m.v.size()));
    Expect(
        Variance(a), {}, [&](int64_t) { return var_all; }, layout + " var", 1e-14);

    // A correction past N: NumPy's divisor max(N - correction, 0) gives inf, never a negative.
    ASSERT_OK_AND_ASSIGN(Array past, Variance(a, {0}, kRows + 2.0));
    ASSERT_OK_AND_ASSIGN(std::vector<double> inf_values, past.Download<double>());
    for (double x : inf_values) EXPECT_TRUE(std::isinf(x) && x > 0) << layout << " " << x;

    // outer of a's first row and first column.
    ASSERT_OK_AND_ASSIGN(Array row, GetItem(a, {Index(int64_t{0})}));
    ASSERT_OK_AND_ASSIGN(Array column, GetItem(a, {Slice{}, Index(int64_t{0})}));
    Expect(
        Outer(row, column), {kCols, kRows},
        [&](int64_t i) { return m.at(0, i / kRows) * m.at(i % kRows, 0); }, layout + " outer");
  }
  ExpectBystanderIntact();
}

TEST_P(ArrayFunctionsTest, FillsHelpersMatchTheirDefinitions) {
  const ArrayOptions options{Split(2, 0, 4, {dev(0)}), v1::MODE_REPLICA, ""};
  const auto create = [&](const v1::Fill& fill) {
    return client().Create({4, 5}, v1::DTYPE_FLOAT64, options, fill);
  };
  Expect(
      create(fills::Arange(2.0, 0.5)), {4, 5}, [](int64_t i) { return 2.0 + 0.5 * i; }, "arange");
  Expect(
      create(fills::Linspace(-1.0, 1.0)), {4, 5}, [](int64_t i) { return -1.0 + i * 2.0 / 19; },
      "linspace", 1e-15);
  Expect(
      create(fills::Eye(1)), {4, 5}, [](int64_t i) { return i % 5 - i / 5 == 1 ? 1.0 : 0.0; },
      "eye 1");
  Expect(
      create(fills::Tri(-1)), {4, 5}, [](int64_t i) { return i % 5 - i / 5 <= -1 ? 1.0 : 0.0; },
      "tri -1");
  Expect(
      create(fills::Full(2.5)), {4, 5}, [](int64_t) { return 2.5; }, "full");
  // Random fills: in range, and the same seed gives the same values in another layout.
  ASSERT_OK_AND_ASSIGN(Array uniform, create(fills::Uniform(-2.0, 3.0, 7)));
  ASSERT_OK_AND_ASSIGN(std::vector<double> draws, uniform.Download<double>());
  for (double x : draws) EXPECT_TRUE(x >= -2.0 && x < 3.0) << x;
  std::vector<int> on = {dev(0)};
  if (devices() > 1) on.push_back(dev(1));
  ASSERT_OK_AND_ASSIGN(Array again, client().Create({4, 5}, v1::DTYPE_FLOAT64,
                                                    {Split(2, 1, 5, on), v1::MODE_REPLICA, ""},
                                                    fills::Uniform(-2.0, 3.0, 7)));
  EXPECT_EQ(*again.Download<double>(), draws);
  ASSERT_OK_AND_ASSIGN(Array normal, create(fills::Normal(10.0, 0.5, 8)));
  ASSERT_OK_AND_ASSIGN(std::vector<double> normals, normal.Download<double>());
  for (double x : normals) EXPECT_TRUE(std::abs(x - 10.0) < 5) << x;  // 10 sigma
  ASSERT_OK_AND_ASSIGN(
      Array integers, client().Create({4, 5}, v1::DTYPE_INT64, options, fills::Integers(-3, 4, 9)));
  ASSERT_OK_AND_ASSIGN(std::vector<int64_t> ints, integers.Download<int64_t>());
  for (int64_t x : ints) EXPECT_TRUE(x >= -3 && x < 4) << x;
  ExpectBystanderIntact();
}

TEST_P(ArrayFunctionsTest, BadArgumentsAreRefusedByName) {
  ASSERT_OK_AND_ASSIGN(
      Array a, client().Upload<double>(host_.v, {kRows, kCols}, {Split(2, 0, kRows, {dev(0)})}));
  const auto refused = [](const absl::StatusOr<Array>& got, const std::string& text) {
    EXPECT_TRUE(StatusIs(got.status(), absl::StatusCode::kInvalidArgument, {text})) << got.status();
  };
  refused(Flip(a, {2}), "axes: axis 2 is out of range for an array of 2 axes");
  refused(Flip(a, {1, -1}), "axes: axis -1 is listed twice");
  refused(Roll(a, 1, -3), "axis: axis -3 is out of range");
  refused(ExpandDims(a, 3), "axis: axis 3 is out of range for an array of 3 axes");
  refused(Squeeze(a, {0}), "axes: axis 0 has length 6 in shape (6, 7)");
  refused(MoveAxis(a, 0, 2), "destination: axis 2 is out of range");
  refused(Diff(a, -1), "n: -1 is negative");
  ASSERT_OK_AND_ASSIGN(Array row, GetItem(a, {Index(int64_t{0})}));
  refused(Tril(row), "a: tril takes arrays of at least two axes, not shape (7,)");
  refused(Outer(a, row), "outer takes two 1-D arrays, not shapes (6, 7) and (7,)");
  refused(Variance(a, {0}, -1.0), "correction: -1 is not a number >= 0");
  refused(Std(a, {0, 0}), "axes: axis 0 is listed twice");
  ASSERT_OK_AND_ASSIGN(Array expanded, ExpandDims(a, 0));
  refused(Squeeze(expanded, {0, -3}), "axes: axis -3 is listed twice");
  ExpectBystanderIntact();
}

DISTARRAY_INSTANTIATE_BACKENDS(ArrayFunctionsTest);

}  // namespace
}  // namespace distarray::testing
