// Iterative solvers for sparse systems (the C++ side of the Python SDK's
// distarray.sparse.linalg): conjugate gradients, MINRES, LSQR and LSMR with SciPy's algorithms,
// options and results. Each solve is one RunGraph program: the whole iteration, its convergence
// test included, runs on the devices with no host round trip, and the response carries x and the
// small results (docs/api.md, "Solvers").
//
// Where the vectors live: vectors of A's rows stay split as A's row blocks; vectors of A's
// columns are whole on every device of a block (where A @ x reads them without a copy); 0-d
// values have a copy on each of those devices. The transposed products' partial sums (LSMR) are
// combined once per iteration.
//
// Real float32 and float64 systems only. Bad inputs are INVALID_ARGUMENT naming the argument
// (a, b, x0, maxiter, a tolerance), before anything is sent. No preconditioners here (the Python
// SDK's cg and minres take one).
#ifndef DISTARRAY_CLIENT_SPARSE_LINALG_H_
#define DISTARRAY_CLIENT_SPARSE_LINALG_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "distarray/client.h"
#include "distarray/sparse.h"

namespace distarray::sparse {

struct CgOptions {
  // Stops once ||b - A x|| < max(atol, rtol ||b||), as scipy.sparse.linalg.cg.
  double rtol = 1e-5;
  double atol = 0.0;
  // The most iterations; default 10 n.
  std::optional<int64_t> maxiter;
  // The initial guess (1-D, A's columns, A's dtype); default zeros. Not owned.
  const Array* x0 = nullptr;
  // > 0: RunGraph's deadline (DEADLINE_EXCEEDED when the loop is still running then).
  int64_t timeout_ms = 0;
};

struct CgResult {
  Array x;  // split as A's row blocks
  // SciPy's: 0 when the tolerance was reached (or b is 0), else the iterations run (maxiter).
  int64_t info = 0;
  int64_t iterations = 0;
};

// Conjugate gradients for a symmetric positive definite n x n A (only A @ x is used, so a
// non-symmetric A is not detected: the iteration then does not converge).
absl::StatusOr<CgResult> Cg(const Client& client, const CsrMatrix& a, const Array& b,
                            const CgOptions& options = {});
// The same for a dense 2-D A: its rows where A's chunks hold them, x whole on each of its devices.
absl::StatusOr<CgResult> Cg(const Client& client, const Array& a, const Array& b,
                            const CgOptions& options = {});

struct LsmrOptions {
  // min ||b - A x||^2 + damp^2 ||x||^2.
  double damp = 0.0;
  // SciPy's stopping tolerances and condition limit (0: no limit).
  double atol = 1e-6;
  double btol = 1e-6;
  double conlim = 1e8;
  // The most iterations; default min(m, n), as SciPy's.
  std::optional<int64_t> maxiter;
  // The initial guess (1-D, A's columns, A's dtype); default zeros. Not owned.
  const Array* x0 = nullptr;
  int64_t timeout_ms = 0;
};

struct LsmrResult {
  Array x;  // whole on every device of A's blocks
  // SciPy's istop: 0 x = 0 is the solution (A^T b = 0); 1 x solves A x = b within atol and btol;
  // 2 least squares within atol; 3 cond(A) > conlim; 4, 5 as 1 and 2 at machine precision;
  // 6 cond(A) > 1/eps; 7 maxiter reached.
  int istop = 0;
  int64_t itn = 0;    // iterations run
  double normr = 0;   // ||b - A x|| (with damp: of the damped system)
  double normar = 0;  // ||A^T (b - A x)|| (with damp: of the damped system)
  double norma = 0;   // estimate of ||A||_F (of [A; damp I])
  double conda = 0;   // estimate of cond(A)
  double normx = 0;   // ||x||
};

// LSMR (Fong and Saunders) for the least-squares problem of an m x n A, as
// scipy.sparse.linalg.lsmr. A.Transpose() is built once per call, on the daemon.
absl::StatusOr<LsmrResult> Lsmr(const Client& client, const CsrMatrix& a, const Array& b,
                                const LsmrOptions& options = {});

struct MinresOptions {
  // Solves (A - shift I) x = b.
  double shift = 0.0;
  // SciPy's relative tolerance of its two residual tests.
  double rtol = 1e-5;
  // The most iterations; default 5 n, as SciPy's.
  std::optional<int64_t> maxiter;
  // The initial guess (1-D, A's columns, A's dtype); default zeros. Not owned.
  const Array* x0 = nullptr;
  // Tests A's symmetry before iterating, as SciPy's check=True: INVALID_ARGUMENT for a
  // non-symmetric A. The test runs on the devices in the same program.
  bool check = false;
  int64_t timeout_ms = 0;
};

struct MinresResult {
  Array x;  // split as A's row blocks
  // SciPy's: 0 when a stopping test other than the cap ended the iteration, else maxiter.
  int64_t info = 0;
  // SciPy's istop: -1 A - shift I is a multiple of I (b and x are eigenvectors); 0 b = 0 or
  // b - A x0 = 0 (no iteration); 1 A x = b within rtol; 2 least squares within rtol; 3 accuracy
  // at machine precision; 4 x converged to an eigenvector; 5 cond(A) > 0.1 / eps; 6 maxiter.
  int istop = 0;
  int64_t itn = 0;  // iterations run
};

// MINRES (Paige and Saunders) for a symmetric n x n A, indefinite or singular too, as
// scipy.sparse.linalg.minres (SciPy 1.17's algorithm and stopping tests). Only A @ x is used.
absl::StatusOr<MinresResult> Minres(const Client& client, const CsrMatrix& a, const Array& b,
                                    const MinresOptions& options = {});
// The same for a dense 2-D A.
absl::StatusOr<MinresResult> Minres(const Client& client, const Array& a, const Array& b,
                                    const MinresOptions& options = {});

struct LsqrOptions {
  // min ||b - A x||^2 + damp^2 ||x||^2.
  double damp = 0.0;
  // SciPy's stopping tolerances and condition limit (0: no limit).
  double atol = 1e-6;
  double btol = 1e-6;
  double conlim = 1e8;
  // The most iterations (SciPy's iter_lim); default 2 n, as SciPy's.
  std::optional<int64_t> maxiter;
  // Also estimate diag((A^T A + damp^2 I)^-1) (SciPy's calc_var).
  bool calc_var = false;
  // The initial guess (1-D, A's columns, A's dtype); default zeros. Not owned.
  const Array* x0 = nullptr;
  int64_t timeout_ms = 0;
};

struct LsqrResult {
  Array x;  // whole on every device of A's blocks
  // SciPy's istop, as LsmrResult's (0 to 7).
  int istop = 0;
  int64_t itn = 0;
  double r1norm = 0;         // ||b - A x||
  double r2norm = 0;         // sqrt(||b - A x||^2 + damp^2 ||x||^2)
  double anorm = 0;          // estimate of ||[A; damp I]||_F
  double acond = 0;          // estimate of cond([A; damp I])
  double arnorm = 0;         // ||A^T (b - A x) - damp^2 x||
  double xnorm = 0;          // ||x||
  std::optional<Array> var;  // with calc_var: the variance estimate, n values like x
};

// LSQR (Paige and Saunders) for the least-squares problem of an m x n A, as
// scipy.sparse.linalg.lsqr. A.Transpose() is built once per call, on the daemon.
absl::StatusOr<LsqrResult> Lsqr(const Client& client, const CsrMatrix& a, const Array& b,
                                const LsqrOptions& options = {});

}  // namespace distarray::sparse

#endif  // DISTARRAY_CLIENT_SPARSE_LINALG_H_
