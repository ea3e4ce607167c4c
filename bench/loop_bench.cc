// The seed's loop, `while all(a < 1000): a += 1` (float32, a[i] = i % 7, 994 iterations), through
// one RunGraph RPC at 1e5, 1e6 and 1e7 elements, on one GPU and split over two and four where the
// daemon has them (a recorded CUDA graph per GPU, agreeing on the condition), against the same loop
// driven by the client one RPC per op and the peers loop_peers.py measured just before in the same
// run (NumPy, plain CuPy, JAX by default and with its loop in a CUDA graph). Prints per size: the
// first run (record + instantiate + run), the median of 5 later runs end to end, microseconds per
// iteration, and ratios; and the same loop on float16 arrays (device time against float32's).
// What the RPC adds to the device time is set against an empty gRPC call and against a
// do-nothing call held on the server as long as the device time (baseline_service.h, served in
// this process): gRPC's own cost around a call that lasts milliseconds.
// Every result is checked; a wrong one makes the exit status 1.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "bench/baseline_service.h"
#include "bench/figures.h"
#include "distarray/client.h"
#include "distarray/graph.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "distarrayd address");
ABSL_FLAG(std::string, peers_file, "", "key value lines from loop_peers.py");
ABSL_FLAG(std::string, sizes, "100000,1000000,10000000", "element counts");
ABSL_FLAG(int, repeats, 5, "timed RunGraph calls per size (the median is reported)");
ABSL_FLAG(std::string, baseline, "",
          "address of the do-nothing baseline served by another process (distarray_bench "
          "--serve_baseline_port_file); empty: served in this process");
ABSL_FLAG(bool, trace_calls, false,
          "print each timed RunGraph and held call's send and receive times on the host's "
          "monotonic clock ('trace' lines), to set against the daemon's debug log and the held "
          "call's own span (bench/trace_legs.py joins them)");
ABSL_FLAG(int64_t, rpc_loop_max_elements, 1000000,
          "largest size at which the client-driven loop (one RPC per op) is timed");

namespace {

namespace v1 = distarray::v1;
namespace g = distarray::graph;
using Clock = std::chrono::steady_clock;

constexpr int64_t kIterations = 994;

double Ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

template <typename T>
T Must(absl::StatusOr<T> v, const char* what) {
  return distarray::bench::Must("loop_bench", std::move(v), what);
}

using distarray::bench::ReadFigures;

// "1e5", "5e6": the peers' keys name sizes this way (a size that is not d·10^k keeps its digits).
std::string Tag(int64_t n) {
  const std::string digits = std::to_string(n);
  if (digits.size() < 2 || digits.find_first_not_of('0', 1) != std::string::npos) return digits;
  return absl::StrCat(digits.substr(0, 1), "e", digits.size() - 1);
}

v1::Program SeedLoop() {
  g::ProgramBuilder p;
  g::Var a = p.Input("a");
  g::Vars out = p.WhileLoop([](auto v) { return g::All(v[0] < 1000.0f); },
                            [](auto v) { return g::Vars{v[0] + 1.0f}; }, {a}, 1 << 20);
  p.Output("a", out[0]);
  return p.program();
}

bool Correct(const distarray::Array& result, int64_t n) {
  auto values = Must(result.Download<float>(), "download");
  for (int64_t i = 0; i < n; ++i) {
    if (values[i] != static_cast<float>(i % 7 + kIterations)) return false;
  }
  return true;
}

void Row(const std::string& what, double ms, const std::string& against,
         std::optional<double> theirs) {
  if (theirs) {
    std::printf("| %-40s | %9.2f ms | %7.2f us/it | %-28s | %9.2f ms | %6.2fx |\n", what.c_str(),
                ms, ms * 1e3 / kIterations, against.c_str(), *theirs, *theirs / ms);
  } else {
    std::printf("| %-40s | %9.2f ms | %7.2f us/it | %-28s | %12s | %7s |\n", what.c_str(), ms,
                ms * 1e3 / kIterations, against.c_str(), "n/a", "-");
  }
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  auto client = Must(distarray::Client::Connect(absl::GetFlag(FLAGS_server)), "connect");
  const auto info = Must(client.ServerInfo(), "server info");
  const auto peers = ReadFigures(absl::GetFlag(FLAGS_peers_file));
  auto peer = [&](const std::string& key) -> std::optional<double> {
    auto it = peers.find(key);
    if (it == peers.end()) return std::nullopt;
    return it->second;
  };
  const int devices = info.devices_size();
  std::printf("loop_bench: backend %s, %d device(s); seed loop, %lld iterations\n",
              info.backend().c_str(), devices, static_cast<long long>(kIterations));

  // An (almost) empty call in this run, for the end-to-end comparison (KeepAlive is no SDK call:
  // a stub of its own sends it, without a session as before).
  auto stub = v1::ArrayService::NewStub(
      grpc::CreateChannel(absl::GetFlag(FLAGS_server), grpc::InsecureChannelCredentials()));
  std::vector<double> empty;
  for (int i = 0; i < 300; ++i) {
    grpc::ClientContext context;
    v1::KeepAliveResponse response;
    const auto t0 = Clock::now();
    if (!stub->KeepAlive(&context, v1::KeepAliveRequest(), &response).ok()) return 2;
    empty.push_back(Ms(t0, Clock::now()));
  }
  std::sort(empty.begin(), empty.end());
  const double empty_ms = empty[empty.size() / 2];
  std::printf("| near-empty RPC (KeepAlive) p50: %.3f ms |\n", empty_ms);

  // The do-nothing baseline in this process: an empty call, and calls held on the server.
  distarray::bench::BaselineService baseline;
  std::string baseline_address = absl::GetFlag(FLAGS_baseline);
  std::unique_ptr<grpc::Server> baseline_server;
  if (baseline_address.empty()) {
    int baseline_port = 0;
    baseline_server = distarray::bench::StartBaseline(baseline, &baseline_port);
    if (baseline_server == nullptr) return 2;
    baseline_address = absl::StrCat("127.0.0.1:", baseline_port);
  }
  std::printf("| do-nothing baseline: %s |\n",
              baseline_server != nullptr ? "served in this process" : "served by another process");
  auto baseline_stub = distarray::bench::Baseline::NewStub(
      grpc::CreateChannel(baseline_address, grpc::InsecureChannelCredentials()));
  const bool trace = absl::GetFlag(FLAGS_trace_calls);
  // The median end-to-end time of `count` calls held `micros` on the server.
  auto held_call_ms = [&](int64_t micros, int count) {
    std::vector<double> times;
    distarray::bench::HoldRequest request;
    request.set_micros(micros);
    for (int i = 0; i < count; ++i) {
      grpc::ClientContext context;
      distarray::bench::HoldTimes out;
      const auto t0 = Clock::now();
      if (!baseline_stub->Hold(&context, request, &out).ok()) return -1.0;
      const auto t1 = Clock::now();
      times.push_back(Ms(t0, t1));
      if (trace && micros > 0) {
        std::printf("trace held %lld %lld %lld %lld\n",
                    static_cast<long long>(distarray::bench::SteadyNanos(t0)),
                    static_cast<long long>(out.entered_ns()), static_cast<long long>(out.left_ns()),
                    static_cast<long long>(distarray::bench::SteadyNanos(t1)));
      }
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  };
  // The same held call made asynchronously, the client polling its completion queue without
  // sleeping: what the client's wake-up at a long call's end costs.
  auto held_call_spinning_ms = [&](int64_t micros, int count) {
    std::vector<double> times;
    distarray::bench::HoldRequest request;
    request.set_micros(micros);
    grpc::CompletionQueue cq;
    for (int i = 0; i < count; ++i) {
      grpc::ClientContext context;
      distarray::bench::HoldTimes out;
      grpc::Status status;
      const auto t0 = Clock::now();
      auto rpc = baseline_stub->AsyncHold(&context, request, &cq);
      rpc->Finish(&out, &status, reinterpret_cast<void*>(1));
      void* tag = nullptr;
      bool ok = false;
      while (cq.AsyncNext(&tag, &ok, std::chrono::system_clock::now()) !=
             grpc::CompletionQueue::GOT_EVENT) {
      }
      times.push_back(Ms(t0, Clock::now()));
      if (!status.ok()) return -1.0;
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  };
  const double baseline_empty_ms = held_call_ms(0, 300);
  for (const int64_t micros : {0, 3000}) {
    std::printf("| held %lld us: blocking %.3f ms, client spinning %.3f ms |\n",
                static_cast<long long>(micros), held_call_ms(micros, 50),
                held_call_spinning_ms(micros, 50));
  }
  std::printf("| empty gRPC call (do-nothing server in this process) p50: %.3f ms |\n",
              baseline_empty_ms);

  const v1::Program program = SeedLoop();
  bool ok = true;
  std::vector<int64_t> sizes;
  for (absl::string_view s : absl::StrSplit(absl::GetFlag(FLAGS_sizes), ',')) {
    sizes.push_back(std::stoll(std::string(s)));
  }
  for (const int64_t n : sizes) {
    std::vector<float> start(n);
    for (int64_t i = 0; i < n; ++i) start[i] = static_cast<float>(i % 7);
    for (int gpus : {1, 2, 4}) {
      if (gpus > devices) break;
      std::vector<int> layout_devices;
      for (int d = 0; d < gpus; ++d) layout_devices.push_back(d);
      const auto map = distarray::Split(1, 0, n, layout_devices);
      auto a = Must(client.Upload<float>(start, {n}, {map}), "upload");
      const auto t0 = Clock::now();
      auto first = Must(client.RunGraph(program, {{"a", &a}}), "RunGraph");
      const double first_ms = Ms(t0, Clock::now());
      ok &= first.iterations == kIterations && Correct(first.outputs.at("a"), n);
      std::vector<double> times, device_times;
      bool hit = true;
      const int repeats = std::max(1, absl::GetFlag(FLAGS_repeats));
      for (int rep = 0; rep < repeats; ++rep) {
        const auto t1 = Clock::now();
        auto run = Must(client.RunGraph(program, {{"a", &a}}), "RunGraph");
        const auto t2 = Clock::now();
        times.push_back(Ms(t1, t2));
        if (trace) {
          std::printf("trace RunGraph %lld %lld %.0f\n",
                      static_cast<long long>(distarray::bench::SteadyNanos(t1)),
                      static_cast<long long>(distarray::bench::SteadyNanos(t2)),
                      run.device_seconds * 1e9);
        }
        device_times.push_back(run.device_seconds * 1e3);
        hit &= run.graph_cache_hit;
        if (rep == repeats - 1)
          ok &= run.iterations == kIterations && Correct(run.outputs.at("a"), n);
      }
      std::sort(times.begin(), times.end());
      std::sort(device_times.begin(), device_times.end());
      const double ms = times[times.size() / 2];
      const double device_ms = device_times[device_times.size() / 2];
      const bool graph = first.execution == v1::GRAPH_EXECUTION_DEVICE_GRAPH;
      const std::string label = absl::StrCat("n=", Tag(n), ", ", gpus, " GPU", gpus > 1 ? "s" : "",
                                             graph ? ", RunGraph (graph)" : ", RunGraph (eager)");
      std::printf("| %s: first run %.1f ms%s |\n", label.c_str(), first_ms,
                  graph ? (hit ? " (record + instantiate + run); later runs hit the cache"
                               : " (record + instantiate + run); later runs MISSED the cache")
                        : "");
      const std::string t = Tag(n);
      Row(label, ms, "NumPy (CPU)", peer("numpy_" + t + "_ms"));
      Row(label, ms, "plain CuPy, 1 GPU", peer("cupy_" + t + "_ms"));
      Row(label, ms, absl::StrCat("JAX default, ", gpus, " GPU"),
          peer(absl::StrCat("jax_default_", gpus, "gpu_", t, "_ms")));
      Row(label, ms, absl::StrCat("JAX CUDA graph, ", gpus, " GPU"),
          peer(absl::StrCat("jax_graph_", gpus, "gpu_", t, "_ms")));
      if (device_ms > 0) {
        std::printf(
            "| %s: device time %.2f ms (%.2f us/iter); end to end %.2f ms = device + %.2f ms "
            "(%.2f near-empty RPCs) |\n",
            label.c_str(), device_ms, device_ms * 1e3 / kIterations, ms, ms - device_ms,
            (ms - device_ms) / empty_ms);
        const double held_ms = held_call_ms(static_cast<int64_t>(device_ms * 1e3), repeats);
        std::printf(
            "| %s: a do-nothing call held %.2f ms on the server: end to end + %.3f ms; RunGraph "
            "adds %.3f ms, %.2fx that |\n",
            label.c_str(), device_ms, held_ms - device_ms, ms - device_ms,
            (ms - device_ms) / (held_ms - device_ms));
      } else {
        std::printf("| %s: no device time reported (eager or host) |\n", label.c_str());
      }

#if defined(__FLT16_MAX__)
      {
        // The same loop on float16 arrays (integers to 2048 are exact in float16, so the result
        // is the same): stored in 16 bits, computed in float32, fused like the float32 loop.
        std::vector<_Float16> start16(start.begin(), start.end());
        auto h = Must(client.Upload<_Float16>(start16, {n}, {map}), "upload float16");
        Must(client.RunGraph(program, {{"a", &h}}), "RunGraph float16");  // records
        std::vector<double> half_device;
        int fused = 0;
        for (int rep = 0; rep < 5; ++rep) {
          auto run = Must(client.RunGraph(program, {{"a", &h}}), "RunGraph float16");
          half_device.push_back(run.device_seconds * 1e3);
          fused = run.fused_loops;
          if (rep == 4) {
            const auto got = Must(run.outputs.at("a").Download<_Float16>(), "download float16");
            bool right = run.iterations == kIterations && got.size() == static_cast<size_t>(n);
            for (int64_t i = 0; right && i < n; ++i) {
              right = static_cast<float>(got[i]) == static_cast<float>(i % 7 + kIterations);
            }
            ok &= right;
          }
        }
        std::sort(half_device.begin(), half_device.end());
        const double half_ms = half_device[half_device.size() / 2];
        if (half_ms > 0 && device_ms > 0) {
          std::printf(
              "| %s, float16: device time %.2f ms (%.2f us/iter), %s; float32 %.2f ms: %.2fx |\n",
              label.c_str(), half_ms, half_ms * 1e3 / kIterations,
              fused > 0 ? "fused" : "not fused", device_ms, device_ms / half_ms);
        }
      }
#endif

      if (gpus == 1 && n <= absl::GetFlag(FLAGS_rpc_loop_max_elements)) {
        // The same loop driven by the client: less, all, read the flag, add; one RPC each.
        const auto t2 = Clock::now();
        std::optional<distarray::Array> x;
        x.emplace(Must(client.Upload<float>(start, {n}, {map}), "upload"));
        int64_t iterations = 0;
        while (true) {
          auto below = Must(distarray::Ufunc(v1::ELEMENTWISE_OP_LESS, {*x, 1000.0f}), "less");
          auto all = Must(distarray::Reduce(below, v1::REDUCE_OP_ALL, {}, false, true), "all");
          if (!Must(all.Download<bool>(), "flag")[0]) break;
          x.emplace(Must(*x + 1.0f, "add"));
          ++iterations;
        }
        const double rpc_ms = Ms(t2, Clock::now());
        ok &= iterations == kIterations && Correct(*x, n);
        Row(label, ms, "client loop, one RPC per op", rpc_ms);
      }
    }
  }
  std::printf("loop_bench: %s\n", ok ? "all results correct" : "A RESULT WAS WRONG");
  return ok ? 0 : 1;
}
