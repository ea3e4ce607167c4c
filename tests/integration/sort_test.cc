// Sort and argsort (ManipulationSpec.sort) through the SDK, checked against a host reference
// (std::stable_sort in the array's own type, NaNs last ascending and first descending) on fresh
// random data: every axis of 2-D and 3-D arrays over row-split, column-split, overlapping, uneven
// and SUM-mode layouts; one long line split over several devices (sorted in blocks and merged
// between devices); every real dtype; ties (argsort must be stable); NaNs and infinities; the
// same ops as program statements; and the errors.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "distarray/graph.h"
#include "tests/support/backend_fixture.h"
#include "tests/support/reference.h"

namespace distarray::testing {
namespace {

namespace g = distarray::graph;

template <typename T>
bool IsNan(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

// Whether `a` sorts before `b`: ascending with NaNs last, descending the exact reverse.
template <typename T>
bool Before(T a, T b, bool descending) {
  if (descending) std::swap(a, b);
  if (IsNan(b)) return !IsNan(a);
  if (IsNan(a)) return false;
  return a < b;
}

// The stable argsort of every line along `axis` of a C-order array of `shape`, as positions
// along the axis, in the array's C order.
template <typename T>
std::vector<int64_t> RefArgsort(const std::vector<T>& values, const Shape& shape, int axis,
                                bool descending) {
  const int rank = static_cast<int>(shape.size());
  if (axis < 0) axis += rank;
  int64_t inner = 1;
  for (int d = axis + 1; d < rank; ++d) inner *= shape[d];
  const int64_t length = shape[axis];
  const int64_t outer = NumElements(shape) / (length * inner);
  std::vector<int64_t> out(values.size());
  std::vector<int64_t> order(length);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return (o * length + k) * inner + i; };
      std::iota(order.begin(), order.end(), int64_t{0});
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return Before(values[at(a)], values[at(b)], descending);
      });
      for (int64_t k = 0; k < length; ++k) out[at(k)] = order[k];
    }
  }
  return out;
}

// The sorted values that argsort `order` gives (positions along `axis`).
template <typename T>
std::vector<T> Gathered(const std::vector<T>& values, const std::vector<int64_t>& order,
                        const Shape& shape, int axis) {
  const int rank = static_cast<int>(shape.size());
  if (axis < 0) axis += rank;
  int64_t inner = 1;
  for (int d = axis + 1; d < rank; ++d) inner *= shape[d];
  const int64_t length = shape[axis];
  std::vector<T> out(values.size());
  for (size_t e = 0; e < values.size(); ++e) {
    const int64_t k = (static_cast<int64_t>(e) / inner) % length;
    out[e] = values[e + (order[e] - k) * inner];
  }
  return out;
}

// Equal as sort results: the same value, NaN for NaN.
template <typename T>
bool SameValue(T a, T b) {
  return (IsNan(a) && IsNan(b)) || a == b;
}

class SortTest : public BackendTest {
 protected:
  struct Layout {
    std::string name;
    v1::IndexMap map;
  };

  // Every chunk holding whole lines along some axes and not others: split along the first and the
  // last axes, overlapping copies, and uneven blocks over three devices.
  std::vector<Layout> Layouts(const Shape& shape) const {
    const int rank = static_cast<int>(shape.size());
    const int64_t n = shape[0];
    std::vector<Layout> layouts = {
        {"rows", Split(rank, 0, n, {dev(0), dev(1)})},
        {"last axis", Split(rank, rank - 1, shape[rank - 1], {dev(0), dev(1), dev(2)})},
        {"replicated",
         MakeIndexMap({Band(dev(0), rank, 0, 0, (2 * n + 2) / 3), Band(dev(1), rank, 0, n / 3, n),
                       Band(dev(2), rank, rank - 1, 0, shape[rank - 1] / 2)})},
        {"uneven", MakeIndexMap({Band(dev(1), rank, 0, 0, 1), Band(dev(0), rank, 0, 1, n - 2),
                                 Band(dev(2), rank, 0, n - 2, n)})},
    };
    return layouts;
  }

  // Sorts and argsorts `a` (values `host`) along `axis` both ways and checks both against the
  // reference, and that the result has a's layout.
  template <typename T>
  void ExpectSorts(const Array& a, const std::vector<T>& host, const Shape& shape, int axis,
                   const std::string& what) const {
    for (bool descending : {false, true}) {
      const std::string w = absl::StrCat(what, " axis ", axis, descending ? " descending" : "");
      const std::vector<int64_t> order = RefArgsort(host, shape, axis, descending);
      const std::vector<T> sorted = Gathered(host, order, shape, axis);

      absl::StatusOr<Array> s = Sort(a, axis, descending);
      ASSERT_TRUE(s.ok()) << w << ": " << s.status();
      EXPECT_EQ(s->shape(), shape) << w;
      EXPECT_EQ(s->info().dtype(), a.info().dtype()) << w;
      EXPECT_EQ(s->info().mode(), v1::MODE_REPLICA) << w;
      if (a.info().mode() == v1::MODE_REPLICA) {
        EXPECT_EQ(s->info().index_map().chunks_size(), a.info().index_map().chunks_size()) << w;
      }
      absl::StatusOr<std::vector<T>> got = s->Download<T>();
      ASSERT_TRUE(got.ok()) << w << ": " << got.status();
      ASSERT_EQ(got->size(), sorted.size()) << w;
      for (size_t i = 0; i < sorted.size(); ++i) {
        ASSERT_TRUE(SameValue<T>((*got)[i], sorted[i]))
            << w << ", element " << i << ": got " << +T((*got)[i]) << ", want " << +T(sorted[i]);
      }

      absl::StatusOr<Array> positions = Argsort(a, axis, descending);
      ASSERT_TRUE(positions.ok()) << w << ": " << positions.status();
      EXPECT_EQ(positions->info().dtype(), v1::DTYPE_INT64) << w;
      absl::StatusOr<std::vector<int64_t>> got_order = positions->Download<int64_t>();
      ASSERT_TRUE(got_order.ok()) << w << ": " << got_order.status();
      ASSERT_EQ(*got_order, order) << w << " (argsort)";
    }
  }

  template <typename T>
  absl::StatusOr<Array> Put(const std::vector<T>& values, const Shape& shape,
                            const v1::IndexMap& map) const {
    const std::unique_ptr<T[]> data = Contiguous(values);
    return client().Upload<T>(std::span<const T>(data.get(), values.size()), shape, {map});
  }

  static void ExpectError(const absl::Status& status, absl::StatusCode code,
                          const std::string& field, const std::string& what) {
    EXPECT_EQ(status.code(), code) << what << ": " << status;
    EXPECT_TRUE(absl::StrContains(status.message(), field))
        << what << ": the message does not name " << field << ": " << status;
  }
};

TEST_P(SortTest, EveryAxisOverLayoutsMatchesTheHost) {
  std::mt19937_64 rng(301);
  for (const Shape& shape : {Shape{8, 6}, Shape{5, 4, 6}}) {
    const std::vector<double> host = RandomValues<double>(NumElements(shape), rng);
    for (const Layout& layout : Layouts(shape)) {
      ASSERT_OK_AND_ASSIGN(Array a, Put<double>(host, shape, layout.map));
      for (int axis = -static_cast<int>(shape.size()); axis < static_cast<int>(shape.size());
           ++axis) {
        ASSERT_NO_FATAL_FAILURE(ExpectSorts(a, host, shape, axis, layout.name));
      }
      EXPECT_EQ(*a.Download<double>(), host) << layout.name << ": the source afterwards";
    }
  }
}

// Small integers: many ties, so argsort's order among equal values (stable, both directions) is
// checked everywhere, including across the devices' blocks of one long line.
TEST_P(SortTest, TiesKeepTheirOrder) {
  std::mt19937_64 rng(302);
  const Shape shape = {6, 50};
  std::vector<int32_t> host(NumElements(shape));
  for (int32_t& v : host) v = static_cast<int32_t>(rng() % 5) - 2;
  for (const Layout& layout : Layouts(shape)) {
    ASSERT_OK_AND_ASSIGN(Array a, Put<int32_t>(host, shape, layout.map));
    for (int axis : {0, 1}) ASSERT_NO_FATAL_FAILURE(ExpectSorts(a, host, shape, axis, layout.name));
  }
}

// A 1-D array split over several devices: each sorts its block, then neighbours merge (odd-even
// rounds). Uneven blocks, more blocks than devices on small machines, and lengths where a block
// holds one element.
TEST_P(SortTest, OneLineSplitOverDevicesIsMergedAcrossThem) {
  std::mt19937_64 rng(303);
  for (int64_t n : {int64_t{2}, int64_t{7}, int64_t{1000}, int64_t{100003}}) {
    const std::vector<float> host = RandomValues<float>(n, rng);
    std::vector<Layout> layouts = {
        {"halves", Split(1, 0, n, {dev(0), dev(1)})},
        {"thirds", Split(1, 0, n, {dev(0), dev(1), dev(2)})},
        {"fourths", Split(1, 0, n, {dev(3), dev(2), dev(1), dev(0)})},
    };
    if (n >= 4) {
      layouts.push_back(
          {"uneven", MakeIndexMap({Band(dev(1), 1, 0, 0, 1), Band(dev(0), 1, 0, 1, n - 2),
                                   Band(dev(2), 1, 0, n - 2, n)})});
    }
    for (const Layout& layout : layouts) {
      ASSERT_OK_AND_ASSIGN(Array a, Put<float>(host, {n}, layout.map));
      ASSERT_NO_FATAL_FAILURE(ExpectSorts(a, host, {n}, 0, absl::StrCat(layout.name, " n=", n)));
    }
  }
  // A (1, n) array whose last axis is split: the other axis has one element, so it is one line.
  const int64_t n = 999;
  const std::vector<double> host = RandomValues<double>(n, rng);
  ASSERT_OK_AND_ASSIGN(Array a, Put<double>(host, {1, n}, Split(2, 1, n, {dev(0), dev(1)})));
  ASSERT_NO_FATAL_FAILURE(ExpectSorts(a, host, {1, n}, -1, "(1, n) split along n"));
}

TEST_P(SortTest, EveryRealDTypeSorts) {
  std::mt19937_64 rng(304);
  const int64_t n = 301;
  ForEachDType([&](auto tag) {
    using T = decltype(tag);
    std::vector<T> host(n);
    const std::vector<T> drawn = RandomValues<T>(n, rng);
    std::copy(drawn.begin(), drawn.end(), host.begin());
    const std::string what = absl::StrCat("dtype of size ", sizeof(T));
    for (const v1::IndexMap& map : {Split(1, 0, n, {dev(0), dev(1)}), Split(1, 0, n, {dev(0)})}) {
      absl::StatusOr<Array> a = Put<T>(host, {n}, map);
      ASSERT_TRUE(a.ok()) << what << ": " << a.status();
      ASSERT_NO_FATAL_FAILURE(ExpectSorts(*a, host, {n}, 0, what));
    }
  });
}

// NaNs go last ascending and first descending; infinities sort at the ends of the numbers; signed
// zeros tie; the extremes of the integer types sort at theirs.
TEST_P(SortTest, NaNsInfinitiesAndExtremes) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // -0.0 and +0.0 compare equal: argsort keeps their order (NumPy's stable argsort); the
  // sorted values place them in either order (compared with ==).
  const std::vector<double> host = {3.5,  nan, -inf,   0.0, 1e-300, inf,  -0.0,
                                    -2.0, nan, -1e300, 0.0, 7.0,    -nan, -0.0};
  const int64_t n = static_cast<int64_t>(host.size());
  for (const v1::IndexMap& map : {Split(1, 0, n, {dev(0), dev(1)}), Split(1, 0, n, {dev(0)})}) {
    ASSERT_OK_AND_ASSIGN(Array a, Put<double>(host, {n}, map));
    ASSERT_NO_FATAL_FAILURE(ExpectSorts(a, host, {n}, 0, "float64 specials"));
    const std::vector<float> narrow(host.begin(), host.end());
    ASSERT_OK_AND_ASSIGN(Array b, Put<float>(narrow, {n}, map));
    ASSERT_NO_FATAL_FAILURE(ExpectSorts(b, narrow, {n}, 0, "float32 specials"));
  }
  const std::vector<int64_t> extremes = {0, std::numeric_limits<int64_t>::max(), -1,
                                         std::numeric_limits<int64_t>::min(), 1};
  ASSERT_OK_AND_ASSIGN(Array c, Put<int64_t>(extremes, {5}, {Split(1, 0, 5, {dev(0), dev(1)})}));
  ASSERT_NO_FATAL_FAILURE(ExpectSorts(c, extremes, {5}, 0, "int64 extremes"));
}

// A SUM-mode source (two devices hold different partials) is sorted by its logical values.
TEST_P(SortTest, SumModeSourceSortsItsLogicalValues) {
  std::mt19937_64 rng(305);
  const Shape shape = {2, 6, 9};
  const std::vector<double> parts = RandomValues<double>(NumElements(shape), rng);
  ASSERT_OK_AND_ASSIGN(Array split, Put<double>(parts, shape, Split(3, 0, 2, {dev(0), dev(1)})));
  ASSERT_OK_AND_ASSIGN(Array a, Reduce(split, v1::REDUCE_OP_SUM, {0}, false, /*combine=*/false));
  ASSERT_EQ(a.info().mode(), v1::MODE_SUM);
  std::vector<double> host(54);
  for (int i = 0; i < 54; ++i) host[i] = parts[i] + parts[54 + i];
  for (int axis : {0, 1}) ASSERT_NO_FATAL_FAILURE(ExpectSorts(a, host, {6, 9}, axis, "sum mode"));
}

// Sort and argsort as program statements: a loop that sorts, then takes the top row's order.
TEST_P(SortTest, SortAndArgsortInAProgram) {
  std::mt19937_64 rng(306);
  const Shape shape = {4, 33};
  const std::vector<float> host = RandomValues<float>(NumElements(shape), rng);
  ASSERT_OK_AND_ASSIGN(Array a, Put<float>(host, shape, Split(2, 1, 33, {dev(0), dev(1)})));
  g::ProgramBuilder p;
  const g::Var x = p.Input("a");
  p.Output("sorted", g::Sort(x, -1, /*descending=*/true));
  p.Output("order", g::Argsort(x, 0));
  ASSERT_OK_AND_ASSIGN(GraphRun run, client().RunGraph(p.program(), {{"a", &a}}));
  const std::vector<int64_t> by_row = RefArgsort(host, shape, -1, true);
  EXPECT_EQ(*run.outputs.at("sorted").Download<float>(), Gathered(host, by_row, shape, -1));
  EXPECT_EQ(*run.outputs.at("order").Download<int64_t>(), RefArgsort(host, shape, 0, false));
}

TEST_P(SortTest, BadRequestsNameTheField) {
  ASSERT_OK_AND_ASSIGN(Array a,
                       Put<float>({1, 2, 3, 4, 5, 6}, {2, 3}, {Split(2, 0, 2, {dev(0), dev(1)})}));
  ExpectError(Sort(a, 2).status(), absl::StatusCode::kInvalidArgument, "spec.sort.axis",
              "axis 2 of a 2-d array");
  ExpectError(Argsort(a, -3).status(), absl::StatusCode::kInvalidArgument, "spec.sort.axis",
              "axis -3 of a 2-d array");
  ASSERT_OK_AND_ASSIGN(Array scalar, Put<float>({1}, {}, MakeIndexMap({MakeChunk(dev(0), {})})));
  ExpectError(Sort(scalar).status(), absl::StatusCode::kInvalidArgument, "spec.sort.source",
              "a 0-d array");
  ASSERT_OK_AND_ASSIGN(Array z,
                       Put<std::complex<float>>({{1, 2}, {3, 4}}, {2}, Split(1, 0, 2, {dev(0)})));
  ExpectError(Sort(z).status(), absl::StatusCode::kInvalidArgument, "spec.sort.source", "complex");
  v1::ManipulateRequest request;
  request.mutable_spec()->mutable_sort()->mutable_source()->set_handle("no-such-handle");
  ExpectError(client().Manipulate(request).status(), absl::StatusCode::kNotFound,
              "spec.sort.source", "an unknown handle");
  request.mutable_spec()->mutable_sort()->clear_source();
  ExpectError(client().Manipulate(request).status(), absl::StatusCode::kInvalidArgument,
              "spec.sort.source", "no source");
  // The daemon is up and the array intact.
  EXPECT_EQ(*a.Download<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

// The reference: the first (left) or past-the-last (right) position of v among `sorted`.
template <typename T>
int64_t RefPosition(const std::vector<T>& sorted, T v, bool right) {
  int64_t p = 0;
  while (p < static_cast<int64_t>(sorted.size()) &&
         (right ? !Before(v, sorted[p], false) : Before(sorted[p], v, false))) {
    ++p;
  }
  return p;
}

// searchsorted over layouts of both arrays, with values equal to sorted elements (ties: left and
// right differ), outside the range, NaN (after every number), and in SUM mode.
TEST_P(SortTest, SearchSortedMatchesTheHost) {
  std::mt19937_64 rng(307);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> sorted = RandomValues<double>(40, rng);
  sorted[5] = sorted[6] = sorted[7];  // a run of equal elements
  sorted.push_back(nan);
  std::sort(sorted.begin(), sorted.end(),
            [](double a, double b) { return Before(a, b, /*descending=*/false); });
  const int64_t n = static_cast<int64_t>(sorted.size());
  const Shape shape = {5, 6};
  std::vector<double> values = RandomValues<double>(30, rng);
  values[0] = sorted[7];
  values[1] = sorted[0];
  values[2] = sorted[n - 2];
  values[3] = -1e9;
  values[4] = 1e9;
  values[5] = nan;
  for (const v1::IndexMap& sorted_map :
       {Split(1, 0, n, {dev(0), dev(1), dev(2)}), Split(1, 0, n, {dev(1)})}) {
    ASSERT_OK_AND_ASSIGN(Array s, Put<double>(sorted, {n}, sorted_map));
    for (const Layout& layout : Layouts(shape)) {
      ASSERT_OK_AND_ASSIGN(Array v, Put<double>(values, shape, layout.map));
      for (bool right : {false, true}) {
        const std::string what = absl::StrCat(layout.name, right ? " right" : " left");
        absl::StatusOr<Array> got = SearchSorted(s, v, right);
        ASSERT_TRUE(got.ok()) << what << ": " << got.status();
        EXPECT_EQ(got->shape(), shape) << what;
        EXPECT_EQ(got->info().dtype(), v1::DTYPE_INT64) << what;
        std::vector<int64_t> want;
        for (double x : values) want.push_back(RefPosition(sorted, x, right));
        EXPECT_EQ(*got->Download<int64_t>(), want) << what;
      }
    }
  }
  // A SUM-mode values array is searched by its logical values.
  const std::vector<double> parts = RandomValues<double>(2 * 30, rng);
  ASSERT_OK_AND_ASSIGN(Array split, Put<double>(parts, {2, 30}, Split(2, 0, 2, {dev(0), dev(1)})));
  ASSERT_OK_AND_ASSIGN(Array summed,
                       Reduce(split, v1::REDUCE_OP_SUM, {0}, false, /*combine=*/false));
  ASSERT_OK_AND_ASSIGN(Array s, Put<double>(sorted, {n}, Split(1, 0, n, {dev(0), dev(1)})));
  ASSERT_OK_AND_ASSIGN(Array got, SearchSorted(s, summed));
  std::vector<int64_t> want;
  for (int i = 0; i < 30; ++i) want.push_back(RefPosition(sorted, parts[i] + parts[30 + i], false));
  EXPECT_EQ(*got.Download<int64_t>(), want);
}

TEST_P(SortTest, SearchSortedErrorsNameTheField) {
  ASSERT_OK_AND_ASSIGN(Array grid, Put<float>({1, 2, 3, 4}, {2, 2}, Split(2, 0, 2, {dev(0)})));
  ASSERT_OK_AND_ASSIGN(Array line, Put<float>({1, 2, 3}, {3}, Split(1, 0, 3, {dev(0)})));
  ASSERT_OK_AND_ASSIGN(Array wide, Put<double>({1, 2}, {2}, Split(1, 0, 2, {dev(0)})));
  ExpectError(SearchSorted(grid, line).status(), absl::StatusCode::kInvalidArgument,
              "spec.search_sorted.sorted", "a 2-D sorted array");
  ExpectError(SearchSorted(line, wide).status(), absl::StatusCode::kInvalidArgument,
              "spec.search_sorted.values", "mixed dtypes");
  ASSERT_OK_AND_ASSIGN(Array z,
                       Put<std::complex<float>>({{1, 2}, {3, 4}}, {2}, Split(1, 0, 2, {dev(0)})));
  ExpectError(SearchSorted(z, z).status(), absl::StatusCode::kInvalidArgument,
              "spec.search_sorted.sorted", "complex");
}

DISTARRAY_INSTANTIATE_BACKENDS(SortTest);

}  // namespace
}  // namespace distarray::testing
