// The generated fills (linspace, eye, tri, normal, integers) on every backend: deterministic ones
// against a host reference written from NumPy's definitions, random ones against each other over
// different layouts (values must not depend on the layout or the device count) and against their
// distribution's moments.
#include <cmath>
#include <random>

#include "tests/support/backend_fixture.h"
#include "tests/support/reference.h"

namespace distarray::testing {
namespace {

class FillsTest : public BackendTest {
 protected:
  // Two layouts of `shape` without gaps: one chunk on the last device, and a random map.
  std::vector<v1::IndexMap> Layouts(const Shape& shape, std::mt19937_64& rng) {
    TestMap one = {TestChunk{devices() - 1, {}}};
    for (int64_t n : shape) one[0].axes.push_back(AxisSlice{0, n, 1});
    return {ToProto(one, shape), ToProto(RandomMap(shape, devices(), rng, false), shape)};
  }
};

TEST_P(FillsTest, LinspaceMatchesNumPysRounding) {
  std::mt19937_64 rng(5);
  for (const int64_t n : {1, 2, 7, 1000}) {
    for (const bool endpoint : {true, false}) {
      const double start = -1.5, stop = 3.25;
      std::vector<double> want(n);
      const int64_t div = endpoint ? n - 1 : n;
      const double step = div > 0 ? (stop - start) / static_cast<double>(div) : 0;
      for (int64_t i = 0; i < n; ++i) want[i] = static_cast<double>(i) * step + start;
      if (endpoint && n > 1) want[n - 1] = stop;
      v1::Fill fill;
      fill.mutable_linspace()->set_start(start);
      fill.mutable_linspace()->set_stop(stop);
      fill.mutable_linspace()->set_endpoint(endpoint);
      for (const v1::IndexMap& map : Layouts({n}, rng)) {
        ASSERT_OK_AND_ASSIGN(Array a, client().Create({n}, v1::DTYPE_FLOAT64, {map}, fill));
        ASSERT_OK_AND_ASSIGN(std::vector<double> got, a.Download<double>());
        EXPECT_EQ(got, want) << "n " << n << " endpoint " << endpoint;
      }
    }
  }
}

TEST_P(FillsTest, EyeAndTriMarkTheirDiagonalsOverTheLastTwoAxes) {
  std::mt19937_64 rng(6);
  for (const Shape& shape : {Shape{5, 4}, Shape{6, 7}, Shape{2, 3, 3}}) {
    for (const int64_t k : {-2, 0, 1, 5}) {
      const int64_t rows = shape[shape.size() - 2], cols = shape.back();
      std::vector<float> eye(NumElements(shape));
      std::vector<bool> tri(NumElements(shape));
      for (int64_t i = 0; i < NumElements(shape); ++i) {
        const int64_t column = i % cols, row = (i / cols) % rows;
        eye[i] = column - row == k ? 1.0f : 0.0f;
        tri[i] = column - row <= k;
      }
      v1::Fill eye_fill, tri_fill;
      eye_fill.mutable_eye()->set_k(k);
      tri_fill.mutable_tri()->set_k(k);
      for (const v1::IndexMap& map : Layouts(shape, rng)) {
        ASSERT_OK_AND_ASSIGN(Array e, client().Create(shape, v1::DTYPE_FLOAT32, {map}, eye_fill));
        EXPECT_EQ(*e.Download<float>(), eye) << "k " << k;
        ASSERT_OK_AND_ASSIGN(Array t, client().Create(shape, v1::DTYPE_BOOL, {map}, tri_fill));
        EXPECT_EQ(*t.Download<bool>(), tri) << "k " << k;
      }
    }
  }
}

TEST_P(FillsTest, RandomDrawsDoNotDependOnTheLayout) {
  std::mt19937_64 rng(7);
  const Shape shape = {400, 500};
  const int64_t n = NumElements(shape);
  v1::Fill normal;
  normal.mutable_normal()->set_mean(2);
  normal.mutable_normal()->set_stddev(3);
  normal.mutable_normal()->set_seed(11);
  std::vector<std::vector<double>> draws;
  for (const v1::IndexMap& map : Layouts(shape, rng)) {
    ASSERT_OK_AND_ASSIGN(Array a, client().Create(shape, v1::DTYPE_FLOAT64, {map}, normal));
    ASSERT_OK_AND_ASSIGN(draws.emplace_back(), a.Download<double>());
  }
  EXPECT_EQ(draws[0], draws[1]);
  double sum = 0, squares = 0;
  for (double v : draws[0]) {
    ASSERT_TRUE(std::isfinite(v));
    sum += v;
    squares += v * v;
  }
  const double mean = sum / n, stddev = std::sqrt(squares / n - mean * mean);
  // 2e5 draws: the sample mean's standard error is 3 / 447 = 0.007.
  EXPECT_NEAR(mean, 2.0, 0.05);
  EXPECT_NEAR(stddev, 3.0, 0.05);

  v1::Fill integers;
  integers.mutable_integers()->set_low(-5);
  integers.mutable_integers()->set_high(7);
  integers.mutable_integers()->set_seed(3);
  std::vector<std::vector<int64_t>> ints;
  for (const v1::IndexMap& map : Layouts(shape, rng)) {
    ASSERT_OK_AND_ASSIGN(Array a, client().Create(shape, v1::DTYPE_INT64, {map}, integers));
    ASSERT_OK_AND_ASSIGN(ints.emplace_back(), a.Download<int64_t>());
  }
  EXPECT_EQ(ints[0], ints[1]);
  std::vector<int64_t> counts(12, 0);
  for (int64_t v : ints[0]) {
    ASSERT_GE(v, -5);
    ASSERT_LT(v, 7);
    ++counts[v + 5];
  }
  for (int64_t c : counts) EXPECT_NEAR(static_cast<double>(c), n / 12.0, n / 12.0 * 0.1);

  // The whole int64 range: both signs, and values far beyond what a double holds exactly.
  integers.mutable_integers()->set_low(std::numeric_limits<int64_t>::min());
  integers.mutable_integers()->set_high(std::numeric_limits<int64_t>::max());
  ASSERT_OK_AND_ASSIGN(Array wide,
                       client().Create(shape, v1::DTYPE_INT64, {Layouts(shape, rng)[0]}, integers));
  ASSERT_OK_AND_ASSIGN(std::vector<int64_t> w, wide.Download<int64_t>());
  int64_t negative = 0, odd = 0;
  for (int64_t v : w) {
    negative += v < 0;
    odd += v & 1;
  }
  EXPECT_NEAR(static_cast<double>(negative), n / 2.0, n * 0.01);
  EXPECT_NEAR(static_cast<double>(odd), n / 2.0, n * 0.01);
}

TEST_P(FillsTest, BadFillsNameTheirField) {
  v1::IndexMap map;
  map.add_chunks()->add_slices();
  v1::Fill fill;
  fill.mutable_normal()->set_stddev(1);
  absl::StatusOr<Array> a = client().Create({4}, v1::DTYPE_INT32, {map}, fill);
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(a.status().message(), "fill.normal: normal draws need a floating dtype, not int32");
  fill.mutable_normal()->set_stddev(-1);
  a = client().Create({4}, v1::DTYPE_FLOAT32, {map}, fill);
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
  fill.mutable_integers()->set_low(0);
  fill.mutable_integers()->set_high(300);
  a = client().Create({4}, v1::DTYPE_UINT8, {map}, fill);
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(a.status().message().find("fill.integers.high"), std::string::npos);
  fill.mutable_integers()->set_high(0);
  a = client().Create({4}, v1::DTYPE_INT64, {map}, fill);
  EXPECT_EQ(a.status().message(), "fill.integers: need low < high, got [0, 0)");
  fill.mutable_eye();
  a = client().Create({4}, v1::DTYPE_FLOAT32, {map}, fill);
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(a.status().message().find("fill.eye: needs an array of rank 2"), std::string::npos);
  fill.mutable_linspace()->set_stop(std::nan(""));
  a = client().Create({4}, v1::DTYPE_FLOAT32, {map}, fill);
  EXPECT_EQ(a.status().message(), "fill.linspace: start and stop must be finite");
}

DISTARRAY_INSTANTIATE_BACKENDS(FillsTest);

}  // namespace
}  // namespace distarray::testing
