// Conjugate gradients and LSMR traced into one RunGraph program each (distarray/sparse_linalg.h),
// the same programs as the Python SDK's distarray.sparse.linalg.
#include "distarray/sparse_linalg.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "distarray/graph.h"
#include "distarray/index_maps.h"

namespace distarray::sparse {
namespace {

using graph::ProgramBuilder;
using graph::Var;
using graph::VarOperand;
using graph::Vars;

std::string DTypeName(v1::DType dtype) {
  std::string name = v1::DType_Name(dtype);
  if (name.rfind("DTYPE_", 0) == 0) name = name.substr(6);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  return absl::StrCat("(", absl::StrJoin(shape, ", "), shape.size() == 1 ? ",)" : ")");
}

// The checks both solvers make, naming the argument: A of a real float dtype and two non-empty
// axes, b 1-D of A's rows in A's dtype, x0 (when given) 1-D of A's columns in A's dtype, a
// maxiter that is not negative.
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

// Where a solver keeps its values: `rows`, where A @ x puts its rows (A's row blocks); `cols`,
// every column on every device of A (where A @ x reads x without a copy); `scalars`, a 0-d copy on
// each of those devices, so they broadcast into the vectors' chunks without a copy and a loop
// carries them in one layout.
struct Layouts {
  v1::IndexMap rows, cols, scalars;
};

// `chunks` (device, [begin, end) of the rows), grouped by device in order of first appearance.
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

// Elementwise ops the graph header has no operator for.
Var Unary(v1::ElementwiseOp op, const Var& a) { return a.builder().Ufunc(op, {a}); }
Var Binary(v1::ElementwiseOp op, const Var& a, const VarOperand& b) {
  return a.builder().Ufunc(op, {a, b});
}
Var Negative(const Var& a) { return Unary(v1::ELEMENTWISE_OP_NEGATIVE, a); }
Var Abs(const Var& a) { return Unary(v1::ELEMENTWISE_OP_ABS, a); }
Var Maximum(const Var& a, const VarOperand& b) { return Binary(v1::ELEMENTWISE_OP_MAXIMUM, a, b); }
Var Minimum(const Var& a, const VarOperand& b) { return Binary(v1::ELEMENTWISE_OP_MINIMUM, a, b); }
Var Hypot(const Var& a, const VarOperand& b) { return Binary(v1::ELEMENTWISE_OP_HYPOT, a, b); }
Var LogicalAnd(const Var& a, const Var& b) { return Binary(v1::ELEMENTWISE_OP_LOGICAL_AND, a, b); }

Var Norm(const Var& x) { return graph::Sqrt(graph::Sum(x * x)); }

// `value` in the layout a loop carries it in (REPLICA).
Var Carried(const Var& value, const v1::IndexMap& layout) {
  return value.builder().Reshard(value, layout, v1::MODE_REPLICA);
}

// SciPy's stable Givens rotation (c, s, r) with r = hypot(a, b) >= 0, c = a / r, s = b / r, and
// (0, 0, 0) for a = b = 0.
struct Rotation {
  Var c, s, r;
};
Rotation SymOrtho(const Var& a, const Var& b) {
  Var r = Hypot(a, b);
  Var safe = graph::Where(r == 0.0, 1.0, r);
  return {a / safe, b / safe, r};
}

// A 0-d 1 of `dtype` in the scalars' layout: an input of the program, from which the solver's
// constants derive (so they start in the scalars' layout).
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

// A 0-d value output as a double.
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
    default:
      break;
  }
  return absl::InternalError(absl::StrCat("RunGraph's value ", name, ": dtype ",
                                          DTypeName(value.dtype()), ", ", data.size(),
                                          " bytes; expected one float32 or float64"));
}

// The arrays a CSR matrix's product reads, bound as inputs `prefix`indptr, ... of the program.
struct BoundMatrix {
  const CsrMatrix* matrix;
  Var indptr, indices, data;
  Var Times(const Var& x) const {
    return x.builder().SparseMatmul(indptr, indices, data, matrix->proto(), x);
  }
};
BoundMatrix Bind(ProgramBuilder& p, const CsrMatrix& matrix, const std::string& prefix,
                 std::map<std::string, const Array*>& arguments) {
  arguments[prefix + "indptr"] = &matrix.indptr();
  arguments[prefix + "indices"] = &matrix.indices();
  arguments[prefix + "data"] = &matrix.data();
  return {&matrix, p.Input(prefix + "indptr"), p.Input(prefix + "indices"),
          p.Input(prefix + "data")};
}

// The CG program for either operator: `matvec` records A @ x for an x whole on every device.
absl::StatusOr<CgResult> RunCg(const Client& client, const Layouts& layouts, int64_t n,
                               v1::DType dtype, const Array& b, const CgOptions& options,
                               ProgramBuilder& p, std::map<std::string, const Array*> arguments,
                               const std::function<Var(const Var&)>& matvec) {
  const int64_t maxiter = options.maxiter.value_or(10 * n);
  absl::StatusOr<Array> one_array = UploadOne(client, dtype, layouts.scalars);
  if (!one_array.ok()) return one_array.status();
  arguments["one"] = &*one_array;
  arguments["b"] = &b;
  if (options.x0 != nullptr) arguments["x0"] = options.x0;

  const Var one = p.Input("one");
  const auto rows = [&](const Var& v) { return p.Reshard(v, layouts.rows, v1::MODE_REPLICA); };
  const auto scalar = [&](const Var& v) { return Carried(v, layouts.scalars); };
  // A @ d in the rows' layout, d (split as the rows) first gathered whole on each device.
  const auto times = [&](const Var& d) {
    return rows(matvec(p.Reshard(d, layouts.cols, v1::MODE_REPLICA)));
  };
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
  auto x_out = run->outputs.find("x");
  if (x_out == run->outputs.end()) return absl::InternalError("RunGraph answered no x");
  const auto iterations = static_cast<int64_t>(*k);
  // SciPy's info: 0 when converged (or b = 0), else the iterations run; as SciPy, convergence
  // reached by the last allowed iteration is not seen (the test runs before each iteration).
  const int64_t info = (*norm_b == 0 || iterations < maxiter) ? 0 : iterations;
  return CgResult{std::move(x_out->second), info, iterations};
}

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
Vars InOrder(std::initializer_list<std::pair<LsmrSlot, Var>> values) {
  std::vector<std::optional<Var>> slots(kSlots);
  for (const auto& [slot, var] : values) slots[slot] = var;
  Vars out;
  for (const std::optional<Var>& var : slots) out.push_back(*var);
  return out;
}

}  // namespace

absl::StatusOr<CgResult> Cg(const Client& client, const CsrMatrix& a, const Array& b,
                            const CgOptions& options) {
  if (absl::Status s = CheckSystem("Cg", a.shape(), a.dtype(), b, options.x0, options.maxiter);
      !s.ok()) {
    return s;
  }
  if (a.shape()[0] != a.shape()[1]) {
    return absl::InvalidArgumentError(
        absl::StrCat("a: shape ", ShapeText(a.shape()), "; Cg needs a square A"));
  }
  ProgramBuilder p;
  std::map<std::string, const Array*> arguments;
  const BoundMatrix matrix = Bind(p, a, "a_", arguments);
  return RunCg(client, LayoutsOf(a), a.shape()[1], a.dtype(), b, options, p, arguments,
               [&](const Var& x) { return matrix.Times(x); });
}

absl::StatusOr<CgResult> Cg(const Client& client, const Array& a, const Array& b,
                            const CgOptions& options) {
  const std::vector<int64_t> shape = a.shape();
  if (absl::Status s = CheckSystem("Cg", shape, a.info().dtype(), b, options.x0, options.maxiter);
      !s.ok()) {
    return s;
  }
  if (shape[0] != shape[1]) {
    return absl::InvalidArgumentError(
        absl::StrCat("a: shape ", ShapeText(shape), "; Cg needs a square A"));
  }
  ProgramBuilder p;
  std::map<std::string, const Array*> arguments{{"a", &a}};
  const Var av = p.Input("a");
  return RunCg(client, LayoutsOf(a), shape[1], a.info().dtype(), b, options, p, arguments,
               [&](const Var& x) { return p.Matmul(av, x); });
}

absl::StatusOr<LsmrResult> Lsmr(const Client& client, const CsrMatrix& a, const Array& b,
                                const LsmrOptions& options) {
  if (absl::Status s = CheckSystem("Lsmr", a.shape(), a.dtype(), b, options.x0, options.maxiter);
      !s.ok()) {
    return s;
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
  const BoundMatrix A = Bind(p, a, "a_", arguments);
  const BoundMatrix At = Bind(p, *at_matrix, "at_", arguments);
  const Var one = p.Input("one");
  const Var zero = one * 0.0;
  const auto scalar = [&](const Var& v) { return Carried(v, layouts.scalars); };
  // A^T u: one partial product per device (SUM), combined whole on every device.
  const auto at_times = [&](const Var& u) {
    return p.Reshard(At.Times(u), layouts.cols, v1::MODE_REPLICA);
  };

  const Var bv = p.Reshard(p.Input("b"), layouts.rows, v1::MODE_REPLICA);
  const Var normb = Norm(bv);
  std::optional<Var> x0;
  if (options.x0 != nullptr) x0 = p.Reshard(p.Input("x0"), layouts.cols, v1::MODE_REPLICA);
  Var u = x0 ? bv - A.Times(*x0) : bv * 1.0;
  const Var beta = Norm(u);
  u = u * (1.0 / graph::Where(beta > 0.0, beta, 1.0));
  Var v = at_times(u);
  const Var alpha = graph::Where(beta > 0.0, Norm(v), zero);
  v = v * (1.0 / graph::Where(alpha > 0.0, alpha, 1.0));
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
    Var u = A.Times(s[kV]) - s[kAlpha] * s[kU];
    const Var beta = scalar(Norm(u));
    const Var positive = beta > 0.0;
    u = u * (1.0 / graph::Where(positive, beta, 1.0));
    Var v = graph::Where(positive, at_times(u) - beta * s[kV], s[kV]);
    const Var alpha = graph::Where(positive, scalar(Norm(v)), s[kAlpha]);
    v = v * (1.0 / graph::Where(LogicalAnd(positive, alpha > 0.0), alpha, 1.0));
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
    // In the system's dtype: a where of two Python-like scalars alone would be float64, which a
    // float32 loop cannot carry.
    Var istop = graph::Where(itn >= maxiter, 7.0, zero);
    istop = graph::Where(1.0 + test3 <= 1.0, 6.0, istop);
    istop = graph::Where(1.0 + test2 <= 1.0, 5.0, istop);
    istop = graph::Where(1.0 + t1 <= 1.0, 4.0, istop);
    istop = graph::Where(test3 <= ctol, 3.0, istop);
    istop = graph::Where(test2 <= atol, 2.0, istop);
    istop = graph::Where(test1 <= rtol, 1.0, istop);
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
  std::map<std::string, double> got;
  for (const auto& [name, index] : values) {
    absl::StatusOr<double> value = ValueOf(*run, name);
    if (!value.ok()) return value.status();
    got[name] = *value;
  }
  auto x_out = run->outputs.find("x");
  if (x_out == run->outputs.end()) return absl::InternalError("RunGraph answered no x");
  return LsmrResult{std::move(x_out->second),
                    static_cast<int>(got["istop"]),
                    static_cast<int64_t>(got["itn"]),
                    got["normr"],
                    got["normar"],
                    got["norma"],
                    got["conda"],
                    got["normx"]};
}

}  // namespace distarray::sparse
