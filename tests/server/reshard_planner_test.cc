#include "server/ops/reshard_planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace distarray {

bool operator==(const PlannedCopy& a, const PlannedCopy& b) {
  return a.src == b.src && a.dst == b.dst && a.src_local == b.src_local &&
         a.dst_local == b.dst_local && a.combine == b.combine;
}
bool operator==(const PlannedFill& a, const PlannedFill& b) {
  return a.chunk == b.chunk && a.local == b.local;
}

namespace {

ChunkSpec Chunk1D(int device, int64_t start, int64_t stop, int64_t step = 1) {
  return ChunkSpec{device, {Range{start, step, (stop - start + step - 1) / step}}};
}

TEST(ReshardPlannerTest, TheSeedExampleMovesOnlyTheOverlap) {
  // C = {0: [:7], 1: [7:10]} -> A's map {0: [:5], 1: [5:10]}.
  const IndexMap from = {Chunk1D(0, 0, 7), Chunk1D(1, 7, 10)};
  const IndexMap to = {Chunk1D(0, 0, 5), Chunk1D(1, 5, 10)};
  const ReplicaReshardPlan plan = *PlanReplicaReshard(from, to);
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
  const ReplicaReshardPlan plan = *PlanReplicaReshard(from, to);
  ASSERT_EQ(plan.copies.size(), 1u);
  EXPECT_EQ(plan.copies[0].src, 2);
  EXPECT_FALSE(plan.fill_uncovered[0]);
}

TEST(ReshardPlannerTest, GapsAreZeroFilled) {
  const IndexMap from = {Chunk1D(0, 0, 4), Chunk1D(1, 6, 10)};
  const IndexMap to = {Chunk1D(2, 0, 10)};
  const ReplicaReshardPlan plan = *PlanReplicaReshard(from, to);
  EXPECT_EQ(plan.copies.size(), 2u);
  EXPECT_TRUE(plan.fill_uncovered[0]);
}

TEST(ReshardPlannerTest, OwnershipMaskKeepsTheFirstCopy) {
  const IndexMap map = {Chunk1D(0, 0, 6), Chunk1D(1, 4, 10), Chunk1D(2, 0, 10, 2)};
  const std::vector<PlannedFill> fills = *PlanOwnershipMask(map);
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
  const std::vector<PlannedCopy> copies = *PlanGatherToReplica(map, Mode::kSum);
  ASSERT_EQ(copies.size(), 4u);  // 0<-0, 0<-1, 1<-1, 1<-0
  EXPECT_EQ(copies[0].combine, Combine::kAssign);
  EXPECT_EQ(copies[1].combine, Combine::kAdd);
  EXPECT_EQ(copies[1].src, 1);
  EXPECT_EQ(copies[1].dst_local, (Box{Range{4, 1, 2}}));
}

// ---------------------------------------------------------------------------------------------
// The straightforward all-pairs planners the indexed ones must agree with exactly.

SourceSelection ReferenceSelectSources(const IndexMap& sources, const Box& target,
                                       int preferred_device) {
  std::vector<int> order(sources.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return (sources[a].device == preferred_device) > (sources[b].device == preferred_device);
  });
  SourceSelection selection;
  for (int i : order) {
    std::optional<Box> piece = IntersectBoxes(sources[i].box, target);
    if (!piece) continue;
    const bool redundant =
        std::any_of(selection.pieces.begin(), selection.pieces.end(),
                    [&](const SourceSelection::Piece& p) { return BoxContains(p.global, *piece); });
    if (!redundant) selection.pieces.push_back({i, *piece});
  }
  int64_t covered = 0;
  bool disjoint = true;
  for (size_t a = 0; a < selection.pieces.size() && disjoint; ++a) {
    covered += NumElements(selection.pieces[a].global);
    for (size_t b = a + 1; b < selection.pieces.size() && disjoint; ++b) {
      disjoint = !IntersectBoxes(selection.pieces[a].global, selection.pieces[b].global);
    }
  }
  selection.covers_target = disjoint && covered == NumElements(target);
  return selection;
}

ReplicaReshardPlan ReferenceReplicaReshard(const IndexMap& from, const IndexMap& to) {
  ReplicaReshardPlan plan;
  for (size_t j = 0; j < to.size(); ++j) {
    SourceSelection selection = ReferenceSelectSources(from, to[j].box, to[j].device);
    plan.fill_uncovered.push_back(!selection.covers_target);
    for (const SourceSelection::Piece& piece : selection.pieces) {
      plan.copies.push_back(PlannedCopy{piece.chunk, static_cast<int>(j),
                                        ToLocal(from[piece.chunk].box, piece.global),
                                        ToLocal(to[j].box, piece.global), Combine::kAssign});
    }
  }
  return plan;
}

std::vector<PlannedCopy> ReferenceGatherToReplica(const IndexMap& map, Mode mode) {
  std::vector<PlannedCopy> copies;
  const Combine combine = CombineFor(mode);
  for (size_t j = 0; j < map.size(); ++j) {
    const Box whole = FullBox(BoxShape(map[j].box));
    copies.push_back(
        PlannedCopy{static_cast<int>(j), static_cast<int>(j), whole, whole, Combine::kAssign});
    for (size_t i = 0; i < map.size(); ++i) {
      if (i == j) continue;
      std::optional<Box> overlap = IntersectBoxes(map[i].box, map[j].box);
      if (!overlap) continue;
      copies.push_back(PlannedCopy{static_cast<int>(i), static_cast<int>(j),
                                   ToLocal(map[i].box, *overlap), ToLocal(map[j].box, *overlap),
                                   combine});
    }
  }
  return copies;
}

std::vector<PlannedFill> ReferenceOwnershipMask(const IndexMap& map) {
  std::vector<PlannedFill> fills;
  for (size_t j = 0; j < map.size(); ++j) {
    for (size_t i = 0; i < j; ++i) {
      std::optional<Box> overlap = IntersectBoxes(map[i].box, map[j].box);
      if (overlap) fills.push_back(PlannedFill{static_cast<int>(j), ToLocal(map[j].box, *overlap)});
    }
  }
  return fills;
}

// ---------------------------------------------------------------------------------------------
// Random index maps: strided overlapping chunks, tilings (many disjoint tiles), replicas.

class RandomMaps {
 public:
  explicit RandomMaps(uint64_t seed) : rng_(seed) {}

  int64_t Uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }

  Shape RandomShape() {
    Shape shape(Uniform(1, 3));
    for (int64_t& d : shape) d = Uniform(1, shape.size() == 1 ? 200 : 14);
    return shape;
  }

  Range RandomRange(int64_t dim) {
    const int64_t start = Uniform(0, dim - 1);
    const int64_t step = Uniform(0, 2) == 0 ? Uniform(1, 4) : 1;
    const int64_t max_count = (dim - 1 - start) / step + 1;
    return Range{start, step, Uniform(1, max_count)};
  }

  Box RandomBox(const Shape& shape) {
    Box box;
    for (int64_t d : shape) box.push_back(RandomRange(d));
    return box;
  }

  // Cuts each axis into runs of random length: disjoint tiles covering the array.
  std::vector<Box> Tiles(const Shape& shape) {
    std::vector<std::vector<Range>> cuts(shape.size());
    for (size_t d = 0; d < shape.size(); ++d) {
      const int64_t max_len = std::max<int64_t>(1, shape[d] / Uniform(1, 12));
      for (int64_t at = 0; at < shape[d];) {
        const int64_t len = std::min(shape[d] - at, Uniform(1, max_len));
        cuts[d].push_back(Range{at, 1, len});
        at += len;
      }
    }
    std::vector<Box> tiles = {Box{}};
    for (size_t d = 0; d < shape.size(); ++d) {
      std::vector<Box> next;
      for (const Box& t : tiles) {
        for (const Range& r : cuts[d]) {
          Box b = t;
          b.push_back(r);
          next.push_back(b);
        }
      }
      tiles = std::move(next);
    }
    return tiles;
  }

  // Interleaved strided chunks: hulls overlap, elements do not.
  std::vector<Box> Strided(const Shape& shape) {
    const int64_t step = Uniform(1, std::min<int64_t>(shape[0], 30));
    std::vector<Box> boxes;
    for (int64_t s = 0; s < step; ++s) {
      Box b = FullBox(shape);
      b[0] = Range{s, step, (shape[0] - 1 - s) / step + 1};
      boxes.push_back(b);
    }
    return boxes;
  }

  IndexMap RandomMap(const Shape& shape) {
    IndexMap map;
    const int kind = static_cast<int>(Uniform(0, 4));
    std::vector<Box> boxes;
    if (kind == 0) {
      const int64_t n = Uniform(1, 60);
      for (int64_t i = 0; i < n; ++i) boxes.push_back(RandomBox(shape));
    } else if (kind == 1) {
      boxes = Tiles(shape);
    } else if (kind == 2) {
      boxes = Strided(shape);
    } else if (kind == 3) {  // tiles with a few replicas and random extras mixed in
      boxes = Tiles(shape);
      const int64_t extras = Uniform(0, 10);
      for (int64_t i = 0; i < extras; ++i) {
        boxes.push_back(Uniform(0, 1) ? boxes[Uniform(0, boxes.size() - 1)] : RandomBox(shape));
      }
      std::shuffle(boxes.begin(), boxes.end(), rng_);
    } else {  // the whole array replicated, then tiles
      const int64_t copies = Uniform(1, 20);
      for (int64_t i = 0; i < copies; ++i) boxes.push_back(FullBox(shape));
      for (const Box& b : Tiles(shape)) boxes.push_back(b);
    }
    for (const Box& b : boxes) map.push_back(ChunkSpec{static_cast<int>(Uniform(0, 3)), b});
    return map;
  }

 private:
  std::mt19937_64 rng_;
};

void ExpectSameSelection(const SourceSelection& got, const SourceSelection& want) {
  ASSERT_EQ(got.pieces.size(), want.pieces.size());
  for (size_t k = 0; k < got.pieces.size(); ++k) {
    EXPECT_EQ(got.pieces[k].chunk, want.pieces[k].chunk);
    EXPECT_EQ(got.pieces[k].global, want.pieces[k].global);
  }
  EXPECT_EQ(got.covers_target, want.covers_target);
}

TEST(ReshardPlannerTest, IndexedPlansMatchTheAllPairsReference) {
  RandomMaps random(20240611);
  for (int trial = 0; trial < 400; ++trial) {
    SCOPED_TRACE(trial);
    const Shape shape = random.RandomShape();
    const IndexMap from = random.RandomMap(shape);
    const IndexMap to = random.RandomMap(shape);

    const ReplicaReshardPlan want = ReferenceReplicaReshard(from, to);
    const absl::StatusOr<ReplicaReshardPlan> got = PlanReplicaReshard(from, to);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->fill_uncovered, want.fill_uncovered);
    EXPECT_TRUE(got->copies == want.copies);

    const absl::StatusOr<std::vector<PlannedCopy>> gather = PlanGatherToReplica(from, Mode::kMax);
    ASSERT_TRUE(gather.ok()) << gather.status();
    EXPECT_TRUE(*gather == ReferenceGatherToReplica(from, Mode::kMax));

    const absl::StatusOr<std::vector<PlannedFill>> mask = PlanOwnershipMask(from);
    ASSERT_TRUE(mask.ok()) << mask.status();
    EXPECT_TRUE(*mask == ReferenceOwnershipMask(from));

    // Arbitrary targets (strided, partial).
    const ChunkIndex index(from);
    for (int t = 0; t < 5; ++t) {
      const Box target = random.RandomBox(shape);
      const int preferred = static_cast<int>(random.Uniform(-1, 3));
      const SourceSelection reference = ReferenceSelectSources(from, target, preferred);
      PlanBudget budget;
      const absl::StatusOr<SourceSelection> indexed =
          SelectSources(from, index, target, preferred, budget);
      ASSERT_TRUE(indexed.ok()) << indexed.status();
      ExpectSameSelection(*indexed, reference);

      const absl::StatusOr<std::vector<SourceSelection::Piece>> overlapping =
          OverlappingPieces(from, index, target, budget);
      ASSERT_TRUE(overlapping.ok()) << overlapping.status();
      std::vector<int> want_chunks, got_chunks;
      for (size_t i = 0; i < from.size(); ++i) {
        if (IntersectBoxes(from[i].box, target)) want_chunks.push_back(static_cast<int>(i));
      }
      for (const auto& p : *overlapping) {
        got_chunks.push_back(p.chunk);
        EXPECT_EQ(p.global, *IntersectBoxes(from[p.chunk].box, target));
      }
      EXPECT_EQ(got_chunks, want_chunks);
    }
  }
}

TEST(ReshardPlannerTest, ScalarArraysPlanLikeAnyOther) {
  const IndexMap map = {ChunkSpec{0, {}}, ChunkSpec{1, {}}};
  const ReplicaReshardPlan want = ReferenceReplicaReshard(map, map);
  const ReplicaReshardPlan got = *PlanReplicaReshard(map, map);
  EXPECT_EQ(got.fill_uncovered, want.fill_uncovered);
  EXPECT_TRUE(got.copies == want.copies);
  EXPECT_TRUE(*PlanGatherToReplica(map, Mode::kSum) == ReferenceGatherToReplica(map, Mode::kSum));
  EXPECT_TRUE(*PlanOwnershipMask(map) == ReferenceOwnershipMask(map));
}

// 65,536 disjoint tiles (the default chunk limit) plan well within the default work limit.
TEST(ReshardPlannerTest, ManyDisjointTilesPlanWithinTheDefaultLimit) {
  IndexMap tiles, halves;
  constexpr int64_t kTiles = 65536;
  for (int64_t i = 0; i < kTiles; ++i) tiles.push_back(Chunk1D(i % 4, i * 3, i * 3 + 3));
  halves = {Chunk1D(0, 0, kTiles * 3 / 2), Chunk1D(1, kTiles * 3 / 2, kTiles * 3)};
  const absl::StatusOr<ReplicaReshardPlan> gather = PlanReplicaReshard(tiles, halves);
  ASSERT_TRUE(gather.ok()) << gather.status();
  EXPECT_EQ(gather->copies.size(), static_cast<size_t>(kTiles));
  EXPECT_EQ(gather->fill_uncovered, (std::vector<bool>{false, false}));
  const absl::StatusOr<ReplicaReshardPlan> scatter = PlanReplicaReshard(halves, tiles);
  ASSERT_TRUE(scatter.ok()) << scatter.status();
  EXPECT_EQ(scatter->copies.size(), static_cast<size_t>(kTiles));
  const absl::StatusOr<std::vector<PlannedFill>> mask = PlanOwnershipMask(tiles);
  ASSERT_TRUE(mask.ok()) << mask.status();
  EXPECT_TRUE(mask->empty());
  const absl::StatusOr<std::vector<PlannedCopy>> copies = PlanGatherToReplica(tiles, Mode::kSum);
  ASSERT_TRUE(copies.ok()) << copies.status();
  EXPECT_EQ(copies->size(), static_cast<size_t>(kTiles));
}

// A plan whose call is abandoned stops within a few thousand units of work with the call's status,
// long before the work limit; a plan whose call is wanted is unaffected by the check.
TEST(ReshardPlannerTest, PlanningStopsWhenTheCallIsAbandoned) {
  IndexMap tiles;
  for (int64_t i = 0; i < 20000; ++i) tiles.push_back(Chunk1D(i % 4, i, i + 1));
  const IndexMap whole = {Chunk1D(0, 0, 20000)};
  int checks = 0;
  const StopCheck wanted = [&] {
    ++checks;
    return absl::OkStatus();
  };
  ASSERT_TRUE(PlanReplicaReshard(whole, tiles, kDefaultPlanWorkLimit, wanted).ok());
  EXPECT_GT(checks, 1);
  int calls = 0;
  const StopCheck expired = [&] {
    return ++calls < 3 ? absl::OkStatus() : absl::DeadlineExceededError("the deadline passed");
  };
  for (const absl::Status& status :
       {PlanReplicaReshard(whole, tiles, kDefaultPlanWorkLimit, expired).status(),
        PlanGatherToReplica(tiles, Mode::kSum, kDefaultPlanWorkLimit, expired).status(),
        PlanOwnershipMask(tiles, kDefaultPlanWorkLimit, expired).status()}) {
    EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
    EXPECT_NE(status.message().find(": the deadline passed"), std::string::npos) << status;
  }
}

// Chunks that all overlap each other need quadratically many copies: refused, not computed.
TEST(ReshardPlannerTest, QuadraticPlansAreResourceExhausted) {
  IndexMap same;
  for (int i = 0; i < 5000; ++i) same.push_back(Chunk1D(i % 8, 0, 100));
  for (const absl::Status& status :
       {PlanGatherToReplica(same, Mode::kSum).status(), PlanOwnershipMask(same).status(),
        PlanReplicaReshard(same, same).status()}) {
    EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
    EXPECT_NE(status.message().find("the plan needs more than 10000000 box intersections"),
              std::string::npos)
        << status;
  }
  // A small explicit limit names it.
  const IndexMap few = {Chunk1D(0, 0, 10), Chunk1D(1, 0, 10), Chunk1D(2, 0, 10)};
  const absl::Status small = PlanGatherToReplica(few, Mode::kSum, /*work_limit=*/3).status();
  EXPECT_EQ(small.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(small.message(),
            "gather to REPLICA: the plan needs more than 3 box intersections (chunks that overlap "
            "many other chunks)");
  EXPECT_TRUE(PlanGatherToReplica(few, Mode::kSum, /*work_limit=*/1000).ok());
}

TEST(ChunkIndexTest, FindsOverlapsAndContainersBelowALimit) {
  const IndexMap map = {Chunk1D(0, 0, 10), Chunk1D(0, 5, 8), Chunk1D(0, 20, 30),
                        Chunk1D(0, 1, 30, 2)};
  const ChunkIndex index(map);
  PlanBudget budget;
  std::vector<int64_t> ids;
  index.ForEachOverlap(Box{Range{6, 1, 1}}, budget, [&](int64_t id) {
    ids.push_back(id);
    return true;
  });
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<int64_t>{0, 1, 3}));  // 3's hull meets 6; its elements do not
  ids.clear();
  index.ForEachContaining(Box{Range{5, 1, 3}}, /*below=*/3, budget, [&](int64_t id) {
    ids.push_back(id);
    return true;
  });
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<int64_t>{0, 1}));
  EXPECT_GT(budget.used(), 0);
}

}  // namespace
}  // namespace distarray
