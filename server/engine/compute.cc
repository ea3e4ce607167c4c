// Engine operations that compute new arrays: Reshard, ChangeMode and Elementwise
// (resolve -> plan -> allocate -> execute -> register).
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/names.h"
#include "common/proto_convert.h"
#include "common/scalar_check.h"
#include "common/status_macros.h"
#include "server/engine/elementwise_planner.h"
#include "server/engine/engine.h"
#include "server/engine/layout.h"
#include "server/engine/op_table.h"

namespace distarray {
namespace {

// Metadata of a result that replaces (in place) or derives from `source`. A new result is
// unnamed and belongs to the calling session.
Array Derived(const Array& source, bool in_place, const CallContext& call) {
  Array out;
  if (in_place) {
    out.handle = source.handle;
    out.name = source.name;
    out.session = source.session;
  } else {
    out.session = call.session;
  }
  out.shape = source.shape;
  out.dtype = source.dtype;
  out.mode = source.mode;
  return out;
}

}  // namespace

absl::StatusOr<ArrayPtr> Engine::Reshard(const v1::ReshardRequest& request,
                                         const CallContext& call) {
  ASSIGN_OR_RETURN(ArrayPtr array, registry_.Find(request.handle(), "handle"));
  IndexMap map = array->index_map();
  if (request.has_index_map()) {
    ASSIGN_OR_RETURN(map, NormalizeMap(request.index_map(), array->shape, "index_map"));
  }
  Mode mode = array->mode;
  if (request.has_mode()) {
    ASSIGN_OR_RETURN(mode, ModeFromProto(request.mode(), "mode"));
  }
  Array out = Derived(*array, request.in_place(), call);
  out.mode = mode;
  RETURN_IF_ERROR(call.CheckAlive());
  ASSIGN_OR_RETURN(out.chunks, Relayout(*backend_, *array, map, mode, call.alive));
  return Register(std::move(out), request.in_place(), call);
}

absl::StatusOr<ArrayPtr> Engine::ChangeMode(const v1::ChangeModeRequest& request,
                                            const CallContext& call) {
  ASSIGN_OR_RETURN(ArrayPtr array, registry_.Find(request.handle(), "handle"));
  ASSIGN_OR_RETURN(Mode mode, ModeFromProto(request.mode(), "mode"));
  Array out = Derived(*array, request.in_place(), call);
  out.mode = mode;
  RETURN_IF_ERROR(call.CheckAlive());
  ASSIGN_OR_RETURN(out.chunks, Relayout(*backend_, *array, array->index_map(), mode, call.alive));
  return Register(std::move(out), request.in_place(), call);
}

absl::StatusOr<Array> Engine::NewResult(const std::string& result_name,
                                        const CallContext& call) const {
  RETURN_IF_ERROR(ValidateName(result_name, "result_name"));
  RETURN_IF_ERROR(registry_.CheckNameFree(result_name, "result_name"));
  Array out;
  out.name = result_name;
  if (out.name.empty()) out.session = call.session;
  return out;
}

absl::StatusOr<ArrayPtr> Engine::Elementwise(const v1::ElementwiseRequest& request,
                                             const CallContext& call) {
  const v1::ElementwiseOpSpec& spec = request.spec();
  ElementwiseInput input;
  if (spec.op() == v1::ELEMENTWISE_OP_ASTYPE) {
    ASSIGN_OR_RETURN(input.astype, DTypeFromProto(spec.dtype(), "spec.dtype"));
  } else {
    const ElementwiseOpInfo* info = FindElementwiseOp(spec.op());
    if (info == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.op: unknown elementwise op ", spec.op()));
    }
    input.op = info->id;
    if (spec.dtype() != v1::DTYPE_UNSPECIFIED) input.astype = static_cast<DType>(spec.dtype());
  }
  if (spec.operands_size() > 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.operands: at most 3, got ", spec.operands_size()));
  }
  std::vector<ArrayPtr> arrays(spec.operands_size());
  std::vector<ArrayMeta> metas(spec.operands_size());
  for (int i = 0; i < spec.operands_size(); ++i) {
    const v1::Operand& operand = spec.operands(i);
    const std::string field = absl::StrCat("spec.operands[", i, "]");
    OperandMeta meta;
    if (operand.has_scalar()) {
      ASSIGN_OR_RETURN(meta.scalar, ScalarFromProto(operand.scalar(), field + ".scalar"));
    } else if (operand.kind_case() == v1::Operand::kHandle) {
      ASSIGN_OR_RETURN(arrays[i], registry_.Find(operand.handle(), field + ".handle"));
      metas[i] =
          ArrayMeta{arrays[i]->shape, arrays[i]->dtype, arrays[i]->mode, arrays[i]->index_map()};
      meta.array = &metas[i];
    } else {
      return absl::InvalidArgumentError(absl::StrCat(field, ": give a handle or a scalar"));
    }
    input.operands.push_back(meta);
  }
  ArrayPtr out_array;
  ArrayMeta out_meta;
  if (!spec.out().empty()) {
    ASSIGN_OR_RETURN(out_array, registry_.Find(spec.out(), "spec.out"));
    out_meta =
        ArrayMeta{out_array->shape, out_array->dtype, out_array->mode, out_array->index_map()};
    input.out = &out_meta;
    if (!request.result_name().empty()) {
      return absl::InvalidArgumentError(
          "result_name: a result written into spec.out keeps out's name");
    }
  }
  if (spec.has_result_index_map()) {
    ASSIGN_OR_RETURN(const Shape shape, BroadcastShape(input.operands));
    ASSIGN_OR_RETURN(input.result_map,
                     NormalizeMap(spec.result_index_map(), shape, "spec.result_index_map"));
  }
  ASSIGN_OR_RETURN(const ElementwisePlan plan, PlanElementwise(input));

  Array out;
  if (out_array) {
    out = Derived(*out_array, /*in_place=*/true, call);
  } else {
    ASSIGN_OR_RETURN(out, NewResult(request.result_name(), call));
  }
  out.shape = plan.result_shape;
  out.dtype = plan.result_dtype;
  out.mode = Mode::kReplica;
  RETURN_IF_ERROR(call.CheckAlive());
  ASSIGN_OR_RETURN(out.chunks, AllocateChunks(*backend_, out.dtype, plan.result_map));

  // Each array operand in its aligned layout and read dtype. Result chunks wait only on their
  // own inputs, so chunks already in place compute while others are in transfer.
  std::vector<std::vector<Chunk>> inputs(plan.operands.size());
  for (size_t i = 0; i < plan.operands.size(); ++i) {
    const ElementwisePlan::Operand& op = plan.operands[i];
    if (op.is_scalar) continue;
    RETURN_IF_ERROR(call.CheckAlive());
    if (op.in_place) {
      inputs[i] = arrays[i]->chunks;
    } else {
      ASSIGN_OR_RETURN(inputs[i],
                       ReadOnlyChunksIn(*backend_, *arrays[i], op.aligned_map, call.alive));
    }
    if (op.cast) {
      ASSIGN_OR_RETURN(std::vector<Chunk> cast,
                       AllocateChunks(*backend_, op.read_dtype, op.aligned_map));
      for (size_t c = 0; c < cast.size(); ++c) {
        RETURN_IF_ERROR(backend_->Cast(arrays[i]->dtype, op.read_dtype, inputs[i][c].buffer,
                                       cast[c].buffer, NumElements(cast[c].spec.box)));
      }
      inputs[i] = std::move(cast);
    }
  }
  for (size_t c = 0; c < out.chunks.size(); ++c) {
    RETURN_IF_ERROR(call.CheckAlive());
    const int64_t n = NumElements(out.chunks[c].spec.box);
    if (!plan.op) {  // astype: one operand, never broadcast
      RETURN_IF_ERROR(backend_->Cast(plan.compute, plan.result_dtype, inputs[0][c].buffer,
                                     out.chunks[c].buffer, n));
      continue;
    }
    std::vector<ElementwiseArg> args;
    for (size_t i = 0; i < plan.operands.size(); ++i) {
      const ElementwisePlan::Operand& op = plan.operands[i];
      ElementwiseArg arg;
      if (op.is_scalar) {
        arg.scalar = op.scalar;
      } else {
        arg.buffer = inputs[i][c].buffer;
        arg.view = op.views[c];
        arg.contiguous = op.contiguous[c];
      }
      args.push_back(std::move(arg));
    }
    RETURN_IF_ERROR(backend_->Elementwise(*plan.op, plan.compute, out.chunks[c].buffer, n, args));
  }
  return Register(std::move(out), /*in_place=*/out_array != nullptr, call);
}

}  // namespace distarray
