// What the C++ SDK's iterative solvers (distarray/sparse_linalg.h) share, one file per solver
// on top of it: the argument checks, the layouts a solve keeps its values in, the traced
// products and scalar helpers, the Golub-Kahan steps and stopping codes of LSQR and LSMR, and
// reading a run's results. The same pieces as the Python SDK's
// distarray/sparse/linalg/_common.py, so both SDKs trace the same programs.
#ifndef DISTARRAY_CLIENT_SPARSE_SOLVER_PROGRAM_H_
#define DISTARRAY_CLIENT_SPARSE_SOLVER_PROGRAM_H_

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "distarray/client.h"
#include "distarray/graph.h"
#include "distarray/sparse.h"

namespace distarray::sparse::internal {

using graph::ProgramBuilder;
using graph::Var;
using graph::VarOperand;
using graph::Vars;

std::string DTypeName(v1::DType dtype);
std::string ShapeText(const std::vector<int64_t>& shape);

// The checks every solver makes, naming the argument: A of a real float dtype and two non-empty
// axes, b 1-D of A's rows in A's dtype, x0 (when given) 1-D of A's columns in A's dtype, a
// maxiter that is not negative. `what` names the solver in the messages.
absl::Status CheckSystem(const std::string& what, const std::vector<int64_t>& shape,
                         v1::DType dtype, const Array& b, const Array* x0,
                         std::optional<int64_t> maxiter);
// The same for a solver of square systems only.
absl::Status CheckSquareSystem(const std::string& what, const std::vector<int64_t>& shape,
                               v1::DType dtype, const Array& b, const Array* x0,
                               std::optional<int64_t> maxiter);
// A tolerance or limit `name`: a number >= 0 (NaN refused; infinity too where `finite`).
absl::Status CheckNonnegative(const std::string& name, double value, bool finite = false);
// A finite number (`name`).
absl::Status CheckFinite(const std::string& name, double value);

// Where a solver keeps its values: `rows`, where A @ x puts its rows (A's row blocks); `cols`,
// every column on every device of A (where A @ x reads x without a copy); `scalars`, a 0-d copy on
// each of those devices, so they broadcast into the vectors' chunks without a copy and a loop
// carries them in one layout.
struct Layouts {
  v1::IndexMap rows, cols, scalars;
};
Layouts LayoutsOf(const CsrMatrix& a);
Layouts LayoutsOf(const Array& a);

// Elementwise ops the graph header has no operator for.
Var Negative(const Var& a);
Var Abs(const Var& a);
Var Maximum(const Var& a, const VarOperand& b);
Var Minimum(const Var& a, const VarOperand& b);
Var Hypot(const Var& a, const VarOperand& b);
Var LogicalAnd(const Var& a, const Var& b);
Var LogicalNot(const Var& a);
Var Norm(const Var& x);

// `value` in the layout a loop carries it in (REPLICA).
Var Carried(const Var& value, const v1::IndexMap& layout);

// SciPy's stable Givens rotation (c, s, r) with r = hypot(a, b) >= 0, c = a / r, s = b / r, and
// (0, 0, 0) for a = b = 0.
struct Rotation {
  Var c, s, r;
};
Rotation SymOrtho(const Var& a, const Var& b);

// A 0-d 1 of `dtype` in the scalars' layout: an input of the program, from which the solver's
// constants derive (so they start in the scalars' layout and the system's dtype).
absl::StatusOr<Array> UploadOne(const Client& client, v1::DType dtype, const v1::IndexMap& scalars);

// A 0-d value output as a double (a bool as 0 or 1).
absl::StatusOr<double> ValueOf(const GraphRun& run, const std::string& name);
// Every value in `names`, by name.
absl::StatusOr<std::map<std::string, double>> ValuesOf(const GraphRun& run,
                                                       const std::vector<std::string>& names);
// The array output `name`.
absl::StatusOr<Array> OutputOf(GraphRun& run, const std::string& name);

// The arrays a CSR matrix's product reads, bound as inputs `prefix`indptr, ... of the program.
struct BoundMatrix {
  const CsrMatrix* matrix;
  Var indptr, indices, data;
  Var Times(const Var& x) const;
};
BoundMatrix Bind(ProgramBuilder& p, const CsrMatrix& matrix, const std::string& prefix,
                 std::map<std::string, const Array*>& arguments);

// A square solve's operator (CG, MINRES): `matvec` records A @ x for an x whole on every device.
struct SquareOperator {
  ProgramBuilder* p;
  Layouts layouts;
  std::function<Var(const Var&)> matvec;
  // `v` split as A's rows.
  Var Rows(const Var& v) const { return p->Reshard(v, layouts.rows, v1::MODE_REPLICA); }
  // A @ d in the rows' layout, d (split as the rows) first gathered whole on each device.
  Var Times(const Var& d) const {
    return Rows(matvec(p->Reshard(d, layouts.cols, v1::MODE_REPLICA)));
  }
  // A reduction's result moved to the scalars' layout (as a loop carries it).
  Var Scalar(const Var& v) const { return Carried(v, layouts.scalars); }
};

// The operator of a square solve: a CSR matrix bound as inputs a_indptr, a_indices and a_data,
// or a dense A bound as input "a".
SquareOperator BindSquare(ProgramBuilder& p, const CsrMatrix& a,
                          std::map<std::string, const Array*>& arguments);
SquareOperator BindSquare(ProgramBuilder& p, const Array& a,
                          std::map<std::string, const Array*>& arguments);

// A loop's carried values in slot order from (slot, value) pairs, each of `slots` given once.
Vars InSlotOrder(size_t slots, std::initializer_list<std::pair<size_t, Var>> values);

// A least-squares solve's operator, A and its transpose bound to the program, and the moves
// between the layouts (LSQR and LSMR).
struct LeastSquaresOperator {
  ProgramBuilder* p;
  BoundMatrix a, at;
  Layouts layouts;
  // A^T u: one partial product per device (SUM), combined whole on every device.
  Var TransposeTimes(const Var& u) const;
  // A reduction's result moved to the scalars' layout (as a loop carries it).
  Var Scalar(const Var& v) const { return Carried(v, layouts.scalars); }
};

// Golub-Kahan's vectors: beta u = b - A x (or b), alpha v = A^T u, u and v unit where beta and
// alpha are > 0; `positive` is beta > 0 (set by Step only).
struct Bidiagonalization {
  Var u, v, alpha, beta;
  std::optional<Var> positive;
};
// The first vectors, as SciPy's LSQR and LSMR start; `x0` (whole on each device) or none.
Bidiagonalization BidiagonalizationStart(const LeastSquaresOperator& op, const Var& b,
                                         const std::optional<Var>& x0, const Var& zero);
// The next step: beta u = A v - alpha u, alpha v = A^T u - beta v, where beta > 0 (else u = 0
// and v, alpha stay, as SciPy's). The 0-d values in the scalars' layout.
Bidiagonalization BidiagonalizationStep(const LeastSquaresOperator& op, const Var& u, const Var& v,
                                        const Var& alpha);

// LSQR's and LSMR's stopping code from their tests, in SciPy's order (a later test wins): 7 the
// cap, 6/5/4 the machine-precision forms of 3/2/1, 3 cond(A) past conlim, 2 a least-squares
// solution within atol, 1 A x = b within atol and btol; else 0. `zero` gives the system's dtype
// (a where of two constants alone would be float64, which a float32 loop cannot carry).
Var LeastSquaresIstop(const Var& itn, int64_t maxiter, const Var& test1, const Var& test2,
                      const Var& test3, const Var& t1, const Var& rtol, double atol, double ctol,
                      const Var& zero);

}  // namespace distarray::sparse::internal

#endif  // DISTARRAY_CLIENT_SPARSE_SOLVER_PROGRAM_H_
