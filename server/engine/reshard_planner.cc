#include "server/engine/reshard_planner.h"

#include <algorithm>

namespace distarray {

SourceSelection SelectSources(const IndexMap& sources, const Box& target, int preferred_device) {
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
  // Coverage is exact when the chosen pieces are pairwise disjoint and their sizes add up.
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

ReplicaReshardPlan PlanReplicaReshard(const IndexMap& from, const IndexMap& to) {
  ReplicaReshardPlan plan;
  for (size_t j = 0; j < to.size(); ++j) {
    SourceSelection selection = SelectSources(from, to[j].box, to[j].device);
    plan.fill_uncovered.push_back(!selection.covers_target);
    for (const SourceSelection::Piece& piece : selection.pieces) {
      plan.copies.push_back(PlannedCopy{piece.chunk, static_cast<int>(j),
                                        ToLocal(from[piece.chunk].box, piece.global),
                                        ToLocal(to[j].box, piece.global), Combine::kAssign});
    }
  }
  return plan;
}

std::vector<PlannedCopy> PlanGatherToReplica(const IndexMap& map, Mode mode) {
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

std::vector<PlannedFill> PlanOwnershipMask(const IndexMap& map) {
  std::vector<PlannedFill> fills;
  for (size_t j = 0; j < map.size(); ++j) {
    for (size_t i = 0; i < j; ++i) {
      std::optional<Box> overlap = IntersectBoxes(map[i].box, map[j].box);
      if (overlap) fills.push_back(PlannedFill{static_cast<int>(j), ToLocal(map[j].box, *overlap)});
    }
  }
  return fills;
}

}  // namespace distarray
