// A single-op request with many launches, run eagerly (one Reshard RPC: each piece launched
// from the host) against the same op as a one-statement RunGraph program (recorded once, then
// replayed from the daemon's graph cache), each + a Synchronize RPC, median of several runs.
// The ops: a square float32 matrix in row blocks resharded to column blocks over the GPUs (or
// device 0), so every (row block, column block) pair is one piece; and `a + b` of two such
// matrices in row blocks (one launch per block). This is the measurement behind
// docs/design.md's "Single-op requests stay eager". The two results are compared element for
// element; a mismatch makes the exit status 1.
//   request_graph_bench --server=127.0.0.1:PORT [--side=2048] [--blocks=8,32,64]
//                       [--chunks=16,64,256,1024]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "bench/figures.h"
#include "distarray/client.h"
#include "distarray/graph.h"
#include "distarray/index_maps.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "distarrayd address");
ABSL_FLAG(int64_t, side, 2048, "rows and columns of the float32 matrix");
ABSL_FLAG(std::string, blocks, "8,32,64", "row (and column) blocks per case: blocks^2 pieces");
ABSL_FLAG(std::string, chunks, "16,64,256,1024",
          "row blocks per elementwise case: one launch each");

namespace {

namespace v1 = distarray::v1;
namespace g = distarray::graph;
using Clock = std::chrono::steady_clock;

template <typename T>
T Must(absl::StatusOr<T> v, const char* what) {
  return distarray::bench::Must("request_graph_bench", std::move(v), what);
}

void Must(const absl::Status& status, const char* what) {
  distarray::bench::Must("request_graph_bench", status, what);
}

double Ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// `blocks` blocks along `axis`, dealt round-robin to `devices`.
v1::IndexMap Blocks(int64_t side, int axis, int64_t blocks, const std::vector<int>& devices) {
  std::vector<v1::Chunk> chunks;
  for (int64_t b = 0; b < blocks; ++b) {
    const distarray::SliceSpec part{side * b / blocks, side * (b + 1) / blocks};
    std::vector<distarray::SliceSpec> slices(2);
    slices[axis] = part;
    chunks.push_back(distarray::MakeChunk(devices[b % devices.size()], slices));
  }
  return distarray::MakeIndexMap(chunks);
}

// Median milliseconds of `op` + a Synchronize RPC, after two warm-ups.
template <typename Op>
double Timed(const distarray::Client& client, Op&& op) {
  std::vector<double> ms;
  for (int i = 0; i < 9; ++i) {
    Must(client.Synchronize(), "sync");
    const auto t0 = Clock::now();
    [[maybe_unused]] auto result = op();  // held until the Synchronize
    Must(client.Synchronize(), "sync");
    if (i >= 2) ms.push_back(Ms(t0, Clock::now()));
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// The comma-separated counts of `flag`, each in [1, max]; exit status 2 on a bad one.
std::vector<int64_t> Counts(const std::string& value, const char* flag, int64_t max) {
  std::vector<int64_t> counts;
  for (absl::string_view field : absl::StrSplit(value, ',')) {
    int64_t count = 0;
    if (!absl::SimpleAtoi(field, &count) || count < 1 || count > max) {
      std::fprintf(stderr, "request_graph_bench: %s: bad count '%s'\n", flag,
                   std::string(field).c_str());
      std::exit(2);
    }
    counts.push_back(count);
  }
  return counts;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const int64_t side = absl::GetFlag(FLAGS_side);
  // Both lists checked before anything runs.
  const std::vector<int64_t> block_counts = Counts(absl::GetFlag(FLAGS_blocks), "--blocks", side);
  const std::vector<int64_t> chunk_counts = Counts(absl::GetFlag(FLAGS_chunks), "--chunks", side);
  auto client = Must(distarray::Client::Connect(absl::GetFlag(FLAGS_server)), "connect");
  const auto info = Must(client.ServerInfo(), "server info");
  std::vector<int> devices;
  for (int d = 0; d < std::min(info.devices_size(), 2); ++d) devices.push_back(d);
  std::printf("request_graph_bench: backend %s, a %lldx%lld float32 matrix over %zu device(s)\n",
              info.backend().c_str(), static_cast<long long>(side), static_cast<long long>(side),
              devices.size());
  std::printf("| %-36s | %12s | %14s | %16s | %10s |\n", "reshard, row blocks -> column blocks",
              "Reshard RPC", "RunGraph (hit)", "first RunGraph", "eager/graph");
  bool ok = true;
  for (const int64_t blocks : block_counts) {
    v1::Fill fill;
    fill.mutable_uniform()->set_high(1);
    fill.mutable_uniform()->set_seed(static_cast<uint64_t>(blocks));
    auto a = Must(
        client.Create({side, side}, v1::DTYPE_FLOAT32, {Blocks(side, 0, blocks, devices)}, fill),
        "create");
    const v1::IndexMap target = Blocks(side, 1, blocks, devices);

    const double eager_ms = Timed(client, [&] { return Must(a.Reshard(target), "reshard"); });

    g::ProgramBuilder builder;
    builder.Output("b", builder.Reshard(builder.Input("a"), target));
    const std::string program = Must(client.RegisterProgram(builder.program()), "register");
    const auto t0 = Clock::now();
    auto first = Must(client.RunGraph(program, {{"a", &a}}), "first run");
    Must(client.Synchronize(), "sync");
    const double first_ms = Ms(t0, Clock::now());
    bool hit = true;
    std::vector<distarray::Array> replayed;  // kept: a delete inside the timing would count
    const double graph_ms = Timed(client, [&] {
      auto run = Must(client.RunGraph(program, {{"a", &a}}), "run");
      hit = hit && run.graph_cache_hit;
      replayed.push_back(std::move(run.outputs.at("b")));
      return run.graph_cache_hit;
    });

    // The recording run's result and the last replay's against the eager reshard's.
    const auto eager = Must(Must(a.Reshard(target), "reshard").Download<float>(), "download");
    const bool same = eager == Must(first.outputs.at("b").Download<float>(), "download") &&
                      eager == Must(replayed.back().Download<float>(), "download");
    ok = ok && same;
    std::printf("| %-36s | %9.3f ms | %11.3f ms | %13.3f ms | %9.2fx |\n",
                (std::to_string(blocks * blocks) + " pieces").c_str(), eager_ms, graph_ms, first_ms,
                eager_ms / graph_ms);
    std::printf("|   execution %s, cache hits on every timed run: %s; results equal: %s |\n",
                v1::GraphExecution_Name(first.execution).c_str(), hit ? "yes" : "no",
                same ? "yes" : "NO");
    Must(client.DeleteProgram(program), "delete program");
  }

  // Elementwise over many chunks: each chunk is one launch eagerly; a replay copies both
  // operands' chunks into the graph's slots and the result's out, one copy per chunk each.
  std::printf("| %-36s | %12s | %14s | %16s | %10s |\n", "a + b, row blocks", "Elementwise RPC",
              "RunGraph (hit)", "first RunGraph", "eager/graph");
  for (const int64_t chunks : chunk_counts) {
    const v1::IndexMap rows = Blocks(side, 0, chunks, devices);
    v1::Fill fill;
    fill.mutable_uniform()->set_high(1);
    fill.mutable_uniform()->set_seed(static_cast<uint64_t>(chunks));
    auto a = Must(client.Create({side, side}, v1::DTYPE_FLOAT32, {rows}, fill), "create a");
    fill.mutable_uniform()->set_seed(static_cast<uint64_t>(chunks) + 1000);
    auto b = Must(client.Create({side, side}, v1::DTYPE_FLOAT32, {rows}, fill), "create b");

    const double eager_ms = Timed(client, [&] { return Must(a + b, "a + b"); });

    g::ProgramBuilder builder;
    builder.Output("c", builder.Input("a") + builder.Input("b"));
    const std::string program = Must(client.RegisterProgram(builder.program()), "register");
    const auto t0 = Clock::now();
    auto first = Must(client.RunGraph(program, {{"a", &a}, {"b", &b}}), "first run");
    Must(client.Synchronize(), "sync");
    const double first_ms = Ms(t0, Clock::now());
    bool hit = true;
    std::vector<distarray::Array> replayed;  // kept: a delete inside the timing would count
    const double graph_ms = Timed(client, [&] {
      auto run = Must(client.RunGraph(program, {{"a", &a}, {"b", &b}}), "run");
      hit = hit && run.graph_cache_hit;
      replayed.push_back(std::move(run.outputs.at("c")));
      return run.graph_cache_hit;
    });

    const auto eager = Must(Must(a + b, "a + b").Download<float>(), "download");
    const bool same = eager == Must(first.outputs.at("c").Download<float>(), "download") &&
                      eager == Must(replayed.back().Download<float>(), "download");
    ok = ok && same;
    std::printf("| %-36s | %9.3f ms | %11.3f ms | %13.3f ms | %9.2fx |\n",
                (std::to_string(chunks) + " chunks").c_str(), eager_ms, graph_ms, first_ms,
                eager_ms / graph_ms);
    std::printf("|   execution %s, cache hits on every timed run: %s; results equal: %s |\n",
                v1::GraphExecution_Name(first.execution).c_str(), hit ? "yes" : "no",
                same ? "yes" : "NO");
    Must(client.DeleteProgram(program), "delete program");
  }
  return ok ? 0 : 1;
}
