// Which straight-line runs of a block's elementwise statements a recording may fuse into one
// kernel per device (GraphRecording::RecordFusedChain), and the FusedLoop describing one. Pure:
// plans on the variables' metadata and buffers, runs nothing.
//
// A run fuses when it is at least two consecutive elementwise or copy statements, every array they
// read and write is REPLICA in one shape and one index map with at most one chunk per device (0-d
// values kept on every device, as a solver's recurrence keeps them), nothing broadcasts, nothing is
// complex, and its inputs and stores fit the kernel's buffers. Each device then computes the run
// over its chunk. This is what the solvers' dozens of 0-d operations per iteration become: one
// kernel instead of one per operation.
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
  ArrayMeta layout;  // every value's shape and map (its dtype: per value)
  // The chain once; the caller fills in each device's buffers (chunk c of layout.map).
  FusedLoop chain;
};

// nullopt when the run starting at block[start] does not fuse (fewer than two ops).
std::optional<FusedChainPlan> PlanFusedChain(
    const google::protobuf::RepeatedPtrField<v1::Statement>& block, int start,
    const absl::flat_hash_map<std::string, ArrayPtr>& env, const OpContext& context);

}  // namespace distarray

#endif  // DISTARRAY_SERVER_GRAPH_CHAIN_FUSION_H_
