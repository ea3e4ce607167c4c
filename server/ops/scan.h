// Cumulative sums and products along an axis (ManipulationSpec.scan), planned and executed like
// the other manipulation ops (manipulation.h). The result takes the source's layout; each chunk
// scans its own lines and starts them from the carry of the chunks before it along the axis
// (docs/design.md, "Scans").
#ifndef DISTARRAY_SERVER_OPS_SCAN_H_
#define DISTARRAY_SERVER_OPS_SCAN_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/ops/manipulation.h"

namespace distarray {

// NumPy's dtype of cumsum and cumprod (sum's and prod's): bool and the narrower signed integers
// give int64, the narrower unsigned ones uint64; other dtypes keep theirs.
DType ScanResultDType(DType dtype);

// The most chunks whose carries the scan plans pair by pair; a source with more is scanned in a
// working layout (one chunk per device) instead. Pairing is quadratic: a chunk late along a split
// axis combines one copy per earlier chunk on its lines, all in one copy batch (one NCCL group on
// GPUs without peer access), so the bound keeps that batch and the planning small.
inline constexpr size_t kMaxScanCarryChunks = 256;

absl::Status PlanScan(const OpContext& context, const v1::ScanSpec& spec, const std::string& field,
                      PlannedManipulation& planned);
absl::StatusOr<std::vector<Chunk>> ExecuteScan(const OpContext& context,
                                               const PlannedManipulation& planned);

}  // namespace distarray

#endif  // DISTARRAY_SERVER_OPS_SCAN_H_
