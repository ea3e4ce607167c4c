// Which WHILE loops a recording may fuse into one kernel per iteration (server/backend/
// fused_loop.h), and the FusedLoop that describes one. Pure: plans on the variables' metadata and
// buffers, runs nothing.
//
// A loop fuses when its body is elementwise statements followed by `condition = all(x)` or
// `any(x)` over every axis, every array involved is REPLICA with one index map that splits it
// into disjoint chunks covering it, one chunk on each device of the recording, and every array
// operand has the result's shape (no broadcasting). Each device then runs the chain over its
// chunk, and the devices agree on the condition (its partials, one per device). Anything else
// records statement by statement, with the reason in the daemon's debug log.
#ifndef DISTARRAY_SERVER_GRAPH_LOOP_FUSION_H_
#define DISTARRAY_SERVER_GRAPH_LOOP_FUSION_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/types/span.h"

#include "absl/container/flat_hash_map.h"
#include "distarray/v1/distarray.pb.h"
#include "server/backend/fused_loop.h"
#include "server/ops/op_executors.h"

namespace distarray {

// The most ops one fused loop holds (longer chains record statement by statement, as do loops
// addressing more than FusedLoop::kMaxBuffers arrays).
inline constexpr int kMaxFusedLoopOps = 64;

// `env` holds the variables alive before the loop, loop-carried ones bound to their slots;
// `devices` are the recording's. On one device, `entry_flag` is the condition's buffer before the
// first iteration; over several, each device's entry is its chunk of the condition. Returns the
// loop once per device, in `devices` order; nullopt, with `why_not` set, when it does not fuse.
std::optional<std::vector<FusedLoop>> PlanFusedLoop(
    const v1::WhileLoop& loop, const absl::flat_hash_map<std::string, ArrayPtr>& env,
    const OpContext& context, absl::Span<const int> devices, const BufferPtr& entry_flag,
    std::string* why_not);

}  // namespace distarray

#endif  // DISTARRAY_SERVER_GRAPH_LOOP_FUSION_H_
