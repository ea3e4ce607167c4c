// Plans whose size is quadratic in the chunk count are refused with RESOURCE_EXHAUSTED before
// any work is launched; large maps of disjoint tiles plan quickly.
#include <chrono>

#include "tests/support/backend_fixture.h"
#include "tests/support/server_state.h"

namespace distarray::testing {
namespace {

class PlanningTest : public BackendTest {};

TEST_P(PlanningTest, AMaskOverThousandsOfCopiesOfEveryElementIsResourceExhausted) {
  // 5,000 chunks that each hold the whole array: SUM mode would mask 12.5 million overlaps.
  v1::IndexMap copies;
  for (int i = 0; i < 5000; ++i) *copies.add_chunks() = MakeChunk(dev(i), {SliceSpec{}});
  ASSERT_OK_AND_ASSIGN(Array replicated, client().Create({8}, v1::DTYPE_FLOAT32, {copies}));
  ASSERT_OK(client().Synchronize());
  const int64_t before = UsedBytes(client());

  const auto start = std::chrono::steady_clock::now();
  auto summed = replicated.ChangeMode(v1::MODE_SUM);
  ASSERT_EQ(summed.status().code(), absl::StatusCode::kResourceExhausted) << summed.status();
  EXPECT_NE(summed.status().message().find(
                "ownership mask: the plan needs more than 10000000 box intersections"),
            std::string::npos)
      << summed.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));

  // Nothing kept, and the array still reads back.
  ASSERT_OK(client().Synchronize());
  EXPECT_EQ(UsedBytes(client()), before);
  ASSERT_OK_AND_ASSIGN(std::vector<float> back, replicated.Download<float>());
  EXPECT_EQ(back, std::vector<float>(8, 0.0f));
  ASSERT_OK(replicated.Delete());
}

TEST_P(PlanningTest, ThirtyThousandTilesReshardAndChangeMode) {
  constexpr int64_t kTiles = 30000;
  v1::IndexMap tiles;
  for (int64_t i = 0; i < kTiles; ++i) {
    *tiles.add_chunks() = MakeChunk(dev(static_cast<int>(i)), {SliceSpec{2 * i, 2 * i + 2}});
  }
  std::vector<float> values(2 * kTiles);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  ASSERT_OK_AND_ASSIGN(Array array, client().Upload<float>(values, {2 * kTiles}, {tiles}));
  ASSERT_OK_AND_ASSIGN(Array summed, array.ChangeMode(v1::MODE_SUM));
  v1::IndexMap halves;
  *halves.add_chunks() = MakeChunk(dev(0), {SliceSpec{0, kTiles}});
  *halves.add_chunks() = MakeChunk(dev(1), {SliceSpec{kTiles, 2 * kTiles}});
  ASSERT_OK_AND_ASSIGN(Array moved, summed.Reshard(halves));
  ASSERT_OK_AND_ASSIGN(std::vector<float> back, moved.Download<float>());
  EXPECT_EQ(back, values);
}

DISTARRAY_INSTANTIATE_BACKENDS(PlanningTest);

}  // namespace
}  // namespace distarray::testing
