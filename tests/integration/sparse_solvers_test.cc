// The C++ SDK's sparse solvers (distarray/sparse_linalg.h) on every backend, each solve one
// RunGraph program: conjugate gradients on symmetric positive definite systems, MINRES on
// symmetric indefinite ones, LSQR and LSMR on tall least-squares systems, float64 and float32, on
// one device and with the rows split over two to four devices, on fresh random matrices with
// empty rows and columns. Each result is checked on the host in long double against the property
// the solver promises (CG, MINRES: the residual within the tolerance; LSQR, LSMR: the normal
// equations, the reported norms), capped iterates against the host's own (CG's recurrence,
// MINRES's Krylov minimizer), the iteration caps against SciPy's info and istop, and the refusals
// of bad inputs by name, the daemon serving on afterwards.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "distarray/index_maps.h"
#include "distarray/sparse.h"
#include "distarray/sparse_linalg.h"
#include "tests/support/backend_fixture.h"
#include "tests/support/server_state.h"

namespace distarray::testing {
namespace {

using LongVector = std::vector<long double>;

// A sparse m x n system as COO triplets (some positions listed twice: summed) and the same
// matrix dense in long double.
template <typename T>
struct System {
  int64_t m = 0, n = 0;
  std::vector<int64_t> rows, cols;
  std::vector<T> values;
  std::vector<long double> dense;  // m x n, row-major, of the T values

  void Add(int64_t r, int64_t c, T value) {
    rows.push_back(r);
    cols.push_back(c);
    values.push_back(value);
    dense[r * n + c] += static_cast<long double>(value);
  }
  LongVector Times(const std::vector<T>& x) const {
    LongVector y(m, 0);
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < n; ++c) y[r] += dense[r * n + c] * static_cast<long double>(x[c]);
    }
    return y;
  }
  LongVector Times(const LongVector& x) const {
    LongVector y(m, 0);
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < n; ++c) y[r] += dense[r * n + c] * x[c];
    }
    return y;
  }
  LongVector TransposeTimes(const LongVector& y) const {
    LongVector x(n, 0);
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < n; ++c) x[c] += dense[r * n + c] * y[r];
    }
    return x;
  }
  long double Frobenius() const {
    long double s = 0;
    for (long double v : dense) s += v * v;
    return std::sqrt(s);
  }
};

bool Listed(const std::vector<int64_t>& list, int64_t i) {
  return std::find(list.begin(), list.end(), i) != list.end();
}

// A symmetric positive definite n x n system but for the rows and columns in `empty`, which have
// no entry at all (the matrix is then only semidefinite; b is 0 there, so CG still converges):
// R + R^T for a random sparse R, and a diagonal larger than each row's off-diagonal magnitudes.
template <typename T>
System<T> RandomSpd(int64_t n, double density, const std::vector<int64_t>& empty,
                    std::mt19937_64& rng) {
  System<T> s{n, n, {}, {}, {}, std::vector<long double>(n * n, 0)};
  std::bernoulli_distribution keep(density), twice(0.1);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> magnitude(n, 0);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = r + 1; c < n; ++c) {
      if (Listed(empty, r) || Listed(empty, c) || !keep(rng)) continue;
      const auto v = static_cast<T>(u(rng));
      // (r, c) maybe split in two listed entries; (c, r) once: the sums are equal.
      if (twice(rng)) {
        const auto half = static_cast<T>(v / 2);
        s.Add(r, c, half);
        s.Add(r, c, static_cast<T>(v - half));
      } else {
        s.Add(r, c, v);
      }
      s.Add(c, r, v);
      magnitude[r] += std::abs(static_cast<double>(v));
      magnitude[c] += std::abs(static_cast<double>(v));
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    if (!Listed(empty, i)) s.Add(i, i, static_cast<T>(magnitude[i] + 0.5 + (u(rng) + 1) / 2));
  }
  return s;
}

// A symmetric indefinite n x n system: R + R^T for a random sparse R, and a diagonal of both
// signs larger than each row's off-diagonal magnitudes (so it is nonsingular).
template <typename T>
System<T> RandomSymmetricIndefinite(int64_t n, double density, std::mt19937_64& rng) {
  System<T> s = RandomSpd<T>(n, density, {}, rng);
  // Every other diagonal entry negated: still diagonally dominant, so Gershgorin's discs keep
  // clear of 0, with eigenvalues of both signs.
  for (size_t e = 0; e < s.values.size(); ++e) {
    const int64_t i = s.rows[e];
    if (i == s.cols[e] && i % 2 == 1) {
      s.values[e] = -s.values[e];
      s.dense[i * n + i] = -s.dense[i * n + i];
    }
  }
  return s;
}

// A random m x n matrix, about `density` of it stored, none in `empty_rows` and `empty_cols`,
// and one entry per other column at least (full column rank, almost surely).
template <typename T>
System<T> RandomTall(int64_t m, int64_t n, double density, const std::vector<int64_t>& empty_rows,
                     const std::vector<int64_t>& empty_cols, std::mt19937_64& rng) {
  System<T> s{m, n, {}, {}, {}, std::vector<long double>(m * n, 0)};
  std::bernoulli_distribution keep(density);
  std::uniform_real_distribution<double> u(-1, 1);
  std::uniform_int_distribution<int64_t> row(0, m - 1);
  for (int64_t c = 0; c < n; ++c) {
    if (Listed(empty_cols, c)) continue;
    int64_t r = row(rng);
    while (Listed(empty_rows, r)) r = row(rng);
    s.Add(r, c, static_cast<T>(u(rng)));
    for (r = 0; r < m; ++r) {
      if (!Listed(empty_rows, r) && keep(rng)) s.Add(r, c, static_cast<T>(u(rng)));
    }
  }
  return s;
}

template <typename T>
std::vector<T> RandomVector(int64_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<T> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(static_cast<T>(u(rng)));
  return out;
}

long double Norm(const LongVector& v) {
  long double s = 0;
  for (long double x : v) s += x * x;
  return std::sqrt(s);
}

template <typename T>
long double Norm(const std::vector<T>& v) {
  return Norm(LongVector(v.begin(), v.end()));
}

template <typename T>
LongVector Residual(const System<T>& s, const std::vector<T>& b, const std::vector<T>& x) {
  LongVector r = s.Times(x);
  for (int64_t i = 0; i < s.m; ++i) r[i] = static_cast<long double>(b[i]) - r[i];
  return r;
}

template <typename T>
constexpr long double kEps = std::numeric_limits<T>::epsilon();

template <typename T>
std::string Name() {
  return std::is_same_v<T, float> ? "float32" : "float64";
}

// What LSQR and LSMR report about a solution, in one set of names (normr: of the damped system).
struct LeastSquaresReport {
  const Array* x;
  int istop;
  int64_t itn;
  double normr, normx, norma, conda;
};
LeastSquaresReport Report(const sparse::LsmrResult& r) {
  return {&r.x, r.istop, r.itn, r.normr, r.normx, r.norma, r.conda};
}
LeastSquaresReport Report(const sparse::LsqrResult& r) {
  return {&r.x, r.istop, r.itn, r.r2norm, r.xnorm, r.anorm, r.acond};
}

class SparseSolverTest : public BystanderTest {
 protected:
  // One device, then the rows split over two, three and four (where there are that many).
  std::vector<std::vector<int>> DeviceSets() const {
    std::vector<std::vector<int>> sets = {{dev(0)}};
    if (devices() > 1) sets.push_back({dev(1), dev(0)});
    if (devices() > 2) sets.push_back({dev(2), dev(0), dev(1)});
    if (devices() > 3) sets.push_back({dev(0), dev(1), dev(2), dev(3)});
    return sets;
  }

  template <typename T>
  absl::StatusOr<CsrMatrix> Upload(const System<T>& s, const std::vector<int>& on) {
    return CsrMatrix::FromCoo<T>(client(), s.m, s.n, s.rows, s.cols, s.values, on);
  }
  // A vector split over `on` (the solver reshards it to the layout it needs).
  template <typename T>
  absl::StatusOr<Array> Vector(const std::vector<T>& v, const std::vector<int>& on) {
    const auto n = static_cast<int64_t>(v.size());
    return client().Upload<T>(v, {n}, {Split(1, 0, n, on)});
  }

  template <typename T>
  void CheckCg(int64_t n, const std::vector<int64_t>& empty, uint64_t seed) {
    std::mt19937_64 rng(seed);
    const System<T> s = RandomSpd<T>(n, 0.08, empty, rng);
    std::vector<T> b = RandomVector<T>(n, rng);
    for (int64_t i : empty) b[i] = 0;
    const double rtol = std::is_same_v<T, float> ? 1e-5 : 1e-10;
    for (const std::vector<int>& on : DeviceSets()) {
      const std::string what = absl::StrCat(Name<T>(), " n=", n, " over ", on.size(), " devices");
      ASSERT_OK_AND_ASSIGN(CsrMatrix a, Upload(s, on));
      ASSERT_OK_AND_ASSIGN(Array bd, Vector(b, on));
      sparse::CgOptions options;
      options.rtol = rtol;
      ASSERT_OK_AND_ASSIGN(sparse::CgResult got, sparse::Cg(client(), a, bd, options));
      EXPECT_EQ(got.x.info().dtype(), DTypeOf<T>()) << what;
      EXPECT_EQ(got.info, 0) << what;
      EXPECT_GT(got.iterations, 0) << what;
      EXPECT_LE(got.iterations, n) << what;  // exact arithmetic would take at most n
      ASSERT_OK_AND_ASSIGN(std::vector<T> x, got.x.template Download<T>());
      ASSERT_EQ(static_cast<int64_t>(x.size()), n) << what;
      // The recurrence's residual met rtol ||b||; the true one may differ by the rounding of
      // A x.
      const long double slack = 100 * kEps<T> * s.Frobenius() * Norm(x);
      EXPECT_LE(Norm(Residual(s, b, x)), rtol * Norm(b) + slack) << what;
      for (int64_t i : empty) EXPECT_EQ(x[i], T{0}) << what << " at empty row " << i;

      // Started from that solution, at a tolerance it already meets: no iteration, x0 back.
      ASSERT_OK_AND_ASSIGN(Array x0, Vector(x, on));
      options.x0 = &x0;
      options.rtol = rtol * 100;
      ASSERT_OK_AND_ASSIGN(sparse::CgResult again, sparse::Cg(client(), a, bd, options));
      EXPECT_EQ(again.x.info().dtype(), DTypeOf<T>()) << what;
      EXPECT_EQ(again.info, 0) << what;
      EXPECT_EQ(again.iterations, 0) << what;
      EXPECT_EQ(*again.x.template Download<T>(), x) << what;
    }
  }

  // Host CG in long double for `iterations` steps from 0, as the solver's recurrence.
  template <typename T>
  static LongVector HostCg(const System<T>& s, const std::vector<T>& b, int iterations) {
    const int64_t n = s.n;
    LongVector x(n, 0), r(b.begin(), b.end()), d(n, 0);
    long double rho_prev = 1;
    for (int k = 0; k < iterations; ++k) {
      long double rho = 0;
      for (long double v : r) rho += v * v;
      const long double beta = k > 0 ? rho / rho_prev : 0;
      for (int64_t i = 0; i < n; ++i) d[i] = r[i] + beta * d[i];
      LongVector q(n, 0);
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < n; ++j) q[i] += s.dense[i * n + j] * d[j];
      }
      long double dq = 0;
      for (int64_t i = 0; i < n; ++i) dq += d[i] * q[i];
      const long double alpha = rho / dq;
      for (int64_t i = 0; i < n; ++i) {
        x[i] += alpha * d[i];
        r[i] -= alpha * q[i];
      }
      rho_prev = rho;
    }
    return x;
  }

  // Checks an LSQR or LSMR solution of min ||b - A x||^2 + damp^2 ||x||^2 that reports
  // convergence: the stopping test its istop names, recomputed on the host (within 10 times the
  // tolerance, plus the rounding of x), and the reported ||r|| and ||x|| against x's own.
  template <typename T>
  void ExpectLeastSquaresSolution(const System<T>& s, const std::vector<T>& b, double damp,
                                  double tol, const LeastSquaresReport& got,
                                  const std::string& what) {
    EXPECT_TRUE(got.istop == 1 || got.istop == 2) << what << ": istop " << got.istop;
    EXPECT_GT(got.itn, 0) << what;
    EXPECT_EQ(got.x->info().dtype(), DTypeOf<T>()) << what;
    ASSERT_OK_AND_ASSIGN(std::vector<T> x, got.x->template Download<T>());
    ASSERT_EQ(static_cast<int64_t>(x.size()), s.n) << what;
    const LongVector r = Residual(s, b, x);
    const long double d2 = static_cast<long double>(damp) * damp;
    // The damped system's residual [r; -damp x] and its normal equations A^T r - damp^2 x.
    LongVector normal = s.TransposeTimes(r);
    for (int64_t i = 0; i < s.n; ++i) normal[i] -= d2 * static_cast<long double>(x[i]);
    const long double norm_x = Norm(x);
    const long double norm_r = std::sqrt(Norm(r) * Norm(r) + d2 * norm_x * norm_x);
    const long double norm_a =
        std::sqrt(s.Frobenius() * s.Frobenius() + d2 * static_cast<long double>(s.n));
    const long double slack = 100 * kEps<T> * norm_a * norm_a * norm_x;
    if (got.istop == 1) {
      EXPECT_LE(norm_r, 10 * tol * (Norm(b) + norm_a * norm_x) + slack) << what;
    } else {
      EXPECT_LE(Norm(normal), 10 * tol * norm_a * norm_r + slack) << what;
    }
    const double rel = std::is_same_v<T, float> ? 1e-3 : 1e-6;
    EXPECT_NEAR(got.normr, static_cast<double>(norm_r), rel * static_cast<double>(norm_r)) << what;
    EXPECT_NEAR(got.normx, static_cast<double>(norm_x), rel * static_cast<double>(norm_x)) << what;
    // ||A||'s estimate is the Frobenius norm of the bidiagonal matrix so far: at most A's in exact
    // arithmetic, but the Lanczos vectors lose orthogonality in rounding well before the
    // iterations reach the columns, and the estimate then grows past it (by 1.9 % at 80 x 30
    // float64 on the CUDA backend, under 30 iterations), never far.
    EXPECT_GT(got.norma, 0) << what;
    if (got.itn < s.n) {
      EXPECT_LE(got.norma, static_cast<double>(norm_a) * 1.1) << what << ", itn " << got.itn;
    }
    EXPECT_LE(got.norma, 2 * static_cast<double>(norm_a)) << what;
    EXPECT_GE(got.conda, 1 - rel) << what;
  }

  // The same for LSQR, and its own reports: r1norm is ||b - A x||, arnorm the damped normal
  // equations' residual, no variance without calc_var.
  template <typename T>
  void ExpectLsqrSolution(const System<T>& s, const std::vector<T>& b, double damp, double tol,
                          const sparse::LsqrResult& got, const std::string& what) {
    ExpectLeastSquaresSolution(s, b, damp, tol, Report(got), what);
    ASSERT_OK_AND_ASSIGN(std::vector<T> x, got.x.template Download<T>());
    const LongVector r = Residual(s, b, x);
    const long double norm_x = Norm(x);
    const long double d2 = static_cast<long double>(damp) * damp;
    const long double norm_r = std::sqrt(Norm(r) * Norm(r) + d2 * norm_x * norm_x);
    const long double norm_a =
        std::sqrt(s.Frobenius() * s.Frobenius() + d2 * static_cast<long double>(s.n));
    const double rel = std::is_same_v<T, float> ? 1e-3 : 1e-6;
    EXPECT_NEAR(got.r1norm, static_cast<double>(Norm(r)), rel * static_cast<double>(Norm(r)))
        << what;
    EXPECT_LE(got.arnorm, static_cast<double>(10 * tol * norm_a * norm_r +
                                              100 * kEps<T> * norm_a * norm_a * norm_x))
        << what;
    EXPECT_FALSE(got.var.has_value()) << what;
  }

  // The minimizer of ||b - A x|| over the Krylov space span{b, A b, ..., A^(k-1) b}: MINRES's k-th
  // iterate from x0 = 0 in exact arithmetic. Normal equations of the k-column basis, in long
  // double.
  template <typename T>
  static LongVector KrylovMinimizer(const System<T>& s, const std::vector<T>& b, int k) {
    const int64_t n = s.n;
    std::vector<LongVector> basis = {LongVector(b.begin(), b.end())};
    for (int i = 1; i < k; ++i) basis.push_back(s.Times(basis.back()));
    std::vector<LongVector> images;
    for (const LongVector& v : basis) images.push_back(s.Times(v));
    // [G | h] with G = (A K)^T (A K), h = (A K)^T b, solved by Gaussian elimination.
    std::vector<LongVector> g(k, LongVector(k + 1, 0));
    for (int i = 0; i < k; ++i) {
      for (int j = 0; j < k; ++j) {
        for (int64_t e = 0; e < n; ++e) g[i][j] += images[i][e] * images[j][e];
      }
      for (int64_t e = 0; e < n; ++e) g[i][k] += images[i][e] * static_cast<long double>(b[e]);
    }
    for (int col = 0; col < k; ++col) {
      for (int row = col + 1; row < k; ++row) {
        const long double f = g[row][col] / g[col][col];
        for (int j = col; j <= k; ++j) g[row][j] -= f * g[col][j];
      }
    }
    LongVector c(k, 0);
    for (int i = k - 1; i >= 0; --i) {
      long double v = g[i][k];
      for (int j = i + 1; j < k; ++j) v -= g[i][j] * c[j];
      c[i] = v / g[i][i];
    }
    LongVector x(n, 0);
    for (int i = 0; i < k; ++i) {
      for (int64_t e = 0; e < n; ++e) x[e] += c[i] * basis[i][e];
    }
    return x;
  }

  template <typename T>
  void CheckMinres(int64_t n, double shift, uint64_t seed) {
    std::mt19937_64 rng(seed);
    System<T> s = RandomSymmetricIndefinite<T>(n, 0.1, rng);
    const std::vector<T> b = RandomVector<T>(n, rng);
    const double rtol = std::is_same_v<T, float> ? 1e-5 : 1e-10;
    // The shifted system the solver solves, for the host's residual.
    System<T> shifted = s;
    for (int64_t i = 0; i < n; ++i) shifted.dense[i * n + i] -= shift;
    for (const std::vector<int>& on : DeviceSets()) {
      const std::string what =
          absl::StrCat(Name<T>(), " n=", n, " shift ", shift, " over ", on.size(), " devices");
      ASSERT_OK_AND_ASSIGN(CsrMatrix a, Upload(s, on));
      ASSERT_OK_AND_ASSIGN(Array bd, Vector(b, on));
      sparse::MinresOptions options;
      options.rtol = rtol;
      options.shift = shift;
      options.check = true;  // symmetric: the check passes
      ASSERT_OK_AND_ASSIGN(sparse::MinresResult got, sparse::Minres(client(), a, bd, options));
      EXPECT_EQ(got.info, 0) << what;
      EXPECT_TRUE(got.istop == 1 || got.istop == 2) << what << ": istop " << got.istop;
      EXPECT_GT(got.itn, 0) << what;
      EXPECT_EQ(got.x.info().dtype(), DTypeOf<T>()) << what;
      ASSERT_OK_AND_ASSIGN(std::vector<T> x, got.x.template Download<T>());
      ASSERT_EQ(static_cast<int64_t>(x.size()), n) << what;
      // SciPy's first test: ||r|| <= rtol ||A|| ||x|| (||A|| estimated below the Frobenius norm).
      const long double norm_a = shifted.Frobenius();
      const long double slack = 100 * kEps<T> * norm_a * Norm(x);
      EXPECT_LE(Norm(Residual(shifted, b, x)), 10 * rtol * norm_a * Norm(x) + slack) << what;
    }
  }

  template <typename T>
  void CheckLsmr(int64_t m, int64_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    const System<T> s = RandomTall<T>(m, n, 0.15, {0, m / 2}, {}, rng);
    const std::vector<T> b = RandomVector<T>(m, rng);
    const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-10;
    for (const std::vector<int>& on : DeviceSets()) {
      const std::string what =
          absl::StrCat(Name<T>(), " ", m, "x", n, " over ", on.size(), " devices");
      ASSERT_OK_AND_ASSIGN(CsrMatrix a, Upload(s, on));
      ASSERT_OK_AND_ASSIGN(Array bd, Vector(b, on));
      sparse::LsmrOptions options;
      options.atol = options.btol = tol;
      options.maxiter = 10 * n;
      ASSERT_OK_AND_ASSIGN(sparse::LsmrResult got, sparse::Lsmr(client(), a, bd, options));
      ExpectLeastSquaresSolution(s, b, 0.0, tol, Report(got), what);
      // A tall random b is not in A's range: the least-squares test stops it.
      EXPECT_EQ(got.istop, 2) << what;
      EXPECT_LT(got.itn, 10 * n) << what;
    }
  }
  template <typename T>
  void CheckLsqr(int64_t m, int64_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    const System<T> s = RandomTall<T>(m, n, 0.15, {1, m - 1}, {}, rng);
    const std::vector<T> b = RandomVector<T>(m, rng);
    const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-10;
    for (const std::vector<int>& on : DeviceSets()) {
      const std::string what =
          absl::StrCat(Name<T>(), " ", m, "x", n, " over ", on.size(), " devices");
      ASSERT_OK_AND_ASSIGN(CsrMatrix a, Upload(s, on));
      ASSERT_OK_AND_ASSIGN(Array bd, Vector(b, on));
      sparse::LsqrOptions options;
      options.atol = options.btol = tol;
      options.maxiter = 10 * n;
      ASSERT_OK_AND_ASSIGN(sparse::LsqrResult got, sparse::Lsqr(client(), a, bd, options));
      ExpectLsqrSolution(s, b, 0.0, tol, got, what);
      EXPECT_EQ(got.istop, 2) << what;  // b is not in A's range
      EXPECT_LT(got.itn, 10 * n) << what;
      // LSMR solves the same problem: the least-squares solution is unique (full column rank).
      sparse::LsmrOptions lsmr;
      lsmr.atol = lsmr.btol = tol;
      lsmr.maxiter = 10 * n;
      ASSERT_OK_AND_ASSIGN(sparse::LsmrResult other, sparse::Lsmr(client(), a, bd, lsmr));
      ASSERT_OK_AND_ASSIGN(std::vector<T> x, got.x.template Download<T>());
      ASSERT_OK_AND_ASSIGN(std::vector<T> y, other.x.template Download<T>());
      LongVector difference(n);
      for (int64_t i = 0; i < n; ++i) {
        difference[i] = static_cast<long double>(x[i]) - static_cast<long double>(y[i]);
      }
      const long double bound = std::is_same_v<T, float> ? 1e-2 : 1e-6;
      EXPECT_LE(Norm(difference), bound * Norm(x)) << what;
    }
  }
};

TEST_P(SparseSolverTest, CgSolvesSymmetricPositiveDefiniteSystems) {
  CheckCg<double>(60, {3, 41}, 101);
  CheckCg<float>(45, {0, 44}, 102);
  CheckCg<double>(7, {}, 103);  // fewer rows than some blocks would want
  ExpectBystanderIntact();
}

TEST_P(SparseSolverTest, CgCapReportsTheIterationsRunAndMatchesTheHostIterates) {
  std::mt19937_64 rng(111);
  const System<double> s = RandomSpd<double>(50, 0.1, {7}, rng);
  std::vector<double> b = RandomVector<double>(50, rng);
  b[7] = 0;
  const LongVector want = HostCg(s, b, 2);
  for (const std::vector<int>& on : DeviceSets()) {
    const std::string what = absl::StrCat("over ", on.size(), " devices");
    ASSERT_OK_AND_ASSIGN(CsrMatrix a, Upload(s, on));
    ASSERT_OK_AND_ASSIGN(Array bd, Vector(b, on));
    sparse::CgOptions options;
    options.maxiter = 2;
    ASSERT_OK_AND_ASSIGN(sparse::CgResult got, sparse::Cg(client(), a, bd, options));
    EXPECT_EQ(got.info, 2) << what;  // not converged: SciPy's info is the iterations run
    EXPECT_EQ(got.iterations, 2) << what;
    ASSERT_OK_AND_ASSIGN(std::vector<double> x, got.x.Download<double>());
    for (int64_t i = 0; i < 50; ++i) {
      EXPECT_NEAR(x[i], static_cast<double>(want[i]), 1e-12 * (1 + std::abs(want[i])))
          << what << " at " << i;
    }
    // maxiter 0: x0 (zeros) back, info 0, as SciPy.
    options.maxiter = 0;
    ASSERT_OK_AND_ASSIGN(sparse::CgResult none, sparse::Cg(client(), a, bd, options));
    EXPECT_EQ(none.info, 0) << what;
    EXPECT_EQ(none.iterations, 0) << what;
    EXPECT_EQ(*none.x.Download<double>(), std::vector<double>(50, 0.0)) << what;
  }
  // b = 0: x = 0 at once, info 0.
  ASSERT_OK_AND_ASSIGN(CsrMatrix a, Upload(s, {dev(0)}));
  ASSERT_OK_AND_ASSIGN(Array zero, Vector(std::vector<double>(50, 0.0), {dev(0)}));
  ASSERT_OK_AND_ASSIGN(sparse::CgResult got, sparse::Cg(client(), a, zero));
  EXPECT_EQ(got.info, 0);
  EXPECT_EQ(got.iterations, 0);
  EXPECT_EQ(*got.x.Download<double>(), std::vector<double>(50, 0.0));
  // With an x0 too: SciPy's x is then 0 as well.
  ASSERT_OK_AND_ASSIGN(Array x0, Vector(RandomVector<double>(50, rng), {dev(0)}));
  sparse::CgOptions options;
  options.x0 = &x0;
  ASSERT_OK_AND_ASSIGN(sparse::CgResult from_x0, sparse::Cg(client(), a, zero, options));
  EXPECT_EQ(from_x0.info, 0);
  EXPECT_EQ(from_x0.iterations, 0);
  EXPECT_EQ(*from_x0.x.Download<double>(), std::vector<double>(50, 0.0));
  ExpectBystanderIntact();
}

TEST_P(SparseSolverTest, CgTakesADenseOperator) {
  std::mt19937_64 rng(121);
  const System<double> s = RandomSpd<double>(40, 0.1, {}, rng);
  const std::vector<double> b = RandomVector<double>(40, rng);
  std::vector<double> dense(s.dense.begin(), s.dense.end());
  for (const std::vector<int>& on : DeviceSets()) {
    const std::string what = absl::StrCat("over ", on.size(), " devices");
    ASSERT_OK_AND_ASSIGN(Array a, client().Upload<double>(dense, {40, 40}, {Split(2, 0, 40, on)}));
    ASSERT_OK_AND_ASSIGN(Array bd, Vector(b, on));
    sparse::CgOptions options;
    options.rtol = 1e-10;
    ASSERT_OK_AND_ASSIGN(sparse::CgResult got, sparse::Cg(client(), a, bd, options));
    EXPECT_EQ(got.info, 0) << what;
    ASSERT_OK_AND_ASSIGN(std::vector<double> x, got.x.Download<double>());
    EXPECT_LE(Norm(Residual(s, b, x)),
              1e-10 * Norm(b) + 100 * kEps<double> * s.Frobenius() * Norm(x))
        << what;
  }
  ExpectBystanderIntact();
}

TEST_P(SparseSolverTest, LsmrSolvesTallLeastSquaresSystems) {
  CheckLsmr<double>(80, 30, 201);
  CheckLsmr<float>(60, 20, 202);
  ExpectBystanderIntact();
}

TEST_P(SparseSolverTest, LsmrDampsCapsAndStartsFromX0) {
  std::mt19937_64 rng(211);
  // An empty column: rank deficient, but damped the problem has one solution.
  const System<double> s = RandomTall<double>(70, 25, 0.15, {5}, {11}, rng);
  const std::vector<double> b = RandomVector<double>(70, rng);
  const double tol = 1e-10;
  for (const std::vector<int>& on : DeviceSets()) {
    const std::string what = absl::StrCat("over ", on.size(), " devices");
    ASSERT_OK_AND_ASSIGN(CsrMatrix a, Upload(s, on));
    ASSERT_OK_AND_ASSIGN(Array bd, Vector(b, on));
    sparse::LsmrOptions options;
    options.atol = options.btol = tol;
    options.maxiter = 250;
    options.damp = 0.5;
    ASSERT_OK_AND_ASSIGN(sparse::LsmrResult damped, sparse::Lsmr(client(), a, bd, options));
    ExpectLeastSquaresSolution(s, b, 0.5, tol, Report(damped), what + " damp 0.5");
    ASSERT_OK_AND_ASSIGN(std::vector<double> xd, damped.x.Download<double>());
    EXPECT_EQ(xd[11], 0.0) << what;  // the empty column's unknown: damped to 0
    // Undamped, the same system's least-squares solution differs.
    options.damp = 0;
    ASSERT_OK_AND_ASSIGN(sparse::LsmrResult plain, sparse::Lsmr(client(), a, bd, options));
    ExpectLeastSquaresSolution(s, b, 0.0, tol, Report(plain), what + " damp 0");
    ASSERT_OK_AND_ASSIGN(std::vector<double> xp, plain.x.Download<double>());
    EXPECT_GT(Norm(xp), Norm(xd)) << what;  // damping shrinks x

    // The cap: istop 7 after exactly maxiter iterations; the reported norms are still x's.
    options.maxiter = 3;
    ASSERT_OK_AND_ASSIGN(sparse::LsmrResult capped, sparse::Lsmr(client(), a, bd, options));
    EXPECT_EQ(capped.istop, 7) << what;
    EXPECT_EQ(capped.itn, 3) << what;
    ASSERT_OK_AND_ASSIGN(std::vector<double> xc, capped.x.Download<double>());
    const long double rc = Norm(Residual(s, b, xc));
    EXPECT_LT(rc, Norm(b)) << what;
    EXPECT_NEAR(capped.normr, static_cast<double>(rc), 1e-9 * static_cast<double>(rc)) << what;
    EXPECT_NEAR(capped.normx, static_cast<double>(Norm(xc)), 1e-9 * static_cast<double>(Norm(xc)))
        << what;

    // From x0 = the least-squares solution, one iteration keeps the normal equations met (from
    // 0 it would not: the capped run above is far from them).
    ASSERT_OK_AND_ASSIGN(Array x0, Vector(xp, on));
    options.x0 = &x0;
    options.maxiter = 1;
    ASSERT_OK_AND_ASSIGN(sparse::LsmrResult started, sparse::Lsmr(client(), a, bd, options));
    ASSERT_OK_AND_ASSIGN(std::vector<double> xs, started.x.Download<double>());
    const LongVector rs = Residual(s, b, xs);
    const long double bound = 10 * tol * s.Frobenius() * Norm(rs) + 1e-12 * Norm(b);
    EXPECT_LE(Norm(s.TransposeTimes(rs)), bound) << what;
    EXPECT_GT(Norm(s.TransposeTimes(Residual(s, b, xc))), bound) << what;
    options.x0 = nullptr;
  }
  // b = 0: x = 0 at once, istop 0 and no iteration, as SciPy.
  ASSERT_OK_AND_ASSIGN(CsrMatrix a, Upload(s, {dev(0)}));
  ASSERT_OK_AND_ASSIGN(Array zero, Vector(std::vector<double>(70, 0.0), {dev(0)}));
  ASSERT_OK_AND_ASSIGN(sparse::LsmrResult got, sparse::Lsmr(client(), a, zero));
  EXPECT_EQ(got.istop, 0);
  EXPECT_EQ(got.itn, 0);
  EXPECT_EQ(*got.x.Download<double>(), std::vector<double>(25, 0.0));
  // From an x0 too: SciPy returns x = 0 without iterating (normr and normar are x0's residual's).
  ASSERT_OK_AND_ASSIGN(Array start, Vector(RandomVector<double>(25, rng), {dev(0)}));
  sparse::LsmrOptions from_x0;
  from_x0.x0 = &start;
  ASSERT_OK_AND_ASSIGN(sparse::LsmrResult again, sparse::Lsmr(client(), a, zero, from_x0));
  EXPECT_EQ(again.istop, 0);
  EXPECT_EQ(again.itn, 0);
  EXPECT_EQ(*again.x.Download<double>(), std::vector<double>(25, 0.0));
  EXPECT_GT(again.normr, 0);
  ExpectBystanderIntact();
}

TEST_P(SparseSolverTest, LsqrSolvesTallLeastSquaresSystems) {
  CheckLsqr<double>(80, 30, 401);
  CheckLsqr<float>(60, 20, 402);
  ExpectBystanderIntact();
}

// diag((A^T A)^-1) of a full-column-rank A, in long double (Gauss-Jordan on the normal matrix).
template <typename T>
LongVector InverseNormalDiagonal(const System<T>& s) {
  const int64_t n = s.n;
  std::vector<LongVector> g(n, LongVector(2 * n, 0));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t r = 0; r < s.m; ++r) g[i][j] += s.dense[r * n + i] * s.dense[r * n + j];
    }
    g[i][n + i] = 1;
  }
  for (int64_t col = 0; col < n; ++col) {
    int64_t pivot = col;
    for (int64_t row = col + 1; row < n; ++row) {
      if (std::abs(g[row][col]) > std::abs(g[pivot][col])) pivot = row;
    }
    std::swap(g[col], g[pivot]);
    for (int64_t row = 0; row < n; ++row) {
      if (row == col) continue;
      const long double f = g[row][col] / g[col][col];
      for (int64_t j = 0; j < 2 * n; ++j) g[row][j] -= f * g[col][j];
    }
  }
  LongVector diagonal(n);
  for (int64_t i = 0; i < n; ++i) diagonal[i] = g[i][n + i] / g[i][i];
  return diagonal;
}

TEST_P(SparseSolverTest, LsqrDampsCapsEstimatesTheVarianceAndStartsFromX0) {
  std::mt19937_64 rng(411);
  const System<double> s = RandomTall<double>(70, 25, 0.15, {5}, {11}, rng);
  const std::vector<double> b = RandomVector<double>(70, rng);
  const double tol = 1e-10;
  // Full column rank (no empty column), small enough to run to n iterations: the variance
  // estimate is then diag((A^T A)^-1).
  const System<double> full = RandomTall<double>(40, 12, 0.3, {}, {}, rng);
  const std::vector<double> full_b = RandomVector<double>(40, rng);
  const LongVector want_var = InverseNormalDiagonal(full);
  for (const std::vector<int>& on : DeviceSets()) {
    const std::string what = absl::StrCat("over ", on.size(), " devices");
    ASSERT_OK_AND_ASSIGN(CsrMatrix a, Upload(s, on));
    ASSERT_OK_AND_ASSIGN(Array bd, Vector(b, on));
    sparse::LsqrOptions options;
    options.atol = options.btol = tol;
    options.maxiter = 250;
    options.damp = 0.5;
    ASSERT_OK_AND_ASSIGN(sparse::LsqrResult damped, sparse::Lsqr(client(), a, bd, options));
    ExpectLsqrSolution(s, b, 0.5, tol, damped, what + " damp 0.5");
    ASSERT_OK_AND_ASSIGN(std::vector<double> xd, damped.x.Download<double>());
    EXPECT_EQ(xd[11], 0.0) << what;  // the empty column's unknown: damped to 0
    options.damp = 0;
    ASSERT_OK_AND_ASSIGN(sparse::LsqrResult plain, sparse::Lsqr(client(), a, bd, options));
    ExpectLsqrSolution(s, b, 0.0, tol, plain, what + " damp 0");
    ASSERT_OK_AND_ASSIGN(std::vector<double> xp, plain.x.Download<double>());
    EXPECT_GT(Norm(xp), Norm(xd)) << what;

    // The cap: istop 7 after exactly maxiter iterations; r1norm and xnorm are still x's.
    options.maxiter = 3;
    ASSERT_OK_AND_ASSIGN(sparse::LsqrResult capped, sparse::Lsqr(client(), a, bd, options));
    EXPECT_EQ(capped.istop, 7) << what;
    EXPECT_EQ(capped.itn, 3) << what;
    ASSERT_OK_AND_ASSIGN(std::vector<double> xc, capped.x.Download<double>());
    const long double rc = Norm(Residual(s, b, xc));
    EXPECT_LT(rc, Norm(b)) << what;
    EXPECT_NEAR(capped.r1norm, static_cast<double>(rc), 1e-9 * static_cast<double>(rc)) << what;
    EXPECT_NEAR(capped.xnorm, static_cast<double>(Norm(xc)), 1e-9 * static_cast<double>(Norm(xc)))
        << what;

    // From x0 = the least-squares solution, one iteration keeps the normal equations met.
    ASSERT_OK_AND_ASSIGN(Array x0, Vector(xp, on));
    options.x0 = &x0;
    options.maxiter = 1;
    ASSERT_OK_AND_ASSIGN(sparse::LsqrResult started, sparse::Lsqr(client(), a, bd, options));
    ASSERT_OK_AND_ASSIGN(std::vector<double> xs, started.x.Download<double>());
    const LongVector rs = Residual(s, b, xs);
    const long double bound = 10 * tol * s.Frobenius() * Norm(rs) + 1e-12 * Norm(b);
    EXPECT_LE(Norm(s.TransposeTimes(rs)), bound) << what;
    EXPECT_GT(Norm(s.TransposeTimes(Residual(s, b, xc))), bound) << what;

    // calc_var on the full-rank system, run to convergence at a tight tolerance.
    ASSERT_OK_AND_ASSIGN(CsrMatrix fa, Upload(full, on));
    ASSERT_OK_AND_ASSIGN(Array fb, Vector(full_b, on));
    sparse::LsqrOptions variance;
    variance.atol = variance.btol = 1e-14;
    variance.maxiter = 200;
    variance.calc_var = true;
    ASSERT_OK_AND_ASSIGN(sparse::LsqrResult with_var, sparse::Lsqr(client(), fa, fb, variance));
    EXPECT_GE(with_var.itn, 12) << what;
    ASSERT_TRUE(with_var.var.has_value()) << what;
    EXPECT_EQ(with_var.var->info().dtype(), v1::DTYPE_FLOAT64) << what;
    ASSERT_OK_AND_ASSIGN(std::vector<double> var, with_var.var->Download<double>());
    ASSERT_EQ(var.size(), 12u) << what;
    for (int i = 0; i < 12; ++i) {
      EXPECT_NEAR(var[i], static_cast<double>(want_var[i]), 1e-6 * static_cast<double>(want_var[i]))
          << what << " at " << i;
    }
  }
  // b = 0: x = 0 at once, istop 0 and no iteration, as SciPy.
  ASSERT_OK_AND_ASSIGN(CsrMatrix a, Upload(s, {dev(0)}));
  ASSERT_OK_AND_ASSIGN(Array zero, Vector(std::vector<double>(70, 0.0), {dev(0)}));
  ASSERT_OK_AND_ASSIGN(sparse::LsqrResult got, sparse::Lsqr(client(), a, zero));
  EXPECT_EQ(got.istop, 0);
  EXPECT_EQ(got.itn, 0);
  EXPECT_EQ(*got.x.Download<double>(), std::vector<double>(25, 0.0));
  ExpectBystanderIntact();
}

TEST_P(SparseSolverTest, MinresSolvesSymmetricIndefiniteSystems) {
  CheckMinres<double>(60, 0.0, 501);
  CheckMinres<double>(40, 0.7, 502);  // (A - 0.7 I) x = b
  CheckMinres<float>(45, 0.0, 503);
  ExpectBystanderIntact();
}

TEST_P(SparseSolverTest, MinresCapMatchesTheKrylovMinimizerAndTakesADenseOperator) {
  std::mt19937_64 rng(511);
  const System<double> s = RandomSymmetricIndefinite<double>(50, 0.1, rng);
  const std::vector<double> b = RandomVector<double>(50, rng);
  const LongVector want = KrylovMinimizer(s, b, 3);
  std::vector<double> dense(s.dense.begin(), s.dense.end());
  for (const std::vector<int>& on : DeviceSets()) {
    const std::string what = absl::StrCat("over ", on.size(), " devices");
    ASSERT_OK_AND_ASSIGN(CsrMatrix a, Upload(s, on));
    ASSERT_OK_AND_ASSIGN(Array bd, Vector(b, on));
    sparse::MinresOptions options;
    options.maxiter = 3;
    ASSERT_OK_AND_ASSIGN(sparse::MinresResult got, sparse::Minres(client(), a, bd, options));
    EXPECT_EQ(got.info, 3) << what;  // not converged: SciPy's info is maxiter
    EXPECT_EQ(got.istop, 6) << what;
    EXPECT_EQ(got.itn, 3) << what;
    ASSERT_OK_AND_ASSIGN(std::vector<double> x, got.x.Download<double>());
    for (int64_t i = 0; i < 50; ++i) {
      EXPECT_NEAR(x[i], static_cast<double>(want[i]), 1e-9 * (1 + std::abs(want[i])))
          << what << " at " << i;
    }
    // The dense operator: the same system solved.
    ASSERT_OK_AND_ASSIGN(Array ad, client().Upload<double>(dense, {50, 50}, {Split(2, 0, 50, on)}));
    sparse::MinresOptions tight;
    tight.rtol = 1e-10;
    ASSERT_OK_AND_ASSIGN(sparse::MinresResult solved, sparse::Minres(client(), ad, bd, tight));
    EXPECT_EQ(solved.info, 0) << what;
    ASSERT_OK_AND_ASSIGN(std::vector<double> xs, solved.x.Download<double>());
    EXPECT_LE(Norm(Residual(s, b, xs)),
              1e-9 * s.Frobenius() * Norm(xs) + 100 * kEps<double> * s.Frobenius() * Norm(xs))
        << what;
    // Started from that solution at a looser tolerance: no iteration is needed to meet it, and
    // SciPy stops after the first (its tests run at the end of each).
    ASSERT_OK_AND_ASSIGN(Array x0, Vector(xs, on));
    tight.x0 = &x0;
    tight.rtol = 1e-6;
    ASSERT_OK_AND_ASSIGN(sparse::MinresResult again, sparse::Minres(client(), ad, bd, tight));
    EXPECT_EQ(again.info, 0) << what;
    EXPECT_LE(again.itn, 1) << what;
  }
  // b = 0: b itself (zeros) at once, istop 0 and no iteration, as SciPy.
  ASSERT_OK_AND_ASSIGN(CsrMatrix a, Upload(s, {dev(0)}));
  ASSERT_OK_AND_ASSIGN(Array zero, Vector(std::vector<double>(50, 0.0), {dev(0)}));
  ASSERT_OK_AND_ASSIGN(sparse::MinresResult got, sparse::Minres(client(), a, zero));
  EXPECT_EQ(got.info, 0);
  EXPECT_EQ(got.istop, 0);
  EXPECT_EQ(got.itn, 0);
  EXPECT_EQ(*got.x.Download<double>(), std::vector<double>(50, 0.0));
  // check: a non-symmetric A is refused after the test on the devices; a symmetric one passes.
  System<double> skew = s;
  skew.Add(0, 1, 0.75);  // (0, 1) no longer equals (1, 0)
  ASSERT_OK_AND_ASSIGN(CsrMatrix nonsymmetric, Upload(skew, {dev(0)}));
  ASSERT_OK_AND_ASSIGN(Array bd, Vector(b, {dev(0)}));
  sparse::MinresOptions check;
  check.check = true;
  absl::Status refused = sparse::Minres(client(), nonsymmetric, bd, check).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument) << refused;
  EXPECT_TRUE(absl::StartsWith(refused.message(), "a: non-symmetric matrix")) << refused;
  ASSERT_OK(sparse::Minres(client(), a, bd, check).status());
  ExpectBystanderIntact();
}

TEST_P(SparseSolverTest, BadInputsAreRefusedNamingTheArgument) {
  std::mt19937_64 rng(301);
  const System<double> s = RandomSpd<double>(6, 0.5, {}, rng);
  std::vector<int> on = {dev(0)};
  if (devices() > 1) on.push_back(dev(1));
  ASSERT_OK_AND_ASSIGN(CsrMatrix a, Upload(s, on));
  ASSERT_OK_AND_ASSIGN(Array b, Vector(RandomVector<double>(6, rng), on));
  auto expect = [](const absl::Status& status, const std::string& text) {
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_TRUE(absl::StartsWith(status.message(), text)) << status << "\nwant: " << text;
  };
  auto cg = [&](const CsrMatrix& m, const Array& rhs, sparse::CgOptions options = {}) {
    return sparse::Cg(client(), m, rhs, options).status();
  };
  auto lsmr = [&](const CsrMatrix& m, const Array& rhs, sparse::LsmrOptions options = {}) {
    return sparse::Lsmr(client(), m, rhs, options).status();
  };
  // Complex systems.
  const std::vector<std::complex<double>> cvalues(s.values.begin(), s.values.end());
  ASSERT_OK_AND_ASSIGN(CsrMatrix complex_a, CsrMatrix::FromCoo<std::complex<double>>(
                                                client(), 6, 6, s.rows, s.cols, cvalues, on));
  ASSERT_OK_AND_ASSIGN(Array complex_b, client().Upload<std::complex<double>>(
                                            std::vector<std::complex<double>>(6, {1, 2}), {6},
                                            {OnDevice(1, dev(0))}));
  expect(cg(complex_a, complex_b), "a: dtype complex128");
  expect(lsmr(complex_a, complex_b), "a: dtype complex128");
  // b of an integer dtype, of another float dtype, of another length, 2-D.
  ASSERT_OK_AND_ASSIGN(Array int_b, client().Upload<int32_t>(std::vector<int32_t>(6, 1), {6},
                                                             {OnDevice(1, dev(0))}));
  expect(cg(a, int_b), "b: dtype int32 does not match A's float64");
  expect(lsmr(a, int_b), "b: dtype int32 does not match A's float64");
  ASSERT_OK_AND_ASSIGN(Array float_b, Vector(std::vector<float>(6, 1.0f), on));
  expect(cg(a, float_b), "b: dtype float32 does not match A's float64");
  ASSERT_OK_AND_ASSIGN(Array long_b, Vector(RandomVector<double>(7, rng), on));
  expect(cg(a, long_b), "b: shape (7,) does not fit A's (6, 6)");
  expect(lsmr(a, long_b), "b: shape (7,) does not fit A's (6, 6)");
  ASSERT_OK_AND_ASSIGN(Array column_b, client().Upload<double>(std::vector<double>(6, 1.0), {6, 1},
                                                               {OnDevice(2, dev(0))}));
  expect(cg(a, column_b), "b: shape (6, 1) does not fit A's (6, 6)");
  // x0 of another length or dtype.
  ASSERT_OK_AND_ASSIGN(Array long_x0, Vector(RandomVector<double>(5, rng), on));
  sparse::CgOptions cg_options;
  cg_options.x0 = &long_x0;
  expect(cg(a, b, cg_options), "x0: shape (5,) does not fit A's (6, 6)");
  sparse::LsmrOptions lsmr_options;
  lsmr_options.x0 = &long_x0;
  expect(lsmr(a, b, lsmr_options), "x0: shape (5,) does not fit A's (6, 6)");
  cg_options.x0 = &float_b;
  expect(cg(a, b, cg_options), "x0: dtype float32 does not match A's float64");
  // A negative cap; a non-square A for CG; a dense A of an integer dtype.
  cg_options = {};
  cg_options.maxiter = -1;
  expect(cg(a, b, cg_options), "maxiter: -1 is negative");
  cg_options = {};
  cg_options.rtol = std::numeric_limits<double>::quiet_NaN();
  expect(cg(a, b, cg_options), "rtol: nan is not a number >= 0");
  cg_options = {};
  cg_options.atol = -1;
  expect(cg(a, b, cg_options), "atol: -1 is not a number >= 0");
  lsmr_options = {};
  lsmr_options.maxiter = -2;
  expect(lsmr(a, b, lsmr_options), "maxiter: -2 is negative");
  ASSERT_OK_AND_ASSIGN(CsrMatrix wide,
                       CsrMatrix::FromCoo<double>(client(), 6, 8, s.rows, s.cols, s.values, on));
  expect(cg(wide, b), "a: shape (6, 8); Cg needs a square A");
  ASSERT_OK_AND_ASSIGN(Array int_a, client().Upload<int64_t>(std::vector<int64_t>(36, 1), {6, 6},
                                                             {OnDevice(2, dev(0))}));
  expect(sparse::Cg(client(), int_a, b).status(), "a: dtype int64");
  expect(sparse::Cg(client(), b, b).status(), "a: shape (6,); Cg needs a 2-D A");

  // MINRES and LSQR: the same checks by name, and their own options.
  auto minres = [&](const CsrMatrix& m, const Array& rhs, sparse::MinresOptions options = {}) {
    return sparse::Minres(client(), m, rhs, options).status();
  };
  auto lsqr = [&](const CsrMatrix& m, const Array& rhs, sparse::LsqrOptions options = {}) {
    return sparse::Lsqr(client(), m, rhs, options).status();
  };
  expect(minres(complex_a, complex_b), "a: dtype complex128");
  expect(lsqr(complex_a, complex_b), "a: dtype complex128");
  expect(minres(a, int_b), "b: dtype int32 does not match A's float64");
  expect(lsqr(a, long_b), "b: shape (7,) does not fit A's (6, 6)");
  expect(minres(wide, b), "a: shape (6, 8); Minres needs a square A");
  sparse::MinresOptions minres_options;
  minres_options.x0 = &long_x0;
  expect(minres(a, b, minres_options), "x0: shape (5,) does not fit A's (6, 6)");
  minres_options = {};
  minres_options.maxiter = -3;
  expect(minres(a, b, minres_options), "maxiter: -3 is negative");
  minres_options = {};
  minres_options.rtol = -1e-5;
  expect(minres(a, b, minres_options), "rtol: -1e-05 is not a number >= 0");
  minres_options = {};
  minres_options.shift = std::numeric_limits<double>::infinity();
  expect(minres(a, b, minres_options), "shift: inf is not finite");
  expect(sparse::Minres(client(), int_a, b).status(), "a: dtype int64");
  sparse::LsqrOptions lsqr_options;
  lsqr_options.damp = -0.5;
  expect(lsqr(a, b, lsqr_options), "damp: -0.5 is not a finite number >= 0");
  lsqr_options = {};
  lsqr_options.atol = std::numeric_limits<double>::quiet_NaN();
  expect(lsqr(a, b, lsqr_options), "atol: nan is not a number >= 0");
  lsqr_options = {};
  lsqr_options.maxiter = -1;
  expect(lsqr(a, b, lsqr_options), "maxiter: -1 is negative");
  lsmr_options = {};
  lsmr_options.damp = std::numeric_limits<double>::infinity();
  expect(lsmr(a, b, lsmr_options), "damp: inf is not a finite number >= 0");
  lsmr_options = {};
  lsmr_options.conlim = -1;
  expect(lsmr(a, b, lsmr_options), "conlim: -1 is not a number >= 0");

  // The daemon serves on: a good solve right after.
  ASSERT_OK_AND_ASSIGN(sparse::CgResult got, sparse::Cg(client(), a, b));
  EXPECT_EQ(got.info, 0);
  ExpectBystanderIntact();
}

DISTARRAY_INSTANTIATE_BACKENDS(SparseSolverTest);

}  // namespace
}  // namespace distarray::testing
