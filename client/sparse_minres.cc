// MINRES traced into one RunGraph program (distarray/sparse_linalg.h), the same program as the
// Python SDK's distarray.sparse.linalg.minres without a preconditioner.
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/sparse_solver_program.h"
#include "distarray/sparse_linalg.h"

namespace distarray::sparse {
namespace {

using internal::Abs;
using internal::BindSquare;
using internal::CheckFinite;
using internal::CheckNonnegative;
using internal::CheckSquareSystem;
using internal::InSlotOrder;
using internal::LogicalAnd;
using internal::LogicalNot;
using internal::Maximum;
using internal::Minimum;
using internal::Negative;
using internal::Norm;
using internal::OutputOf;
using internal::ProgramBuilder;
using internal::SquareOperator;
using internal::UploadOne;
using internal::ValuesOf;
using internal::Var;
using internal::Vars;

// MINRES's carried state, one slot per value in SciPy's names.
enum MinresSlot : size_t {
  kX,
  kR1,
  kR2,
  kW,
  kW2,
  kBeta,
  kOldb,
  kDbar,
  kEpsln,
  kPhibar,
  kRhs1,
  kRhs2,
  kTnorm2,
  kGmax,
  kGmin,
  kCs,
  kSn,
  kIstop,
  kItn,
  kSlots
};

absl::Status CheckOptions(const MinresOptions& options) {
  if (absl::Status s = CheckNonnegative("rtol", options.rtol); !s.ok()) return s;
  return CheckFinite("shift", options.shift);
}

absl::StatusOr<MinresResult> RunMinres(const Client& client, const SquareOperator& op, int64_t n,
                                       v1::DType dtype, const Array& b,
                                       const MinresOptions& options,
                                       std::map<std::string, const Array*> arguments) {
  ProgramBuilder& p = *op.p;
  const int64_t maxiter = options.maxiter.value_or(5 * n);
  const double shift = options.shift, rtol = options.rtol;
  const bool float32 = dtype == v1::DTYPE_FLOAT32;
  const double eps =
      float32 ? std::numeric_limits<float>::epsilon() : std::numeric_limits<double>::epsilon();
  const double largest =
      float32 ? std::numeric_limits<float>::max() : std::numeric_limits<double>::max();
  absl::StatusOr<Array> one_array = UploadOne(client, dtype, op.layouts.scalars);
  if (!one_array.ok()) return one_array.status();
  arguments["one"] = &*one_array;
  arguments["b"] = &b;
  if (options.x0 != nullptr) arguments["x0"] = options.x0;

  const Var one = p.Input("one");
  const Var zero = one * 0.0;
  // Every vector stays split as A's rows; only the Lanczos vector is gathered, once per
  // iteration, for the product.
  const Var bv = op.Rows(p.Input("b"));
  const Var x = options.x0 != nullptr ? op.Rows(p.Input("x0")) : bv * 0.0;
  const Var r1 = options.x0 != nullptr ? bv - op.Times(x) : bv * 1.0;
  const Var beta1sq = op.Scalar(graph::Sum(r1 * r1));
  const Var bnorm = op.Scalar(Norm(bv));
  const Var beta1 = graph::Sqrt(beta1sq);
  // SciPy returns x (x0 or 0) where r1 = 0, else b where b = 0, before any iteration.
  Var start = LogicalAnd(beta1sq != 0.0, bnorm != 0.0);
  std::optional<Var> asymmetric;
  if (options.check) {  // ||A y||^2 against y^T A (A y), y = r1, to eps^(1/3) of the former
    const Var ay = op.Times(r1);
    const Var ss = op.Scalar(graph::Sum(ay * ay));
    const Var tt = op.Scalar(graph::Sum(r1 * op.Times(ay)));
    asymmetric = LogicalAnd(start, Abs(ss - tt) > (ss + eps) * std::cbrt(eps));
    start = LogicalAnd(start, LogicalNot(*asymmetric));
  }
  Vars state = InSlotOrder(kSlots, {{kX, x},
                                    {kR1, r1},
                                    {kR2, r1 * 1.0},
                                    {kW, r1 * 0.0},
                                    {kW2, r1 * 0.0},
                                    {kBeta, beta1 * 1.0},
                                    {kOldb, zero * 1.0},
                                    {kDbar, zero * 1.0},
                                    {kEpsln, zero * 1.0},
                                    {kPhibar, beta1 * 1.0},
                                    {kRhs1, beta1 * 1.0},
                                    {kRhs2, zero * 1.0},
                                    {kTnorm2, zero * 1.0},
                                    {kGmax, zero * 1.0},
                                    {kGmin, one * largest},
                                    {kCs, zero - 1.0},
                                    {kSn, zero * 1.0},
                                    {kIstop, zero * 1.0},
                                    {kItn, zero * 1.0}});
  for (size_t slot = 0; slot < state.size(); ++slot) {
    state[slot] = slot <= kW2 ? op.Rows(state[slot]) : op.Scalar(state[slot]);
  }

  const auto cond = [&](std::span<const Var> s) {
    return LogicalAnd(LogicalAnd(start, s[kIstop] == 0.0), s[kItn] < maxiter);
  };
  const auto body = [&](std::span<const Var> s) {
    const Var itn = s[kItn] + 1.0;
    // The Lanczos step (M = I, so SciPy's y is r2 at the top of each iteration).
    const Var& oldb = s[kBeta];
    const Var v = s[kR2] * (1.0 / oldb);
    Var y = op.Times(v);
    if (shift != 0) y = y - shift * v;
    y = y -
        graph::Where(itn >= 2.0, oldb / graph::Where(s[kOldb] != 0.0, s[kOldb], 1.0), 0.0) * s[kR1];
    const Var alfa = op.Scalar(graph::Sum(v * y));
    y = y - (alfa / oldb) * s[kR2];
    const Var beta = graph::Sqrt(op.Scalar(graph::Sum(y * y)));
    const Var tnorm2 = s[kTnorm2] + (alfa * alfa + oldb * oldb + beta * beta);
    // Abar = const I: one iteration solves it (SciPy's istop -1, "terminate later").
    Var istop = graph::Where(LogicalAnd(itn == 1.0, beta / beta1 <= 10 * eps), -1.0, s[kIstop]);
    // The previous rotation, then the next one.
    const Var delta = s[kCs] * s[kDbar] + s[kSn] * alfa;
    const Var gbar = s[kSn] * s[kDbar] - s[kCs] * alfa;
    const Var epsln = s[kSn] * beta;
    const Var dbar = Negative(s[kCs]) * beta;
    const Var root = graph::Sqrt(gbar * gbar + dbar * dbar);
    const Var gamma = Maximum(graph::Sqrt(gbar * gbar + beta * beta), eps);
    const Var cs = gbar / gamma;
    const Var sn = beta / gamma;
    const Var phi = cs * s[kPhibar];
    const Var phibar = sn * s[kPhibar];
    // Updates of the search directions and x.
    const Var w = (v - s[kEpsln] * s[kW2] - delta * s[kW]) * (1.0 / gamma);
    const Var x = s[kX] + phi * w;
    const Var gmax = Maximum(s[kGmax], gamma);
    const Var gmin = Minimum(s[kGmin], gamma);
    const Var z = s[kRhs1] / gamma;
    const Var rhs1 = s[kRhs2] - delta * z;
    const Var rhs2 = Negative(epsln) * z;
    // The norm estimates and the stopping tests, in SciPy's order (a later test wins), run only
    // while no earlier iteration has set istop.
    const Var anorm = graph::Sqrt(tnorm2);
    const Var ynorm = op.Scalar(Norm(x));
    const Var epsx = anorm * ynorm * eps;
    const Var product = anorm * ynorm;
    const double inf = std::numeric_limits<double>::infinity();
    const Var test1 =
        graph::Where(product == 0.0, inf, phibar / graph::Where(product == 0.0, 1.0, product));
    const Var test2 =
        graph::Where(anorm == 0.0, inf, root / graph::Where(anorm == 0.0, 1.0, anorm));
    const Var acond = gmax / gmin;
    Var next = graph::Where(1.0 + test2 <= 1.0, 2.0, zero);
    next = graph::Where(1.0 + test1 <= 1.0, 1.0, next);
    next = graph::Where(itn >= maxiter, 6.0, next);
    next = graph::Where(acond >= 0.1 / eps, 4.0, next);
    next = graph::Where(epsx >= beta1, 3.0, next);
    next = graph::Where(test2 <= rtol, 2.0, next);
    next = graph::Where(test1 <= rtol, 1.0, next);
    istop = graph::Where(istop == 0.0, next, istop);
    return InSlotOrder(kSlots, {{kX, x},
                                {kR1, s[kR2]},
                                {kR2, y},
                                {kW, w},
                                {kW2, s[kW]},
                                {kBeta, beta},
                                {kOldb, oldb},
                                {kDbar, dbar},
                                {kEpsln, epsln},
                                {kPhibar, phibar},
                                {kRhs1, rhs1},
                                {kRhs2, rhs2},
                                {kTnorm2, tnorm2},
                                {kGmax, gmax},
                                {kGmin, gmin},
                                {kCs, cs},
                                {kSn, sn},
                                {kIstop, istop},
                                {kItn, itn}});
  };
  if (maxiter > 0) state = p.WhileLoop(cond, body, state, maxiter);
  // b itself where b = 0 (and r1 != 0), as SciPy returns.
  p.Output("x", graph::Where(LogicalAnd(beta1sq != 0.0, bnorm == 0.0), bv, state[kX]));
  std::vector<std::string> names = {"istop", "itn"};
  p.ValueOutput("istop", state[kIstop]);
  p.ValueOutput("itn", state[kItn]);
  if (asymmetric) {
    p.ValueOutput("asymmetric", *asymmetric);
    names.push_back("asymmetric");
  }
  absl::StatusOr<GraphRun> run = client.RunGraph(p.program(), arguments, options.timeout_ms);
  if (!run.ok()) return run.status();
  absl::StatusOr<std::map<std::string, double>> got = ValuesOf(*run, names);
  if (!got.ok()) return got.status();
  std::map<std::string, double>& r = *got;
  if (asymmetric && r["asymmetric"] != 0) {
    return absl::InvalidArgumentError("a: non-symmetric matrix (MinresOptions::check)");
  }
  absl::StatusOr<Array> x_out = OutputOf(*run, "x");
  if (!x_out.ok()) return x_out.status();
  const auto istop = static_cast<int>(r["istop"]);
  return MinresResult{*std::move(x_out), istop == 6 ? maxiter : 0, istop,
                      static_cast<int64_t>(r["itn"])};
}

}  // namespace

absl::StatusOr<MinresResult> Minres(const Client& client, const CsrMatrix& a, const Array& b,
                                    const MinresOptions& options) {
  for (const absl::Status& s :
       {CheckSquareSystem("Minres", a.shape(), a.dtype(), b, options.x0, options.maxiter),
        CheckOptions(options)}) {
    if (!s.ok()) return s;
  }
  ProgramBuilder p;
  std::map<std::string, const Array*> arguments;
  const SquareOperator op = BindSquare(p, a, arguments);
  return RunMinres(client, op, a.shape()[1], a.dtype(), b, options, arguments);
}

absl::StatusOr<MinresResult> Minres(const Client& client, const Array& a, const Array& b,
                                    const MinresOptions& options) {
  const std::vector<int64_t> shape = a.shape();
  for (const absl::Status& s :
       {CheckSquareSystem("Minres", shape, a.info().dtype(), b, options.x0, options.maxiter),
        CheckOptions(options)}) {
    if (!s.ok()) return s;
  }
  ProgramBuilder p;
  std::map<std::string, const Array*> arguments;
  const SquareOperator op = BindSquare(p, a, arguments);
  return RunMinres(client, op, shape[1], a.info().dtype(), b, options, arguments);
}

}  // namespace distarray::sparse
