// Dense linear algebra as program statements (LinalgStatement): every op's results inside a
// RunGraph equal the Linalg RPC's on the same operand, bit for bit (one code path), and are
// checked against the host in long double; a loop of solves (inverse iteration) matches the same
// iteration on the host; a program holding one runs eagerly; and the errors (a singular matrix
// inside a loop, targets that do not fit the op, operands of the wrong dtype) name the statement's
// field, after which the daemon serves on and a bystander array is intact.
#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "distarray/graph.h"
#include "distarray/index_maps.h"
#include "tests/support/backend_fixture.h"
#include "tests/support/server_state.h"

namespace distarray::testing {
namespace {

namespace g = graph;

using LongMatrix = std::vector<long double>;  // n x n, row-major

class GraphLinalgTest : public BystanderTest {
 protected:
  std::vector<int> Devices() const {
    std::vector<int> on = {dev(0)};
    if (devices() > 1) on.push_back(dev(1));
    return on;
  }
};

// A symmetric positive definite n x n matrix: M M^T / n + I for a random M.
std::vector<double> RandomSpd(int64_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> m(n * n);
  for (double& x : m) x = u(rng);
  std::vector<double> a(n * n);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      long double s = 0;
      for (int64_t k = 0; k < n; ++k) s += static_cast<long double>(m[i * n + k]) * m[j * n + k];
      a[i * n + j] = static_cast<double>(s / n) + (i == j ? 1.0 : 0.0);
    }
  }
  return a;
}

// x with a x = b, by Gaussian elimination with partial pivoting in long double.
std::vector<long double> HostSolve(const std::vector<double>& a_in,
                                   const std::vector<long double>& b_in) {
  const auto n = static_cast<int64_t>(b_in.size());
  LongMatrix a(a_in.begin(), a_in.end());
  std::vector<long double> b = b_in;
  for (int64_t col = 0; col < n; ++col) {
    int64_t pivot = col;
    for (int64_t r = col + 1; r < n; ++r) {
      if (std::abs(a[r * n + col]) > std::abs(a[pivot * n + col])) pivot = r;
    }
    for (int64_t j = 0; j < n; ++j) std::swap(a[col * n + j], a[pivot * n + j]);
    std::swap(b[col], b[pivot]);
    for (int64_t r = col + 1; r < n; ++r) {
      const long double f = a[r * n + col] / a[col * n + col];
      for (int64_t j = col; j < n; ++j) a[r * n + j] -= f * a[col * n + j];
      b[r] -= f * b[col];
    }
  }
  std::vector<long double> x(n);
  for (int64_t i = n - 1; i >= 0; --i) {
    long double v = b[i];
    for (int64_t j = i + 1; j < n; ++j) v -= a[i * n + j] * x[j];
    x[i] = v / a[i * n + i];
  }
  return x;
}

TEST_P(GraphLinalgTest, StatementsGiveTheLinalgRpcsResults) {
  std::mt19937_64 rng(71);
  const int64_t n = 24;
  const std::vector<double> a_host = RandomSpd(n, rng);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> b_host(n);
  for (double& x : b_host) x = u(rng);
  ASSERT_OK_AND_ASSIGN(Array a,
                       client().Upload<double>(a_host, {n, n}, {Split(2, 0, n, Devices())}));
  ASSERT_OK_AND_ASSIGN(Array b, client().Upload<double>(b_host, {n}, {Split(1, 0, n, Devices())}));

  struct Case {
    std::string name;
    v1::LinalgOp op;
    bool with_b = false;
    LinalgOptions options;
  };
  LinalgOptions values_only;
  values_only.compute_uv = false;
  LinalgOptions upper;
  upper.upper = true;
  const std::vector<Case> cases = {
      {"solve", v1::LINALG_OP_SOLVE, true, {}},
      {"inv", v1::LINALG_OP_INV, false, {}},
      {"cholesky", v1::LINALG_OP_CHOLESKY, false, upper},
      {"qr", v1::LINALG_OP_QR, false, {}},
      {"eigh", v1::LINALG_OP_EIGH, false, {}},
      {"eigvalsh", v1::LINALG_OP_EIGH, false, values_only},
      {"svd", v1::LINALG_OP_SVD, false, {}},
      {"svdvals", v1::LINALG_OP_SVD, false, values_only},
      {"det", v1::LINALG_OP_DET, false, {}},
      {"slogdet", v1::LINALG_OP_SLOGDET, false, {}},
  };
  g::ProgramBuilder p;
  const g::Var av = p.Input("a");
  const g::Var bv = p.Input("b");
  std::map<std::string, int> result_counts;
  for (const Case& c : cases) {
    const g::Vars results = p.Linalg(c.op, av, c.with_b ? &bv : nullptr, c.options);
    result_counts[c.name] = static_cast<int>(results.size());
    for (size_t r = 0; r < results.size(); ++r) p.Output(absl::StrCat(c.name, r), results[r]);
  }
  ASSERT_OK_AND_ASSIGN(GraphRun run, client().RunGraph(p.program(), {{"a", &a}, {"b", &b}}));
  // A factorization reads its status back to the host: the program cannot be a device graph.
  EXPECT_EQ(run.execution, v1::GRAPH_EXECUTION_EAGER);

  for (const Case& c : cases) {
    ASSERT_OK_AND_ASSIGN(std::vector<Array> want,
                         Linalg(c.op, a, c.with_b ? &b : nullptr, c.options));
    ASSERT_EQ(static_cast<int>(want.size()), result_counts[c.name]) << c.name;
    for (size_t r = 0; r < want.size(); ++r) {
      const std::string name = absl::StrCat(c.name, r);
      ASSERT_TRUE(run.outputs.contains(name)) << name;
      const Array& got = run.outputs.at(name);
      EXPECT_EQ(got.shape(), want[r].shape()) << name;
      EXPECT_EQ(got.info().dtype(), want[r].info().dtype()) << name;
      ASSERT_OK_AND_ASSIGN(std::vector<double> got_values, got.Download<double>());
      ASSERT_OK_AND_ASSIGN(std::vector<double> want_values, want[r].Download<double>());
      EXPECT_EQ(got_values, want_values) << name;
    }
  }

  // And against the host: a x = b, and U^T U = a for the upper Cholesky factor.
  ASSERT_OK_AND_ASSIGN(std::vector<double> x, run.outputs.at("solve0").Download<double>());
  ASSERT_OK_AND_ASSIGN(std::vector<double> r_factor,
                       run.outputs.at("cholesky0").Download<double>());
  const std::vector<long double> want_x =
      HostSolve(a_host, std::vector<long double>(b_host.begin(), b_host.end()));
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_NEAR(x[i], static_cast<double>(want_x[i]), 1e-12 * (1 + std::abs(want_x[i]))) << i;
  }
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      long double s = 0;
      for (int64_t k = 0; k < n; ++k) {
        s += static_cast<long double>(r_factor[k * n + i]) * r_factor[k * n + j];
      }
      EXPECT_NEAR(static_cast<double>(s), a_host[i * n + j], 1e-13 * n) << i << ", " << j;
    }
  }
  ExpectBystanderIntact();
}

// Inverse iteration: x <- solve(a, x) / ||solve(a, x)||, a loop of solves in one program. The
// result matches the same iteration on the host, and the solve's operand gathered once per
// iteration is the caller's array, which stays as it was.
TEST_P(GraphLinalgTest, SolvesInsideALoopMatchTheHostIteration) {
  std::mt19937_64 rng(72);
  const int64_t n = 16;
  const int iterations = 6;
  const std::vector<double> a_host = RandomSpd(n, rng);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> x0(n);
  for (double& x : x0) x = u(rng);
  ASSERT_OK_AND_ASSIGN(Array a,
                       client().Upload<double>(a_host, {n, n}, {Split(2, 0, n, Devices())}));
  ASSERT_OK_AND_ASSIGN(Array x, client().Upload<double>(x0, {n}, {OnDevice(1, dev(0))}));
  const double zero = 0.0;
  ASSERT_OK_AND_ASSIGN(Array k0, client().Upload<double>(std::span<const double>(&zero, 1), {},
                                                         {OnDevice(0, dev(0))}));

  g::ProgramBuilder p;
  const g::Var av = p.Input("a");
  const g::Vars out =
      p.WhileLoop([&](std::span<const g::Var> s) { return s[1] < static_cast<double>(iterations); },
                  [&](std::span<const g::Var> s) {
                    const g::Var y = p.Linalg(v1::LINALG_OP_SOLVE, av, &s[0])[0];
                    return g::Vars{y / g::Sqrt(g::Sum(y * y)), s[1] + 1.0};
                  },
                  {p.Input("x"), p.Input("k")}, 100);
  p.Output("x_out", out[0]);
  ASSERT_OK_AND_ASSIGN(GraphRun run,
                       client().RunGraph(p.program(), {{"a", &a}, {"x", &x}, {"k", &k0}}));
  EXPECT_EQ(run.execution, v1::GRAPH_EXECUTION_EAGER);
  EXPECT_EQ(run.iterations, iterations);

  std::vector<long double> want(x0.begin(), x0.end());
  for (int it = 0; it < iterations; ++it) {
    want = HostSolve(a_host, want);
    long double norm = 0;
    for (long double v : want) norm += v * v;
    norm = std::sqrt(norm);
    for (long double& v : want) v /= norm;
  }
  ASSERT_OK_AND_ASSIGN(std::vector<double> got, run.outputs.at("x_out").Download<double>());
  ASSERT_EQ(static_cast<int64_t>(got.size()), n);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_NEAR(got[i], static_cast<double>(want[i]), 1e-12) << i;
  }
  EXPECT_EQ(*a.Download<double>(), a_host);
  EXPECT_EQ(*x.Download<double>(), x0);
  ExpectBystanderIntact();
}

TEST_P(GraphLinalgTest, ErrorsNameTheStatementAndLeaveTheDaemonServing) {
  const int64_t n = 6;
  std::vector<double> singular(n * n, 1.0);  // rank 1
  ASSERT_OK_AND_ASSIGN(Array s, client().Upload<double>(singular, {n, n}, {OnDevice(2, dev(0))}));
  std::vector<double> ones(n, 1.0);
  ASSERT_OK_AND_ASSIGN(Array b, client().Upload<double>(ones, {n}, {OnDevice(1, dev(0))}));
  ASSERT_OK_AND_ASSIGN(Array ints, client().Upload<int32_t>(std::vector<int32_t>(n * n, 1), {n, n},
                                                            {OnDevice(2, dev(0))}));
  const auto expect = [](const absl::Status& status, absl::StatusCode code,
                         const std::string& text) {
    EXPECT_EQ(status.code(), code) << status;
    EXPECT_TRUE(absl::StrContains(status.message(), text)) << status << "\nwant: " << text;
  };

  // A singular matrix, solved inside a loop: FAILED_PRECONDITION, as the Linalg RPC's.
  {
    g::ProgramBuilder p;
    const g::Var a = p.Input("a");
    const g::Vars out = p.WhileLoop([&](std::span<const g::Var> v) { return g::Sum(v[0]) < 1e300; },
                                    [&](std::span<const g::Var> v) {
                                      return g::Vars{p.Linalg(v1::LINALG_OP_SOLVE, a, &v[0])[0]};
                                    },
                                    {p.Input("b")}, 5);
    p.Output("x", out[0]);
    const absl::Status status = client().RunGraph(p.program(), {{"a", &s}, {"b", &b}}).status();
    expect(status, absl::StatusCode::kFailedPrecondition, "singular");
    // The message names the statement: the loop's body, then the Linalg RPC's field.
    expect(status, absl::StatusCode::kFailedPrecondition, ".while_loop.body[0].linalg.spec.a: ");
  }
  // The statement's own checks, before anything runs.
  const auto run = [&](const v1::Statement& statement, const std::string& output) {
    v1::Program program;
    program.add_inputs("a");
    program.add_inputs("b");
    *program.add_statements() = statement;
    program.add_outputs(output);
    return client().RunGraph(program, {{"a", &s}, {"b", &b}}).status();
  };
  v1::Statement qr;
  qr.mutable_linalg()->mutable_spec()->set_op(v1::LINALG_OP_QR);
  qr.mutable_linalg()->mutable_spec()->mutable_a()->set_variable("a");
  qr.mutable_linalg()->add_targets("q");
  expect(run(qr, "q"), absl::StatusCode::kInvalidArgument,
         "program.statements[0].linalg.targets: linalg LINALG_OP_QR has 2 result(s)");
  qr.mutable_linalg()->add_targets("q");
  expect(run(qr, "q"), absl::StatusCode::kInvalidArgument,
         "program.statements[0].linalg.targets[1]: 'q' is also targets[0]");
  qr.mutable_linalg()->set_targets(1, "r");
  qr.set_target("x");
  expect(run(qr, "q"), absl::StatusCode::kInvalidArgument,
         "program.statements[0].target: linalg assigns its results to linalg.targets");
  qr.clear_target();
  v1::Statement unknown = qr;
  unknown.mutable_linalg()->mutable_spec()->set_op(static_cast<v1::LinalgOp>(99));
  expect(run(unknown, "q"), absl::StatusCode::kInvalidArgument,
         "program.statements[0].linalg.spec.op: unknown linalg op 99");
  v1::Statement handle = qr;
  handle.mutable_linalg()->mutable_spec()->mutable_a()->set_handle(s.handle());
  expect(run(handle, "q"), absl::StatusCode::kInvalidArgument,
         "program.statements[0].linalg.spec.a.handle");
  // Per run: the operand's dtype and shape, named by the statement's field.
  {
    v1::Program program;
    program.add_inputs("a");
    *program.add_statements() = qr;
    program.add_outputs("q");
    expect(client().RunGraph(program, {{"a", &ints}}).status(), absl::StatusCode::kInvalidArgument,
           "program.statements[0].linalg.spec.a");
    expect(client().RunGraph(program, {{"a", &b}}).status(), absl::StatusCode::kInvalidArgument,
           "program.statements[0].linalg.spec.a");
  }
  // The daemon serves on: the QR program runs on a good matrix.
  ASSERT_OK_AND_ASSIGN(GraphRun good, client().RunGraph(
                                          [&] {
                                            v1::Program program;
                                            program.add_inputs("a");
                                            *program.add_statements() = qr;
                                            program.add_outputs("r");
                                            return program;
                                          }(),
                                          {{"a", &s}}));
  EXPECT_EQ(good.outputs.at("r").shape(), (std::vector<int64_t>{n, n}));
  ExpectBystanderIntact();
}

DISTARRAY_INSTANTIATE_BACKENDS(GraphLinalgTest);

}  // namespace
}  // namespace distarray::testing
