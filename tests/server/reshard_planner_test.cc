#include "server/engine/reshard_planner.h"

#include <gtest/gtest.h>

namespace distarray {
namespace {

ChunkSpec Chunk1D(int device, int64_t start, int64_t stop, int64_t step = 1) {
  return ChunkSpec{device, {Range{start, step, (stop - start + step - 1) / step}}};
}

TEST(ReshardPlannerTest, TheSeedExampleMovesOnlyTheOverlap) {
  // C = {0: [:7], 1: [7:10]} -> A's map {0: [:5], 1: [5:10]}.
  const IndexMap from = {Chunk1D(0, 0, 7), Chunk1D(1, 7, 10)};
  const IndexMap to = {Chunk1D(0, 0, 5), Chunk1D(1, 5, 10)};
  const ReplicaReshardPlan plan = PlanReplicaReshard(from, to);
  ASSERT_EQ(plan.copies.size(), 3u);
  EXPECT_EQ(plan.fill_uncovered, (std::vector<bool>{false, false}));
  int64_t cross_device_elements = 0;
  for (const PlannedCopy& c : plan.copies) {
    if (from[c.src].device != to[c.dst].device) cross_device_elements += NumElements(c.src_local);
  }
  EXPECT_EQ(cross_device_elements, 2);  // only c[5:7] travels
}

TEST(ReshardPlannerTest, ReplicatedSourcesAreReadOncePreferringTheLocalCopy) {
  const IndexMap from = {Chunk1D(0, 0, 10), Chunk1D(1, 0, 10), Chunk1D(2, 0, 10)};
  const IndexMap to = {Chunk1D(2, 0, 10)};
  const ReplicaReshardPlan plan = PlanReplicaReshard(from, to);
  ASSERT_EQ(plan.copies.size(), 1u);
  EXPECT_EQ(plan.copies[0].src, 2);
  EXPECT_FALSE(plan.fill_uncovered[0]);
}

TEST(ReshardPlannerTest, GapsAreZeroFilled) {
  const IndexMap from = {Chunk1D(0, 0, 4), Chunk1D(1, 6, 10)};
  const IndexMap to = {Chunk1D(2, 0, 10)};
  const ReplicaReshardPlan plan = PlanReplicaReshard(from, to);
  EXPECT_EQ(plan.copies.size(), 2u);
  EXPECT_TRUE(plan.fill_uncovered[0]);
}

TEST(ReshardPlannerTest, OwnershipMaskKeepsTheFirstCopy) {
  const IndexMap map = {Chunk1D(0, 0, 6), Chunk1D(1, 4, 10), Chunk1D(2, 0, 10, 2)};
  const std::vector<PlannedFill> fills = PlanOwnershipMask(map);
  // chunk 1 loses 4:6 (held by chunk 0); chunk 2 loses 0,2,4 (chunk 0) and 4,6,8 (chunk 1).
  ASSERT_EQ(fills.size(), 3u);
  EXPECT_EQ(fills[0].chunk, 1);
  EXPECT_EQ(fills[0].local, (Box{Range{0, 1, 2}}));
  EXPECT_EQ(fills[1].chunk, 2);
  EXPECT_EQ(fills[1].local, (Box{Range{0, 1, 3}}));
  EXPECT_EQ(fills[2].chunk, 2);
  EXPECT_EQ(fills[2].local, (Box{Range{2, 1, 3}}));
}

TEST(ReshardPlannerTest, GatherToReplicaCombinesEveryOverlap) {
  const IndexMap map = {Chunk1D(0, 0, 6), Chunk1D(1, 4, 10)};
  const std::vector<PlannedCopy> copies = PlanGatherToReplica(map, Mode::kSum);
  ASSERT_EQ(copies.size(), 4u);  // 0<-0, 0<-1, 1<-1, 1<-0
  EXPECT_EQ(copies[0].combine, Combine::kAssign);
  EXPECT_EQ(copies[1].combine, Combine::kAdd);
  EXPECT_EQ(copies[1].src, 1);
  EXPECT_EQ(copies[1].dst_local, (Box{Range{4, 1, 2}}));
}

}  // namespace
}  // namespace distarray
