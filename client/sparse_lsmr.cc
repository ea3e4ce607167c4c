// LSMR traced into one RunGraph program (distarray/sparse_linalg.h), the same program as the
// Python SDK's distarray.sparse.linalg.lsmr.
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

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
using internal::Layouts;
using internal::LayoutsOf;
using internal::LeastSquaresIstop;
using internal::LeastSquaresOperator;
using internal::LogicalAnd;
using internal::Maximum;
using internal::Minimum;
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

// LSMR's carried state: one slot per value, in SciPy's names.
enum LsmrSlot : size_t {
  kX,
  kU,
  kV,
  kH,
  kHbar,
  kAlpha,
  kBeta,
  kZetabar,
  kAlphabar,
  kRho,
  kRhobar,
  kCbar,
  kSbar,
  kBetadd,
  kBetad,
  kRhodold,
  kTautildeold,
  kThetatilde,
  kZeta,
  kD,
  kNormA2,
  kMaxrbar,
  kMinrbar,
  kNormA,
  kCondA,
  kNormx,
  kNormr,
  kNormar,
  kIstop,
  kItn,
  kSlots
};

// The state in slot order from (slot, value) pairs, every slot given once.
Vars InOrder(std::initializer_list<std::pair<size_t, Var>> values) {
  return InSlotOrder(kSlots, values);
}

}  // namespace

absl::StatusOr<LsmrResult> Lsmr(const Client& client, const CsrMatrix& a, const Array& b,
                                const LsmrOptions& options) {
  if (absl::Status s = CheckSystem("Lsmr", a.shape(), a.dtype(), b, options.x0, options.maxiter);
      !s.ok()) {
    return s;
  }
  for (const absl::Status& s :
       {CheckNonnegative("damp", options.damp, /*finite=*/true),
        CheckNonnegative("atol", options.atol), CheckNonnegative("btol", options.btol),
        CheckNonnegative("conlim", options.conlim)}) {
    if (!s.ok()) return s;
  }
  const int64_t m = a.shape()[0], n = a.shape()[1];
  const int64_t maxiter = options.maxiter.value_or(std::min(m, n));
  const double damp = options.damp, atol = options.atol, btol = options.btol;
  const double ctol = options.conlim > 0 ? 1.0 / options.conlim : 0.0;
  absl::StatusOr<CsrMatrix> at_matrix = a.Transpose();
  if (!at_matrix.ok()) return at_matrix.status();
  const Layouts layouts = LayoutsOf(a);
  absl::StatusOr<Array> one_array = UploadOne(client, a.dtype(), layouts.scalars);
  if (!one_array.ok()) return one_array.status();

  ProgramBuilder p;
  std::map<std::string, const Array*> arguments{{"one", &*one_array}, {"b", &b}};
  if (options.x0 != nullptr) arguments["x0"] = options.x0;
  const LeastSquaresOperator op{&p, Bind(p, a, "a_", arguments),
                                Bind(p, *at_matrix, "at_", arguments), layouts};
  const Var one = p.Input("one");
  const Var zero = one * 0.0;
  const auto scalar = [&](const Var& v) { return op.Scalar(v); };

  const Var bv = p.Reshard(p.Input("b"), layouts.rows, v1::MODE_REPLICA);
  const Var normb = Norm(bv);
  std::optional<Var> x0;
  if (options.x0 != nullptr) x0 = p.Reshard(p.Input("x0"), layouts.cols, v1::MODE_REPLICA);
  const Bidiagonalization start = BidiagonalizationStart(op, bv, x0, zero);
  const Var& u = start.u;
  const Var& v = start.v;
  const Var& alpha = start.alpha;
  const Var& beta = start.beta;
  const Var x = x0 ? *x0 : v * 0.0;

  // The carried state, in SciPy's names.
  Vars state = InOrder({{kX, x},
                        {kU, u},
                        {kV, v},
                        {kH, v * 1.0},
                        {kHbar, v * 0.0},
                        {kAlpha, alpha},
                        {kBeta, beta},
                        {kZetabar, alpha * beta},
                        {kAlphabar, alpha * 1.0},
                        {kRho, one * 1.0},
                        {kRhobar, one * 1.0},
                        {kCbar, one * 1.0},
                        {kSbar, zero * 1.0},
                        {kBetadd, beta * 1.0},
                        {kBetad, zero * 1.0},
                        {kRhodold, one * 1.0},
                        {kTautildeold, zero * 1.0},
                        {kThetatilde, zero * 1.0},
                        {kZeta, zero * 1.0},
                        {kD, zero * 1.0},
                        {kNormA2, alpha * alpha},
                        {kMaxrbar, zero * 1.0},
                        {kMinrbar, one * 1e100},
                        {kNormA, graph::Sqrt(alpha * alpha)},
                        {kCondA, one * 1.0},
                        {kNormx, zero * 1.0},
                        {kNormr, beta * 1.0},
                        {kNormar, alpha * beta},
                        {kIstop, zero * 1.0},
                        {kItn, zero * 1.0}});
  for (size_t slot = 0; slot < state.size(); ++slot) {
    const v1::IndexMap& layout = slot == kU ? layouts.rows
                                 : (slot == kX || slot == kV || slot == kH || slot == kHbar)
                                     ? layouts.cols
                                     : layouts.scalars;
    state[slot] = Carried(state[slot], layout);
  }

  // SciPy's early exits: A^T r = 0 at the start keeps x (x0 or 0); else b = 0 gives x = 0.
  // Neither iterates.
  const Var normb_scalar = Carried(normb, layouts.scalars);
  const Var zero_b = LogicalAnd(normb_scalar == 0.0, state[kNormar] != 0.0);
  const auto cond = [&](std::span<const Var> s) {
    return LogicalAnd(LogicalAnd(s[kIstop] == 0.0, s[kNormar] != 0.0), normb_scalar > 0.0);
  };
  const auto body = [&](std::span<const Var> s) {
    const Var itn = s[kItn] + 1.0;
    // Bidiagonalization.
    const Bidiagonalization step = BidiagonalizationStep(op, s[kU], s[kV], s[kAlpha]);
    const Var& u = step.u;
    const Var& v = step.v;
    const Var& alpha = step.alpha;
    const Var& beta = step.beta;
    // Rotations: eliminate damp, then the subdiagonal.
    const Rotation hat = SymOrtho(s[kAlphabar], zero + damp);  // chat, shat, alphahat
    const Var rhoold = s[kRho];
    const Rotation sub = SymOrtho(hat.r, beta);  // c, s, rho
    const Var& c = sub.c;
    const Var& sn = sub.s;
    const Var& rho = sub.r;
    const Var thetanew = sn * alpha;
    const Var alphabar = c * alpha;
    const Var rhobarold = s[kRhobar];
    const Var zetaold = s[kZeta];
    const Var thetabar = s[kSbar] * rho;
    const Var rhotemp = s[kCbar] * rho;
    const Rotation bar = SymOrtho(s[kCbar] * rho, thetanew);  // cbar, sbar, rhobar
    const Var zeta = bar.c * s[kZetabar];
    const Var zetabar = Negative(bar.s) * s[kZetabar];
    // Updates of h, hbar and x.
    const Var hbar = s[kH] - (thetabar * rho / (rhoold * rhobarold)) * s[kHbar];
    const Var x = s[kX] + (zeta / (rho * bar.r)) * hbar;
    const Var h = v - (thetanew / rho) * s[kH];
    // The estimate of ||r||.
    const Var betaacute = hat.c * s[kBetadd];
    const Var betacheck = Negative(hat.s) * s[kBetadd];
    const Var betahat = c * betaacute;
    const Var betadd = Negative(sn) * betaacute;
    const Var thetatildeold = s[kThetatilde];
    const Rotation tilde = SymOrtho(s[kRhodold], thetabar);  // ctildeold, stildeold, rhotildeold
    const Var thetatilde = tilde.s * bar.r;
    const Var rhodold = tilde.c * bar.r;
    const Var betad = Negative(tilde.s) * s[kBetad] + tilde.c * betahat;
    const Var tautildeold = (zetaold - thetatildeold * s[kTautildeold]) / tilde.r;
    const Var taud = (zeta - thetatilde * tautildeold) / rhodold;
    const Var d = s[kD] + betacheck * betacheck;
    const Var normr = graph::Sqrt(d + (betad - taud) * (betad - taud) + betadd * betadd);
    // The estimates of ||A|| and cond(A).
    Var normA2 = s[kNormA2] + beta * beta;
    const Var normA = graph::Sqrt(normA2);
    normA2 = normA2 + alpha * alpha;
    const Var maxrbar = Maximum(s[kMaxrbar], rhobarold);
    const Var minrbar = graph::Where(itn > 1.0, Minimum(s[kMinrbar], rhobarold), s[kMinrbar]);
    const Var condA = Maximum(maxrbar, rhotemp) / Minimum(minrbar, rhotemp);
    // The stopping tests, in SciPy's order (a later test wins).
    const Var normar = Abs(zetabar);
    const Var normx = scalar(Norm(x));
    const Var test1 = normr / normb;
    const Var product = normA * normr;
    const Var test2 =
        graph::Where(product != 0.0, normar / graph::Where(product != 0.0, product, 1.0),
                     std::numeric_limits<double>::infinity());
    const Var test3 = 1.0 / condA;
    const Var t1 = test1 / (1.0 + normA * normx / normb);
    const Var rtol = btol + atol * normA * normx / normb;
    const Var istop =
        LeastSquaresIstop(itn, maxiter, test1, test2, test3, t1, rtol, atol, ctol, zero);
    // Every value is already in its loop layout (the reductions were moved there, and an
    // elementwise result takes its first array operand's), so the loop carries it into its slot
    // without a copy.
    return InOrder({{kX, x},
                    {kU, u},
                    {kV, v},
                    {kH, h},
                    {kHbar, hbar},
                    {kAlpha, alpha},
                    {kBeta, beta},
                    {kZetabar, zetabar},
                    {kAlphabar, alphabar},
                    {kRho, rho},
                    {kRhobar, bar.r},
                    {kCbar, bar.c},
                    {kSbar, bar.s},
                    {kBetadd, betadd},
                    {kBetad, betad},
                    {kRhodold, rhodold},
                    {kTautildeold, tautildeold},
                    {kThetatilde, thetatilde},
                    {kZeta, zeta},
                    {kD, d},
                    {kNormA2, normA2},
                    {kMaxrbar, maxrbar},
                    {kMinrbar, minrbar},
                    {kNormA, normA},
                    {kCondA, condA},
                    {kNormx, normx},
                    {kNormr, normr},
                    {kNormar, normar},
                    {kIstop, istop},
                    {kItn, itn}});
  };
  if (maxiter > 0) state = p.WhileLoop(cond, body, state, maxiter);
  p.Output("x", state[kX] * graph::Where(zero_b, 0.0, one));
  const std::vector<std::pair<std::string, size_t>> values = {
      {"istop", kIstop}, {"itn", kItn},     {"normr", kNormr}, {"normar", kNormar},
      {"norma", kNormA}, {"conda", kCondA}, {"normx", kNormx}};
  for (const auto& [name, index] : values) p.ValueOutput(name, state[index]);
  absl::StatusOr<GraphRun> run = client.RunGraph(p.program(), arguments, options.timeout_ms);
  if (!run.ok()) return run.status();
  absl::StatusOr<std::map<std::string, double>> got =
      ValuesOf(*run, {"istop", "itn", "normr", "normar", "norma", "conda", "normx"});
  if (!got.ok()) return got.status();
  absl::StatusOr<Array> x_out = OutputOf(*run, "x");
  if (!x_out.ok()) return x_out.status();
  std::map<std::string, double>& r = *got;
  return LsmrResult{*std::move(x_out),
                    static_cast<int>(r["istop"]),
                    static_cast<int64_t>(r["itn"]),
                    r["normr"],
                    r["normar"],
                    r["norma"],
                    r["conda"],
                    r["normx"]};
}

}  // namespace distarray::sparse
