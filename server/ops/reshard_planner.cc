#include "server/ops/reshard_planner.h"

#include <algorithm>
#include <limits>

#include "common/status_macros.h"

namespace distarray {
namespace {

using Piece = SourceSelection::Piece;

// A planned copy or fill is kept (two boxes on the heap) and later executed, so it spends more of
// the budget than a box test: the limit also bounds the plan's memory.
constexpr int64_t kWorkPerPlannedCopy = 8;

// Below this many candidates the pairwise tests are cheaper than building an index.
constexpr size_t kBruteForceCandidates = 16;

std::vector<Box> BoxesOf(const std::vector<Piece>& pieces) {
  std::vector<Box> boxes;
  boxes.reserve(pieces.size());
  for (const Piece& p : pieces) boxes.push_back(p.global);
  return boxes;
}

// Whether some candidate before `k` contains candidate `k`. Containment is transitive, so this is
// the same as "some chosen piece contains it": an earlier candidate that was skipped is itself
// contained in a chosen piece before it.
bool ContainedInEarlier(const std::vector<Piece>& candidates, const ChunkIndex* index, size_t k,
                        PlanBudget& budget) {
  const Box& piece = candidates[k].global;
  if (index == nullptr) {
    for (size_t j = 0; j < k; ++j) {
      budget.Spend();
      if (BoxContains(candidates[j].global, piece)) return true;
    }
    return false;
  }
  bool contained = false;
  index->ForEachContaining(piece, static_cast<int64_t>(k), budget, [&](int64_t j) {
    contained = BoxContains(candidates[j].global, piece);
    return !contained;
  });
  return contained;
}

// Whether two of `pieces` share an element.
bool AnyTwoIntersect(const std::vector<Piece>& pieces, const ChunkIndex* index,
                     PlanBudget& budget) {
  for (size_t a = 0; a < pieces.size(); ++a) {
    if (index == nullptr) {
      for (size_t b = 0; b < a; ++b) {
        budget.Spend();
        if (IntersectBoxes(pieces[a].global, pieces[b].global)) return true;
      }
      continue;
    }
    bool met = false;
    index->ForEachOverlap(pieces[a].global, static_cast<int64_t>(a), budget, [&](int64_t b) {
      met = IntersectBoxes(pieces[a].global, pieces[b].global).has_value();
      return !met;
    });
    if (met || budget.exhausted()) return met;
  }
  return false;
}

// Chooses among `candidates` (the non-empty intersections with `target`, in preference order)
// and decides whether the chosen pieces provably cover the target.
absl::StatusOr<SourceSelection> Choose(std::vector<Piece> candidates, const Box& target,
                                       PlanBudget& budget, absl::string_view what) {
  SourceSelection selection;
  const bool indexed = candidates.size() > kBruteForceCandidates;
  ChunkIndex candidate_index;
  if (indexed) candidate_index = ChunkIndex(BoxesOf(candidates));
  std::vector<bool> chosen(candidates.size(), false);
  size_t num_chosen = 0;
  for (size_t k = 0; k < candidates.size(); ++k) {
    const bool redundant =
        ContainedInEarlier(candidates, indexed ? &candidate_index : nullptr, k, budget);
    if (budget.exhausted()) return budget.ExhaustedError(what);
    if (!redundant) {
      chosen[k] = true;
      ++num_chosen;
    }
  }
  const bool all_chosen = num_chosen == candidates.size();
  if (all_chosen) {
    selection.pieces = std::move(candidates);
  } else {
    selection.pieces.reserve(num_chosen);
    for (size_t k = 0; k < candidates.size(); ++k) {
      if (chosen[k]) selection.pieces.push_back(std::move(candidates[k]));
    }
  }

  // Coverage is exact when the chosen pieces are pairwise disjoint and their sizes add up. The
  // sum is checked first: it is linear, and most partial covers fail it.
  __int128 covered = 0;
  for (const Piece& p : selection.pieces) covered += NumElements(p.global);
  if (covered != NumElements(target)) return selection;
  bool intersect = false;
  if (selection.pieces.size() <= kBruteForceCandidates) {
    intersect = AnyTwoIntersect(selection.pieces, nullptr, budget);
  } else if (all_chosen && indexed) {
    intersect = AnyTwoIntersect(selection.pieces, &candidate_index, budget);
  } else {
    const ChunkIndex chosen_index(BoxesOf(selection.pieces));
    intersect = AnyTwoIntersect(selection.pieces, &chosen_index, budget);
  }
  if (budget.exhausted()) return budget.ExhaustedError(what);
  selection.covers_target = !intersect;
  return selection;
}

// The ids `index` reports for `query` (below `below`), ascending.
absl::StatusOr<std::vector<int64_t>> SortedCandidates(const ChunkIndex& index, const Box& query,
                                                      int64_t below, PlanBudget& budget,
                                                      absl::string_view what) {
  std::vector<int64_t> ids;
  index.ForEachOverlap(query, below, budget, [&](int64_t id) {
    ids.push_back(id);
    return true;
  });
  if (budget.exhausted()) return budget.ExhaustedError(what);
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace

absl::StatusOr<SourceSelection> SelectSources(const IndexMap& sources, const ChunkIndex& index,
                                              const Box& target, int preferred_device,
                                              PlanBudget& budget, absl::string_view what) {
  absl::StatusOr<std::vector<int64_t>> ids =
      SortedCandidates(index, target, std::numeric_limits<int64_t>::max(), budget, what);
  if (!ids.ok()) return ids.status();
  // Preferred-device candidates first, each group in index order (a stable partition).
  std::stable_partition(ids->begin(), ids->end(),
                        [&](int64_t i) { return sources[i].device == preferred_device; });
  std::vector<Piece> candidates;
  for (int64_t i : *ids) {
    if (std::optional<Box> piece = IntersectBoxes(sources[i].box, target)) {
      candidates.push_back({static_cast<int>(i), *std::move(piece)});
    }
  }
  return Choose(std::move(candidates), target, budget, what);
}

absl::StatusOr<std::vector<Piece>> OverlappingPieces(const IndexMap& map, const ChunkIndex& index,
                                                     const Box& target, PlanBudget& budget,
                                                     absl::string_view what) {
  absl::StatusOr<std::vector<int64_t>> ids =
      SortedCandidates(index, target, std::numeric_limits<int64_t>::max(), budget, what);
  if (!ids.ok()) return ids.status();
  std::vector<Piece> pieces;
  for (int64_t i : *ids) {
    if (std::optional<Box> piece = IntersectBoxes(map[i].box, target)) {
      pieces.push_back({static_cast<int>(i), *std::move(piece)});
    }
  }
  return pieces;
}

absl::StatusOr<ReplicaReshardPlan> PlanReplicaReshard(const IndexMap& from, const IndexMap& to,
                                                      int64_t work_limit, const StopCheck& stop) {
  constexpr absl::string_view kWhat = "reshard";
  PlanBudget budget(work_limit, stop);
  const ChunkIndex index(from);
  ReplicaReshardPlan plan;
  plan.fill_uncovered.reserve(to.size());
  for (size_t j = 0; j < to.size(); ++j) {
    absl::StatusOr<SourceSelection> selection =
        SelectSources(from, index, to[j].box, to[j].device, budget, kWhat);
    if (!selection.ok()) return selection.status();
    plan.fill_uncovered.push_back(!selection->covers_target);
    if (!budget.Spend(kWorkPerPlannedCopy * static_cast<int64_t>(selection->pieces.size())))
      return budget.ExhaustedError(kWhat);
    for (const Piece& piece : selection->pieces) {
      plan.copies.push_back(PlannedCopy{piece.chunk, static_cast<int>(j),
                                        ToLocal(from[piece.chunk].box, piece.global),
                                        ToLocal(to[j].box, piece.global), Combine::kAssign});
    }
  }
  return plan;
}

absl::StatusOr<std::vector<PlannedCopy>> PlanGatherToReplica(const IndexMap& map, Mode mode,
                                                             int64_t work_limit,
                                                             const StopCheck& stop) {
  constexpr absl::string_view kWhat = "gather to REPLICA";
  PlanBudget budget(work_limit, stop);
  const ChunkIndex index(map);
  std::vector<PlannedCopy> copies;
  const Combine combine = CombineFor(mode);
  for (size_t j = 0; j < map.size(); ++j) {
    const Box whole = FullBox(BoxShape(map[j].box));
    copies.push_back(
        PlannedCopy{static_cast<int>(j), static_cast<int>(j), whole, whole, Combine::kAssign});
    absl::StatusOr<std::vector<int64_t>> ids =
        SortedCandidates(index, map[j].box, std::numeric_limits<int64_t>::max(), budget, kWhat);
    if (!ids.ok()) return ids.status();
    for (int64_t i : *ids) {
      if (i == static_cast<int64_t>(j)) continue;
      std::optional<Box> overlap = IntersectBoxes(map[i].box, map[j].box);
      if (!overlap) continue;
      if (!budget.Spend(kWorkPerPlannedCopy)) return budget.ExhaustedError(kWhat);
      copies.push_back(PlannedCopy{static_cast<int>(i), static_cast<int>(j),
                                   ToLocal(map[i].box, *overlap), ToLocal(map[j].box, *overlap),
                                   combine});
    }
  }
  return copies;
}

absl::StatusOr<std::vector<PlannedFill>> PlanOwnershipMask(const IndexMap& map, int64_t work_limit,
                                                           const StopCheck& stop) {
  constexpr absl::string_view kWhat = "ownership mask";
  PlanBudget budget(work_limit, stop);
  const ChunkIndex index(map);
  std::vector<PlannedFill> fills;
  for (size_t j = 0; j < map.size(); ++j) {
    absl::StatusOr<std::vector<int64_t>> ids =
        SortedCandidates(index, map[j].box, static_cast<int64_t>(j), budget, kWhat);
    if (!ids.ok()) return ids.status();
    for (int64_t i : *ids) {
      std::optional<Box> overlap = IntersectBoxes(map[i].box, map[j].box);
      if (!overlap) continue;
      if (!budget.Spend(kWorkPerPlannedCopy)) return budget.ExhaustedError(kWhat);
      fills.push_back(PlannedFill{static_cast<int>(j), ToLocal(map[j].box, *overlap)});
    }
  }
  return fills;
}

namespace {

// Depth-first bisection of `box`: a box the union provably covers is done; a single element it
// does not cover is the answer. SelectSources is exact for one element, so a box reported
// uncovered only because its cover is hard to prove (overlapping strided chunks) is split until
// each part is proven covered, never reported.
absl::StatusOr<std::optional<std::vector<int64_t>>> FindUncovered(const IndexMap& map,
                                                                  const ChunkIndex& index,
                                                                  const Box& box,
                                                                  PlanBudget& budget) {
  constexpr absl::string_view kWhat = "coverage check";
  ASSIGN_OR_RETURN(const SourceSelection cover, SelectSources(map, index, box, 0, budget, kWhat));
  if (cover.covers_target) return std::nullopt;
  int widest = -1;
  for (int d = 0; d < static_cast<int>(box.size()); ++d) {
    if (box[d].count > 1 && (widest < 0 || box[d].count > box[widest].count)) widest = d;
  }
  if (widest < 0) {  // one element, covered by no chunk
    std::vector<int64_t> element;
    for (const Range& r : box) element.push_back(r.start);
    return element;
  }
  if (!budget.Spend()) return budget.ExhaustedError(kWhat);
  const Range whole = box[widest];
  const int64_t half = whole.count / 2;
  Box low = box, high = box;
  low[widest] = Range{whole.start, whole.step, half};
  high[widest] = Range{whole.start + half * whole.step, whole.step, whole.count - half};
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> found,
                   FindUncovered(map, index, low, budget));
  if (found) return found;
  return FindUncovered(map, index, high, budget);
}

}  // namespace

absl::StatusOr<std::optional<std::vector<int64_t>>> FindElementCoveredByNeither(
    const Shape& shape, const IndexMap& a, const IndexMap& b, int64_t work_limit,
    const StopCheck& stop) {
  if (NumElements(shape) == 0) return std::nullopt;
  IndexMap both = a;
  both.insert(both.end(), b.begin(), b.end());
  const ChunkIndex index(both);
  PlanBudget budget(work_limit, stop);
  return FindUncovered(both, index, FullBox(shape), budget);
}

}  // namespace distarray
