// Engine::Matmul: resolve -> plan (matmul_planner) -> bring each product's blocks to its device
// -> one GEMM per product -> optionally reshard -> register.
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/engine/engine.h"
#include "server/engine/layout.h"
#include "server/engine/matmul_planner.h"

namespace distarray {
namespace {

absl::StatusOr<ArrayPtr> FindOperand(const Registry& registry, const v1::Operand& operand,
                                     absl::string_view field) {
  if (operand.kind_case() != v1::Operand::kHandle) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": matmul takes arrays, not scalars"));
  }
  return registry.Find(operand.handle(), absl::StrCat(field, ".handle"));
}

ArrayMeta MetaOf(const Array& a) { return ArrayMeta{a.shape, a.dtype, a.mode, a.index_map()}; }

}  // namespace

absl::StatusOr<ArrayPtr> Engine::Matmul(const v1::MatmulRequest& request, const CallContext& call) {
  const v1::MatmulOpSpec& spec = request.spec();
  ASSIGN_OR_RETURN(ArrayPtr a, FindOperand(registry_, spec.a(), "spec.a"));
  ASSIGN_OR_RETURN(ArrayPtr b, FindOperand(registry_, spec.b(), "spec.b"));
  ASSIGN_OR_RETURN(const MatmulPlan plan, PlanMatmul(MetaOf(*a), MetaOf(*b), call.alive));
  std::optional<IndexMap> result_map;
  if (spec.has_result_index_map()) {
    ASSIGN_OR_RETURN(result_map, NormalizeMap(spec.result_index_map(), plan.result_shape,
                                              "spec.result_index_map"));
  }
  if (spec.allow_tf32() && plan.dtype != DType::kFloat32) {
    return absl::InvalidArgumentError("spec.allow_tf32: TF32 applies to float32 only");
  }
  ASSIGN_OR_RETURN(Array out, NewResult(request.result_name(), call));
  out.shape = plan.result_shape;
  out.dtype = plan.dtype;
  out.mode = plan.result_mode;
  RETURN_IF_ERROR(call.CheckAlive());

  // Operands that needed a plain layout first, then each product's blocks on its device.
  auto blocks_of = [&](const ArrayPtr& array, bool prepare, const IndexMap& layout,
                       const IndexMap& blocks) -> absl::StatusOr<std::vector<Chunk>> {
    if (!prepare) return ReadOnlyChunksIn(*backend_, *array, blocks, call.alive);
    Array plain = *array;
    ASSIGN_OR_RETURN(plain.chunks, Relayout(*backend_, *array, layout, Mode::kReplica, call.alive));
    plain.mode = Mode::kReplica;
    return ReadOnlyChunksIn(*backend_, plain, blocks, call.alive);
  };
  ASSIGN_OR_RETURN(std::vector<Chunk> a_blocks,
                   blocks_of(a, plan.prepare_a, plan.a_layout, plan.a_blocks));
  ASSIGN_OR_RETURN(std::vector<Chunk> b_blocks,
                   blocks_of(b, plan.prepare_b, plan.b_layout, plan.b_blocks));
  ASSIGN_OR_RETURN(out.chunks, AllocateChunks(*backend_, out.dtype, plan.result_map));
  for (size_t p = 0; p < plan.dims.size(); ++p) {
    RETURN_IF_ERROR(call.CheckAlive());
    const MatmulPlan::Dims& d = plan.dims[p];
    RETURN_IF_ERROR(backend_->Gemm(plan.dtype, a_blocks[p].buffer, b_blocks[p].buffer,
                                   out.chunks[p].buffer, d.m, d.n, d.k, spec.allow_tf32()));
  }
  if (result_map) {
    ASSIGN_OR_RETURN(out.chunks, Relayout(*backend_, out, *result_map, Mode::kReplica, call.alive));
    out.mode = Mode::kReplica;
  }
  return Register(std::move(out), /*in_place=*/false, call);
}

}  // namespace distarray
