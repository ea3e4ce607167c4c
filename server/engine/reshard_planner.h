// Planning, separate from execution: which boxes move where for a reshard or a mode change.
// Pure functions of index maps, so they are unit-tested without devices.
#ifndef DISTARRAY_SERVER_ENGINE_RESHARD_PLANNER_H_
#define DISTARRAY_SERVER_ENGINE_RESHARD_PLANNER_H_

#include <vector>

#include "common/index_map.h"
#include "server/kernels/ops.h"

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
SourceSelection SelectSources(const IndexMap& sources, const Box& target, int preferred_device);

// REPLICA to REPLICA between two index maps. Copies are grouped by destination chunk. A
// destination chunk whose elements are not all provably covered is first filled with the value
// uncovered elements read as (zero, or the identity of an op-mode source's mode).
struct ReplicaReshardPlan {
  std::vector<bool> fill_uncovered;
  std::vector<PlannedCopy> copies;
};
ReplicaReshardPlan PlanReplicaReshard(const IndexMap& from, const IndexMap& to);

// An op mode to REPLICA on the same map: chunk j becomes the op over every copy of each of its
// elements. For each j: first a copy of itself (assign), then each other overlapping chunk
// combined in.
std::vector<PlannedCopy> PlanGatherToReplica(const IndexMap& map, Mode mode);

// REPLICA to an op mode: each element keeps its value in the first chunk that covers it and holds
// the identity in every later one, so the op over copies equals the value.
std::vector<PlannedFill> PlanOwnershipMask(const IndexMap& map);

}  // namespace distarray

#endif  // DISTARRAY_SERVER_ENGINE_RESHARD_PLANNER_H_
