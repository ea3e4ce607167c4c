// The 2-D Jacobi stencil of the array-language issue, written as a NumPy user writes it,
//   u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
// as get_item / elementwise / set_item statements inside one RunGraph while loop, float32, rows
// split over 1 and 2 GPUs (the halo rows move between the GPUs inside the graph). Against the
// peers of the same run (../shared anchors' turn3_peers.py stencil: CuPy on one GPU, JAX jit +
// fori_loop on one and two GPUs) and against the floor: each GPU reading and writing its rows
// once per iteration at the device-copy rate (peer_limit's device_copy_1GiB_GBps). Every size is
// first checked against a host reference in double precision on a small grid.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
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
ABSL_FLAG(std::string, peers_file, "", "key value lines from turn3_peers.py stencil");
ABSL_FLAG(std::string, peer_file, "", "key value lines from peer_limit (device copy rate)");
ABSL_FLAG(int64_t, iterations, 1000, "stencil sweeps per RunGraph");
ABSL_FLAG(std::vector<std::string>, sizes, std::vector<std::string>({"4096", "16384"}),
          "grid sides to time");

namespace {

namespace v1 = distarray::v1;
namespace g = distarray::graph;
using distarray::Index;
using distarray::Slice;
using Clock = std::chrono::steady_clock;

template <typename T>
T Must(absl::StatusOr<T> v, const char* what) {
  return distarray::bench::Must("stencil_bench", std::move(v), what);
}

// `iterations` Jacobi sweeps of u (n x n) in one while loop; the counter i (0-d int32) is the
// loop's condition.
v1::Program Jacobi(int64_t iterations) {
  g::ProgramBuilder p;
  const g::Var u = p.Input("u");
  const g::Var i = p.Input("i");
  g::Vars out = p.WhileLoop([iterations](auto v) { return v[1] < static_cast<double>(iterations); },
                            [](auto v) {
                              g::ProgramBuilder& b = v[0].builder();
                              const g::Var& grid = v[0];
                              const Slice inner{1, -1};
                              const g::Var up = b.GetItem(grid, {Slice{.stop = -2}, inner});
                              const g::Var down = b.GetItem(grid, {Slice{.start = 2}, inner});
                              const g::Var left = b.GetItem(grid, {inner, Slice{.stop = -2}});
                              const g::Var right = b.GetItem(grid, {inner, Slice{.start = 2}});
                              const g::Var next = 0.25 * (up + down + left + right);
                              return g::Vars{b.SetItem(grid, {inner, inner}, next), v[1] + 1};
                            },
                            {u, i}, iterations + 1);
  p.Output("u", out[0]);
  return p.program();
}

std::vector<double> HostJacobi(std::vector<double> u, int64_t n, int64_t iterations) {
  std::vector<double> next = u;
  for (int64_t k = 0; k < iterations; ++k) {
    for (int64_t r = 1; r < n - 1; ++r) {
      for (int64_t c = 1; c < n - 1; ++c) {
        next[r * n + c] =
            0.25 * (u[(r - 1) * n + c] + u[(r + 1) * n + c] + u[r * n + c - 1] + u[r * n + c + 1]);
      }
    }
    std::swap(u, next);
    // Borders never change: both buffers keep them.
  }
  return u;
}

struct Run {
  double ms = 0;         // end to end, median
  double device_ms = 0;  // the replay's device time, median (0 when eager)
  v1::GraphExecution execution = v1::GRAPH_EXECUTION_UNSPECIFIED;
  distarray::GraphRun last;
};

Run Time(distarray::Client& client, const v1::Program& program, int64_t n, int gpus, int repeats,
         std::optional<distarray::Array>* grid_out = nullptr) {
  std::vector<int> on;
  for (int d = 0; d < gpus; ++d) on.push_back(d);
  v1::Fill fill;
  fill.mutable_uniform()->set_high(1);
  fill.mutable_uniform()->set_seed(7);
  auto u = Must(client.Create({n, n}, v1::DTYPE_FLOAT32, {distarray::Split(2, 0, n, on)}, fill),
                "create u");
  auto i = Must(client.Create({}, v1::DTYPE_INT32, {distarray::Replicated(0, on)}), "create i");
  Run run;
  std::vector<double> times, device_times;
  for (int k = 0; k <= repeats; ++k) {  // the first run records and instantiates
    const auto t0 = Clock::now();
    run.last = Must(client.RunGraph(program, {{"u", &u}, {"i", &i}}), "RunGraph");
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    run.execution = run.last.execution;
    if (k == 0) continue;
    times.push_back(ms);
    device_times.push_back(run.last.device_seconds * 1e3);
  }
  std::sort(times.begin(), times.end());
  std::sort(device_times.begin(), device_times.end());
  run.ms = times[times.size() / 2];
  run.device_ms = device_times[device_times.size() / 2];
  if (grid_out != nullptr) grid_out->emplace(std::move(u));
  return run;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const auto peers = distarray::bench::ReadFigures(absl::GetFlag(FLAGS_peers_file));
  const auto limits = distarray::bench::ReadFigures(absl::GetFlag(FLAGS_peer_file));
  auto figure = [](const auto& figures, const std::string& key) -> std::optional<double> {
    auto it = figures.find(key);
    if (it == figures.end()) return std::nullopt;
    return it->second;
  };
  auto client = Must(distarray::Client::Connect(absl::GetFlag(FLAGS_server)), "connect");
  const int devices = Must(client.ServerInfo(), "server info").devices_size();
  const int64_t iterations = absl::GetFlag(FLAGS_iterations);
  std::printf("stencil_bench: 2-D Jacobi, float32, %lld sweeps in one RunGraph; %d device(s)\n",
              static_cast<long long>(iterations), devices);

  // Correctness first: a small grid against the host in double precision, on every GPU count.
  bool ok = true;
  for (int gpus = 1; gpus <= std::min(devices, 2); ++gpus) {
    const int64_t n = 66, sweeps = 20;
    std::optional<distarray::Array> grid;
    Run small = Time(client, Jacobi(sweeps), n, gpus, 1, &grid);
    const auto start = Must(grid->Download<float>(), "download start");
    const auto got = Must(small.last.outputs.at("u").Download<float>(), "download result");
    const std::vector<double> want =
        HostJacobi(std::vector<double>(start.begin(), start.end()), n, sweeps);
    double worst = 0;
    for (size_t k = 0; k < want.size(); ++k) {
      worst = std::max(worst, std::abs(got[k] - want[k]));
    }
    const bool close = worst < 1e-5;
    ok = ok && close;
    std::printf("| check: %lldx%lld, %lld sweeps, %d GPU(s), %s: max |error| %.2e %s |\n",
                static_cast<long long>(n), static_cast<long long>(n),
                static_cast<long long>(sweeps), gpus,
                small.execution == v1::GRAPH_EXECUTION_DEVICE_GRAPH ? "device graph" : "eager",
                worst, close ? "ok" : "WRONG");
  }

  const v1::Program program = Jacobi(iterations);
  const std::optional<double> copy_gbps = figure(limits, "device_copy_1GiB_GBps");
  for (const std::string& side : absl::GetFlag(FLAGS_sizes)) {
    const int64_t n = std::stoll(side);
    for (int gpus = 1; gpus <= std::min(devices, 2); ++gpus) {
      const Run run = Time(client, program, n, gpus, 3);
      const double per_iter_us = (run.device_ms > 0 ? run.device_ms : run.ms) * 1e3 / iterations;
      std::printf("| %lld^2 over %d GPU(s), %s: %.1f us/iter (end to end %.1f ms) |\n",
                  static_cast<long long>(n), gpus,
                  run.execution == v1::GRAPH_EXECUTION_DEVICE_GRAPH ? "device graph" : "eager",
                  per_iter_us, run.ms);
      if (copy_gbps) {
        // Each GPU reads and writes its rows once per sweep.
        const double floor_us = 2.0 * n * n * 4 / gpus / (*copy_gbps * 1e9) * 1e6;
        std::printf(
            "|   floor (read + write its rows once at the device-copy rate): %.1f us: "
            "%.2fx the floor |\n",
            floor_us, per_iter_us / floor_us);
      }
      for (const auto& [name, key] :
           {std::pair{"CuPy, 1 GPU", "cupy_1gpu"}, std::pair{"JAX jit, 1 GPU", "jax_1gpu"},
            std::pair{"JAX jit, sharded over 2 GPUs", "jax_2gpu"}}) {
        // The peers time 1000 sweeps and print the total in ms: numerically us per sweep.
        const auto total_ms = figure(peers, absl::StrCat("stencil_", key, "_N", n, "_ms"));
        if (!total_ms) continue;
        const double theirs = *total_ms * 1e3 / 1000;
        std::printf("|   vs %-30s %8.1f us/iter: %.2fx |\n", name, theirs, theirs / per_iter_us);
      }
    }
  }
  return ok ? 0 : 1;
}
