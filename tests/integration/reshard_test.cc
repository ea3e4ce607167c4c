// Reshards between random pairs of index maps, in every mode, checked against the host model.
#include <random>

#include "absl/strings/match.h"
#include "distarray/graph.h"
#include "tests/support/backend_fixture.h"
#include "tests/support/compute_reference.h"
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

// Memory in use on each device, from GetServerInfo.
std::vector<int64_t> UsedBytes(const Client& client) {
  std::vector<int64_t> used;
  absl::StatusOr<v1::GetServerInfoResponse> info = client.ServerInfo();
  if (!info.ok()) return used;
  for (const auto& device : info->devices()) used.push_back(device.memory_used_bytes());
  return used;
}

// A target chunk whose values are the leading rows of a source chunk on the same device holds
// that chunk's buffer instead of a copy (GPU 0's side of "move a quarter to GPU 1"): no memory is
// allocated for it. The arrays stay independent: deleting the source, computing on either, an
// in-place reshard and a program that loops over the result leave the other's values intact.
TEST_P(ReshardTest, TargetChunksThatAreLeadingRowsShareTheSourceBuffer) {
  if (devices() < 2) GTEST_SKIP() << "needs two devices";
  std::mt19937_64 rng(17);
  const Shape shape = {40, 6};
  const std::vector<float> values = RandomValues<float>(NumElements(shape), rng);
  auto rows = [&](int64_t first_split) {
    return MakeIndexMap({MakeChunk(dev(0), {SliceSpec{0, first_split}, {}}),
                         MakeChunk(dev(1), {SliceSpec{first_split, 40}, {}})});
  };
  ASSERT_OK_AND_ASSIGN(Array a, client().Upload<float>(values, shape, {rows(20)}));
  ASSERT_OK(client().Synchronize());
  const std::vector<int64_t> before = UsedBytes(client());
  ASSERT_OK_AND_ASSIGN(Array b, a.Reshard(rows(10)));  // rows 0-9 stay on device 0
  ASSERT_OK(client().Synchronize());
  const std::vector<int64_t> after = UsedBytes(client());
  ASSERT_EQ(before.size(), after.size());
  EXPECT_EQ(after[dev(0)], before[dev(0)]) << "device 0's chunk was copied";
  EXPECT_GE(after[dev(1)] - before[dev(1)], 30 * 6 * 4) << "device 1's chunk is new";
  ASSERT_OK_AND_ASSIGN(std::vector<float> got, b.Download<float>());
  EXPECT_EQ(got, values);
  // The same layout shares every chunk.
  ASSERT_OK_AND_ASSIGN(Array same, a.Reshard(a.info().index_map()));
  EXPECT_EQ(UsedBytes(client()), after);

  // Computing on the result writes new arrays; the source keeps its values.
  ASSERT_OK_AND_ASSIGN(Array doubled, b * 2.0f);
  ASSERT_OK_AND_ASSIGN(std::vector<float> twice, doubled.Download<float>());
  for (size_t i = 0; i < values.size(); ++i) ASSERT_EQ(twice[i], values[i] * 2) << i;
  // A loop over the result (its loop-carried copy is the program's own).
  namespace g = distarray::graph;
  g::ProgramBuilder p;
  const g::Var x = p.Input("x");
  const g::Var k = p.Input("k");
  g::Vars out = p.WhileLoop([](auto v) { return g::All(v[1] < 3); },
                            [](auto v) {
                              return g::Vars{v[0] + 1.0f, v[1] + 1};
                            },
                            {x, k}, 10);
  p.Output("x", out[0]);
  ASSERT_OK_AND_ASSIGN(Array k0,
                       client().Create({}, v1::DTYPE_INT32, ArrayOpts(OnDevice(0, dev(0)))));
  ASSERT_OK_AND_ASSIGN(GraphRun run, client().RunGraph(p.program(), {{"x", &b}, {"k", &k0}}));
  ASSERT_OK_AND_ASSIGN(std::vector<float> looped, run.outputs.at("x").Download<float>());
  for (size_t i = 0; i < values.size(); ++i) ASSERT_EQ(looped[i], values[i] + 3.0f) << i;
  // Uploading into either writes a copy of its own (copy on write): the other keeps its values.
  const std::vector<float> row(6, -1.0f);
  ASSERT_OK(b.Write<float>(row, MakeRegion({SliceSpec{3, 4}, {}})));
  ASSERT_OK(a.Write<float>(row, MakeRegion({SliceSpec{5, 6}, {}})));
  ASSERT_OK_AND_ASSIGN(std::vector<float> b_now, b.Download<float>());
  ASSERT_OK_AND_ASSIGN(std::vector<float> a_now, a.Download<float>());
  ASSERT_OK_AND_ASSIGN(std::vector<float> same_now, same.Download<float>());
  for (size_t i = 0; i < values.size(); ++i) {
    const int64_t r = static_cast<int64_t>(i) / 6;
    ASSERT_EQ(b_now[i], r == 3 ? -1.0f : values[i]) << "b, element " << i;
    ASSERT_EQ(a_now[i], r == 5 ? -1.0f : values[i]) << "a, element " << i;
    ASSERT_EQ(same_now[i], values[i]) << "same, element " << i;
  }
  // Deleting the source leaves the result whole, and the other way round.
  ASSERT_OK(a.Delete());
  ASSERT_OK_AND_ASSIGN(got, b.Download<float>());
  EXPECT_EQ(got, b_now);
  ASSERT_OK(b.ReshardInPlace(rows(5)));
  ASSERT_OK(b.Delete());
  ASSERT_OK_AND_ASSIGN(got, same.Download<float>());
  EXPECT_EQ(got, values);
}

DISTARRAY_INSTANTIATE_BACKENDS(ReshardTest);

}  // namespace
}  // namespace distarray::testing
