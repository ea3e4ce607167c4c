// Indexing and shape ops (ManipulationSpec): get_item, set_item, permute_dims, reshape and
// concat/stack. None of them does arithmetic; each plans which elements go where from the index
// maps alone, keeps chunks on their devices where the op allows it, and moves data only where it
// must. Like the other ops (op_executors.h) each is two steps: Plan (metadata only, so a program's
// check runs it) and Execute (allocate, then enqueue on the OpContext's sink).
#ifndef DISTARRAY_SERVER_OPS_MANIPULATION_H_
#define DISTARRAY_SERVER_OPS_MANIPULATION_H_

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "distarray/v1/distarray.pb.h"
#include "server/ops/array.h"
#include "server/ops/basic_index.h"
#include "server/ops/layout.h"
#include "server/ops/op_executors.h"

namespace distarray {

// The most arrays one concat or stack joins.
inline constexpr int kMaxConcatSources = 1024;
// get_item with an integer list or array: the most pieces (a piece per run per source chunk it
// meets) the result keeps as its chunks. Past it, as random positions give, the pieces are gathered
// into a compact layout (CompactListLayout): an array of thousands of tiny chunks costs every later
// op (a reduction's plan over it can run out of its budget).
inline constexpr int64_t kCompactListPieces = 64;

// How a sort runs (sort.cc): where each chunk holds whole lines along the axis, in place;
// otherwise in a working layout first, split along another axis (each chunk then holds whole
// lines) or, when no other axis has two elements, along the axis itself in blocks that
// neighbouring devices merge.
struct SortPlan {
  int axis = 0;
  bool descending = false;
  bool indices = false;  // argsort
  IndexMap working;      // empty: the source's chunks sort their lines in place
  bool merge_blocks = false;
  bool right = false;  // search_sorted: the side
};

// How a scan runs (scan.cc): in the chunks given (the source's, or a working layout's: SortPlan's),
// each chunk scanning its own lines from the carry of the chunks before it along the axis.
struct ScanPlan {
  int axis = 0;
  bool product = false;
  IndexMap working;  // empty: the source's chunks
};

struct PlannedManipulation {
  v1::ManipulationSpec::OpCase op = v1::ManipulationSpec::OP_NOT_SET;
  // get_item, permute_dims, reshape: the source; set_item: the target; concat: every source.
  std::vector<ArrayPtr> sources;
  // set_item: the value, an array (broadcast to the region) or a scalar (`value` null).
  ArrayPtr value;
  Scalar scalar;
  BasicIndex index;  // get_item, set_item
  // get_item: the result is the pieces the list cuts (index map `pieces`) gathered into
  // result.map (a REPLICA source whose list cuts more than kCompactListPieces pieces).
  bool compact_list = false;
  std::vector<int> axes;          // permute_dims: result axis i is source axis axes[i]
  bool reshape_in_place = false;  // reshape: every chunk keeps its buffer (relabelled)
  SortPlan sort;
  ScanPlan scan;
  ArrayMeta result;
};

// The array an operand names (INVALID_ARGUMENT naming `field` for a scalar or nothing).
absl::StatusOr<ArrayPtr> ResolveArrayOperand(const OpContext& context, const v1::Operand& operand,
                                             const std::string& field);

// `field` prefixes error fields ("spec" for a request). Operands come from context.resolve.
absl::StatusOr<PlannedManipulation> PlanManipulation(const OpContext& context,
                                                     const v1::ManipulationSpec& spec,
                                                     absl::string_view field);

// Allocates the result and enqueues the moves. kShareLeadingParts lets result chunks hold source
// buffers where an op only relabels them (a slice that takes whole chunks, a concat, a reshape
// that keeps runs, an identity permutation); only for results nothing writes into, as in
// Relayout. Programs pass kCopy: their slots are written in place.
absl::StatusOr<OpResult> ExecuteManipulation(const OpContext& context,
                                             const PlannedManipulation& planned,
                                             SourceBuffers sources);

// set_item writing straight into its target's buffers (no copy of the target first), for a
// program whose statement rebinds the target's variable to the result: the old value is then
// unreachable. The caller ensures the target is REPLICA, owned by the program (no input, nothing
// else holds its buffers) and not read by the value (WritesIntoTargetSafely).
absl::StatusOr<OpResult> ExecuteSetItemInPlace(const OpContext& context,
                                               const PlannedManipulation& planned);
// Whether a planned set_item may write into its target in place: the target is REPLICA and the
// value (if an array) holds none of its buffers.
bool WritesIntoTargetSafely(const PlannedManipulation& planned);

}  // namespace distarray

#endif  // DISTARRAY_SERVER_OPS_MANIPULATION_H_
