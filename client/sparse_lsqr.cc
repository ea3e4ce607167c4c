// LSQR traced into one RunGraph program (distarray/sparse_linalg.h), the same program as the
// Python SDK's distarray.sparse.linalg.lsqr.
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "client/sparse_solver_program.h"
#include "distarray/sparse_linalg.h"

namespace distarray::sparse {
namespace {

using internal::Abs;
using internal::Bidiagonalization;
using internal::BidiagonalizationStart;
using internal::BidiagonalizationStep;
using internal::Bind;
using internal::Carried;
using internal::CheckNonnegative;
using internal::CheckSystem;
using internal::InSlotOrder;
using internal::LayoutsOf;
using internal::LeastSquaresIstop;
using internal::LeastSquaresOperator;
using internal::LogicalAnd;
using internal::Negative;
using internal::Norm;
using internal::OutputOf;
using internal::ProgramBuilder;
using internal::Rotation;
using internal::SymOrtho;
using internal::UploadOne;
using internal::ValuesOf;
using internal::Var;
using internal::Vars;

// LSQR's carried state, one slot per value in SciPy's names; kVar is carried only with calc_var.
enum LsqrSlot : size_t {
  kX,
  kU,
  kV,
  kW,
  kAlpha,
  kRhobar,
  kPhibar,
  kAnorm,
  kDdnorm,
  kRes2,
  kXxnorm,
  kZ,
  kCs2,
  kSn2,
  kR1norm,
  kR2norm,
  kAcond,
  kArnorm,
  kXnorm,
  kIstop,
  kItn,
  kSlots,
  kVar = kSlots
};

}  // namespace

absl::StatusOr<LsqrResult> Lsqr(const Client& client, const CsrMatrix& a, const Array& b,
                                const LsqrOptions& options) {
  for (const absl::Status& s :
       {CheckSystem("Lsqr", a.shape(), a.dtype(), b, options.x0, options.maxiter),
        CheckNonnegative("damp", options.damp, /*finite=*/true),
        CheckNonnegative("atol", options.atol), CheckNonnegative("btol", options.btol),
        CheckNonnegative("conlim", options.conlim)}) {
    if (!s.ok()) return s;
  }
  const int64_t n = a.shape()[1];
  const int64_t iter_lim = options.maxiter.value_or(2 * n);
  const double damp = options.damp, atol = options.atol, btol = options.btol;
  const double dampsq = damp * damp;
  const double ctol = options.conlim > 0 ? 1.0 / options.conlim : 0.0;
  // SciPy's, whatever the dtype.
  const double eps = std::numeric_limits<double>::epsilon();
  const bool calc_var = options.calc_var;
  absl::StatusOr<CsrMatrix> at_matrix = a.Transpose();
  if (!at_matrix.ok()) return at_matrix.status();
  const internal::Layouts layouts = LayoutsOf(a);
  absl::StatusOr<Array> one_array = UploadOne(client, a.dtype(), layouts.scalars);
  if (!one_array.ok()) return one_array.status();

  ProgramBuilder p;
  std::map<std::string, const Array*> arguments{{"one", &*one_array}, {"b", &b}};
  if (options.x0 != nullptr) arguments["x0"] = options.x0;
  const LeastSquaresOperator op{&p, Bind(p, a, "a_", arguments),
                                Bind(p, *at_matrix, "at_", arguments), layouts};
  const Var one = p.Input("one");
  const Var zero = one * 0.0;

  const Var bv = p.Reshard(p.Input("b"), layouts.rows, v1::MODE_REPLICA);
  const Var bnorm = op.Scalar(Norm(bv));
  std::optional<Var> x0;
  if (options.x0 != nullptr) x0 = p.Reshard(p.Input("x0"), layouts.cols, v1::MODE_REPLICA);
  const Bidiagonalization start = BidiagonalizationStart(op, bv, x0, zero);
  const Var& v = start.v;
  // 0: x (x0 or 0) is the answer and nothing iterates (SciPy's first exit).
  const Var arnorm0 = op.Scalar(start.alpha * start.beta);
  Vars state = InSlotOrder(kSlots, {{kX, x0 ? *x0 : v * 0.0},
                                    {kU, start.u},
                                    {kV, v},
                                    {kW, v * 1.0},
                                    {kAlpha, start.alpha},
                                    {kRhobar, start.alpha * 1.0},
                                    {kPhibar, start.beta * 1.0},
                                    {kAnorm, zero * 1.0},
                                    {kDdnorm, zero * 1.0},
                                    {kRes2, zero * 1.0},
                                    {kXxnorm, zero * 1.0},
                                    {kZ, zero * 1.0},
                                    {kCs2, zero - 1.0},
                                    {kSn2, zero * 1.0},
                                    {kR1norm, start.beta * 1.0},
                                    {kR2norm, start.beta * 1.0},
                                    {kAcond, zero * 1.0},
                                    {kArnorm, start.alpha * start.beta},
                                    {kXnorm, zero * 1.0},
                                    {kIstop, zero * 1.0},
                                    {kItn, zero * 1.0}});
  if (calc_var) state.push_back(v * 0.0);
  for (size_t slot = 0; slot < state.size(); ++slot) {
    const bool vector = slot == kX || slot == kV || slot == kW || slot == kVar;
    state[slot] = slot == kU ? Carried(state[slot], layouts.rows)
                             : Carried(state[slot], vector ? layouts.cols : layouts.scalars);
  }

  const auto cond = [&](std::span<const Var> s) {
    return LogicalAnd(s[kIstop] == 0.0, arnorm0 != 0.0);
  };
  const auto body = [&](std::span<const Var> s) {
    const Var itn = s[kItn] + 1.0;
    // The bidiagonalization; ||A|| grows by the old alpha and the new beta where beta > 0.
    const Bidiagonalization step = BidiagonalizationStep(op, s[kU], s[kV], s[kAlpha]);
    const Var& alpha = step.alpha;
    const Var& beta = step.beta;
    const Var anorm = graph::Where(
        *step.positive,
        graph::Sqrt(s[kAnorm] * s[kAnorm] + s[kAlpha] * s[kAlpha] + beta * beta + dampsq),
        s[kAnorm]);
    // A rotation eliminates the damping (SciPy's branch on damp > 0, taken here at trace).
    Var rhobar1 = s[kRhobar];
    Var phibar = s[kPhibar];
    std::optional<Var> psi;
    if (damp > 0) {
      rhobar1 = graph::Sqrt(s[kRhobar] * s[kRhobar] + dampsq);
      const Var cs1 = s[kRhobar] / rhobar1;
      const Var sn1 = damp / rhobar1;
      psi = sn1 * phibar;
      phibar = cs1 * phibar;
    }
    // Another eliminates the subdiagonal beta: upper bidiagonal.
    const Rotation sub = SymOrtho(rhobar1, beta);  // cs, sn, rho
    const Var& rho = sub.r;
    const Var theta = sub.s * alpha;
    const Var rhobar = Negative(sub.c) * alpha;
    const Var phi = sub.c * phibar;
    phibar = sub.s * phibar;
    const Var tau = sub.s * phi;
    // Updates of x and w.
    const Var dk = (1.0 / rho) * s[kW];
    const Var x = s[kX] + (phi / rho) * s[kW];
    const Var w = step.v + (Negative(theta) / rho) * s[kW];
    const Var ddnorm = s[kDdnorm] + op.Scalar(graph::Sum(dk * dk));
    // A rotation on the right eliminates theta; it gives the estimate of ||x||.
    const Var delta = s[kSn2] * rho;
    const Var gambar = Negative(s[kCs2]) * rho;
    const Var rhs = phi - delta * s[kZ];
    const Var zbar = rhs / gambar;
    const Var xnorm = graph::Sqrt(s[kXxnorm] + zbar * zbar);
    const Var gamma = graph::Sqrt(gambar * gambar + theta * theta);
    const Var z = rhs / gamma;
    const Var xxnorm = s[kXxnorm] + z * z;
    // The estimates of cond(Abar), ||rbar|| and ||Abar^T rbar||.
    const Var acond = anorm * graph::Sqrt(ddnorm);
    const Var res2 = psi ? s[kRes2] + *psi * *psi : s[kRes2] * 1.0;
    const Var rnorm = graph::Sqrt(phibar * phibar + res2);
    const Var arnorm = alpha * Abs(tau);
    Var r1norm = rnorm * 1.0;
    if (damp > 0) {  // ||b - A x|| from rnorm^2 - damp^2 ||x||^2, its sign kept
      const Var r1sq = rnorm * rnorm - dampsq * xxnorm;
      const Var root = graph::Sqrt(Abs(r1sq));
      r1norm = graph::Where(r1sq < 0.0, Negative(root), root);
    }
    // The stopping tests.
    const Var test1 = rnorm / bnorm;
    const Var test2 = arnorm / (anorm * rnorm + eps);
    const Var test3 = 1.0 / (acond + eps);
    const Var t1 = test1 / (1.0 + anorm * xnorm / bnorm);
    const Var rtol = btol + atol * anorm * xnorm / bnorm;
    const Var istop =
        LeastSquaresIstop(itn, iter_lim, test1, test2, test3, t1, rtol, atol, ctol, zero);
    Vars next = InSlotOrder(kSlots, {{kX, x},
                                     {kU, step.u},
                                     {kV, step.v},
                                     {kW, w},
                                     {kAlpha, alpha},
                                     {kRhobar, rhobar},
                                     {kPhibar, phibar},
                                     {kAnorm, anorm},
                                     {kDdnorm, ddnorm},
                                     {kRes2, res2},
                                     {kXxnorm, xxnorm},
                                     {kZ, z},
                                     {kCs2, gambar / gamma},
                                     {kSn2, theta / gamma},
                                     {kR1norm, r1norm},
                                     {kR2norm, rnorm},
                                     {kAcond, acond},
                                     {kArnorm, arnorm},
                                     {kXnorm, xnorm},
                                     {kIstop, istop},
                                     {kItn, itn}});
    if (calc_var) next.push_back(s[kVar] + dk * dk);
    return next;
  };
  if (iter_lim > 0) state = p.WhileLoop(cond, body, state, iter_lim);
  p.Output("x", state[kX]);
  if (calc_var) p.Output("var", state[kVar]);
  const std::vector<std::pair<std::string, size_t>> values = {
      {"istop", kIstop}, {"itn", kItn},     {"r1norm", kR1norm}, {"r2norm", kR2norm},
      {"anorm", kAnorm}, {"acond", kAcond}, {"arnorm", kArnorm}, {"xnorm", kXnorm}};
  std::vector<std::string> names;
  for (const auto& [name, slot] : values) {
    p.ValueOutput(name, state[slot]);
    names.push_back(name);
  }
  absl::StatusOr<GraphRun> run = client.RunGraph(p.program(), arguments, options.timeout_ms);
  if (!run.ok()) return run.status();
  absl::StatusOr<std::map<std::string, double>> got = ValuesOf(*run, names);
  if (!got.ok()) return got.status();
  absl::StatusOr<Array> x = OutputOf(*run, "x");
  if (!x.ok()) return x.status();
  std::optional<Array> var;
  if (calc_var) {
    absl::StatusOr<Array> out = OutputOf(*run, "var");
    if (!out.ok()) return out.status();
    var = *std::move(out);
  }
  std::map<std::string, double>& r = *got;
  return LsqrResult{*std::move(x),
                    static_cast<int>(r["istop"]),
                    static_cast<int64_t>(r["itn"]),
                    r["r1norm"],
                    r["r2norm"],
                    r["anorm"],
                    r["acond"],
                    r["arnorm"],
                    r["xnorm"],
                    std::move(var)};
}

}  // namespace distarray::sparse
