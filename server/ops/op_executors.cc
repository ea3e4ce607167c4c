// Elementwise, Reduce and Matmul: plan (resolve + pure planner), then execute (allocate + enqueue).
#include "server/ops/op_executors.h"

#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/proto_convert.h"
#include "common/status_macros.h"
#include "server/ops/layout.h"
#include "server/ops/op_table.h"
#include "server/ops/sparse.h"

namespace distarray {
namespace {

// The planners name request fields ("spec.axes: ..."); inside a program the same spec sits at
// another path ("program.statements[2].reduce"), so their messages are re-rooted there.
absl::Status Refield(const absl::Status& status, absl::string_view field) {
  if (status.ok() || field == "spec" || !absl::StartsWith(status.message(), "spec")) {
    return status;
  }
  return absl::Status(status.code(),
                      absl::StrCat(field, status.message().substr(std::strlen("spec"))));
}

}  // namespace

ArrayMeta MetaOf(const Array& array) {
  return ArrayMeta{array.shape, array.dtype, array.mode, array.index_map()};
}

Array MetadataOnly(const ArrayMeta& meta) {
  Array array;
  array.shape = meta.shape;
  array.dtype = meta.dtype;
  array.mode = meta.mode;
  for (const ChunkSpec& spec : meta.map) array.chunks.push_back(Chunk{spec, nullptr});
  return array;
}

// ---------------------------------------------------------------------------------------------
// Elementwise

absl::StatusOr<PlannedElementwise> PlanElementwiseOp(const OpContext& context,
                                                     const v1::ElementwiseOpSpec& spec,
                                                     absl::string_view field) {
  ElementwiseInput input;
  if (spec.op() == v1::ELEMENTWISE_OP_ASTYPE) {
    ASSIGN_OR_RETURN(input.astype, DTypeFromProto(spec.dtype(), absl::StrCat(field, ".dtype")));
  } else {
    const ElementwiseOpInfo* info = FindElementwiseOp(spec.op());
    if (info == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".op: unknown elementwise op ", spec.op()));
    }
    input.op = info->id;
    if (spec.dtype() != v1::DTYPE_UNSPECIFIED) input.astype = static_cast<DType>(spec.dtype());
  }
  if (spec.operands_size() > 3) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".operands: at most 3, got ", spec.operands_size()));
  }
  PlannedElementwise planned;
  planned.arrays.resize(spec.operands_size());
  std::vector<ArrayMeta> metas(spec.operands_size());
  for (int i = 0; i < spec.operands_size(); ++i) {
    const v1::Operand& operand = spec.operands(i);
    const std::string operand_field = absl::StrCat(field, ".operands[", i, "]");
    OperandMeta meta;
    if (operand.has_scalar()) {
      ASSIGN_OR_RETURN(meta.scalar, ScalarFromProto(operand.scalar(), operand_field + ".scalar"));
    } else {
      ASSIGN_OR_RETURN(planned.arrays[i], context.resolve(operand, operand_field));
      metas[i] = MetaOf(*planned.arrays[i]);
      meta.array = &metas[i];
    }
    input.operands.push_back(meta);
  }
  ArrayMeta out_meta;
  if (!spec.out().empty()) {
    v1::Operand out;
    out.set_handle(spec.out());
    ASSIGN_OR_RETURN(planned.out, context.resolve(out, absl::StrCat(field, ".out")));
    out_meta = MetaOf(*planned.out);
    input.out = &out_meta;
  }
  if (spec.has_result_index_map()) {
    absl::StatusOr<Shape> shape = BroadcastShape(input.operands);
    if (!shape.ok()) return Refield(shape.status(), field);
    ASSIGN_OR_RETURN(input.result_map,
                     context.normalize_map(spec.result_index_map(), *shape,
                                           absl::StrCat(field, ".result_index_map")));
  }
  absl::StatusOr<ElementwisePlan> plan = PlanElementwise(input);
  if (!plan.ok()) return Refield(plan.status(), field);
  planned.plan = *std::move(plan);
  return planned;
}

namespace {

bool SharesBuffers(const Array& a, const Array& b) {
  for (const Chunk& x : a.chunks) {
    for (const Chunk& y : b.chunks) {
      if (x.buffer != nullptr && x.buffer == y.buffer) return true;
    }
  }
  return false;
}

bool SameTypeAndLayout(const Array& target, const Shape& shape, DType dtype, Mode mode,
                       const IndexMap& map) {
  return target.shape == shape && target.dtype == dtype && target.mode == mode &&
         target.index_map() == map;
}

}  // namespace

bool CanWriteElementwiseInto(const PlannedElementwise& planned, const Array& target) {
  const ElementwisePlan& plan = planned.plan;
  if (!SameTypeAndLayout(target, plan.result_shape, plan.result_dtype, Mode::kReplica,
                         plan.result_map)) {
    return false;
  }
  for (size_t i = 0; i < plan.operands.size(); ++i) {
    const ElementwisePlan::Operand& op = plan.operands[i];
    if (op.is_scalar || !SharesBuffers(*planned.arrays[i], target)) continue;
    if (op.cast) continue;  // read into a temporary first, in stream order
    if (!op.in_place) return false;
    for (bool contiguous : op.contiguous) {
      if (!contiguous) return false;
    }
  }
  return true;
}

bool CanWriteReduceInto(const PlannedReduce& planned, const Array& target) {
  const ReducePlan& plan = planned.plan;
  return !plan.arg && plan.result_mode == Mode::kReplica &&
         SameTypeAndLayout(target, plan.result_shape, plan.result_dtype, Mode::kReplica,
                           plan.result_map) &&
         !SharesBuffers(*planned.array, target);
}

absl::StatusOr<OpResult> ExecuteElementwise(const OpContext& context,
                                            const PlannedElementwise& planned,
                                            const std::vector<Chunk>* into) {
  DeviceOps& ops = *context.ops;
  const ElementwisePlan& plan = planned.plan;
  OpResult out{plan.result_shape, plan.result_dtype, Mode::kReplica, {}};
  RETURN_IF_ERROR(context.CheckAlive());
  if (into != nullptr) {
    out.chunks = *into;
  } else {
    ASSIGN_OR_RETURN(out.chunks, AllocateChunks(ops, out.dtype, plan.result_map));
  }

  // Each array operand in its aligned layout and read dtype. Result chunks wait only on their
  // own inputs, so chunks already in place compute while others are in transfer.
  std::vector<std::vector<Chunk>> inputs(plan.operands.size());
  for (size_t i = 0; i < plan.operands.size(); ++i) {
    const ElementwisePlan::Operand& op = plan.operands[i];
    if (op.is_scalar) continue;
    RETURN_IF_ERROR(context.CheckAlive());
    const Array& array = *planned.arrays[i];
    if (op.in_place) {
      inputs[i] = array.chunks;
    } else {
      ASSIGN_OR_RETURN(inputs[i], ReadOnlyChunksIn(ops, array, op.aligned_map, context.alive));
    }
    if (op.cast) {
      ASSIGN_OR_RETURN(std::vector<Chunk> cast, AllocateChunks(ops, op.read_dtype, op.aligned_map));
      for (size_t c = 0; c < cast.size(); ++c) {
        RETURN_IF_ERROR(ops.Cast(array.dtype, op.read_dtype, inputs[i][c].buffer, cast[c].buffer,
                                 NumElements(cast[c].spec.box)));
      }
      inputs[i] = std::move(cast);
    }
  }
  for (size_t c = 0; c < out.chunks.size(); ++c) {
    RETURN_IF_ERROR(context.CheckAlive());
    const int64_t n = NumElements(out.chunks[c].spec.box);
    if (!plan.op) {  // astype: one operand, never broadcast
      RETURN_IF_ERROR(
          ops.Cast(plan.compute, plan.result_dtype, inputs[0][c].buffer, out.chunks[c].buffer, n));
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
    RETURN_IF_ERROR(
        ops.Elementwise(*plan.op, plan.compute, plan.storage, out.chunks[c].buffer, n, args));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Reduce

absl::StatusOr<PlannedReduce> PlanReduceOp(const OpContext& context, const v1::ReduceOpSpec& spec,
                                           absl::string_view field) {
  PlannedReduce planned;
  ReduceInput input;
  input.op = spec.op();
  input.keepdims = spec.keepdims();
  input.axes.assign(spec.axes().begin(), spec.axes().end());
  ArrayMeta meta;
  switch (spec.operand().kind_case()) {
    case v1::Operand::KIND_NOT_SET:
      return absl::InvalidArgumentError(absl::StrCat(field, ".operand: give the array to reduce"));
    case v1::Operand::kScalar:
      break;  // the planner names the field
    default:
      ASSIGN_OR_RETURN(planned.array,
                       context.resolve(spec.operand(), absl::StrCat(field, ".operand")));
      meta = MetaOf(*planned.array);
      input.array = &meta;
  }
  absl::StatusOr<ReducePlan> plan = PlanReduce(input, context.alive);
  if (!plan.ok()) return Refield(plan.status(), field);
  planned.plan = *std::move(plan);
  planned.combine = spec.combine();
  return planned;
}

ArrayMeta ReduceResultMeta(const PlannedReduce& planned) {
  const ReducePlan& plan = planned.plan;
  if (planned.combine && plan.result_mode != Mode::kReplica) {
    return ArrayMeta{plan.result_shape, plan.result_dtype, Mode::kReplica, plan.combine_map};
  }
  return ArrayMeta{plan.result_shape, plan.result_dtype, plan.result_mode, plan.result_map};
}

absl::StatusOr<OpResult> ExecuteReduce(const OpContext& context, const PlannedReduce& planned,
                                       const std::vector<Chunk>* into) {
  DeviceOps& ops = *context.ops;
  const ReducePlan& plan = planned.plan;
  const Array& array = *planned.array;
  OpResult out{plan.result_shape, plan.result_dtype, plan.result_mode, {}};
  RETURN_IF_ERROR(context.CheckAlive());
  if (plan.fill || NumElements(plan.result_shape) == 0) {
    // Nothing to reduce (PlanReduce): the identity filled in, or a zero-size result.
    if (into != nullptr) {
      out.chunks = *into;
    } else {
      ASSIGN_OR_RETURN(out.chunks, AllocateChunks(ops, out.dtype, plan.result_map));
    }
    if (plan.fill) RETURN_IF_ERROR(FillChunks(ops, out.dtype, out.chunks, plan.fill_value));
    return out;
  }

  std::vector<Chunk> source = array.chunks;
  if (plan.prepare) {
    ASSIGN_OR_RETURN(source,
                     Relayout(ops, array, plan.prepare_map, plan.prepare_mode, context.alive));
  }

  if (into != nullptr) {
    out.chunks = *into;
  } else {
    ASSIGN_OR_RETURN(out.chunks, AllocateChunks(ops, out.dtype, plan.result_map));
  }

  std::vector<Chunk> extremes;
  if (plan.arg) {
    // Pass 1: each chunk's extreme, combined into every chunk's copy of its outputs.
    Array partial;
    partial.shape = plan.result_shape;
    partial.dtype = plan.in_dtype;
    partial.mode = plan.result_mode == Mode::kReplica ? Mode::kReplica : plan.extreme_mode;
    ASSIGN_OR_RETURN(partial.chunks, AllocateChunks(ops, plan.in_dtype, plan.result_map));
    for (size_t c = 0; c < source.size(); ++c) {
      RETURN_IF_ERROR(ops.Reduce(plan.kind, plan.kernel_dtype, plan.in_dtype, source[c].buffer,
                                 plan.geometry[c], partial.chunks[c].buffer, 1, nullptr));
    }
    if (partial.mode == Mode::kReplica) {
      extremes = std::move(partial.chunks);
    } else {
      ASSIGN_OR_RETURN(extremes,
                       Relayout(ops, partial, plan.result_map, Mode::kReplica, context.alive));
    }
  }
  for (size_t c = 0; c < source.size(); ++c) {
    RETURN_IF_ERROR(context.CheckAlive());
    if (plan.arg) {
      RETURN_IF_ERROR(ops.Reduce(ReduceKind::kArgMatch, plan.kernel_dtype, plan.in_dtype,
                                 source[c].buffer, plan.geometry[c], out.chunks[c].buffer, 1,
                                 extremes[c].buffer));
    } else {
      RETURN_IF_ERROR(ops.Reduce(plan.kind, plan.kernel_dtype, plan.in_dtype, source[c].buffer,
                                 plan.geometry[c], out.chunks[c].buffer, plan.scale, nullptr));
    }
  }
  if (planned.combine && out.mode != Mode::kReplica) {
    Array partials;
    partials.shape = out.shape;
    partials.dtype = out.dtype;
    partials.mode = out.mode;
    partials.chunks = std::move(out.chunks);
    ASSIGN_OR_RETURN(out.chunks,
                     Relayout(ops, partials, plan.combine_map, Mode::kReplica, context.alive));
    out.mode = Mode::kReplica;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Matmul

absl::StatusOr<PlannedMatmul> PlanMatmulOp(const OpContext& context, const v1::MatmulOpSpec& spec,
                                           absl::string_view field) {
  PlannedMatmul planned;
  auto resolve = [&](const v1::Operand& operand,
                     absl::string_view name) -> absl::StatusOr<ArrayPtr> {
    const std::string operand_field = absl::StrCat(field, ".", name);
    if (operand.kind_case() == v1::Operand::kScalar ||
        operand.kind_case() == v1::Operand::KIND_NOT_SET) {
      return absl::InvalidArgumentError(
          absl::StrCat(operand_field, ": matmul takes arrays, not scalars"));
    }
    return context.resolve(operand, operand_field);
  };
  if (spec.has_sparse_a()) {
    if (spec.a().kind_case() != v1::Operand::KIND_NOT_SET) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".a: give a dense a or a sparse_a, not both"));
    }
    if (spec.a_symmetric()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".a_symmetric: applies to a dense a, not a sparse_a"));
    }
    if (spec.allow_tf32()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".allow_tf32: sparse products do not use tensor cores"));
    }
    auto sparse = std::make_shared<PlannedSparseMatmul>();
    ASSIGN_OR_RETURN(sparse->a,
                     ResolveCsr(context, spec.sparse_a(), absl::StrCat(field, ".sparse_a")));
    ASSIGN_OR_RETURN(sparse->b, resolve(spec.b(), "b"));
    ASSIGN_OR_RETURN(sparse->plan, PlanSparseMatmul(sparse->a.meta, MetaOf(*sparse->b), field));
    if (spec.has_result_index_map()) {
      ASSIGN_OR_RETURN(planned.result_map,
                       context.normalize_map(spec.result_index_map(), sparse->plan.result_shape,
                                             absl::StrCat(field, ".result_index_map")));
    }
    planned.sparse = std::move(sparse);
    return planned;
  }
  ASSIGN_OR_RETURN(planned.a, resolve(spec.a(), "a"));
  ASSIGN_OR_RETURN(planned.b, resolve(spec.b(), "b"));
  absl::StatusOr<MatmulPlan> plan =
      PlanMatmul(MetaOf(*planned.a), MetaOf(*planned.b), context.alive);
  if (!plan.ok()) return Refield(plan.status(), field);
  planned.plan = *std::move(plan);
  if (spec.has_result_index_map()) {
    ASSIGN_OR_RETURN(planned.result_map,
                     context.normalize_map(spec.result_index_map(), planned.plan.result_shape,
                                           absl::StrCat(field, ".result_index_map")));
  }
  if (spec.allow_tf32() && planned.plan.dtype != DType::kFloat32) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".allow_tf32: TF32 applies to float32 only"));
  }
  planned.allow_tf32 = spec.allow_tf32();
  if (spec.a_symmetric()) {
    const Shape& shape = planned.a->shape;
    if (shape.size() != 2 || shape[0] != shape[1]) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".a_symmetric: a of shape ", ShapeString(shape), " is not a square matrix"));
    }
    if (planned.plan.dtype != DType::kFloat32 && planned.plan.dtype != DType::kFloat64) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".a_symmetric: float32 and float64 only, not ", DTypeName(planned.plan.dtype)));
    }
    // Only where one product reads the whole matrix: a row or column block of it is no
    // symmetric matrix.
    if (planned.plan.gemms.size() == 1 && planned.plan.gemms[0].m == shape[0] &&
        planned.plan.gemms[0].k == shape[0] && planned.plan.gemms[0].batch == 1) {
      planned.plan.gemms[0].symmetric_a = true;
    }
  }
  return planned;
}

ArrayMeta MatmulResultMeta(const PlannedMatmul& planned) {
  if (planned.sparse) {
    const SparseMatmulPlan& plan = planned.sparse->plan;
    if (planned.result_map) {
      return ArrayMeta{plan.result_shape, plan.dtype, Mode::kReplica, *planned.result_map};
    }
    return ArrayMeta{plan.result_shape, plan.dtype, plan.result_mode, plan.result_map};
  }
  const MatmulPlan& plan = planned.plan;
  if (planned.result_map) {
    return ArrayMeta{plan.result_shape, plan.dtype, Mode::kReplica, *planned.result_map};
  }
  return ArrayMeta{plan.result_shape, plan.dtype, plan.result_mode, plan.result_map};
}

absl::StatusOr<OpResult> ExecuteMatmul(const OpContext& context, const PlannedMatmul& planned) {
  DeviceOps& ops = *context.ops;
  const MatmulPlan& plan = planned.plan;
  OpResult out{plan.result_shape, plan.dtype, plan.result_mode, {}};
  RETURN_IF_ERROR(context.CheckAlive());
  if (planned.sparse) {
    ASSIGN_OR_RETURN(out, ExecuteSparseMatmul(context, *planned.sparse));
  } else if (plan.gemms.empty() && (plan.fill_zeros || NumElements(plan.result_shape) == 0)) {
    // No product (PlanMatmul): zeros where the shared axis is empty, else a zero-size result.
    ASSIGN_OR_RETURN(out.chunks, AllocateChunks(ops, out.dtype, plan.result_map));
    RETURN_IF_ERROR(FillChunks(ops, out.dtype, out.chunks, Scalar::Int(0)));
  } else {
    // Operands that needed a plain layout first, then each product's blocks on its device. A vector
    // is read as the matrix the plan made of it (a unit axis added: same buffers).
    auto blocks_of = [&](const Array& source, bool vector, int unit_axis, bool prepare,
                         const IndexMap& layout,
                         const IndexMap& blocks) -> absl::StatusOr<std::vector<Chunk>> {
      Array array = source;
      if (vector) {
        array.shape.insert(array.shape.begin() + unit_axis, 1);
        for (Chunk& chunk : array.chunks) {
          chunk.spec.box.insert(chunk.spec.box.begin() + unit_axis, Range{0, 1, 1});
        }
      }
      if (!prepare) return ReadOnlyChunksIn(ops, array, blocks, context.alive);
      Array plain = array;
      ASSIGN_OR_RETURN(plain.chunks, Relayout(ops, array, layout, Mode::kReplica, context.alive));
      plain.mode = Mode::kReplica;
      return ReadOnlyChunksIn(ops, plain, blocks, context.alive);
    };
    ASSIGN_OR_RETURN(
        std::vector<Chunk> a_blocks,
        blocks_of(*planned.a, plan.a_vector, 0, plan.prepare_a, plan.a_layout, plan.a_blocks));
    ASSIGN_OR_RETURN(
        std::vector<Chunk> b_blocks,
        blocks_of(*planned.b, plan.b_vector, 1, plan.prepare_b, plan.b_layout, plan.b_blocks));
    ASSIGN_OR_RETURN(out.chunks, AllocateChunks(ops, out.dtype, plan.result_map));
    for (size_t p = 0; p < plan.gemms.size(); ++p) {
      RETURN_IF_ERROR(context.CheckAlive());
      RETURN_IF_ERROR(ops.Gemm(plan.dtype, a_blocks[p].buffer, b_blocks[p].buffer,
                               out.chunks[p].buffer, plan.gemms[p], planned.allow_tf32));
    }
  }
  if (planned.result_map && !out.chunks.empty()) {
    Array product;
    product.shape = out.shape;
    product.dtype = out.dtype;
    product.mode = out.mode;
    product.chunks = std::move(out.chunks);
    ASSIGN_OR_RETURN(out.chunks,
                     Relayout(ops, product, *planned.result_map, Mode::kReplica, context.alive));
    out.mode = Mode::kReplica;
  }
  return out;
}

}  // namespace distarray
