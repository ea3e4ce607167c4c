// A WHILE loop whose whole iteration is one elementwise chain: what a GraphRecording may record as
// a single fused kernel per iteration instead of a kernel per statement (the CUDA backend compiles
// it at record time; docs/graphs.md, "Fused loops"). Built by the program interpreter from a loop
// whose body is elementwise statements over arrays of one dense chunk each, all of one shape,
// ending in `condition = all(x)` or `any(x)` over every axis (server/graph/loop_fusion.h).
//
// The chain's values are its inputs (read at element i from their buffers) and its ops' results.
// The body reads a stored variable's buffer before writing it only at the same element, so one
// pass over the elements is the whole iteration.
#ifndef DISTARRAY_SERVER_BACKEND_FUSED_LOOP_H_
#define DISTARRAY_SERVER_BACKEND_FUSED_LOOP_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "common/dtype.h"
#include "common/scalar.h"
#include "server/backend/backend.h"
#include "server/kernels/ufuncs.h"

namespace distarray {

// The same struct describes a straight-line chain (GraphRecording::RecordFusedChain): the ops run
// once over `elements`, no condition (`all`, `predicate`, `condition`, `entry_flag` and
// `max_iterations` unused).
struct FusedLoop {
  // The most buffers (inputs and stores) one fused loop addresses, and one chain.
  static constexpr int kMaxBuffers = 16;
  static constexpr int kMaxChainBuffers = 64;

  struct Input {
    BufferPtr buffer;
    DType dtype = DType::kUnspecified;
    // Chains only: a 0-d value broadcast into the chain's vectors, read at element 0 by every
    // element (a solver's `x + alpha * p`).
    bool broadcast = false;
  };
  // One of the chain's values: an input's element, or an earlier op's result.
  struct Value {
    bool is_input = false;
    int index = -1;  // into `inputs` or `ops`
  };
  // An op's operand: a value, converted to `read` (the op's compute dtype; bool for where's
  // condition) when its dtype differs, or a scalar, converted to `read`.
  struct Arg {
    std::optional<Value> value;  // nullopt: `scalar`
    Scalar scalar;
    DType read = DType::kUnspecified;
  };
  struct Op {
    std::optional<ElementwiseOpId> op;    // nullopt: astype (a cast of args[0] to `result`)
    DType compute = DType::kUnspecified;  // the planner's compute dtype (args are read in theirs)
    DType result = DType::kUnspecified;
    std::vector<Arg> args;
  };
  // After the chain, `value` is written to `buffer` (a loop-carried variable's slot, of the
  // value's dtype).
  struct Store {
    Value value;
    BufferPtr buffer;
    // Chains only: a 0-d value of a chain over vectors, written once (by element 0).
    bool broadcast = false;
  };

  std::vector<Input> inputs;
  std::vector<Op> ops;
  std::vector<Store> stores;
  int64_t elements = 0;
  // Chains only: the run ends in the sum of this value (a float32 or float64 vector of the chain)
  // over every element, written to element 0 of `sum_buffer`: the chunk's partial, as a Reduce
  // statement's first pass writes it.
  std::optional<Value> sum;
  BufferPtr sum_buffer;
  // The loop's condition: all (else any) of the bool value `predicate` over every element,
  // written to element 0 of `condition` (the condition variable's slot) every iteration.
  bool all = true;
  Value predicate;
  BufferPtr condition;
  // The condition before the first iteration (while semantics), and the cap.
  BufferPtr entry_flag;
  int64_t max_iterations = 1;

  DType DTypeOf(const Value& v) const {
    return v.is_input ? inputs[v.index].dtype : ops[v.index].result;
  }
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_BACKEND_FUSED_LOOP_H_
