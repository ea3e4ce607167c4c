// Which straight-line runs of a block's elementwise statements a recording may fuse into one
// kernel per device (GraphRecording::RecordFusedChain), and the FusedLoop describing one. Pure:
// plans on the variables' metadata and buffers, runs nothing.
//
// A run fuses when it is at least two consecutive elementwise or copy statements, every array they
// read and write is REPLICA with at most one chunk per device and either in one shape and index
// map (the vectors) or 0-d on the same devices (a solver's scalars, kept on every device), only a
// 0-d value broadcasts, nothing is complex, and its inputs and stores fit the kernel's buffers.
// Each device then computes the run over its vector chunk; every element computes the 0-d values
// (the same on each), reads 0-d inputs at element 0, and element 0 stores the 0-d results. This is
// what a solver's recurrence becomes: its dozens of 0-d operations and the vector updates they
// feed (`x + alpha * p`) in one kernel instead of one per operation.
//
// A 0-d input that the run also assigns ends the run when vectors are in it: element 0's store
// would race the other elements' reads.
//
// A run over vectors may end in the statement after it when that is a sum over every element of
// one of its float32 or float64 vectors, each chunk a disjoint part (a solver's norms and dot
// products): the same kernel adds up each chunk, saving the reduction's kernel and its pass over
// the vector. The partials are added in a fixed order, so a replay gives the same bits, though not
// the bits of the unfused reduction's order.
#ifndef DISTARRAY_SERVER_GRAPH_CHAIN_FUSION_H_
#define DISTARRAY_SERVER_GRAPH_CHAIN_FUSION_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "distarray/v1/distarray.pb.h"
#include "server/backend/fused_loop.h"
#include "server/ops/op_executors.h"

namespace distarray {

// The most ops one chain holds (a longer run becomes several chains).
inline constexpr int kMaxFusedChainOps = 256;

struct FusedChainPlan {
  int statements = 0;  // the block's statements it covers, from `start`
  // The variables it reads (by input index) and assigns (by store index, the last value of each).
  std::vector<std::string> inputs, stores;
  ArrayMeta layout;  // the vectors' shape and map (its dtype: per value); 0-d with none
  // With vectors: the 0-d values' map (one chunk on each of the vectors' devices), where the
  // broadcast inputs and stores (FusedLoop::Input/Store::broadcast) are.
  IndexMap scalar_map;
  // Where the run ends in a sum over every element of one of its float vectors (the Reduce
  // statement after its elementwise ones, counted in `statements`): that statement's target and
  // plan. The kernel writes chunk c's partial to chunk c of sum->plan.result_map; the caller
  // combines the partials as ExecuteReduce does.
  std::string sum_target;
  std::optional<PlannedReduce> sum;
  // The chain once; the caller fills in each device's buffers (chunk c of layout.map).
  FusedLoop chain;
};

// nullopt when the run starting at block[start] does not fuse (fewer than two ops).
std::optional<FusedChainPlan> PlanFusedChain(
    const google::protobuf::RepeatedPtrField<v1::Statement>& block, int start,
    const absl::flat_hash_map<std::string, ArrayPtr>& env, const OpContext& context);

}  // namespace distarray

#endif  // DISTARRAY_SERVER_GRAPH_CHAIN_FUSION_H_
