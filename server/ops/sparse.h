// Sparse matrices as CSR blocks over three 1-D arrays (v1::CsrMatrix; docs/api.md, "Sparse
// matrices"): checking an operand's arrays against its blocks, and planning and running its
// products with dense operands and its densification. The arrays' values (offsets, columns) are
// never read on the host here: the kernels guard them (server/kernels/csr.h).
#ifndef DISTARRAY_SERVER_OPS_SPARSE_H_
#define DISTARRAY_SERVER_OPS_SPARSE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "distarray/v1/distarray.pb.h"
#include "server/ops/array.h"
#include "server/ops/op_executors.h"
#include "server/ops/operand.h"

namespace distarray {

// What the planners know of a CSR matrix: its shape, value and index dtypes, and its blocks
// (normalized, unit-step boxes), with the entries each block stores.
struct CsrMeta {
  Shape shape;  // (m, n)
  DType dtype = DType::kFloat64;
  DType index_dtype = DType::kInt64;
  IndexMap blocks;
  std::vector<int64_t> capacity;  // per block: the length of its indices and data chunks
};

// INVALID_ARGUMENT naming the field (`field`.indptr, .indices, .data, .blocks) where the arrays'
// dtypes, ranks, modes, chunk counts, devices or chunk lengths do not fit `blocks` of `shape`.
// `blocks` is already normalized against `shape`.
absl::StatusOr<CsrMeta> CheckCsr(const ArrayMeta& indptr, const ArrayMeta& indices,
                                 const ArrayMeta& data, const Shape& shape, const IndexMap& blocks,
                                 absl::string_view field);

// A CSR operand resolved: its three arrays and their checked metadata.
struct CsrOperand {
  ArrayPtr indptr, indices, data;
  CsrMeta meta;
};
absl::StatusOr<CsrOperand> ResolveCsr(const OpContext& context, const v1::CsrMatrix& matrix,
                                      const std::string& field);

// A @ b for a CSR `a` and a dense 1-D or 2-D `b` (MatmulOpSpec.sparse_a).
struct SparseMatmulPlan {
  DType dtype = DType::kFloat64;
  Shape result_shape;
  Mode result_mode = Mode::kReplica;  // SUM where two blocks share rows
  IndexMap result_map;                // per block: its rows (and every column of b)
  IndexMap b_blocks;                  // per block: the rows of b its columns select, on its device
  bool b_vector = false;
  int64_t k = 1;            // b's columns (1 for a vector)
  bool fill_zeros = false;  // no blocks but a nonempty result: one chunk of zeros on device 0
};
absl::StatusOr<SparseMatmulPlan> PlanSparseMatmul(const CsrMeta& a, const ArrayMeta& b,
                                                  absl::string_view field);

struct PlannedSparseMatmul {
  CsrOperand a;
  ArrayPtr b;
  SparseMatmulPlan plan;
};
absl::StatusOr<OpResult> ExecuteSparseMatmul(const OpContext& context,
                                             const PlannedSparseMatmul& planned);

// The dense matrix in the blocks' layout (SparseOpSpec.to_dense).
absl::StatusOr<OpResult> SparseToDense(const OpContext& context, const CsrOperand& matrix);

}  // namespace distarray

#endif  // DISTARRAY_SERVER_OPS_SPARSE_H_
