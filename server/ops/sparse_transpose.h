// The transpose of a CSR matrix (SparseOpSpec.transpose), built on the daemon's host: each block's
// parts are read back, transposed by a counting sort (stable, so every transposed row lists its
// entries in ascending column order) and written to the block's device. A one-off step before a
// solve; the solver's products run on the devices. Entries whose offsets or columns lie outside
// their block are dropped, as the product kernels skip them.
#ifndef DISTARRAY_SERVER_OPS_SPARSE_TRANSPOSE_H_
#define DISTARRAY_SERVER_OPS_SPARSE_TRANSPOSE_H_

#include "absl/status/statusor.h"
#include "server/backend/backend.h"
#include "server/ops/sparse.h"

namespace distarray {

// The transpose's parts: indptr (int64), indices (int64) and data, one chunk per block on the
// block's device, laid end to end in block order (block i's box transposed is the result's
// block i).
struct CsrParts {
  OpResult indptr, indices, data;
};
absl::StatusOr<CsrParts> TransposeOnHost(Backend& backend, const CsrOperand& matrix,
                                         const StopCheck& alive);

}  // namespace distarray

#endif  // DISTARRAY_SERVER_OPS_SPARSE_TRANSPOSE_H_
