// Engine operations that compute new arrays: Reshard, ChangeMode, Elementwise, Reduce and Matmul
// (resolve -> plan -> allocate -> execute -> register; op_executors.h holds the middle steps,
// which RunGraph's interpreter shares).
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/names.h"
#include "common/proto_convert.h"
#include "common/scalar_check.h"
#include "common/status_macros.h"
#include "server/engine/engine.h"
#include "server/ops/layout.h"
#include "server/ops/linalg.h"
#include "server/ops/manipulation.h"
#include "server/ops/op_executors.h"
#include "server/ops/sparse.h"
#include "server/ops/sparse_transpose.h"

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
    out.session = call.session_key();
  }
  out.tenant = call.tenant;  // in place: the source is the caller's, found under its tenant
  out.shape = source.shape;
  out.dtype = source.dtype;
  out.mode = source.mode;
  return out;
}

// Moves an executed op's data into the result's metadata.
void Adopt(OpResult result, Array& array) {
  array.shape = std::move(result.shape);
  array.dtype = result.dtype;
  array.mode = result.mode;
  array.chunks = std::move(result.chunks);
}

}  // namespace

absl::StatusOr<ArrayPtr> Engine::Reshard(const v1::ReshardRequest& request,
                                         const CallContext& call) {
  ASSIGN_OR_RETURN(ArrayPtr array, registry_.Find(call.tenant, request.handle(), "handle"));
  IndexMap map = array->index_map();
  if (request.has_index_map()) {
    ASSIGN_OR_RETURN(map, NormalizeMap(request.index_map(), array->shape, "index_map"));
  }
  Mode mode = array->mode;
  if (request.has_mode()) {
    ASSIGN_OR_RETURN(mode, ModeFromProto(request.mode(), "mode"));
  }
  RETURN_IF_ERROR(
      CheckUncoveredValuesKept(array->shape, array->dtype, array->index_map(), array->mode, map,
                               mode, request.has_index_map() ? "index_map" : "mode", call.alive));
  Array out = Derived(*array, request.in_place(), call);
  out.mode = mode;
  RETURN_IF_ERROR(call.CheckAlive());
  ASSIGN_OR_RETURN(std::optional<std::vector<Chunk>> replayed,
                   ReshardByReplay(array, map, request, call));
  if (replayed) {
    out.chunks = *std::move(replayed);
  } else {
    // The result is registered, so it is never written: it may hold the source's buffers.
    ASSIGN_OR_RETURN(out.chunks, Relayout(*backend_, *array, map, mode, call.alive,
                                          SourceBuffers::kShareLeadingParts));
  }
  return Register(std::move(out), request.in_place(), call);
}

absl::StatusOr<ArrayPtr> Engine::ChangeMode(const v1::ChangeModeRequest& request,
                                            const CallContext& call) {
  ASSIGN_OR_RETURN(ArrayPtr array, registry_.Find(call.tenant, request.handle(), "handle"));
  ASSIGN_OR_RETURN(Mode mode, ModeFromProto(request.mode(), "mode"));
  const IndexMap map = array->index_map();
  RETURN_IF_ERROR(CheckUncoveredValuesKept(array->shape, array->dtype, map, array->mode, map, mode,
                                           "mode", call.alive));
  Array out = Derived(*array, request.in_place(), call);
  out.mode = mode;
  RETURN_IF_ERROR(call.CheckAlive());
  ASSIGN_OR_RETURN(out.chunks, Relayout(*backend_, *array, map, mode, call.alive));
  return Register(std::move(out), request.in_place(), call);
}

absl::StatusOr<Array> Engine::NewResult(const std::string& result_name,
                                        const CallContext& call) const {
  RETURN_IF_ERROR(ValidateName(result_name, "result_name"));
  RETURN_IF_ERROR(registry_.CheckNameFree(call.tenant, result_name, "result_name"));
  Array out;
  out.name = result_name;
  out.tenant = call.tenant;
  if (out.name.empty()) out.session = call.session_key();
  return out;
}

OpContext Engine::RequestContext(const CallContext& call) const {
  OpContext context;
  context.ops = backend_.get();
  context.resolve = [this, tenant = call.tenant](
                        const v1::Operand& operand,
                        const std::string& field) -> absl::StatusOr<ArrayPtr> {
    if (operand.kind_case() == v1::Operand::kVariable) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".variable: variables exist only inside programs (RunGraph)"));
    }
    if (operand.kind_case() != v1::Operand::kHandle) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": give a handle or a scalar"));
    }
    return registry_.Find(tenant, operand.handle(), absl::StrCat(field, ".handle"));
  };
  context.normalize_map = [this](const v1::IndexMap& map, const Shape& shape,
                                 absl::string_view field) {
    return NormalizeMap(map, shape, field);
  };
  context.alive = call.alive;
  context.read_positions = [this, call](const ArrayPtr& array, const std::string& field) {
    return ReadPositions(array, field, call);
  };
  context.max_chunks = options_.max_chunks;
  return context;
}

absl::StatusOr<ArrayPtr> Engine::Elementwise(const v1::ElementwiseRequest& request,
                                             const CallContext& call) {
  const OpContext context = RequestContext(call);
  ASSIGN_OR_RETURN(const PlannedElementwise planned,
                   PlanElementwiseOp(context, request.spec(), "spec"));
  Array out;
  if (planned.out) {
    if (!request.result_name().empty()) {
      return absl::InvalidArgumentError(
          "result_name: a result written into spec.out keeps out's name");
    }
    out = Derived(*planned.out, /*in_place=*/true, call);
  } else {
    ASSIGN_OR_RETURN(out, NewResult(request.result_name(), call));
  }
  ASSIGN_OR_RETURN(OpResult result, ExecuteElementwise(context, planned));
  Adopt(std::move(result), out);
  return Register(std::move(out), /*in_place=*/planned.out != nullptr, call);
}

absl::StatusOr<ArrayPtr> Engine::Reduce(const v1::ReduceRequest& request, const CallContext& call) {
  const OpContext context = RequestContext(call);
  ASSIGN_OR_RETURN(const PlannedReduce planned, PlanReduceOp(context, request.spec(), "spec"));
  ASSIGN_OR_RETURN(Array out, NewResult(request.result_name(), call));
  ASSIGN_OR_RETURN(OpResult result, ExecuteReduce(context, planned));
  Adopt(std::move(result), out);
  return Register(std::move(out), /*in_place=*/false, call);
}

absl::StatusOr<ArrayPtr> Engine::Matmul(const v1::MatmulRequest& request, const CallContext& call) {
  const OpContext context = RequestContext(call);
  ASSIGN_OR_RETURN(const PlannedMatmul planned, PlanMatmulOp(context, request.spec(), "spec"));
  ASSIGN_OR_RETURN(Array out, NewResult(request.result_name(), call));
  ASSIGN_OR_RETURN(OpResult result, ExecuteMatmul(context, planned));
  Adopt(std::move(result), out);
  return Register(std::move(out), /*in_place=*/false, call);
}

absl::StatusOr<std::vector<ArrayPtr>> Engine::Sparse(const v1::SparseRequest& request,
                                                     const CallContext& call) {
  const OpContext context = RequestContext(call);
  const v1::SparseOpSpec& spec = request.spec();
  if (spec.op_case() == v1::SparseOpSpec::OP_NOT_SET) {
    return absl::InvalidArgumentError("spec: give an op (to_dense or transpose)");
  }
  const bool to_dense = spec.op_case() == v1::SparseOpSpec::kToDense;
  const int results = to_dense ? 1 : 3;
  if (request.result_names_size() != 0 && request.result_names_size() != results) {
    return absl::InvalidArgumentError(absl::StrCat("result_names: ",
                                                   to_dense ? "to_dense has one result"
                                                            : "transpose has three results "
                                                              "(indptr, indices, data)",
                                                   "; give as many names or none, not ",
                                                   request.result_names_size()));
  }
  for (int i = 0; i < request.result_names_size(); ++i) {
    const std::string field = absl::StrCat("result_names[", i, "]");
    RETURN_IF_ERROR(ValidateName(request.result_names(i), field));
    RETURN_IF_ERROR(registry_.CheckNameFree(call.tenant, request.result_names(i), field));
  }
  std::vector<OpResult> computed;
  if (to_dense) {
    ASSIGN_OR_RETURN(const CsrOperand matrix,
                     ResolveCsr(context, spec.to_dense(), "spec.to_dense"));
    ASSIGN_OR_RETURN(OpResult dense, SparseToDense(context, matrix));
    computed.push_back(std::move(dense));
  } else {
    ASSIGN_OR_RETURN(const CsrOperand matrix,
                     ResolveCsr(context, spec.transpose(), "spec.transpose"));
    ASSIGN_OR_RETURN(CsrParts parts, TransposeOnHost(*backend_, matrix, call.alive));
    computed.push_back(std::move(parts.indptr));
    computed.push_back(std::move(parts.indices));
    computed.push_back(std::move(parts.data));
  }
  std::vector<ArrayPtr> registered;
  for (int i = 0; i < results; ++i) {
    ASSIGN_OR_RETURN(
        Array out, NewResult(i < request.result_names_size() ? request.result_names(i) : "", call));
    Adopt(std::move(computed[i]), out);
    ASSIGN_OR_RETURN(ArrayPtr array, Register(std::move(out), /*in_place=*/false, call));
    registered.push_back(std::move(array));
  }
  return registered;
}

absl::StatusOr<std::vector<ArrayPtr>> Engine::Linalg(const v1::LinalgRequest& request,
                                                     const CallContext& call) {
  const OpContext context = RequestContext(call);
  ASSIGN_OR_RETURN(const PlannedLinalg planned, PlanLinalgOp(context, request.spec(), "spec"));
  const size_t count = planned.results.size();
  if (request.result_names_size() != 0 &&
      static_cast<size_t>(request.result_names_size()) != count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "result_names: linalg ", v1::LinalgOp_Name(planned.op), " has ", count,
        " results; give no names or one per result, got ", request.result_names_size()));
  }
  std::vector<Array> outs;
  for (size_t r = 0; r < count; ++r) {
    const std::string name = request.result_names_size() == 0 ? "" : request.result_names(r);
    for (size_t s = 0; s < r && !name.empty(); ++s) {
      if (request.result_names(s) == name) {
        return absl::InvalidArgumentError(
            absl::StrCat("result_names[", r, "]: ", QuoteClientString(name),
                         " is also result_names[", s, "]; results need distinct names"));
      }
    }
    const std::string name_field = absl::StrCat("result_names[", r, "]");
    RETURN_IF_ERROR(ValidateName(name, name_field));
    RETURN_IF_ERROR(registry_.CheckNameFree(call.tenant, name, name_field));
    Array out;
    out.name = name;
    out.tenant = call.tenant;
    if (out.name.empty()) out.session = call.session_key();
    outs.push_back(std::move(out));
  }
  ASSIGN_OR_RETURN(std::vector<OpResult> results, ExecuteLinalg(context, *backend_, planned));
  std::vector<ArrayPtr> registered;
  for (size_t r = 0; r < count; ++r) {
    Adopt(std::move(results[r]), outs[r]);
    absl::StatusOr<ArrayPtr> stored = Register(std::move(outs[r]), /*in_place=*/false, call);
    if (!stored.ok()) {
      // All or none: the results registered so far go again.
      for (const ArrayPtr& array : registered) {
        registry_.Erase(call.tenant, array->handle, "handle").IgnoreError();
      }
      return stored.status();
    }
    registered.push_back(*std::move(stored));
  }
  return registered;
}

absl::StatusOr<ArrayPtr> Engine::Manipulate(const v1::ManipulateRequest& request,
                                            const CallContext& call) {
  const OpContext context = RequestContext(call);
  ASSIGN_OR_RETURN(const PlannedManipulation planned,
                   PlanManipulation(context, request.spec(), "spec"));
  const bool in_place = planned.op == v1::ManipulationSpec::kSetItem;
  Array out;
  if (in_place) {
    if (!request.result_name().empty()) {
      return absl::InvalidArgumentError(
          "result_name: set_item updates its target, which keeps its name");
    }
    out = Derived(*planned.sources.front(), /*in_place=*/true, call);
  } else {
    ASSIGN_OR_RETURN(out, NewResult(request.result_name(), call));
  }
  // Registered results are never written, so they may hold their sources' buffers.
  ASSIGN_OR_RETURN(OpResult result,
                   ExecuteManipulation(context, planned, SourceBuffers::kShareLeadingParts));
  Adopt(std::move(result), out);
  return Register(std::move(out), in_place, call);
}

}  // namespace distarray
