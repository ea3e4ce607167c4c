// Modes (REPLICA, SUM, PROD, MAX, MIN) and change_mode, with cupyx.distributed.array's
// semantics: an op mode's logical value is the op over all copies covering an element, and an
// uncovered element holds the identity.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "client/include/distarray/graph.h"
#include "tests/support/backend_fixture.h"
#include "tests/support/compute_reference.h"
#include "tests/support/reference.h"

namespace distarray::testing {
namespace {

class ModesTest : public BackendTest {};

const v1::Mode kModes[] = {v1::MODE_REPLICA, v1::MODE_SUM, v1::MODE_PROD, v1::MODE_MAX,
                           v1::MODE_MIN};

TEST_P(ModesTest, ChangeModeBetweenEveryPairKeepsValues) {
  std::mt19937_64 rng(77);
  const Shape shape = {11, 7};
  for (int trial = 0; trial < 3; ++trial) {
    const TestMap map = RandomMap(shape, devices(), rng);
    const std::vector<double> values = RandomValues<double>(NumElements(shape), rng);
    const std::vector<int> copies = CopiesPerElement(map, shape);
    const bool gaps = std::find(copies.begin(), copies.end(), 0) != copies.end();
    for (v1::Mode from : kModes) {
      ASSERT_OK_AND_ASSIGN(Array a,
                           client().Upload<double>(values, shape, {ToProto(map, shape), from}));
      ASSERT_OK_AND_ASSIGN(std::vector<double> got, a.Download<double>());
      ASSERT_EQ(got, Expected(values, map, shape, from)) << v1::Mode_Name(from);
      for (v1::Mode to : kModes) {
        // A gap reads as the mode's identity: a change between modes whose gaps read differently
        // would change the gap's value, and is refused.
        if (gaps && Identity<double>(from) != Identity<double>(to)) {
          EXPECT_TRUE(StatusIs(a.ChangeMode(to).status(), absl::StatusCode::kFailedPrecondition,
                               {"mode", "covered by no chunk"}))
              << v1::Mode_Name(from) << " -> " << v1::Mode_Name(to);
          continue;
        }
        ASSERT_OK_AND_ASSIGN(Array b, a.ChangeMode(to));
        EXPECT_EQ(b.info().mode(), to);
        ASSERT_OK_AND_ASSIGN(std::vector<double> changed, b.Download<double>());
        ASSERT_EQ(changed, Expected(values, map, shape, to))
            << v1::Mode_Name(from) << " -> " << v1::Mode_Name(to);
      }
    }
  }
}

TEST_P(ModesTest, ReshardOpModeArraysBetweenRandomLayouts) {
  std::mt19937_64 rng(78);
  const Shape shape = {9, 10};
  for (v1::Mode mode : kModes) {
    for (int trial = 0; trial < 3; ++trial) {
      const TestMap from = RandomMap(shape, devices(), rng);
      const TestMap to = RandomMap(shape, devices(), rng);
      const std::vector<int32_t> values = RandomValues<int32_t>(NumElements(shape), rng);
      ASSERT_OK_AND_ASSIGN(Array a,
                           client().Upload<int32_t>(values, shape, {ToProto(from, shape), mode}));
      ASSERT_OK_AND_ASSIGN(Array b, a.Reshard(ToProto(to, shape)));
      EXPECT_EQ(b.info().mode(), mode);
      ASSERT_OK_AND_ASSIGN(std::vector<int32_t> got, b.Download<int32_t>());
      // Uncovered by `from` reads as identity; so does anything uncovered by `to`.
      ASSERT_EQ(got, Expected(Expected(values, from, shape, mode), to, shape, mode))
          << v1::Mode_Name(mode) << " trial " << trial;
    }
  }
}

// The case: float64 [7, 8] in MAX mode with one chunk covering [0:1] reads [7, -inf].
// ChangeMode or Reshard to REPLICA on a map that leaves element 1 uncovered would make it read 0:
// refused, naming the element and both values. A result map that covers the gap keeps -inf.
TEST_P(ModesTest, ModeChangesKeepWhatUncoveredElementsReadOrAreRefused) {
  const v1::IndexMap first = MakeIndexMap({MakeChunk(dev(0), {SliceSpec{0, 1, std::nullopt}})});
  const v1::IndexMap both = MakeIndexMap({MakeChunk(dev(1), {SliceSpec{}})});
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    v1::Mode mode;
    double gap;  // what element 1 reads as
  };
  for (const Case& c :
       {Case{v1::MODE_MAX, -inf}, Case{v1::MODE_MIN, inf}, Case{v1::MODE_PROD, 1}}) {
    const std::string what = v1::Mode_Name(c.mode).substr(std::strlen("MODE_"));
    ASSERT_OK_AND_ASSIGN(Array a,
                         client().Upload<double>(std::vector<double>{7, 8}, {2}, {first, c.mode}));
    EXPECT_EQ(a.Download<double>().value(), (std::vector<double>{7, c.gap})) << what;
    EXPECT_TRUE(StatusIs(a.ChangeMode(v1::MODE_REPLICA).status(),
                         absl::StatusCode::kFailedPrecondition,
                         {"mode: element [1]", "replica", what}))
        << what;
    EXPECT_TRUE(StatusIs(a.Reshard(first, v1::MODE_REPLICA).status(),
                         absl::StatusCode::kFailedPrecondition, {"index_map: element [1]"}))
        << what;
    EXPECT_TRUE(StatusIs(a.Reshard(first, v1::MODE_SUM).status(),
                         absl::StatusCode::kFailedPrecondition, {"element [1]"}))
        << what;
    // Covering the gap in the result keeps its value.
    ASSERT_OK_AND_ASSIGN(Array covered, a.Reshard(both, v1::MODE_REPLICA));
    EXPECT_EQ(covered.Download<double>().value(), (std::vector<double>{7, c.gap})) << what;
    // The same statement inside a program is refused before anything runs.
    graph::ProgramBuilder p;
    graph::Var x = p.Input("x");
    p.Output("y", p.ChangeMode(x, v1::MODE_REPLICA));
    EXPECT_TRUE(StatusIs(client().RunGraph(p.program(), {{"x", &a}}).status(),
                         absl::StatusCode::kFailedPrecondition, {"change_mode.mode: element [1]"}))
        << what;
  }
  // SUM's gaps read 0, as REPLICA's do: nothing to refuse in either direction.
  ASSERT_OK_AND_ASSIGN(
      Array sum, client().Upload<double>(std::vector<double>{7, 8}, {2}, {first, v1::MODE_SUM}));
  ASSERT_OK_AND_ASSIGN(Array replica, sum.ChangeMode(v1::MODE_REPLICA));
  EXPECT_EQ(replica.Download<double>().value(), (std::vector<double>{7, 0}));
  ASSERT_OK_AND_ASSIGN(Array back, replica.ChangeMode(v1::MODE_SUM));
  EXPECT_EQ(back.Download<double>().value(), (std::vector<double>{7, 0}));
  // A REPLICA gap (0) would become -inf in MAX mode: refused too.
  EXPECT_TRUE(StatusIs(replica.ChangeMode(v1::MODE_MAX).status(),
                       absl::StatusCode::kFailedPrecondition, {"reads 0 in REPLICA"}));
  // bool: MAX's identity is False, as REPLICA's gap: allowed; MIN's is True: refused.
  ASSERT_OK_AND_ASSIGN(Array flags, UploadHost(client(), HostArray{v1::DTYPE_BOOL, {2}, {1, 1}},
                                               first, v1::MODE_MAX));
  ASSERT_OK_AND_ASSIGN(Array flags_replica, flags.ChangeMode(v1::MODE_REPLICA));
  EXPECT_EQ(flags_replica.Download<bool>().value(), (std::vector<bool>{true, false}));
  EXPECT_TRUE(StatusIs(flags.ChangeMode(v1::MODE_MIN).status(),
                       absl::StatusCode::kFailedPrecondition, {"True"}));
}

TEST_P(ModesTest, CreatingInAnOpModeHoldsEachValueOnce) {
  // Three full copies of ones in SUM mode must read 1, not 3; in PROD, MAX, MIN also 1.
  const std::vector<int> devs = {dev(0), dev(1), dev(2)};
  v1::Fill ones;
  ones.mutable_ones();
  for (v1::Mode mode : kModes) {
    ASSERT_OK_AND_ASSIGN(Array a,
                         client().Create({6}, v1::DTYPE_INT64, {Replicated(1, devs), mode}, ones));
    ASSERT_OK_AND_ASSIGN(std::vector<int64_t> got, a.Download<int64_t>());
    EXPECT_EQ(got, std::vector<int64_t>(6, 1)) << v1::Mode_Name(mode);
    ASSERT_OK_AND_ASSIGN(Array back, a.ChangeMode(v1::MODE_REPLICA));
    ASSERT_OK_AND_ASSIGN(std::vector<int64_t> again, back.Download<int64_t>());
    EXPECT_EQ(again, std::vector<int64_t>(6, 1)) << v1::Mode_Name(mode);
  }
}

// NaN propagates through MAX and MIN as through NumPy's maximum/minimum: a NaN element of an
// op-mode array reads NaN, and after change_mode to REPLICA every copy holds NaN (each copy is
// read by resharding to one chunk on its own device, which reads its local copy first).
template <typename T>
void CheckNanPropagates(const Client& client, const std::vector<int>& devs, v1::Mode mode,
                        std::mt19937_64& rng) {
  const Shape shape = {8, 9};
  std::vector<T> values = RandomValues<T>(NumElements(shape), rng);
  for (size_t i = 0; i < values.size(); i += 1 + rng() % 5) {
    values[i] = std::numeric_limits<T>::quiet_NaN();
  }
  auto same = [](const std::vector<T>& got, const std::vector<T>& want) {
    if (got.size() != want.size()) return false;
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(want[i]) ? !std::isnan(got[i]) : got[i] != want[i]) return false;
    }
    return true;
  };
  ASSERT_OK_AND_ASSIGN(Array a, client.Upload<T>(values, shape, {Replicated(2, devs), mode}));
  ASSERT_OK_AND_ASSIGN(std::vector<T> got, a.template Download<T>());
  EXPECT_TRUE(same(got, values)) << v1::Mode_Name(mode);
  ASSERT_OK_AND_ASSIGN(Array replica, a.ChangeMode(v1::MODE_REPLICA));
  for (int d : devs) {
    ASSERT_OK_AND_ASSIGN(Array copy, replica.Reshard(Replicated(2, {d})));
    ASSERT_OK_AND_ASSIGN(std::vector<T> copy_values, copy.template Download<T>());
    EXPECT_TRUE(same(copy_values, values)) << v1::Mode_Name(mode) << ", copy on device " << d;
  }
}

TEST_P(ModesTest, NanPropagatesThroughMaxAndMin) {
  std::mt19937_64 rng(79);
  const std::vector<int> devs = {dev(0), dev(1), dev(2)};
  for (v1::Mode mode : {v1::MODE_MAX, v1::MODE_MIN}) {
    CheckNanPropagates<float>(client(), devs, mode, rng);
    CheckNanPropagates<double>(client(), devs, mode, rng);
  }
}

DISTARRAY_INSTANTIATE_BACKENDS(ModesTest);

}  // namespace
}  // namespace distarray::testing
