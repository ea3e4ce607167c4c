// Dense linear algebra (LinalgOpSpec): solve, inv, cholesky, qr, eigh, svd, det and slogdet on
// stacks of matrices. The operand is gathered whole onto one device (the one holding most of its
// elements), transposed into LAPACK's column-major order there, factorized by the backend
// (DeviceOps::Factorize), and every result is one chunk on that device. A factorization is one
// library call per matrix, which no split of the matrix across devices would shorten: the gather
// costs one copy of the operand, the factorization O(n^3) (docs/api.md, "Linear algebra").
#ifndef DISTARRAY_SERVER_OPS_LINALG_H_
#define DISTARRAY_SERVER_OPS_LINALG_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "distarray/v1/distarray.pb.h"
#include "server/backend/backend.h"
#include "server/ops/op_executors.h"

namespace distarray {

// The largest matrix axis a request may have, and the most matrices in a stack: LAPACK's
// 32-bit integers hold the workspace sizes of a 16384 x 16384 SVD, and each matrix of a stack is
// a library call of its own on the GPU (a stack of a million 2 x 2 matrices would be a million
// launches).
inline constexpr int64_t kMaxLinalgDim = 16384;
inline constexpr int64_t kMaxLinalgBatch = 65536;

struct PlannedLinalg {
  v1::LinalgOp op = v1::LINALG_OP_UNSPECIFIED;
  ArrayPtr a, b;
  DType dtype = DType::kFloat64;
  DType real = DType::kFloat64;  // the real dtype of the values (S, eigenvalues, logabsdet)
  Shape stack;                   // a's axes before the matrix
  int64_t batch = 1;             // matrices in the stack
  int64_t m = 0, n = 0;          // each matrix of a
  int64_t nrhs = 0;              // solve: right-hand sides per matrix
  bool b_vector = false;         // solve: b is (n) or (..., n), one right-hand side
  bool upper = false, full_matrices = false, compute_uv = false;
  int device = 0;              // where a is gathered and the results live
  std::vector<Shape> results;  // each result's shape, in LinalgOp's order
  std::vector<DType> dtypes;   // and dtype
};

// How many results `op` has (LinalgOp's list): 0 for an op that does not exist. Programs check
// their linalg statements' targets against it before any shape is known.
int LinalgResultCount(v1::LinalgOp op, bool compute_uv);

// Resolves and checks the operands (`field` prefixes error fields: "spec").
absl::StatusOr<PlannedLinalg> PlanLinalgOp(const OpContext& context, const v1::LinalgOpSpec& spec,
                                           absl::string_view field);

// Each result's shape, dtype and layout (one REPLICA chunk on `planned.device`), as
// ExecuteLinalg makes them: what a program's check assigns.
std::vector<ArrayMeta> LinalgResultMetas(const PlannedLinalg& planned);

// Gathers, factorizes and lays out the results (unregistered). Waits for the factorization to
// read its status: FAILED_PRECONDITION for a singular matrix (solve, inv), one not positive
// definite (cholesky), or no convergence (eigh, svd). `backend` is the context's sink (eager only).
absl::StatusOr<std::vector<OpResult>> ExecuteLinalg(const OpContext& context, Backend& backend,
                                                    const PlannedLinalg& planned);

}  // namespace distarray

#endif  // DISTARRAY_SERVER_OPS_LINALG_H_
