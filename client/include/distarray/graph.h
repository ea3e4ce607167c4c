// Building RunGraph programs by tracing C++ functions, in the spirit of CuPy's experimental graph
// API and JAX's lax.while_loop:
//
//   distarray::graph::ProgramBuilder g;
//   Var a = g.Input("a");
//   auto out = g.WhileLoop([](auto v) { return All(v[0] < 1000.0); },     // condition
//                          [](auto v) { return std::vector{v[0] + 1.0}; },  // body
//                          {a}, /*max_iterations=*/1 << 20);
//   g.Output("a", out[0]);
//   auto result = client.RunGraph(g.program(), {{"a", &array}});
//
// Vars are values: WhileLoop and Cond return new Vars and leave the ones passed in unchanged.
// Ops on Vars record statements into the builder; nothing is sent until RunGraph.
#ifndef DISTARRAY_CLIENT_GRAPH_H_
#define DISTARRAY_CLIENT_GRAPH_H_

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "distarray/indexing.h"
#include "distarray/types.h"
#include "distarray/v1/distarray.pb.h"

namespace distarray::graph {

class ProgramBuilder;

// A traced value: a variable of the program being built.
class Var {
 public:
  const std::string& name() const { return name_; }
  ProgramBuilder& builder() const { return *builder_; }

 private:
  friend class ProgramBuilder;
  Var(ProgramBuilder* builder, std::string name) : builder_(builder), name_(std::move(name)) {}
  ProgramBuilder* builder_;
  std::string name_;
};

// An operand of a traced op: a Var or a (weak) scalar.
class VarOperand {
 public:
  VarOperand(const Var& var) : var_(&var) {  // NOLINT: implicit, so Vars and scalars mix
    proto_.set_variable(var.name());
  }
  template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
  VarOperand(T scalar) {  // NOLINT
    *proto_.mutable_scalar() = MakeScalar(scalar);
  }
  const v1::Operand& proto() const { return proto_; }
  const Var* var() const { return var_; }

 private:
  v1::Operand proto_;
  const Var* var_ = nullptr;
};

using Vars = std::vector<Var>;
using BodyFn = std::function<Vars(std::span<const Var>)>;
using CondFn = std::function<Var(std::span<const Var>)>;

class ProgramBuilder {
 public:
  ProgramBuilder() = default;
  ProgramBuilder(const ProgramBuilder&) = delete;
  ProgramBuilder& operator=(const ProgramBuilder&) = delete;

  // A program input, bound to an array by name at RunGraph.
  Var Input(const std::string& name);
  // Returns `var` as a new array under the output name `name`.
  void Output(const std::string& name, const Var& var);
  // Returns `var`'s values in the response (small results: a residual, a flag).
  void ValueOutput(const std::string& name, const Var& var);

  Var Ufunc(v1::ElementwiseOp op, std::initializer_list<VarOperand> operands);
  Var AsType(const Var& a, v1::DType dtype);
  // Combined (REPLICA) unless combine is false; see ReduceOpSpec.
  Var Reduce(const Var& a, v1::ReduceOp op, std::vector<int32_t> axes = {}, bool keepdims = false,
             bool combine = true);
  Var Matmul(const Var& a, const Var& b, bool allow_tf32 = false);
  // a @ b for a symmetric float32 or float64 matrix a (MatmulOpSpec.a_symmetric): held whole on
  // one device, only its upper triangle is read.
  Var SymmetricMatmul(const Var& a, const Var& b);
  // sparse @ b for a CSR matrix whose three arrays are bound to `indptr`, `indices` and `data`
  // (CsrMatrix::proto() gives `shape` and `blocks`): MatmulOpSpec.sparse_a.
  Var SparseMatmul(const Var& indptr, const Var& indices, const Var& data,
                   const v1::CsrMatrix& shape_and_blocks, const Var& b);
  Var Reshard(const Var& a, const v1::IndexMap& index_map, std::optional<v1::Mode> mode = {});
  Var ChangeMode(const Var& a, v1::Mode mode);
  // Indexing and shapes (ManipulationSpec), as the client's GetItem and the others.
  Var GetItem(const Var& a, const std::vector<Index>& key);
  // A new Var: `target` with target[key] = value (the Var passed in keeps its value).
  Var SetItem(const Var& target, const std::vector<Index>& key, const VarOperand& value);
  Var PermuteDims(const Var& a, const std::vector<int32_t>& axes);
  Var Reshape(const Var& a, const std::vector<int64_t>& shape);
  Var BroadcastTo(const Var& a, const std::vector<int64_t>& shape);
  // Sorted along `axis`, or (indices) argsort's positions.
  Var Sort(const Var& a, int32_t axis = -1, bool descending = false, bool indices = false);
  Var SearchSorted(const Var& sorted, const Var& values, bool right = false);
  // Running sums (or, with `product`, products) along `axis` (ScanSpec).
  Var Scan(const Var& a, int32_t axis, bool product);
  // A new REPLICA array of `shape` and `dtype` in `index_map`, filled by `fill` (Client::Create's
  // fills; distarray/array_functions.h's fills:: helpers). In a loop body: made every iteration.
  Var Create(const std::vector<int64_t>& shape, v1::DType dtype, const v1::IndexMap& index_map,
             const v1::Fill& fill = {});
  // Joined along `axis` (concat), or along a new axis there (stack).
  Var Concat(const Vars& vars, int32_t axis = 0, bool stack = false);

  // Dense linear algebra (LinalgStatement): the results in LinalgOp's order (Q and R; U, S and
  // Vh; ...), as Client's Linalg. `b` is solve's right-hand side (nullptr for the other ops). A
  // program holding one runs eagerly on the daemon, not as a recorded graph.
  Vars Linalg(v1::LinalgOp op, const Var& a, const Var* b = nullptr,
              const LinalgOptions& options = {});

  // while cond(carried): carried = body(carried). `cond` returns a 0-d bool Var; `body` returns
  // one Var per carried value, each of the same shape, dtype, layout and mode. Returns the
  // carried values after the loop. At most `max_iterations` bodies run; RunGraph reports
  // whether the cap stopped the loop.
  Vars WhileLoop(const CondFn& cond, const BodyFn& body, const Vars& carried,
                 int64_t max_iterations);
  // then_fn(operands) when pred is true, else else_fn(operands); both return Vars of the same
  // types as `operands`, which become the results.
  Vars Cond(const Var& pred, const BodyFn& then_fn, const BodyFn& else_fn, const Vars& operands);

  const v1::Program& program() const { return program_; }

 private:
  using Block = google::protobuf::RepeatedPtrField<v1::Statement>;
  std::string Fresh(const std::string& hint);
  Var Emit(v1::Statement statement, const std::string& hint);
  // Makes `target` hold `value` at the end of the current block: renames the statement that
  // made `value` when nothing after it reads it (no copy), otherwise appends a copy.
  void AssignTo(const std::string& target, const Var& value);
  void AssignAll(const Vars& targets, const Vars& values);
  Vars CopiesOf(const Vars& vars, const std::string& hint);

  v1::Program program_;
  std::vector<Block*> blocks_{program_.mutable_statements()};
  int next_id_ = 0;
};

// Traced ops with NumPy's names; each records a statement into the Vars' builder.
Var operator+(const VarOperand& a, const VarOperand& b);
Var operator-(const VarOperand& a, const VarOperand& b);
Var operator*(const VarOperand& a, const VarOperand& b);
Var operator/(const VarOperand& a, const VarOperand& b);
Var operator<(const VarOperand& a, const VarOperand& b);
Var operator<=(const VarOperand& a, const VarOperand& b);
Var operator>(const VarOperand& a, const VarOperand& b);
Var operator>=(const VarOperand& a, const VarOperand& b);
Var operator==(const VarOperand& a, const VarOperand& b);
Var operator!=(const VarOperand& a, const VarOperand& b);
Var Where(const VarOperand& condition, const VarOperand& x, const VarOperand& y);
Var Sqrt(const Var& a);
Var All(const Var& a);
Var Any(const Var& a);
Var Sum(const Var& a, std::vector<int32_t> axes = {});
Var Max(const Var& a, std::vector<int32_t> axes = {});
Var Matmul(const Var& a, const Var& b);
Var GetItem(const Var& a, const std::vector<Index>& key);
Var SetItem(const Var& target, const std::vector<Index>& key, const VarOperand& value);
Var PermuteDims(const Var& a, const std::vector<int32_t>& axes);
Var Reshape(const Var& a, const std::vector<int64_t>& shape);
Var BroadcastTo(const Var& a, const std::vector<int64_t>& shape);
Var Sort(const Var& a, int32_t axis = -1, bool descending = false);
Var Argsort(const Var& a, int32_t axis = -1, bool descending = false);
Var SearchSorted(const Var& sorted, const Var& values, bool right = false);
Var CumulativeSum(const Var& a, int32_t axis = 0);
Var CumulativeProd(const Var& a, int32_t axis = 0);
Var Concat(const Vars& vars, int32_t axis = 0);  // `vars` not empty
Var Stack(const Vars& vars, int32_t axis = 0);   // `vars` not empty

}  // namespace distarray::graph

#endif  // DISTARRAY_CLIENT_GRAPH_H_
