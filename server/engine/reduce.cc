// Engine::Reduce: resolve -> plan (reduce_planner) -> prepare the operand -> allocate the
// partials -> one kernel per chunk -> optionally combine -> register.
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/engine/engine.h"
#include "server/engine/layout.h"
#include "server/engine/reduce_planner.h"

namespace distarray {

absl::StatusOr<ArrayPtr> Engine::Reduce(const v1::ReduceRequest& request, const CallContext& call) {
  const v1::ReduceOpSpec& spec = request.spec();
  ArrayPtr array;
  ArrayMeta meta;
  ReduceInput input;
  input.op = spec.op();
  input.keepdims = spec.keepdims();
  input.axes.assign(spec.axes().begin(), spec.axes().end());
  if (spec.operand().kind_case() == v1::Operand::kHandle) {
    ASSIGN_OR_RETURN(array, registry_.Find(spec.operand().handle(), "spec.operand.handle"));
    meta = ArrayMeta{array->shape, array->dtype, array->mode, array->index_map()};
    input.array = &meta;
  } else if (spec.operand().kind_case() == v1::Operand::KIND_NOT_SET) {
    return absl::InvalidArgumentError("spec.operand: give the array to reduce");
  }
  ASSIGN_OR_RETURN(const ReducePlan plan, PlanReduce(input, call.alive));
  ASSIGN_OR_RETURN(Array out, NewResult(request.result_name(), call));
  out.shape = plan.result_shape;
  out.dtype = plan.result_dtype;
  out.mode = plan.result_mode;
  RETURN_IF_ERROR(call.CheckAlive());

  std::vector<Chunk> source = array->chunks;
  if (plan.prepare) {
    ASSIGN_OR_RETURN(source,
                     Relayout(*backend_, *array, plan.prepare_map, plan.prepare_mode, call.alive));
  }
  ASSIGN_OR_RETURN(out.chunks, AllocateChunks(*backend_, out.dtype, plan.result_map));

  std::vector<Chunk> extremes;
  if (plan.arg) {
    // Pass 1: each chunk's extreme, combined into every chunk's copy of its outputs.
    Array partial;
    partial.shape = plan.result_shape;
    partial.dtype = plan.in_dtype;
    partial.mode = plan.result_mode == Mode::kReplica ? Mode::kReplica : plan.extreme_mode;
    ASSIGN_OR_RETURN(partial.chunks, AllocateChunks(*backend_, plan.in_dtype, plan.result_map));
    for (size_t c = 0; c < source.size(); ++c) {
      RETURN_IF_ERROR(backend_->Reduce(plan.kind, plan.in_dtype, source[c].buffer, plan.geometry[c],
                                       partial.chunks[c].buffer, 1, nullptr));
    }
    if (partial.mode == Mode::kReplica) {
      extremes = std::move(partial.chunks);
    } else {
      ASSIGN_OR_RETURN(extremes,
                       Relayout(*backend_, partial, plan.result_map, Mode::kReplica, call.alive));
    }
  }
  for (size_t c = 0; c < source.size(); ++c) {
    RETURN_IF_ERROR(call.CheckAlive());
    if (plan.arg) {
      RETURN_IF_ERROR(backend_->Reduce(ReduceKind::kArgMatch, plan.in_dtype, source[c].buffer,
                                       plan.geometry[c], out.chunks[c].buffer, 1,
                                       extremes[c].buffer));
    } else {
      RETURN_IF_ERROR(backend_->Reduce(plan.kind, plan.in_dtype, source[c].buffer, plan.geometry[c],
                                       out.chunks[c].buffer, plan.scale, nullptr));
    }
  }
  if (spec.combine() && out.mode != Mode::kReplica) {
    ASSIGN_OR_RETURN(out.chunks,
                     Relayout(*backend_, out, plan.combine_map, Mode::kReplica, call.alive));
    out.mode = Mode::kReplica;
  }
  return Register(std::move(out), /*in_place=*/false, call);
}

}  // namespace distarray
