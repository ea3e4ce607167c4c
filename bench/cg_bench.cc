// Conjugate gradient on a dense symmetric positive-definite float64 system (A[i][j] =
// exp(-|i-j|/16), b = 1, x0 = 0, n = 8192), the whole solve in one RunGraph RPC: the loop runs
// on the GPU with the residual test in its condition (a recorded CUDA graph with cuBLAS inside
// its WHILE node). Against cg_peers.py's figures from the same run: plain CuPy driving the same
// iteration from the host (the residual read back every iteration) and JAX's
// jax.scipy.sparse.linalg.cg under jit. Every solve is checked: the true residual
// ||b - A x|| / ||b||, computed on the host in long double, and the iteration count against the
// peers'. On one GPU it runs twice: with A @ p as the peers compute it, and with the products
// declaring A symmetric (MatmulOpSpec.a_symmetric: cuBLAS symv reads the upper triangle, half the
// bytes of the matvec that bounds an iteration). Split over two GPUs (rows) it records a graph per
// GPU with the copies between them inside (docs/graphs.md); where it cannot, it runs step by step,
// reported for what it is.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "bench/figures.h"
#include "distarray/client.h"
#include "distarray/graph.h"
#include "distarray/index_maps.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "distarrayd address");
ABSL_FLAG(std::string, peers_file, "", "key value lines from cg_peers.py");
ABSL_FLAG(int64_t, n, 8192, "unknowns");
ABSL_FLAG(int64_t, max_iterations, 10000, "the loop's cap");
ABSL_FLAG(int, repeats, 5, "timed solves (the median is reported)");
ABSL_FLAG(int, only_gpus, 0, "time only the layouts over this many GPUs (0: every layout)");

namespace {

namespace v1 = distarray::v1;
namespace g = distarray::graph;
using Clock = std::chrono::steady_clock;

// Stop when r·r <= kRelativeTolerance² · b·b, as cg_peers.py and JAX's cg (tol = 1e-8, atol = 0).
constexpr double kRelativeTolerance = 1e-8;

template <typename T>
T Must(absl::StatusOr<T> v, const char* what) {
  return distarray::bench::Must("cg_bench", std::move(v), what);
}

using distarray::bench::ReadFigures;

// x = 0, r = b - A x, p = r, rr = r·r; while rr > tol2: the textbook iteration. `symmetric`:
// the products say A is symmetric (MatmulOpSpec.a_symmetric), so a whole A is read by its upper
// triangle (half the bytes).
v1::Program ConjugateGradient(double tol2, int64_t max_iterations, bool symmetric) {
  g::ProgramBuilder p;
  const g::Var a = p.Input("A");
  const g::Var b = p.Input("b");
  const g::Var x = p.Input("x");
  auto times = [&a, symmetric](g::ProgramBuilder& builder, const g::Var& v) {
    return symmetric ? builder.SymmetricMatmul(a, v) : builder.Matmul(a, v);
  };
  const g::Var r = b - times(p, x);
  const g::Var rr = g::Sum(r * r);
  g::Vars out = p.WhileLoop([tol2](auto v) { return v[3] > tol2; },
                            [&times](auto v) {
                              g::ProgramBuilder& builder = v[0].builder();
                              const g::Var ap = times(builder, v[2]);
                              const g::Var alpha = v[3] / g::Sum(v[2] * ap);
                              const g::Var x_next = v[0] + alpha * v[2];
                              const g::Var r_next = v[1] - alpha * ap;
                              const g::Var rr_next = g::Sum(r_next * r_next);
                              const g::Var p_next = r_next + (rr_next / v[3]) * v[2];
                              return g::Vars{x_next, r_next, p_next, rr_next};
                            },
                            {x, r, r, rr}, max_iterations);
  p.Output("x", out[0]);
  p.ValueOutput("rr", out[3]);
  return p.program();
}

// ||b - A x|| / ||b|| in long double, A and b as built below.
double TrueResidual(const std::vector<double>& a, const std::vector<double>& x, int64_t n) {
  long double residual = 0, norm_b = 0;
  for (int64_t i = 0; i < n; ++i) {
    long double ax = 0;
    for (int64_t j = 0; j < n; ++j) ax += static_cast<long double>(a[i * n + j]) * x[j];
    residual += (1 - ax) * (1 - ax);
    norm_b += 1;
  }
  return static_cast<double>(std::sqrt(residual / norm_b));
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int64_t n = absl::GetFlag(FLAGS_n);
  const auto peers = ReadFigures(absl::GetFlag(FLAGS_peers_file));
  auto peer = [&](const std::string& key) -> std::optional<double> {
    auto it = peers.find(key);
    if (it == peers.end()) return std::nullopt;
    return it->second;
  };
  auto client = Must(distarray::Client::Connect(absl::GetFlag(FLAGS_server)), "connect");
  const int devices = Must(client.ServerInfo(), "server info").devices_size();

  std::vector<double> a(n * n), b(n, 1.0), zeros(n, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) a[i * n + j] = std::exp(-std::abs(i - j) / 16.0);
  }
  const double tol2 = kRelativeTolerance * kRelativeTolerance * static_cast<double>(n);
  const int64_t max_iterations = absl::GetFlag(FLAGS_max_iterations);
  std::printf(
      "cg_bench: n = %lld, float64, A[i][j] = exp(-|i-j|/16), b = 1, stop at "
      "||r|| <= 1e-8 ||b||; %d device(s)\n",
      static_cast<long long>(n), devices);

  bool ok = true;
  // One GPU twice: A @ p as JAX's cg computes it, then with A declared symmetric; then rows over
  // 2 and 4 GPUs (a row block is no symmetric matrix: the plain products).
  for (const auto& [gpus, symmetric] :
       {std::pair{1, false}, std::pair{1, true}, std::pair{2, false}, std::pair{4, false}}) {
    if (gpus > devices) break;
    if (absl::GetFlag(FLAGS_only_gpus) > 0 && gpus != absl::GetFlag(FLAGS_only_gpus)) continue;
    const v1::Program program = ConjugateGradient(tol2, max_iterations, symmetric);
    std::vector<int> on;
    for (int d = 0; d < gpus; ++d) on.push_back(d);
    distarray::ArrayOptions rows{distarray::Split(2, 0, n, on)};
    auto matrix = Must(client.Upload<double>(a, {n, n}, rows), "upload A");
    auto rhs = Must(client.Upload<double>(b, {n, 1}, rows), "upload b");
    auto x0 = Must(client.Upload<double>(zeros, {n, 1}, rows), "upload x");
    const std::string label = gpus > 1    ? absl::StrCat("rows over ", gpus, " GPUs")
                              : symmetric ? "1 GPU, A declared symmetric (upper triangle read)"
                                          : "1 GPU";
    std::vector<double> times, device_times;
    distarray::GraphRun last;
    const int repeats = gpus == 1 ? absl::GetFlag(FLAGS_repeats) : 1;
    for (int k = 0; k <= repeats; ++k) {  // the first run records and instantiates
      const auto t0 = Clock::now();
      auto run = client.RunGraph(program, {{"A", &matrix}, {"b", &rhs}, {"x", &x0}});
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      if (!run.ok()) {
        std::printf("| CG, %s: RunGraph failed: %s |\n", label.c_str(),
                    run.status().ToString().c_str());
        ok = false;
        break;
      }
      if (k == 0) {
        std::printf("| CG, %s: first run %.1f ms (%s) |\n", label.c_str(), ms,
                    run->execution == v1::GRAPH_EXECUTION_DEVICE_GRAPH ? "record + run" : "eager");
      } else {
        times.push_back(ms);
        device_times.push_back(run->device_seconds * 1e3);
      }
      last = *std::move(run);
    }
    if (times.empty()) continue;
    std::sort(times.begin(), times.end());
    std::sort(device_times.begin(), device_times.end());
    const double ms = times[times.size() / 2];
    const double device_ms = device_times[device_times.size() / 2];
    const auto x = Must(last.outputs.at("x").Download<double>(), "download x");
    const double residual = TrueResidual(a, x, n);
    const bool converged = residual <= 1e-7;
    ok = ok && converged;
    std::printf(
        "| CG, %s: %lld iterations, %.2f ms end to end (device %.2f ms, %.1f us/iter); "
        "true relative residual %.3e %s |\n",
        label.c_str(), static_cast<long long>(last.iterations), ms, device_ms,
        device_ms * 1e3 / std::max<int64_t>(1, last.iterations), residual,
        converged ? "ok" : "NOT CONVERGED");
    for (const auto& [name, key] : {std::pair{"plain CuPy, host-driven, 1 GPU", "cupy"},
                                    std::pair{"JAX cg under jit, 1 GPU", "jax"}}) {
      const auto theirs = peer(std::string("cg_") + key + "_ms");
      const auto their_iterations = peer(std::string("cg_") + key + "_iterations");
      if (!theirs) {
        std::printf("|   vs %-32s: n/a (peer not measured) |\n", name);
        continue;
      }
      std::printf("|   vs %-32s: %9.2f ms, %5.0f iterations: %.2fx |\n", name, *theirs,
                  their_iterations.value_or(-1), *theirs / ms);
      if (their_iterations && std::abs(*their_iterations - last.iterations) > 2) {
        std::printf("|   iteration counts differ by more than 2 |\n");
        ok = false;
      }
    }
  }
  return ok ? 0 : 1;
}
