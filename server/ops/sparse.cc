// CSR operands: checks against their blocks, products with dense operands, densification.
#include "server/ops/sparse.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/proto_convert.h"
#include "common/status_macros.h"
#include "server/ops/layout.h"

namespace distarray {
namespace {

bool IsSparseValueDType(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat64 || dtype == DType::kComplex64 ||
         dtype == DType::kComplex128;
}

// A part's rank, mode and chunk count (one chunk per block, on the block's device).
absl::Status CheckPart(const ArrayMeta& part, const IndexMap& blocks, const std::string& field) {
  if (part.shape.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": a sparse matrix's parts are 1-D, not ", ShapeString(part.shape)));
  }
  if (part.mode != Mode::kReplica) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": mode ", ModeName(part.mode),
                                                   "; a sparse matrix's parts are REPLICA arrays"));
  }
  if (part.map.size() != blocks.size()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", part.map.size(),
                                                   " chunks; the matrix has ", blocks.size(),
                                                   " blocks (one chunk per block)"));
  }
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (part.map[i].device != blocks[i].device) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".index_map.chunks[", i, "]: on device ", part.map[i].device,
                       ", block ", i, " is on device ", blocks[i].device));
    }
  }
  return absl::OkStatus();
}

// Whether two blocks share a row (their products then add up: a SUM result).
bool BlocksShareRows(const IndexMap& blocks) {
  std::vector<std::pair<int64_t, int64_t>> rows;
  rows.reserve(blocks.size());
  for (const ChunkSpec& block : blocks) {
    rows.emplace_back(block.box[0].start, block.box[0].start + block.box[0].count);
  }
  std::sort(rows.begin(), rows.end());
  for (size_t i = 1; i < rows.size(); ++i) {
    if (rows[i].first < rows[i - 1].second) return true;
  }
  return false;
}

CsrProduct BlockOf(const CsrOperand& matrix, size_t i) {
  const ChunkSpec& block = matrix.meta.blocks[i];
  CsrProduct p;
  p.indptr = matrix.indptr->chunks[i].buffer;
  p.indices = matrix.indices->chunks[i].buffer;
  p.data = matrix.data->chunks[i].buffer;
  p.index_dtype = matrix.meta.index_dtype;
  p.rows = block.box[0].count;
  p.cols = block.box[1].count;
  p.capacity = matrix.meta.capacity[i];
  return p;
}

}  // namespace

absl::StatusOr<CsrMeta> CheckCsr(const ArrayMeta& indptr, const ArrayMeta& indices,
                                 const ArrayMeta& data, const Shape& shape, const IndexMap& blocks,
                                 absl::string_view field) {
  const std::string f(field);
  if (shape.size() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(f, ".shape: a sparse matrix has two axes, not ", ShapeString(shape)));
  }
  if (!IsSparseValueDType(data.dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat(f, ".data: dtype ", DTypeName(data.dtype),
                     "; sparse values are float32, float64, complex64 or complex128"));
  }
  if (indices.dtype != DType::kInt32 && indices.dtype != DType::kInt64) {
    return absl::InvalidArgumentError(absl::StrCat(f, ".indices: dtype ", DTypeName(indices.dtype),
                                                   "; column indices are int32 or int64"));
  }
  if (indptr.dtype != DType::kInt64) {
    return absl::InvalidArgumentError(
        absl::StrCat(f, ".indptr: dtype ", DTypeName(indptr.dtype), "; row offsets are int64"));
  }
  CsrMeta meta{shape, data.dtype, indices.dtype, blocks, {}};
  RETURN_IF_ERROR(CheckPart(indptr, blocks, f + ".indptr"));
  RETURN_IF_ERROR(CheckPart(indices, blocks, f + ".indices"));
  RETURN_IF_ERROR(CheckPart(data, blocks, f + ".data"));
  for (size_t i = 0; i < blocks.size(); ++i) {
    const Box& box = blocks[i].box;
    if (box[0].step != 1 || box[1].step != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(f, ".blocks.chunks[", i, "]: a block's box has unit steps"));
    }
    if (indptr.map[i].box[0].count != box[0].count + 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(f, ".indptr.index_map.chunks[", i, "]: ", indptr.map[i].box[0].count,
                       " offsets; block ", i, " has ", box[0].count, " rows (rows + 1 offsets)"));
    }
    const int64_t capacity = data.map[i].box[0].count;
    if (indices.map[i].box[0].count != capacity) {
      return absl::InvalidArgumentError(
          absl::StrCat(f, ".indices.index_map.chunks[", i, "]: ", indices.map[i].box[0].count,
                       " entries; data's chunk ", i, " has ", capacity, " (one column per value)"));
    }
    meta.capacity.push_back(capacity);
  }
  return meta;
}

absl::StatusOr<CsrOperand> ResolveCsr(const OpContext& context, const v1::CsrMatrix& matrix,
                                      const std::string& field) {
  CsrOperand csr;
  auto part = [&](const v1::Operand& operand, absl::string_view name) -> absl::StatusOr<ArrayPtr> {
    const std::string part_field = absl::StrCat(field, ".", name);
    if (operand.kind_case() == v1::Operand::kScalar ||
        operand.kind_case() == v1::Operand::KIND_NOT_SET) {
      return absl::InvalidArgumentError(
          absl::StrCat(part_field, ": a sparse matrix's parts are arrays, not scalars"));
    }
    return context.resolve(operand, part_field);
  };
  ASSIGN_OR_RETURN(csr.indptr, part(matrix.indptr(), "indptr"));
  ASSIGN_OR_RETURN(csr.indices, part(matrix.indices(), "indices"));
  ASSIGN_OR_RETURN(csr.data, part(matrix.data(), "data"));
  const Shape shape = FromProto(matrix.shape());
  if (shape.size() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".shape: a sparse matrix has two axes, not ", ShapeString(shape)));
  }
  RETURN_IF_ERROR(ValidateShape(shape, csr.data->dtype, field + ".shape"));
  ASSIGN_OR_RETURN(const IndexMap blocks,
                   context.normalize_map(matrix.blocks(), shape, field + ".blocks"));
  ASSIGN_OR_RETURN(csr.meta, CheckCsr(MetaOf(*csr.indptr), MetaOf(*csr.indices), MetaOf(*csr.data),
                                      shape, blocks, field));
  return csr;
}

absl::StatusOr<SparseMatmulPlan> PlanSparseMatmul(const CsrMeta& a, const ArrayMeta& b,
                                                  absl::string_view field) {
  const std::string f(field);
  if (b.dtype != a.dtype) {
    return absl::InvalidArgumentError(absl::StrCat(f, ".b: dtype ", DTypeName(b.dtype),
                                                   " does not match the sparse matrix's ",
                                                   DTypeName(a.dtype)));
  }
  if ((b.shape.size() != 1 && b.shape.size() != 2) || b.shape[0] != a.shape[1]) {
    return absl::InvalidArgumentError(absl::StrCat(
        f, ".b: shape ", ShapeString(b.shape), " does not fit the matrix's ", ShapeString(a.shape),
        " (a vector of ", a.shape[1], " or a matrix of ", a.shape[1], " rows)"));
  }
  SparseMatmulPlan plan;
  plan.dtype = a.dtype;
  plan.b_vector = b.shape.size() == 1;
  plan.k = plan.b_vector ? 1 : b.shape[1];
  plan.result_shape = plan.b_vector ? Shape{a.shape[0]} : Shape{a.shape[0], plan.k};
  if (NumElements(plan.result_shape) == 0) return plan;
  if (a.blocks.empty()) {  // n == 0: every product is a sum of no terms
    plan.fill_zeros = true;
    plan.result_map = {ChunkSpec{0, FullBox(plan.result_shape)}};
    return plan;
  }
  const Range all_columns{0, 1, plan.k};
  for (const ChunkSpec& block : a.blocks) {
    Box result_box = {block.box[0]};
    Box b_box = {block.box[1]};
    if (!plan.b_vector) {
      result_box.push_back(all_columns);
      b_box.push_back(all_columns);
    }
    plan.result_map.push_back(ChunkSpec{block.device, std::move(result_box)});
    plan.b_blocks.push_back(ChunkSpec{block.device, std::move(b_box)});
  }
  plan.result_mode = BlocksShareRows(a.blocks) ? Mode::kSum : Mode::kReplica;
  return plan;
}

absl::StatusOr<OpResult> ExecuteSparseMatmul(const OpContext& context,
                                             const PlannedSparseMatmul& planned) {
  DeviceOps& ops = *context.ops;
  const SparseMatmulPlan& plan = planned.plan;
  OpResult out{plan.result_shape, plan.dtype, plan.result_mode, {}};
  RETURN_IF_ERROR(context.CheckAlive());
  if (plan.result_map.empty()) return out;
  ASSIGN_OR_RETURN(out.chunks, AllocateChunks(ops, out.dtype, plan.result_map));
  if (plan.fill_zeros) {
    RETURN_IF_ERROR(FillChunks(ops, out.dtype, out.chunks, Scalar::Int(0)));
    return out;
  }
  // b's rows each block reads, on its device: shared where b already holds them there.
  std::vector<Chunk> b_blocks;
  if (planned.b->mode == Mode::kReplica) {
    ASSIGN_OR_RETURN(b_blocks, ReadOnlyChunksIn(ops, *planned.b, plan.b_blocks, context.alive));
  } else {
    ASSIGN_OR_RETURN(b_blocks,
                     Relayout(ops, *planned.b, plan.b_blocks, Mode::kReplica, context.alive));
  }
  for (size_t i = 0; i < plan.result_map.size(); ++i) {
    RETURN_IF_ERROR(context.CheckAlive());
    CsrProduct product = BlockOf(planned.a, i);
    product.x = b_blocks[i].buffer;
    product.y = out.chunks[i].buffer;
    product.k = plan.k;
    RETURN_IF_ERROR(ops.CsrMatmul(plan.dtype, product));
  }
  return out;
}

absl::StatusOr<OpResult> SparseToDense(const OpContext& context, const CsrOperand& matrix) {
  DeviceOps& ops = *context.ops;
  const CsrMeta& meta = matrix.meta;
  OpResult out{
      meta.shape, meta.dtype, BlocksShareRows(meta.blocks) ? Mode::kSum : Mode::kReplica, {}};
  RETURN_IF_ERROR(context.CheckAlive());
  ASSIGN_OR_RETURN(out.chunks, AllocateChunks(ops, out.dtype, meta.blocks));
  for (size_t i = 0; i < meta.blocks.size(); ++i) {
    RETURN_IF_ERROR(context.CheckAlive());
    CsrProduct block = BlockOf(matrix, i);
    block.y = out.chunks[i].buffer;
    RETURN_IF_ERROR(ops.CsrToDense(meta.dtype, block));
  }
  return out;
}

}  // namespace distarray
