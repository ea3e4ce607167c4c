// distarray demo: the seed's example, end to end against a running distarrayd.
//   A = {0: a[:5], 1: a[5:10]} , C = {0: c[:7], 1: c[7:10]}
//   C2 = C.reshard(A.index_map)   -- only c[5:7] travels from device 0 to device 1
//   A + C2, a 2-D block-grid array, a SUM-mode array, and the seed's loop
//   `while all(a < 1000): a += 1` in one RunGraph call, each checked against the host.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_join.h"
#include "distarray/client.h"
#include "distarray/graph.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "distarrayd address");

namespace {

using distarray::SliceSpec;

std::string Describe(const distarray::v1::IndexMap& map) {
  std::vector<std::string> chunks;
  for (const auto& c : map.chunks()) {
    std::vector<std::string> slices;
    for (const auto& s : c.slices()) slices.push_back(absl::StrCat(s.start(), ":", s.stop()));
    chunks.push_back(absl::StrCat(c.device(), ": [", absl::StrJoin(slices, ", "), "]"));
  }
  return absl::StrCat("{", absl::StrJoin(chunks, ", "), "}");
}

template <typename T>
T Check(absl::StatusOr<T> result, const char* what) {
  if (!result.ok()) {
    std::fprintf(stderr, "demo: %s failed: %s\n", what, result.status().ToString().c_str());
    std::exit(1);
  }
  return *std::move(result);
}

void Expect(bool ok, const char* what) {
  std::printf("  %-52s %s\n", what, ok ? "ok" : "MISMATCH");
  if (!ok) std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  auto client = Check(distarray::Client::Connect(absl::GetFlag(FLAGS_server)), "connect");
  auto info = Check(client.ServerInfo(), "server info");
  std::printf("distarrayd %s, backend %s, %d devices\n", info.version().c_str(),
              info.backend().c_str(), info.devices_size());
  const int second = info.devices_size() > 1 ? 1 : 0;

  // The seed's reshard example.
  std::vector<double> a(10), c(10);
  std::iota(a.begin(), a.end(), 0.0);
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> uniform(-1, 1);
  for (double& x : c) x = uniform(rng);
  distarray::ArrayOptions a_layout{
      distarray::MakeIndexMap({distarray::MakeChunk(0, {SliceSpec{std::nullopt, 5}}),
                               distarray::MakeChunk(second, {SliceSpec{5, 10}})})};
  distarray::ArrayOptions c_layout{
      distarray::MakeIndexMap({distarray::MakeChunk(0, {SliceSpec{std::nullopt, 7}}),
                               distarray::MakeChunk(second, {SliceSpec{7, 10}})})};
  auto A = Check(client.Upload<double>(a, {10}, a_layout), "upload A");
  auto C = Check(client.Upload<double>(c, {10}, c_layout), "upload C");
  std::printf("A: %s\nC: %s\n", Describe(A.info().index_map()).c_str(),
              Describe(C.info().index_map()).c_str());
  auto C2 = Check(C.Reshard(A.info().index_map()), "reshard");
  std::printf("C.reshard(A.index_map): %s\n", Describe(C2.info().index_map()).c_str());
  auto sum = Check(A + C2, "A + C2");
  auto sum_values = Check(sum.Download<double>(), "download A + C2");
  bool ok = true;
  for (int i = 0; i < 10; ++i) ok &= sum_values[i] == a[i] + c[i];
  Expect(ok, "A + C.reshard(A.index_map) equals the host sum");

  // A 2-D array on a 2x2 block grid, scaled, resharded to row blocks.
  const int devices = info.devices_size();
  std::vector<int> all(devices);
  std::iota(all.begin(), all.end(), 0);
  auto B = Check(client.Create({64, 48}, distarray::v1::DTYPE_FLOAT32,
                               {distarray::BlockGrid2D(64, 48, 2, 2, all)},
                               [] {
                                 distarray::v1::Fill f;
                                 f.mutable_uniform()->set_low(-1);
                                 f.mutable_uniform()->set_high(1);
                                 f.mutable_uniform()->set_seed(7);
                                 return f;
                               }()),
                 "create B");
  auto B2 = Check(B * 2.0f, "B * 2");
  auto rows = Check(B2.Reshard(distarray::Split(2, 0, 64, all)), "reshard B2 to row blocks");
  auto b_values = Check(B.Download<float>(), "download B");
  auto row_values = Check(rows.Download<float>(), "download rows");
  ok = b_values.size() == row_values.size();
  for (size_t i = 0; ok && i < b_values.size(); ++i) ok = row_values[i] == b_values[i] * 2.0f;
  std::printf("B: 64x48 float32 on %s\n", Describe(B.info().index_map()).c_str());
  Expect(ok, "(B * 2) resharded to row blocks equals the host");

  // SUM mode: two overlapping copies whose sum is the value.
  auto replicated =
      Check(client.Create({8}, distarray::v1::DTYPE_INT64, {distarray::Replicated(1, {0, second})},
                          [] {
                            distarray::v1::Fill f;
                            f.mutable_arange()->set_start(1);
                            f.mutable_arange()->set_step(1);
                            return f;
                          }()),
            "create replicated");
  auto summed = Check(replicated.ChangeMode(distarray::v1::MODE_SUM), "change_mode SUM");
  auto back = Check(summed.ChangeMode(distarray::v1::MODE_REPLICA), "change_mode REPLICA");
  auto values = Check(back.Download<int64_t>(), "download");
  ok = true;
  for (int i = 0; i < 8; ++i) ok &= values[i] == i + 1;
  Expect(ok, "REPLICA -> SUM -> REPLICA keeps the values");

  // The seed's loop, `while all(a < 1000): a += 1`, in one RunGraph call: on the CUDA backend a
  // CUDA graph with a conditional WHILE node per GPU (split over two, the GPUs agree on the
  // condition on the devices); on the host backend, split over two, driven step by step.
  namespace g = distarray::graph;
  g::ProgramBuilder program;
  g::Var x = program.Input("a");
  g::Vars looped = program.WhileLoop([](auto v) { return g::All(v[0] < 1000.0f); },
                                     [](auto v) { return g::Vars{v[0] + 1.0f}; }, {x},
                                     /*max_iterations=*/100000);
  program.Output("a", looped[0]);
  const int64_t n = 100000;
  std::vector<float> seed(n);
  for (int64_t i = 0; i < n; ++i) seed[i] = static_cast<float>(i % 7);
  for (const auto& [label, layout] :
       {std::pair{"on device 0", distarray::Split(1, 0, n, {0})},
        std::pair{"split over 2 devices", distarray::Split(1, 0, n, {0, second})}}) {
    auto input = Check(client.Upload<float>(seed, {n}, {layout}), "upload loop input");
    const auto start = std::chrono::steady_clock::now();
    auto run = Check(client.RunGraph(program.program(), {{"a", &input}}), "RunGraph");
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    auto result = Check(run.outputs.at("a").Download<float>(), "download loop result");
    ok = run.iterations == 994;
    for (int64_t i = 0; ok && i < n; ++i) ok = result[i] == static_cast<float>(i % 7 + 994);
    std::printf("graph loop %s: %lld iterations, %s%s, %.2f ms\n", label,
                static_cast<long long>(run.iterations),
                run.execution != distarray::v1::GRAPH_EXECUTION_DEVICE_GRAPH ? "eager, step by step"
                : info.backend() != "cuda"                                   ? "one recorded graph"
                : layout.chunks_size() > 1 && second != 0
                    ? "a CUDA graph per GPU with a conditional WHILE node, agreeing on the device"
                    : "one CUDA graph with a conditional WHILE node",
                run.fused_loops > 0 ? ", its body one fused kernel" : "", ms);
    Expect(ok, "while all(a < 1000): a += 1 equals the host");
  }
  std::printf("demo passed\n");
  return 0;
}
