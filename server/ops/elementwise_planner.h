// Planning an elementwise op, separate from executing it: the result's shape, dtype and layout,
// the dtype the kernels compute in (NumPy 2's promotion and loop selection), and for every
// operand what it must become before the kernels run (relayout to the elements each result chunk
// needs, cast to the compute dtype) and how each kernel reads it (broadcast strides). Pure.
#ifndef DISTARRAY_SERVER_OPS_ELEMENTWISE_PLANNER_H_
#define DISTARRAY_SERVER_OPS_ELEMENTWISE_PLANNER_H_

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "server/ops/op_table.h"
#include "server/ops/operand.h"

namespace distarray {

struct ElementwiseInput {
  // The op; nullopt for astype (a cast to `astype`).
  std::optional<ElementwiseOpId> op;
  DType astype = DType::kUnspecified;
  std::vector<OperandMeta> operands;
  const ArrayMeta* out = nullptr;  // NumPy's out=: the result takes its layout
  std::optional<IndexMap> result_map;
};

struct ElementwisePlan {
  std::optional<ElementwiseOpId> op;    // nullopt: astype
  DType compute = DType::kUnspecified;  // what the kernel reads (astype: the source dtype)
  DType result_dtype = DType::kUnspecified;
  // The dtype array operands are read in and a result of the compute dtype is written in:
  // `compute`, or float16/bfloat16 for NumPy's 16-bit float loops, which compute in float32
  // (as NumPy's do) with each element converted on load and rounded once on store.
  DType storage = DType::kUnspecified;
  Shape result_shape;
  IndexMap result_map;

  struct Operand {
    bool is_scalar = false;
    Scalar scalar;
    DType read_dtype = DType::kUnspecified;  // storage; bool for where's condition
    // The operand's elements each result chunk reads, one chunk per result chunk on its device
    // (broadcast axes reduced to length 1).
    IndexMap aligned_map;
    // The operand is REPLICA in exactly `aligned_map`: its chunks are read as they are.
    bool in_place = false;
    bool cast = false;  // its dtype differs from read_dtype
    // Per result chunk: where output element i reads the aligned chunk.
    std::vector<StridedBox> views;
    std::vector<bool> contiguous;
  };
  std::vector<Operand> operands;
};

// numpy.broadcast_shapes of the array operands' shapes; INVALID_ARGUMENT naming the operand that
// does not broadcast.
absl::StatusOr<Shape> BroadcastShape(const std::vector<OperandMeta>& operands);

// INVALID_ARGUMENT for a wrong operand count, dtypes an op does not take, shapes that do not
// broadcast, a bad `out`; UNIMPLEMENTED for dtypes not built yet (complex),
// naming the op and the dtype. Fields are named as in ElementwiseOpSpec.
absl::StatusOr<ElementwisePlan> PlanElementwise(const ElementwiseInput& input);

}  // namespace distarray

#endif  // DISTARRAY_SERVER_OPS_ELEMENTWISE_PLANNER_H_
