// Planning, separate from execution: which boxes move where for a reshard or a mode change.
// Pure functions of index maps, so they are unit-tested without devices.
#ifndef DISTARRAY_SERVER_OPS_RESHARD_PLANNER_H_
#define DISTARRAY_SERVER_OPS_RESHARD_PLANNER_H_

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "common/index_map.h"
#include "server/kernels/ops.h"
#include "server/ops/chunk_index.h"

namespace distarray {

// Copy chunk `src`'s elements at `src_local` into chunk `dst` at `dst_local` (local boxes of the
// same global box).
struct PlannedCopy {
  int src = 0;
  int dst = 0;
  Box src_local;
  Box dst_local;
  Combine combine = Combine::kAssign;
};

// Set chunk `chunk`'s elements at `local` to the mode's identity.
struct PlannedFill {
  int chunk = 0;
  Box local;
};

// Planning time grows with the output, not with the square of the chunk count: every planner
// finds overlapping chunks through a ChunkIndex, and spends a PlanBudget (index nodes entered,
// candidate boxes tested, copies planned) that turns inputs whose plans are inherently quadratic
// (thousands of chunks that all overlap each other) into RESOURCE_EXHAUSTED.

// The pieces of `sources` that supply the elements of `target` (global box), each element once
// where possible: candidates on `preferred_device` first, then in index order; a piece contained
// in one already chosen is skipped (replicated sources are read once).
struct SourceSelection {
  struct Piece {
    int chunk;
    Box global;
  };
  std::vector<Piece> pieces;
  bool covers_target = false;  // the pieces provably cover every element of the target
};
// `index` is ChunkIndex(sources), built once and reused for every target of a plan.
// RESOURCE_EXHAUSTED (naming `what`) when `budget` runs out.
absl::StatusOr<SourceSelection> SelectSources(const IndexMap& sources, const ChunkIndex& index,
                                              const Box& target, int preferred_device,
                                              PlanBudget& budget,
                                              absl::string_view what = "source selection");

// Every chunk of `map` that shares an element with `target`, in chunk order, with the shared box
// (global coordinates): what an op-mode read must combine. `index` is ChunkIndex(map).
absl::StatusOr<std::vector<SourceSelection::Piece>> OverlappingPieces(
    const IndexMap& map, const ChunkIndex& index, const Box& target, PlanBudget& budget,
    absl::string_view what = "overlapping chunks");

// REPLICA to REPLICA between two index maps. Copies are grouped by destination chunk. A
// destination chunk whose elements are not all provably covered is first filled with the value
// uncovered elements read as (zero, or the identity of an op-mode source's mode).
struct ReplicaReshardPlan {
  std::vector<bool> fill_uncovered;
  std::vector<PlannedCopy> copies;
};
// Each planner below is refused with RESOURCE_EXHAUSTED past `work_limit`, and stops with
// `stop`'s status once it reports the call is no longer wanted.
absl::StatusOr<ReplicaReshardPlan> PlanReplicaReshard(const IndexMap& from, const IndexMap& to,
                                                      int64_t work_limit = kDefaultPlanWorkLimit,
                                                      const StopCheck& stop = {});

// An op mode to REPLICA on the same map: chunk j becomes the op over every copy of each of its
// elements. For each j: first a copy of itself (assign), then each other overlapping chunk
// combined in.
absl::StatusOr<std::vector<PlannedCopy>> PlanGatherToReplica(
    const IndexMap& map, Mode mode, int64_t work_limit = kDefaultPlanWorkLimit,
    const StopCheck& stop = {});

// REPLICA to an op mode: each element keeps its value in the first chunk that covers it and holds
// the identity in every later one, so the op over copies equals the value.
absl::StatusOr<std::vector<PlannedFill>> PlanOwnershipMask(
    const IndexMap& map, int64_t work_limit = kDefaultPlanWorkLimit, const StopCheck& stop = {});

// The global index of one element of an array of `shape` that no chunk of `a` and no chunk of
// `b` covers, or nullopt when the two maps together cover every element. Used to refuse a
// relayout that would change what such an element reads as (an op mode's identity in the source,
// another value in the result).
absl::StatusOr<std::optional<std::vector<int64_t>>> FindElementCoveredByNeither(
    const Shape& shape, const IndexMap& a, const IndexMap& b,
    int64_t work_limit = kDefaultPlanWorkLimit, const StopCheck& stop = {});

}  // namespace distarray

#endif  // DISTARRAY_SERVER_OPS_RESHARD_PLANNER_H_
