// Conjugate gradients traced into one RunGraph program (distarray/sparse_linalg.h), the same
// program as the Python SDK's distarray.sparse.linalg.cg without a preconditioner.
#include <functional>
#include <map>
#include <string>
#include <utility>

#include "client/sparse_solver_program.h"
#include "distarray/sparse_linalg.h"

namespace distarray::sparse {
namespace {

using internal::BindSquare;
using internal::CheckNonnegative;
using internal::CheckSquareSystem;
using internal::LogicalAnd;
using internal::Maximum;
using internal::Norm;
using internal::OutputOf;
using internal::ProgramBuilder;
using internal::SquareOperator;
using internal::UploadOne;
using internal::ValueOf;
using internal::Var;
using internal::Vars;

// The CG program for either operator: `matvec` records A @ x for an x whole on every device.
absl::StatusOr<CgResult> RunCg(const Client& client, const SquareOperator& op, int64_t n,
                               v1::DType dtype, const Array& b, const CgOptions& options,
                               std::map<std::string, const Array*> arguments) {
  ProgramBuilder& p = *op.p;
  // A NaN tolerance would make the test false at once: x0 back with info 0, a silent "converged".
  for (const absl::Status& s :
       {CheckNonnegative("rtol", options.rtol), CheckNonnegative("atol", options.atol)}) {
    if (!s.ok()) return s;
  }
  const int64_t maxiter = options.maxiter.value_or(10 * n);
  absl::StatusOr<Array> one_array = UploadOne(client, dtype, op.layouts.scalars);
  if (!one_array.ok()) return one_array.status();
  arguments["one"] = &*one_array;
  arguments["b"] = &b;
  if (options.x0 != nullptr) arguments["x0"] = options.x0;

  const Var one = p.Input("one");
  const auto rows = [&](const Var& v) { return op.Rows(v); };
  const auto scalar = [&](const Var& v) { return op.Scalar(v); };
  const auto times = [&](const Var& d) { return op.Times(d); };
  // x, r and the direction stay split as A's rows: each device updates its part, and only the
  // direction is gathered, once per iteration, for the product.
  const Var bv = rows(p.Input("b"));
  const Var x = rows(options.x0 != nullptr ? p.Input("x0") : bv * 0.0);
  const Var r = options.x0 != nullptr ? bv - times(x) : bv * 1.0;
  const Var bnrm2 = scalar(Norm(bv));
  const Var tol = Maximum(one * options.atol, bnrm2 * options.rtol);
  Vars state = {x, r, r * 0.0, one * 1.0, one * 0.0};  // x, r, direction, rho_prev, k
  if (maxiter > 0) {
    state = p.WhileLoop(
        [&](std::span<const Var> s) {
          // b = 0 stops at once (SciPy returns before iterating; with tol 0 the residual test
          // alone would run an iteration that divides 0 by 0).
          return LogicalAnd(LogicalAnd((s[4] < maxiter), (bnrm2 > 0.0)), scalar(Norm(s[1])) >= tol);
        },
        [&](std::span<const Var> s) {
          const Var rho = scalar(graph::Sum(s[1] * s[1]));
          const Var beta = graph::Where(s[4] > 0.0, rho / s[3], 0.0);
          const Var d = s[1] + beta * s[2];
          const Var q = times(d);
          const Var alpha = rho / scalar(graph::Sum(d * q));
          return Vars{s[0] + alpha * d, s[1] - alpha * q, d, rho, s[4] + 1.0};
        },
        state, maxiter);
  }
  // SciPy's x for b = 0 is 0, whatever x0 was.
  p.Output("x", options.x0 != nullptr ? state[0] * graph::Where(bnrm2 > 0.0, one, 0.0) : state[0]);
  p.ValueOutput("k", state[4]);
  p.ValueOutput("bnrm2", bnrm2);
  absl::StatusOr<GraphRun> run = client.RunGraph(p.program(), arguments, options.timeout_ms);
  if (!run.ok()) return run.status();
  absl::StatusOr<double> k = ValueOf(*run, "k");
  if (!k.ok()) return k.status();
  absl::StatusOr<double> norm_b = ValueOf(*run, "bnrm2");
  if (!norm_b.ok()) return norm_b.status();
  absl::StatusOr<Array> x_out = OutputOf(*run, "x");
  if (!x_out.ok()) return x_out.status();
  const auto iterations = static_cast<int64_t>(*k);
  // SciPy's info: 0 when converged (or b = 0), else the iterations run; as SciPy, convergence
  // reached by the last allowed iteration is not seen (the test runs before each iteration).
  const int64_t info = (*norm_b == 0 || iterations < maxiter) ? 0 : iterations;
  return CgResult{*std::move(x_out), info, iterations};
}

}  // namespace

absl::StatusOr<CgResult> Cg(const Client& client, const CsrMatrix& a, const Array& b,
                            const CgOptions& options) {
  if (absl::Status s =
          CheckSquareSystem("Cg", a.shape(), a.dtype(), b, options.x0, options.maxiter);
      !s.ok()) {
    return s;
  }
  ProgramBuilder p;
  std::map<std::string, const Array*> arguments;
  const SquareOperator op = BindSquare(p, a, arguments);
  return RunCg(client, op, a.shape()[1], a.dtype(), b, options, arguments);
}

absl::StatusOr<CgResult> Cg(const Client& client, const Array& a, const Array& b,
                            const CgOptions& options) {
  const std::vector<int64_t> shape = a.shape();
  if (absl::Status s =
          CheckSquareSystem("Cg", shape, a.info().dtype(), b, options.x0, options.maxiter);
      !s.ok()) {
    return s;
  }
  ProgramBuilder p;
  std::map<std::string, const Array*> arguments;
  const SquareOperator op = BindSquare(p, a, arguments);
  return RunCg(client, op, shape[1], a.info().dtype(), b, options, arguments);
}

}  // namespace distarray::sparse
