// What the C++ SDK's solvers share (sparse_solver_program.h).
#include "client/sparse_solver_program.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "distarray/index_maps.h"

namespace distarray::sparse::internal {

std::string DTypeName(v1::DType dtype) {
  std::string name = v1::DType_Name(dtype);
  if (name.rfind("DTYPE_", 0) == 0) name = name.substr(6);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  return absl::StrCat("(", absl::StrJoin(shape, ", "), shape.size() == 1 ? ",)" : ")");
}

absl::Status CheckSystem(const std::string& what, const std::vector<int64_t>& shape,
                         v1::DType dtype, const Array& b, const Array* x0,
                         std::optional<int64_t> maxiter) {
  if (shape.size() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("a: shape ", ShapeText(shape), "; ", what, " needs a 2-D A"));
  }
  if (dtype != v1::DTYPE_FLOAT32 && dtype != v1::DTYPE_FLOAT64) {
    return absl::InvalidArgumentError(absl::StrCat("a: dtype ", DTypeName(dtype), "; ", what,
                                                   " solves real float32 or float64 systems only"));
  }
  if (shape[0] == 0 || shape[1] == 0) {
    return absl::InvalidArgumentError(absl::StrCat("a: shape ", ShapeText(shape), " is empty; ",
                                                   what, " needs rows and columns"));
  }
  const std::vector<int64_t> b_shape = b.shape();
  if (b_shape.size() != 1 || b_shape[0] != shape[0]) {
    return absl::InvalidArgumentError(absl::StrCat("b: shape ", ShapeText(b_shape),
                                                   " does not fit A's ", ShapeText(shape), "; ",
                                                   what, " needs a 1-D b of A's rows"));
  }
  if (b.info().dtype() != dtype) {
    return absl::InvalidArgumentError(absl::StrCat("b: dtype ", DTypeName(b.info().dtype()),
                                                   " does not match A's ", DTypeName(dtype)));
  }
  if (x0 != nullptr) {
    const std::vector<int64_t> x_shape = x0->shape();
    if (x_shape.size() != 1 || x_shape[0] != shape[1]) {
      return absl::InvalidArgumentError(absl::StrCat("x0: shape ", ShapeText(x_shape),
                                                     " does not fit A's ", ShapeText(shape), "; ",
                                                     what, " needs a 1-D x0 of A's columns"));
    }
    if (x0->info().dtype() != dtype) {
      return absl::InvalidArgumentError(absl::StrCat("x0: dtype ", DTypeName(x0->info().dtype()),
                                                     " does not match A's ", DTypeName(dtype)));
    }
  }
  if (maxiter && *maxiter < 0) {
    return absl::InvalidArgumentError(absl::StrCat("maxiter: ", *maxiter, " is negative"));
  }
  return absl::OkStatus();
}

// `chunks` (device, [begin, end) of the rows), grouped by device in order of first appearance.
namespace {

Layouts LayoutsOf(const std::vector<std::pair<int, v1::Slice>>& chunks, int64_t n) {
  std::vector<int> devices;
  for (const auto& [device, rows] : chunks) {
    if (std::find(devices.begin(), devices.end(), device) == devices.end()) {
      devices.push_back(device);
    }
  }
  Layouts layouts;
  for (int device : devices) {
    for (const auto& [d, rows] : chunks) {
      if (d != device) continue;
      v1::Chunk* chunk = layouts.rows.add_chunks();
      chunk->set_device(device);
      *chunk->add_slices() = rows;
    }
    *layouts.cols.add_chunks() = MakeChunk(device, {SliceSpec{0, n, std::nullopt}});
  }
  layouts.scalars = Replicated(0, devices);
  return layouts;
}

}  // namespace

Layouts LayoutsOf(const CsrMatrix& a) {
  std::vector<std::pair<int, v1::Slice>> chunks;
  for (const v1::Chunk& block : a.blocks().chunks()) {
    chunks.emplace_back(block.device(), block.slices(0));
  }
  return LayoutsOf(chunks, a.shape()[1]);
}

Layouts LayoutsOf(const Array& a) {
  std::vector<std::pair<int, v1::Slice>> chunks;
  const int64_t m = a.shape()[0];
  for (const v1::Chunk& chunk : a.info().index_map().chunks()) {
    v1::Slice rows = chunk.slices_size() > 0 ? chunk.slices(0) : v1::Slice();
    if (!rows.has_start()) rows.set_start(0);
    if (!rows.has_stop()) rows.set_stop(m);
    chunks.emplace_back(chunk.device(), rows);
  }
  return LayoutsOf(chunks, a.shape()[1]);
}

namespace {

Var Unary(v1::ElementwiseOp op, const Var& a) { return a.builder().Ufunc(op, {a}); }
Var Binary(v1::ElementwiseOp op, const Var& a, const VarOperand& b) {
  return a.builder().Ufunc(op, {a, b});
}

}  // namespace

Var Negative(const Var& a) { return Unary(v1::ELEMENTWISE_OP_NEGATIVE, a); }
Var Abs(const Var& a) { return Unary(v1::ELEMENTWISE_OP_ABS, a); }
Var Maximum(const Var& a, const VarOperand& b) { return Binary(v1::ELEMENTWISE_OP_MAXIMUM, a, b); }
Var Minimum(const Var& a, const VarOperand& b) { return Binary(v1::ELEMENTWISE_OP_MINIMUM, a, b); }
Var Hypot(const Var& a, const VarOperand& b) { return Binary(v1::ELEMENTWISE_OP_HYPOT, a, b); }
Var LogicalAnd(const Var& a, const Var& b) { return Binary(v1::ELEMENTWISE_OP_LOGICAL_AND, a, b); }
Var LogicalNot(const Var& a) { return Unary(v1::ELEMENTWISE_OP_LOGICAL_NOT, a); }

Var Norm(const Var& x) { return graph::Sqrt(graph::Sum(x * x)); }

Var Carried(const Var& value, const v1::IndexMap& layout) {
  return value.builder().Reshard(value, layout, v1::MODE_REPLICA);
}

Rotation SymOrtho(const Var& a, const Var& b) {
  Var r = Hypot(a, b);
  Var safe = graph::Where(r == 0.0, 1.0, r);
  return {a / safe, b / safe, r};
}

absl::StatusOr<Array> UploadOne(const Client& client, v1::DType dtype,
                                const v1::IndexMap& scalars) {
  const ArrayOptions options{scalars, v1::MODE_REPLICA, ""};
  if (dtype == v1::DTYPE_FLOAT32) {
    const float one = 1.0f;
    return client.Upload<float>(std::span<const float>(&one, 1), {}, options);
  }
  const double one = 1.0;
  return client.Upload<double>(std::span<const double>(&one, 1), {}, options);
}

absl::StatusOr<double> ValueOf(const GraphRun& run, const std::string& name) {
  auto it = run.values.find(name);
  if (it == run.values.end()) {
    return absl::InternalError(absl::StrCat("RunGraph answered no value ", name));
  }
  const v1::Value& value = it->second;
  const std::string& data = value.data();
  switch (value.dtype()) {
    case v1::DTYPE_FLOAT32:
      if (data.size() >= sizeof(float)) {
        float f;
        std::memcpy(&f, data.data(), sizeof(f));
        return static_cast<double>(f);
      }
      break;
    case v1::DTYPE_FLOAT64:
      if (data.size() >= sizeof(double)) {
        double d;
        std::memcpy(&d, data.data(), sizeof(d));
        return d;
      }
      break;
    case v1::DTYPE_BOOL:  // a flag (MINRES's symmetry test)
      if (data.size() >= 1) return data[0] != 0 ? 1.0 : 0.0;
      break;
    default:
      break;
  }
  return absl::InternalError(absl::StrCat("RunGraph's value ", name, ": dtype ",
                                          DTypeName(value.dtype()), ", ", data.size(),
                                          " bytes; expected one bool, float32 or float64"));
}

Var BoundMatrix::Times(const Var& x) const {
  return x.builder().SparseMatmul(indptr, indices, data, matrix->proto(), x);
}

BoundMatrix Bind(ProgramBuilder& p, const CsrMatrix& matrix, const std::string& prefix,
                 std::map<std::string, const Array*>& arguments) {
  arguments[prefix + "indptr"] = &matrix.indptr();
  arguments[prefix + "indices"] = &matrix.indices();
  arguments[prefix + "data"] = &matrix.data();
  return {&matrix, p.Input(prefix + "indptr"), p.Input(prefix + "indices"),
          p.Input(prefix + "data")};
}

absl::Status CheckSquareSystem(const std::string& what, const std::vector<int64_t>& shape,
                               v1::DType dtype, const Array& b, const Array* x0,
                               std::optional<int64_t> maxiter) {
  if (absl::Status s = CheckSystem(what, shape, dtype, b, x0, maxiter); !s.ok()) return s;
  if (shape[0] != shape[1]) {
    return absl::InvalidArgumentError(
        absl::StrCat("a: shape ", ShapeText(shape), "; ", what, " needs a square A"));
  }
  return absl::OkStatus();
}

absl::Status CheckNonnegative(const std::string& name, double value, bool finite) {
  if (!(value >= 0) || (finite && std::isinf(value))) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": ", value, " is not ", finite ? "a finite number >= 0" : "a number >= 0"));
  }
  return absl::OkStatus();
}

absl::Status CheckFinite(const std::string& name, double value) {
  if (!std::isfinite(value)) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": ", value, " is not finite"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, double>> ValuesOf(const GraphRun& run,
                                                       const std::vector<std::string>& names) {
  std::map<std::string, double> values;
  for (const std::string& name : names) {
    absl::StatusOr<double> value = ValueOf(run, name);
    if (!value.ok()) return value.status();
    values[name] = *value;
  }
  return values;
}

absl::StatusOr<Array> OutputOf(GraphRun& run, const std::string& name) {
  auto it = run.outputs.find(name);
  if (it == run.outputs.end()) {
    return absl::InternalError(absl::StrCat("RunGraph answered no ", name));
  }
  return std::move(it->second);
}

SquareOperator BindSquare(ProgramBuilder& p, const CsrMatrix& a,
                          std::map<std::string, const Array*>& arguments) {
  const BoundMatrix matrix = Bind(p, a, "a_", arguments);
  return {&p, LayoutsOf(a), [matrix](const Var& x) { return matrix.Times(x); }};
}

SquareOperator BindSquare(ProgramBuilder& p, const Array& a,
                          std::map<std::string, const Array*>& arguments) {
  arguments["a"] = &a;
  const Var matrix = p.Input("a");
  return {&p, LayoutsOf(a), [matrix](const Var& x) { return matrix.builder().Matmul(matrix, x); }};
}

Vars InSlotOrder(size_t slots, std::initializer_list<std::pair<size_t, Var>> values) {
  std::vector<std::optional<Var>> in_order(slots);
  for (const auto& [slot, var] : values) in_order.at(slot) = var;
  Vars out;
  for (const std::optional<Var>& var : in_order) out.push_back(var.value());
  return out;
}

Var LeastSquaresOperator::TransposeTimes(const Var& u) const {
  return p->Reshard(at.Times(u), layouts.cols, v1::MODE_REPLICA);
}

Bidiagonalization BidiagonalizationStart(const LeastSquaresOperator& op, const Var& b,
                                         const std::optional<Var>& x0, const Var& zero) {
  Var u = x0 ? b - op.a.Times(*x0) : b * 1.0;
  const Var beta = Norm(u);
  u = u * (1.0 / graph::Where(beta > 0.0, beta, 1.0));
  Var v = op.TransposeTimes(u);
  const Var alpha = graph::Where(beta > 0.0, Norm(v), zero);
  v = v * (1.0 / graph::Where(alpha > 0.0, alpha, 1.0));
  return {u, v, alpha, beta, std::nullopt};
}

Bidiagonalization BidiagonalizationStep(const LeastSquaresOperator& op, const Var& u_old,
                                        const Var& v_old, const Var& alpha_old) {
  Var u = op.a.Times(v_old) - alpha_old * u_old;
  const Var beta = op.Scalar(Norm(u));
  const Var positive = beta > 0.0;
  u = u * (1.0 / graph::Where(positive, beta, 1.0));
  Var v = graph::Where(positive, op.TransposeTimes(u) - beta * v_old, v_old);
  const Var alpha = graph::Where(positive, op.Scalar(Norm(v)), alpha_old);
  v = v * (1.0 / graph::Where(LogicalAnd(positive, alpha > 0.0), alpha, 1.0));
  return {u, v, alpha, beta, positive};
}

Var LeastSquaresIstop(const Var& itn, int64_t maxiter, const Var& test1, const Var& test2,
                      const Var& test3, const Var& t1, const Var& rtol, double atol, double ctol,
                      const Var& zero) {
  Var istop = graph::Where(itn >= maxiter, 7.0, zero);
  istop = graph::Where(1.0 + test3 <= 1.0, 6.0, istop);
  istop = graph::Where(1.0 + test2 <= 1.0, 5.0, istop);
  istop = graph::Where(1.0 + t1 <= 1.0, 4.0, istop);
  istop = graph::Where(test3 <= ctol, 3.0, istop);
  istop = graph::Where(test2 <= atol, 2.0, istop);
  return graph::Where(test1 <= rtol, 1.0, istop);
}

}  // namespace distarray::sparse::internal
