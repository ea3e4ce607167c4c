// The compute ops of the API as the engine's request handlers and the program interpreter share
// them. Each op is two steps:
//   Plan*:    resolve the operands and plan (no buffer is touched), so RunGraph's validator runs
//             it on metadata-only arrays to type-check a program before anything executes;
//   Execute*: allocate the result's chunks and enqueue the work; the result is unregistered.
// Where operands come from is the caller's: the registry for a request, a program's variables for
// RunGraph.
#ifndef DISTARRAY_SERVER_OPS_OP_EXECUTORS_H_
#define DISTARRAY_SERVER_OPS_OP_EXECUTORS_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "distarray/v1/distarray.pb.h"
#include "server/backend/device_ops.h"
#include "server/ops/array.h"
#include "server/ops/chunk_index.h"
#include "server/ops/elementwise_planner.h"
#include "server/ops/matmul_planner.h"
#include "server/ops/operand.h"
#include "server/ops/reduce_planner.h"

namespace distarray {

struct OpContext {
  // Where the ops send their work: the backend (run now) or a GraphRecording (recorded).
  DeviceOps* ops = nullptr;
  // The array an operand names (`field` names it in errors); scalars never reach it.
  std::function<absl::StatusOr<ArrayPtr>(const v1::Operand& operand, const std::string& field)>
      resolve;
  // Index map normalization with the daemon's limits.
  std::function<absl::StatusOr<IndexMap>(const v1::IndexMap& map, const Shape& shape,
                                         absl::string_view field)>
      normalize_map;
  StopCheck alive;
  // The values of an integer index array (IndexItem.array) as positions, read from the devices;
  // unset where the plan must not read data (a program's check and run: the key is refused).
  std::function<absl::StatusOr<std::vector<int64_t>>(const ArrayPtr& array,
                                                     const std::string& field)>
      read_positions;
  // The most chunks a result may have (--max_chunks): ops whose result layout is derived from
  // their operands' (concat) are bounded by it.
  int64_t max_chunks = kDefaultMaxChunks;
  absl::Status CheckAlive() const { return alive ? alive() : absl::OkStatus(); }
};

ArrayMeta MetaOf(const Array& array);
// An array of `meta` with no buffers: what a program's check plans on.
Array MetadataOnly(const ArrayMeta& meta);

// The result of an op before it is registered: data fields only.
struct OpResult {
  Shape shape;
  DType dtype = DType::kFloat32;
  Mode mode = Mode::kReplica;
  std::vector<Chunk> chunks;
};

struct PlannedElementwise {
  std::vector<ArrayPtr> arrays;  // per operand; null for scalars
  ElementwisePlan plan;
  ArrayPtr out;  // spec.out, resolved
};
// `field` prefixes error fields ("spec" for a request).
absl::StatusOr<PlannedElementwise> PlanElementwiseOp(const OpContext& context,
                                                     const v1::ElementwiseOpSpec& spec,
                                                     absl::string_view field);
// `into`: write the result into these chunks (the result's layout, dtype) instead of new ones;
// the caller ensures no operand reads them other than element for element (see
// CanWriteElementwiseInto).
absl::StatusOr<OpResult> ExecuteElementwise(const OpContext& context,
                                            const PlannedElementwise& planned,
                                            const std::vector<Chunk>* into = nullptr);
// Whether the result may be written over `target`'s buffers: `target` has the result's type and
// layout, and every operand that reads those buffers reads them in place, element i for element i.
bool CanWriteElementwiseInto(const PlannedElementwise& planned, const Array& target);

struct PlannedReduce {
  ArrayPtr array;
  ReducePlan plan;
  bool combine = false;
};
absl::StatusOr<PlannedReduce> PlanReduceOp(const OpContext& context, const v1::ReduceOpSpec& spec,
                                           absl::string_view field);
absl::StatusOr<OpResult> ExecuteReduce(const OpContext& context, const PlannedReduce& planned,
                                       const std::vector<Chunk>* into = nullptr);
// Whether the result may be written over `target`'s buffers: one pass straight into the result's
// layout (no combine step), and the operand does not read them.
bool CanWriteReduceInto(const PlannedReduce& planned, const Array& target);
// The metadata ExecuteReduce will produce (combine applied).
ArrayMeta ReduceResultMeta(const PlannedReduce& planned);

struct PlannedSparseMatmul;  // sparse.h

struct PlannedMatmul {
  ArrayPtr a, b;
  MatmulPlan plan;
  // Set for a sparse `a` (MatmulOpSpec.sparse_a): then `a` and `plan` are unused.
  std::shared_ptr<const PlannedSparseMatmul> sparse;
  std::optional<IndexMap> result_map;
  bool allow_tf32 = false;
};
absl::StatusOr<PlannedMatmul> PlanMatmulOp(const OpContext& context, const v1::MatmulOpSpec& spec,
                                           absl::string_view field);
absl::StatusOr<OpResult> ExecuteMatmul(const OpContext& context, const PlannedMatmul& planned);
ArrayMeta MatmulResultMeta(const PlannedMatmul& planned);

}  // namespace distarray

#endif  // DISTARRAY_SERVER_OPS_OP_EXECUTORS_H_
