// Engine operations that compute new arrays: Reshard, ChangeMode and Elementwise.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/names.h"
#include "common/proto_convert.h"
#include "common/scalar_check.h"
#include "common/status_macros.h"
#include "server/engine/engine.h"
#include "server/engine/layout.h"

namespace distarray {
namespace {

std::string ShapeString(const Shape& shape) {
  return absl::StrCat("(", absl::StrJoin(shape, ", "), ")");
}

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

absl::StatusOr<BinaryOp> BinaryOpFromProto(v1::ElementwiseOp op) {
  switch (op) {
    case v1::ELEMENTWISE_OP_ADD:
      return BinaryOp::kAdd;
    case v1::ELEMENTWISE_OP_SUBTRACT:
      return BinaryOp::kSubtract;
    case v1::ELEMENTWISE_OP_MULTIPLY:
      return BinaryOp::kMultiply;
    case v1::ELEMENTWISE_OP_DIVIDE:
      return BinaryOp::kDivide;
    default:
      if (op != v1::ELEMENTWISE_OP_UNSPECIFIED && v1::ElementwiseOp_IsValid(op)) {
        return absl::UnimplementedError(
            absl::StrCat("spec.op: ", v1::ElementwiseOp_Name(op), " is not implemented yet"));
      }
      return absl::InvalidArgumentError(absl::StrCat("spec.op: unknown elementwise op ", op));
  }
}

struct ResolvedOperand {
  ArrayPtr array;  // null for a scalar
  Scalar scalar;
};

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

absl::StatusOr<ArrayPtr> Engine::Elementwise(const v1::ElementwiseRequest& request,
                                             const CallContext& call) {
  const v1::ElementwiseOpSpec& spec = request.spec();
  ASSIGN_OR_RETURN(BinaryOp op, BinaryOpFromProto(spec.op()));
  if (spec.operands_size() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.operands: ", v1::ElementwiseOp_Name(spec.op()),
                     " takes 2 operands, got ", spec.operands_size()));
  }
  std::vector<ResolvedOperand> operands(2);
  const Array* first = nullptr;
  int first_index = -1;
  for (int i = 0; i < 2; ++i) {
    const v1::Operand& operand = spec.operands(i);
    const std::string field = absl::StrCat("spec.operands[", i, "]");
    if (operand.has_scalar()) {
      ASSIGN_OR_RETURN(operands[i].scalar, ScalarFromProto(operand.scalar(), field + ".scalar"));
    } else if (operand.kind_case() == v1::Operand::kHandle) {
      ASSIGN_OR_RETURN(operands[i].array, registry_.Find(operand.handle(), field + ".handle"));
      if (first == nullptr) {
        first = operands[i].array.get();
        first_index = i;
      }
    } else {
      return absl::InvalidArgumentError(absl::StrCat(field, ": give a handle or a scalar"));
    }
  }
  if (first == nullptr) {
    return absl::InvalidArgumentError("spec.operands: at least one operand must be an array");
  }
  for (int i = 0; i < 2; ++i) {
    const std::string field = absl::StrCat("spec.operands[", i, "]");
    if (const ArrayPtr& a = operands[i].array) {
      if (a->shape != first->shape) {
        return absl::InvalidArgumentError(absl::StrCat(field, ": shape ", ShapeString(a->shape),
                                                       " does not match operands[", first_index,
                                                       "]'s ", ShapeString(first->shape)));
      }
      if (a->dtype != first->dtype) {
        return absl::InvalidArgumentError(absl::StrCat(field, ": dtype ", DTypeName(a->dtype),
                                                       " does not match operands[", first_index,
                                                       "]'s ", DTypeName(first->dtype)));
      }
    } else {
      RETURN_IF_ERROR(ValidateScalarFor(operands[i].scalar, first->dtype, field + ".scalar"));
    }
  }
  if (first->dtype == DType::kBool) {
    return absl::InvalidArgumentError("spec.operands: arithmetic on bool arrays is not supported");
  }
  if (op == BinaryOp::kDivide && !IsFloating(first->dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.op: divide is true division and needs a floating dtype, got ",
                     DTypeName(first->dtype)));
  }
  RETURN_IF_ERROR(ValidateName(request.result_name(), "result_name"));
  RETURN_IF_ERROR(registry_.CheckNameFree(request.result_name(), "result_name"));
  RETURN_IF_ERROR(call.CheckAlive());

  // The result takes the first array's layout; allocate it before launching anything.
  const IndexMap layout = first->index_map();
  Array out = Derived(*first, /*in_place=*/false, call);
  out.mode = Mode::kReplica;
  out.name = request.result_name();
  if (!out.name.empty()) out.session.clear();
  ASSIGN_OR_RETURN(out.chunks, AllocateChunks(*backend_, out.dtype, layout));

  // Bring array operands to the result's layout in REPLICA mode. Each result chunk then waits
  // only on its own inputs, so chunks already in place compute while others are in transfer.
  std::vector<std::vector<Chunk>> inputs(2);
  for (int i = 0; i < 2; ++i) {
    const ArrayPtr& a = operands[i].array;
    if (!a) continue;
    if (a->mode == Mode::kReplica && a->index_map() == layout) {
      inputs[i] = a->chunks;
    } else {
      ASSIGN_OR_RETURN(inputs[i], Relayout(*backend_, *a, layout, Mode::kReplica, call.alive));
    }
  }
  for (size_t c = 0; c < out.chunks.size(); ++c) {
    RETURN_IF_ERROR(call.CheckAlive());
    KernelOperand ka{inputs[0].empty() ? nullptr : inputs[0][c].buffer, operands[0].scalar};
    KernelOperand kb{inputs[1].empty() ? nullptr : inputs[1][c].buffer, operands[1].scalar};
    RETURN_IF_ERROR(backend_->Binary(op, out.dtype, out.chunks[c].buffer, ka, kb,
                                     NumElements(out.chunks[c].spec.box)));
  }
  return Register(std::move(out), /*in_place=*/false, call);
}

}  // namespace distarray
