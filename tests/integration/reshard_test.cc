// Reshards between random pairs of index maps, in every mode, checked against the host model.
#include <random>

#include "absl/strings/match.h"
#include "tests/support/backend_fixture.h"
#include "tests/support/reference.h"

namespace distarray::testing {
namespace {

class ReshardTest : public BackendTest {};

TEST_P(ReshardTest, RandomPairsOfLayouts) {
  std::mt19937_64 rng(2024);
  const std::vector<Shape> shapes = {{50}, {12, 9}, {4, 7, 6}};
  for (const Shape& shape : shapes) {
    for (int trial = 0; trial < 8; ++trial) {
      const TestMap from = RandomMap(shape, devices(), rng);
      const TestMap to = RandomMap(shape, devices(), rng);
      const std::vector<double> values = RandomValues<double>(NumElements(shape), rng);
      ASSERT_OK_AND_ASSIGN(Array a, client().Upload<double>(values, shape, {ToProto(from, shape)}));
      const std::vector<double> held = Expected(values, from, shape, v1::MODE_REPLICA);
      ASSERT_OK_AND_ASSIGN(Array b, a.Reshard(ToProto(to, shape)));
      ASSERT_OK_AND_ASSIGN(std::vector<double> got, b.Download<double>());
      ASSERT_EQ(got, Expected(held, to, shape, v1::MODE_REPLICA))
          << "rank " << shape.size() << " trial " << trial;
      // The source is untouched.
      ASSERT_OK_AND_ASSIGN(std::vector<double> source, a.Download<double>());
      ASSERT_EQ(source, held);
    }
  }
}

// 16 row blocks to 16 column blocks: 256 pieces. The CUDA backend runs such a reshard as a cached
// one-statement program replayed as a graph (docs/design.md): the first reshard records (a cache
// miss), the second replays (a hit); both give the same values, and in place stays eager.
TEST_P(ReshardTest, ManyPieceReshardsReplayACachedGraphOnTheGpu) {
  std::mt19937_64 rng(11);
  const Shape shape = {256, 192};
  const std::vector<float> values = RandomValues<float>(NumElements(shape), rng);
  std::vector<int> blocks;
  for (int b = 0; b < 16; ++b) blocks.push_back(dev(b));
  ASSERT_OK_AND_ASSIGN(Array a, client().Upload<float>(values, shape, {Split(2, 0, 256, blocks)}));
  const v1::IndexMap columns = Split(2, 1, 192, blocks);
  ASSERT_OK_AND_ASSIGN(v1::GetServerInfoResponse before, client().ServerInfo());
  for (int run = 0; run < 2; ++run) {
    ASSERT_OK_AND_ASSIGN(Array b, a.Reshard(columns));
    EXPECT_EQ(b.info().index_map().chunks_size(), 16);
    ASSERT_OK_AND_ASSIGN(std::vector<float> got, b.Download<float>());
    ASSERT_EQ(got, values) << "run " << run;
  }
  ASSERT_OK_AND_ASSIGN(v1::GetServerInfoResponse after, client().ServerInfo());
  const bool replayed = absl::StartsWith(GetParam(), "cuda");
  EXPECT_EQ(after.graph_cache().misses() - before.graph_cache().misses(), replayed ? 1 : 0);
  EXPECT_EQ(after.graph_cache().hits() - before.graph_cache().hits(), replayed ? 1 : 0);
  // In place: eager, the same values.
  ASSERT_OK(a.ReshardInPlace(columns));
  ASSERT_OK_AND_ASSIGN(std::vector<float> in_place, a.Download<float>());
  EXPECT_EQ(in_place, values);
}

TEST_P(ReshardTest, InPlaceKeepsTheHandleAndName) {
  std::mt19937_64 rng(3);
  const Shape shape = {16, 16};
  const std::vector<int64_t> values = RandomValues<int64_t>(256, rng);
  ASSERT_OK_AND_ASSIGN(Array a, client().Upload<int64_t>(values, shape,
                                                         {Split(2, 0, 16, {dev(0), dev(1)}),
                                                          v1::MODE_REPLICA, "inplace-test"}));
  const std::string handle = a.handle();
  ASSERT_OK(a.ReshardInPlace(Split(2, 1, 16, {dev(1), dev(2), dev(3)})));
  EXPECT_EQ(a.handle(), handle);
  EXPECT_EQ(a.info().name(), "inplace-test");
  EXPECT_EQ(a.info().index_map().chunks_size(), 3);
  ASSERT_OK_AND_ASSIGN(Array reopened, client().Open("inplace-test"));
  ASSERT_OK_AND_ASSIGN(std::vector<int64_t> got, reopened.Download<int64_t>());
  EXPECT_EQ(got, values);
  ASSERT_OK(a.Delete());
}

TEST_P(ReshardTest, TheSeedExampleMovesOnlyTheOverlap) {
  // A = {0: [:5], 1: [5:10]}, C = {0: [:7], 1: [7:10]}: C.reshard(A.index_map) then A + C2.
  std::vector<float> a(10), c(10);
  for (int i = 0; i < 10; ++i) {
    a[i] = 0.5f * i;
    c[i] = 100.0f - i;
  }
  const v1::IndexMap a_map = MakeIndexMap(
      {MakeChunk(dev(0), {SliceSpec{std::nullopt, 5}}), MakeChunk(dev(1), {SliceSpec{5, 10}})});
  const v1::IndexMap c_map = MakeIndexMap(
      {MakeChunk(dev(0), {SliceSpec{std::nullopt, 7}}), MakeChunk(dev(1), {SliceSpec{7, 10}})});
  ASSERT_OK_AND_ASSIGN(Array A, client().Upload<float>(a, {10}, {a_map}));
  ASSERT_OK_AND_ASSIGN(Array C, client().Upload<float>(c, {10}, {c_map}));
  ASSERT_OK_AND_ASSIGN(Array C2, C.Reshard(A.info().index_map()));
  ASSERT_OK_AND_ASSIGN(Array sum, A + C2);
  ASSERT_OK_AND_ASSIGN(std::vector<float> got, sum.Download<float>());
  for (int i = 0; i < 10; ++i) EXPECT_EQ(got[i], a[i] + c[i]);
}

DISTARRAY_INSTANTIATE_BACKENDS(ReshardTest);

}  // namespace
}  // namespace distarray::testing
