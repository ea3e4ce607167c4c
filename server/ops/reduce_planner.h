// Planning a distributed reduction: validation, NumPy's result dtypes, what the operand must
// become first (replicated elements masked so they count once, op-mode values gathered, gaps
// filled where the op is not blind to zeros), and per chunk where its partial result lands and
// how the kernel walks it. The partials form an op-mode array (cupyx's design); argmax/argmin
// take two passes (the combined extreme, then the first index holding it). Pure.
#ifndef DISTARRAY_SERVER_OPS_REDUCE_PLANNER_H_
#define DISTARRAY_SERVER_OPS_REDUCE_PLANNER_H_

#include <vector>

#include "absl/status/statusor.h"
#include "distarray/v1/distarray.pb.h"
#include "server/kernels/reduce_ops.h"
#include "server/ops/chunk_index.h"
#include "server/ops/operand.h"

namespace distarray {

struct ReduceInput {
  v1::ReduceOp op = v1::REDUCE_OP_UNSPECIFIED;
  const ArrayMeta* array = nullptr;
  std::vector<int32_t> axes;  // as sent: empty means all, negative counts from the end
  bool keepdims = false;
};

struct ReducePlan {
  ReduceKind kind = ReduceKind::kSum;  // the (first) pass
  bool arg = false;                    // argmax/argmin: a kArgMatch pass follows
  DType in_dtype = DType::kUnspecified;
  DType result_dtype = DType::kUnspecified;
  // The dtype the kernels reduce in: in_dtype, or float32 for float16 and bfloat16, which the
  // kernels load from their 16-bit storage (in_dtype) and write back in it (Backend::Reduce).
  DType kernel_dtype = DType::kUnspecified;
  Shape result_shape;
  Mode result_mode = Mode::kReplica;
  double scale = 1;  // mean: 1 / reduced element count

  // The operand as the kernels read it: as it is, or Relayout(array, prepare_map, prepare_mode).
  bool prepare = false;
  IndexMap prepare_map;
  Mode prepare_mode = Mode::kReplica;

  // One result chunk and one kernel call per prepared chunk.
  IndexMap result_map;
  std::vector<ReduceGeometry> geometry;
  // Where `combine` puts the REPLICA result: result_map, or a covering layout when the partials
  // leave outputs uncovered (their value is the partial mode's identity).
  IndexMap combine_map;
  // argmax/argmin: the first pass's dtype and mode (the extreme, in result_map's layout).
  Mode extreme_mode = Mode::kMax;

  // A reduction over no element (an axis of length 0) with a non-empty result: no kernel runs;
  // result_map (one chunk on device 0) is filled with `fill_value`, the op's identity (sum 0,
  // prod 1, any false, all true) or NaN for mean, as NumPy gives.
  bool fill = false;
  Scalar fill_value;
};

absl::StatusOr<ReducePlan> PlanReduce(const ReduceInput& input, const StopCheck& stop = {});

}  // namespace distarray

#endif  // DISTARRAY_SERVER_OPS_REDUCE_PLANNER_H_
