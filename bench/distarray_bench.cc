// distarray benchmarks against a running distarrayd, each figure printed beside the limit or
// peer measured in the same run (the run script writes the peers' figures to files just before):
//   reshard   (2+ GPUs) reshard bandwidth against cudaMemcpyPeerAsync (peer_limit) and cupyx
//             (cupyx_reshard.py);
//   transfer  gRPC upload/download of 1 GiB against a host memcpy and a do-nothing gRPC byte
//             stream served in this process;
//   shm       1 GiB upload/download through shared memory (UploadFromSharedMemory /
//             DownloadToSharedMemory; the bench must run on the daemon's host, as the daemon's
//             user) against a host memcpy of the same bytes and the SDK's gRPC streams;
//   latency   one elementwise RPC on 1,000 elements (and GetServerInfo) against an empty call;
//   compute   on every GPU (rows split evenly; one GPU: all on device 0), each timed as RPC +
//             Synchronize, median of several runs: A + B of two 1 GiB float32 arrays and the sum
//             of one (Reduce SUM, all axes, combined) against the device-copy bandwidth
//             (peer_limit), CuPy on one GPU and cupyx (cupy_compute.py), also 4 back to back;
//             a 16384^3 float32 matmul, TF32 off, A row-split and B replicated, against CuPy's
//             cuBLAS on one GPU and cupyx's distributed matmul, in TFLOP/s; a stack of 1024^2
//             matrices times one matrix, and an 8192^3 complex64 matmul, against CuPy on one
//             GPU. Each result is checked after the timing; a failed check makes the exit
//             status 1.
// --only=compute,latency runs just those sections (default: all, in the order above);
// --compute_side=512 shrinks the compute arrays to smoke-test them on the host backend.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "bench/baseline_service.h"
#include "bench/figures.h"
#include "distarray/client.h"
#include "distarray/graph.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "distarrayd address");
ABSL_FLAG(std::string, peer_file, "", "key value lines from peer_limit");
ABSL_FLAG(std::string, cupyx_file, "", "key value lines from cupyx_reshard.py");
ABSL_FLAG(std::string, compute_file, "", "key value lines from cupy_compute.py");
ABSL_FLAG(
    std::string, only, "",
    "comma-separated sections to run: reshard, transfer, shm, latency, compute (default: all)");
ABSL_FLAG(int, streams, 4, "parallel streams for bulk transfers");
ABSL_FLAG(std::string, serve_baseline_port_file, "",
          "serve only the do-nothing baseline service, write its port to this file and run until "
          "killed (bench/run.sh starts one so the latency section has an empty call to another "
          "process, as the daemon is)");
ABSL_FLAG(std::string, baseline_server, "",
          "address of a baseline served by another process (--serve_baseline_port_file); the "
          "latency section then also compares against an empty call to it");
ABSL_FLAG(int64_t, compute_side, 16384,
          "compute section: arrays are side x side float32 (16384: 1 GiB, the size cupy_compute.py "
          "measures); a smaller side smoke-tests the section, e.g. on the host backend");

namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

using distarray::bench::ReadFigures;

template <typename T>
T Must(absl::StatusOr<T> r, const char* what) {
  if (!r.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, r.status().ToString().c_str());
    std::exit(1);
  }
  return *std::move(r);
}
void Must(absl::Status s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void Row(const char* what, double ours, const char* unit, const char* against, double theirs,
         bool higher_is_better = true) {
  const double ratio = theirs > 0 ? ours / theirs : 0;
  std::printf("| %-44s | %10.2f %-5s | %-34s | %10.2f | %6.2fx %s|\n", what, ours, unit, against,
              theirs, ratio, higher_is_better ? "" : "(lower is better) ");
}

using distarray::bench::BaselineService;

using Figures = std::map<std::string, double>;

// The sections --only selects, in the order they run.
constexpr const char* kSections[] = {"reshard", "transfer", "shm", "latency", "compute"};

std::set<std::string> ParseSections(const std::string& only) {
  std::set<std::string> sections;
  if (only.empty()) {
    sections.insert(std::begin(kSections), std::end(kSections));
    return sections;
  }
  size_t begin = 0;
  while (begin <= only.size()) {
    size_t end = only.find(',', begin);
    if (end == std::string::npos) end = only.size();
    const std::string name = only.substr(begin, end - begin);
    if (std::find(std::begin(kSections), std::end(kSections), name) == std::end(kSections)) {
      std::fprintf(stderr,
                   "--only: unknown section '%s' (reshard, transfer, shm, latency, compute)\n",
                   name.c_str());
      std::exit(2);
    }
    sections.insert(name);
    begin = end + 1;
  }
  return sections;
}

[[gnu::format(printf, 1, 2)]] std::string Fmt(const char* format, ...) {
  char buffer[256];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof buffer, format, args);
  va_end(args);
  return buffer;
}

std::optional<double> Figure(const Figures& figures, const std::string& key) {
  const auto it = figures.find(key);
  if (it == figures.end() || !(it->second > 0)) return std::nullopt;
  return it->second;
}

// A row against a peer's figure that may be missing (the peer skipped or failed): says why.
void RowVs(const std::string& what, double ours, const char* unit, const std::string& against,
           std::optional<double> theirs, const std::string& why_missing) {
  if (theirs) {
    Row(what.c_str(), ours, unit, against.c_str(), *theirs);
  } else {
    std::printf("| %-44s | %10.2f %-5s | %-34s | %10s | %7s | %s\n", what.c_str(), ours, unit,
                against.c_str(), "n/a", "-", why_missing.c_str());
  }
}

// A + B and sum of 1 GiB float32 arrays and a 16384^3 float32 matmul on `ndev` GPUs (rows split
// evenly), each one RPC + Synchronize, against the device-copy bandwidth and CuPy/cupyx (figures
// from peer_limit and cupy_compute.py). Returns false when a result check failed.
bool Compute(const distarray::Client& client, int ndev, const Figures& peer, const Figures& cupy) {
  namespace v1 = distarray::v1;
  using distarray::SliceSpec;
  const int64_t side = absl::GetFlag(FLAGS_compute_side);  // 16384: each array is 1 GiB
  const double array_bytes = 4.0 * side * side;            // one array's bytes
  if (side != 16384) {
    std::printf("| compute: --compute_side=%lld, the peers' figures are for 16384 |\n",
                static_cast<long long>(side));
  }
  auto size = [](double bytes) {
    return bytes >= (1 << 30) ? Fmt("%.4g GiB", bytes / (1 << 30))
                              : Fmt("%.4g MiB", bytes / (1 << 20));
  };
  const std::string one = size(array_bytes), three = size(3 * array_bytes);
  const long long n_side = side;
  const auto start = Clock::now();
  std::vector<int> devices(ndev);
  std::iota(devices.begin(), devices.end(), 0);
  const v1::IndexMap rows = distarray::Split(2, 0, side, devices);
  auto uniform = [](uint64_t seed) {
    v1::Fill fill;
    fill.mutable_uniform()->set_high(1);
    fill.mutable_uniform()->set_seed(seed);
    return fill;
  };
  // Median seconds of `op` (one RPC) + a Synchronize RPC, after warm-ups that also grow the
  // memory pools; each result is deleted after the clock stops.
  auto timed = [&](int warmup, int reps, auto&& op) {
    std::vector<double> seconds;
    for (int i = 0; i < warmup + reps; ++i) {
      Must(client.Synchronize(), "sync");
      std::optional<distarray::Array> result;
      const auto t0 = Clock::now();
      result.emplace(op());
      Must(client.Synchronize(), "sync");
      if (i >= warmup) seconds.push_back(Seconds(t0, Clock::now()));
    }
    return Median(seconds);
  };
  // Seconds per op of `count` ops issued back to back, then one Synchronize: the RPC latency
  // hides behind the device work, as in a client's pipeline. A first round grows the pools.
  constexpr int kPipelined = 4;
  auto pipelined = [&](auto&& op) {
    double per_op = 0;
    for (int round = 0; round < 2; ++round) {
      std::vector<distarray::Array> results;
      Must(client.Synchronize(), "sync");
      const auto t0 = Clock::now();
      for (int i = 0; i < kPipelined; ++i) results.push_back(op());
      Must(client.Synchronize(), "sync");
      per_op = Seconds(t0, Clock::now()) / kPipelined;
    }
    return per_op;
  };
  // Device time of `program` replayed as a recorded graph from the daemon's cache (median of 5
  // after a first run that records it): the op's own time on the GPUs, with no RPC or host work
  // in it (over several GPUs, the slowest device's); nullopt where the daemon ran it eagerly.
  // `output` gets the last run's output `name`, for the caller to check.
  auto graph_device_s = [&](const v1::Program& program,
                            const std::map<std::string, const distarray::Array*>& arguments,
                            const std::string& name,
                            std::optional<distarray::Array>& output) -> std::optional<double> {
    std::vector<double> seconds;
    bool timed_on_device = true;
    for (int i = 0; i < 6; ++i) {
      auto run = Must(client.RunGraph(program, arguments), "RunGraph");
      timed_on_device = timed_on_device && run.execution == v1::GRAPH_EXECUTION_DEVICE_GRAPH &&
                        run.device_seconds > 0;
      if (i > 0) seconds.push_back(run.device_seconds);
      output.emplace(std::move(run.outputs.at(name)));
    }
    if (!timed_on_device) return std::nullopt;
    return Median(seconds);
  };
  const std::string no_graph = "no device time: the daemon ran it eagerly or does not time replays";
  const std::string back_to_back = Fmt("  %d back to back + one Synchronize", kPipelined);
  bool ok = true;
  auto check = [&](bool good, const std::string& what) {
    std::printf("|   check: %s: %s |\n", what.c_str(), good ? "ok" : "FAILED");
    ok = ok && good;
  };
  auto row_of = [&](int64_t r) {
    return distarray::MakeRegion({SliceSpec{r, r + 1}, SliceSpec{}});
  };
  auto column_of = [&](int64_t c) {
    return distarray::MakeRegion({SliceSpec{}, SliceSpec{c, c + 1}});
  };
  const std::string gpus = Fmt("%d GPU%s", ndev, ndev == 1 ? "" : "s");
  // Why a peer's figure is missing.
  const std::string no_cupy = "no figures from cupy_compute.py (--compute_file)";
  const auto cupy_devices = Figure(cupy, "cupy_devices");
  const std::string no_cupyx = !cupy_devices       ? no_cupy
                               : *cupy_devices < 2 ? "cupyx skipped: one GPU"
                                                   : "cupyx failed: see cupy_compute.py's note";
  const auto cupyx_devices = Figure(cupy, "cupyx_devices");
  const std::string cupyx_gpus = cupyx_devices ? Fmt("%d GPU%s", static_cast<int>(*cupyx_devices),
                                                     *cupyx_devices == 1 ? "" : "s")
                                               : gpus;
  // The device copy's figure counts bytes read + written per second: the HBM traffic one GPU
  // carries. Each GPU works on its own rows at once, so the limit scales with the GPUs.
  const auto copy = Figure(peer, "device_copy_1GiB_GBps");
  const std::string no_copy = "no device_copy_1GiB_GBps from peer_limit (--peer_file)";
  auto ms = [](std::optional<double> s) { return s ? Fmt("%.3f ms", *s) : std::string("n/a"); };

  auto a = Must(client.Create({side, side}, v1::DTYPE_FLOAT32, {rows}, uniform(11)), "create A");
  {
    // --- A + B: 2 GiB read, 1 GiB written ---
    auto b = Must(client.Create({side, side}, v1::DTYPE_FLOAT32, {rows}, uniform(12)), "create B");
    Must(client.Synchronize(), "sync");
    std::printf("| %s |\n", Fmt("A + B: two %s float32 arrays (%lldx%lld), rows split over %s",
                                one.c_str(), n_side, n_side, gpus.c_str())
                                .c_str());
    std::optional<distarray::Array> replayed_add;  // the device-time program's last result
    auto add = [&] { return Must(a + b, "A + B"); };
    const double add_s = timed(2, 9, add);
    const double add_gbps = 3 * array_bytes / add_s / 1e9;
    const double add_pipe_s = pipelined(add);
    const double add_pipe_gbps = 3 * array_bytes / add_pipe_s / 1e9;
    RowVs(Fmt("  Elementwise RPC + Synchronize, %s moved", three.c_str()), add_gbps, "GB/s",
          Fmt("device copy GB/s x %s", gpus.c_str()),
          copy ? std::optional<double>(*copy * ndev) : std::nullopt, no_copy);
    RowVs(back_to_back, add_pipe_gbps, "GB/s", Fmt("device copy GB/s x %s", gpus.c_str()),
          copy ? std::optional<double>(*copy * ndev) : std::nullopt, no_copy);
    RowVs("  vs CuPy A + B", add_gbps, "GB/s", "CuPy A + B, one GPU",
          Figure(cupy, "cupy_add_1GiB_GBps"), no_cupy);
    RowVs(back_to_back + " vs CuPy", add_pipe_gbps, "GB/s", "CuPy A + B, one GPU",
          Figure(cupy, "cupy_add_1GiB_GBps"), no_cupy);
    RowVs("  vs cupyx.distributed.array A + B", add_gbps, "GB/s",
          Fmt("cupyx A + B, %s", cupyx_gpus.c_str()), Figure(cupy, "cupyx_add_1GiB_GBps"),
          no_cupyx);
    std::printf("|   times: distarray %.3f ms (%.3f ms back to back), CuPy %s, cupyx %s |\n",
                add_s * 1e3, add_pipe_s * 1e3, ms(Figure(cupy, "cupy_add_1GiB_ms")).c_str(),
                ms(Figure(cupy, "cupyx_add_1GiB_ms")).c_str());
    {
      distarray::graph::ProgramBuilder p;
      p.Output("c", p.Input("a") + p.Input("b"));
      const auto add_device_s =
          graph_device_s(p.program(), {{"a", &a}, {"b", &b}}, "c", replayed_add);
      const auto add_device_gbps =
          add_device_s ? std::optional<double>(3 * array_bytes / *add_device_s / 1e9)
                       : std::nullopt;
      RowVs("  device time (one-statement RunGraph, replayed)", add_device_gbps.value_or(0), "GB/s",
            Fmt("device copy GB/s x %s", gpus.c_str()),
            copy && add_device_gbps ? std::optional<double>(*copy * ndev) : std::nullopt,
            add_device_gbps ? no_copy : no_graph);
      RowVs("  device time vs cupyx.distributed.array A + B", add_device_gbps.value_or(0), "GB/s",
            Fmt("cupyx A + B, %s", cupyx_gpus.c_str()),
            add_device_gbps ? Figure(cupy, "cupyx_add_1GiB_GBps") : std::nullopt,
            add_device_gbps ? no_cupyx : no_graph);
      std::printf(
          "|   device time: %s |\n",
          ms(add_device_s ? std::optional<double>(*add_device_s * 1e3) : std::nullopt).c_str());
    }
    auto c = Must(a + b, "A + B");
    for (const int64_t r : {int64_t{0}, side - 1}) {
      const auto ra = Must(a.Download<float>(row_of(r)), "download A row");
      const auto rb = Must(b.Download<float>(row_of(r)), "download B row");
      const auto rc = Must(c.Download<float>(row_of(r)), "download A + B row");
      int64_t bad = ra.size() == static_cast<size_t>(side) && rc.size() == ra.size() ? 0 : side;
      for (size_t i = 0; bad == 0 && i < rc.size(); ++i) {
        const float want = ra[i] + rb[i];
        if (std::fabs(rc[i] - want) > 1e-6f * std::fabs(want)) ++bad;
      }
      check(bad == 0, Fmt("row %lld of A + B equals A's row + B's", static_cast<long long>(r)));
      if (replayed_add) {
        const auto rr = Must(replayed_add->Download<float>(row_of(r)), "download a replayed row");
        check(rr == rc,
              Fmt("row %lld of the replayed A + B equals the RPC's", static_cast<long long>(r)));
      }
    }
  }

  // --- sum: 1 GiB read ---
  std::printf("| %s |\n", Fmt("sum of a %s float32 array (Reduce SUM, all axes, combine), %s",
                              one.c_str(), gpus.c_str())
                              .c_str());
  auto sum = [&] {
    return Must(distarray::Reduce(a, v1::REDUCE_OP_SUM, {}, /*keepdims=*/false,
                                  /*combine=*/true),
                "sum");
  };
  const double sum_s = timed(2, 9, sum);
  const double sum_pipe_s = pipelined(sum);
  const double sum_pipe_gbps = array_bytes / sum_pipe_s / 1e9;
  const double sum_gbps = array_bytes / sum_s / 1e9;
  RowVs(Fmt("  Reduce RPC + Synchronize, %s read", one.c_str()), sum_gbps, "GB/s",
        Fmt("copy GB/s x %s (HBM r+w rate)", gpus.c_str()),
        copy ? std::optional<double>(*copy * ndev) : std::nullopt, no_copy);
  RowVs("  the same, against the looser bound", sum_gbps, "GB/s",
        Fmt("copy GB/s / 2 x %s", gpus.c_str()),
        copy ? std::optional<double>(*copy / 2 * ndev) : std::nullopt, no_copy);
  RowVs(back_to_back, sum_pipe_gbps, "GB/s", Fmt("copy GB/s x %s (HBM r+w rate)", gpus.c_str()),
        copy ? std::optional<double>(*copy * ndev) : std::nullopt, no_copy);
  RowVs("  vs CuPy cupy.sum", sum_gbps, "GB/s", "CuPy cupy.sum, one GPU",
        Figure(cupy, "cupy_sum_1GiB_GBps"), no_cupy);
  RowVs(back_to_back + " vs CuPy", sum_pipe_gbps, "GB/s", "CuPy cupy.sum, one GPU",
        Figure(cupy, "cupy_sum_1GiB_GBps"), no_cupy);
  std::printf(
      "|   limits: device_copy_1GiB_GBps counts bytes read + written per second. The first row "
      "reads the array at that rate: the bound if HBM reads as fast as it reads + writes in a "
      "copy. |\n"
      "|   The second reads at half that rate: the time of copying the array, a looser bound. "
      "Both scale the one-GPU figure by %d GPU(s). |\n",
      ndev);
  std::printf("|   times: distarray %.3f ms (%.3f ms back to back), CuPy %s |\n", sum_s * 1e3,
              sum_pipe_s * 1e3, ms(Figure(cupy, "cupy_sum_1GiB_ms")).c_str());
  // The device-time programs' last results, checked with the RPC's sum below.
  std::optional<distarray::Array> replayed_sum, replayed_partials;
  {
    distarray::graph::ProgramBuilder p;
    p.Output("s", distarray::graph::Sum(p.Input("a")));
    const auto sum_device_s = graph_device_s(p.program(), {{"a", &a}}, "s", replayed_sum);
    const auto sum_device_gbps =
        sum_device_s ? std::optional<double>(array_bytes / *sum_device_s / 1e9) : std::nullopt;
    RowVs("  device time (one-statement RunGraph, replayed, combined)", sum_device_gbps.value_or(0),
          "GB/s", Fmt("copy GB/s x %s (HBM r+w rate)", gpus.c_str()),
          copy && sum_device_gbps ? std::optional<double>(*copy * ndev) : std::nullopt,
          sum_device_gbps ? no_copy : no_graph);
    // Where that time goes: the partials alone (SUM mode, no combine).
    distarray::graph::ProgramBuilder q;
    q.Output("s", q.Reduce(q.Input("a"), v1::REDUCE_OP_SUM, {}, false, /*combine=*/false));
    const auto partial_device_s = graph_device_s(q.program(), {{"a", &a}}, "s", replayed_partials);
    const auto partial_device_gbps =
        partial_device_s ? std::optional<double>(array_bytes / *partial_device_s / 1e9)
                         : std::nullopt;
    RowVs("  device time leaving SUM-mode partials (the default)", partial_device_gbps.value_or(0),
          "GB/s", Fmt("copy GB/s x %s (HBM r+w rate)", gpus.c_str()),
          copy && partial_device_gbps ? std::optional<double>(*copy * ndev) : std::nullopt,
          partial_device_gbps ? no_copy : no_graph);
    auto in_ms = [](std::optional<double> s) {
      return s ? std::optional<double>(*s * 1e3) : std::nullopt;
    };
    std::printf("|   device time: %s combined, %s leaving SUM-mode partials |\n",
                ms(in_ms(sum_device_s)).c_str(), ms(in_ms(partial_device_s)).c_str());
  }
  {
    // Where a distributed sum's time goes: the same sum leaving SUM-mode partials (no combine),
    // and one GPU's share alone (its rows as an array on that GPU).
    auto partials = [&] {
      return Must(distarray::Reduce(a, v1::REDUCE_OP_SUM, {}, false, /*combine=*/false), "sum");
    };
    const double partial_s = timed(2, 9, partials), partial_pipe_s = pipelined(partials);
    auto share = Must(client.Create({side / ndev, side}, v1::DTYPE_FLOAT32,
                                    {distarray::OnDevice(2, 0)}, uniform(15)),
                      "create one GPU's share");
    auto share_sum = [&] {
      return Must(distarray::Reduce(share, v1::REDUCE_OP_SUM, {}, false, true), "sum");
    };
    const double share_s = timed(2, 9, share_sum), share_pipe_s = pipelined(share_sum);
    // The Reduce RPC alone (it returns once the work is enqueued): a figure near the whole
    // op's would mean the daemon waits for the device inside the call.
    std::vector<double> enqueue;
    for (int i = 0; i < 9; ++i) {
      Must(client.Synchronize(), "sync");
      const auto t0 = Clock::now();
      auto r = sum();
      enqueue.push_back(Seconds(t0, Clock::now()));
    }
    std::printf("|   breakdown: the Reduce RPC alone (combine) %.3f ms |\n", Median(enqueue) * 1e3);
    std::printf(
        "|   breakdown: without combine (SUM-mode partials) %.3f ms (%.3f back to back); one "
        "GPU's share (%s) alone %.3f ms (%.3f back to back) |\n",
        partial_s * 1e3, partial_pipe_s * 1e3, size(array_bytes / ndev).c_str(), share_s * 1e3,
        share_pipe_s * 1e3);
  }
  {
    auto total = Must(distarray::Reduce(a, v1::REDUCE_OP_SUM, {}, false, true), "sum");
    const auto value = Must(total.Download<float>(), "download the sum");
    // Uniform [0, 1): the sum is n/2 within a few standard deviations, sqrt(n/12); float32
    // accumulation may add some 1e-3 n/2.
    const double n = double(side) * side, expected = 0.5 * n;
    const double tolerance = 1e-3 * expected + 6 * std::sqrt(n / 12);
    const bool good = value.size() == 1 && std::fabs(value[0] - expected) < tolerance;
    check(good, Fmt("sum = %.6g, n/2 = %.6g", value.empty() ? 0.0 : value[0], expected));
    for (const auto& [replayed, what] : {std::pair{&replayed_sum, "replayed sum"},
                                         std::pair{&replayed_partials, "replayed partial sums"}}) {
      if (!*replayed) continue;
      const auto v = Must((*replayed)->Download<float>(), "download a replayed sum");
      const bool close = v.size() == 1 && std::fabs(v[0] - expected) < tolerance;
      check(close, Fmt("%s = %.6g, n/2 = %.6g", what, v.empty() ? 0.0 : v[0], expected));
    }
  }

  // --- matmul: A row-split, B replicated on every GPU, TF32 off ---
  std::printf("| %s |\n", Fmt("matmul %lld^3 float32, TF32 off: A rows split, B replicated, %s",
                              n_side, gpus.c_str())
                              .c_str());
  auto b_rep = Must(client.Create({side, side}, v1::DTYPE_FLOAT32,
                                  {distarray::Replicated(2, devices)}, uniform(12)),
                    "create B replicated");
  Must(client.Synchronize(), "sync");
  v1::MatmulRequest matmul;
  *matmul.mutable_spec()->mutable_a() = a.AsOperand();
  *matmul.mutable_spec()->mutable_b() = b_rep.AsOperand();
  matmul.mutable_spec()->set_allow_tf32(false);
  const double mm_s = timed(1, 5, [&] { return Must(client.Matmul(matmul), "matmul"); });
  const double tflops = 2.0 * side * side * side / mm_s / 1e12;
  const auto cupy_tflops = Figure(cupy, "cupy_matmul_16384_TFLOPs");
  RowVs("  Matmul RPC + Synchronize, TFLOP/s", tflops, "TF/s", "CuPy matmul (cuBLAS), one GPU",
        cupy_tflops, no_cupy);
  RowVs("  vs cupyx.distributed.array matmul", tflops, "TF/s",
        Fmt("cupyx matmul, %s", cupyx_gpus.c_str()), Figure(cupy, "cupyx_matmul_16384_TFLOPs"),
        no_cupyx);
  std::printf("|   times: distarray %.3f ms, CuPy %s, cupyx %s |\n", mm_s * 1e3,
              ms(Figure(cupy, "cupy_matmul_16384_ms")).c_str(),
              ms(Figure(cupy, "cupyx_matmul_16384_ms")).c_str());
  if (cupy.count("cupy_matmul_tf32") && cupy.at("cupy_matmul_tf32") != 0) {
    std::printf("|   note: CuPy's float32 compute type was TF32: its figure is not FP32 |\n");
  }
  if (ndev == 1 && cupy_tflops && tflops > 1.25 * *cupy_tflops) {
    std::printf(
        "|   note: %.2fx FP32 cuBLAS on the same GPU: TF32 in use despite allow_tf32=false? |\n",
        tflops / *cupy_tflops);
  }
  {
    auto c = Must(client.Matmul(matmul), "matmul");
    for (const int64_t i : {int64_t{0}, side - 1}) {
      const auto ra = Must(a.Download<float>(row_of(i)), "download A row");
      const auto cb = Must(b_rep.Download<float>(column_of(i)), "download B column");
      const auto got =
          Must(c.Download<float>(distarray::MakeRegion({SliceSpec{i, i + 1}, SliceSpec{i, i + 1}})),
               "download C element");
      double want = 0;
      for (size_t k = 0; k < ra.size() && k < cb.size(); ++k) want += double{ra[k]} * cb[k];
      const bool good = got.size() == 1 && ra.size() == static_cast<size_t>(side) &&
                        cb.size() == ra.size() && std::fabs(got[0] - want) < 1e-4 * want;
      check(good, Fmt("C[%lld, %lld] = %.7g, float64 dot of A's row and B's column = %.7g",
                      static_cast<long long>(i), static_cast<long long>(i),
                      got.empty() ? 0.0 : got[0], want));
    }
  }
  // --- batched matmul: a stack of 1024^2 matrices split along its batch axis, one matrix
  // replicated: a strided batched GEMM per GPU, the matrix reused for every entry ---
  {
    constexpr int64_t kBlock = 1024;
    const int64_t stack = std::max<int64_t>(1, side * side / (kBlock * kBlock));
    std::printf("| %s |\n", Fmt("batched matmul (%lld, %lld, %lld) @ (%lld, %lld) float32, TF32 "
                                "off: the stack split along its batch axis, %s",
                                static_cast<long long>(stack), static_cast<long long>(kBlock),
                                static_cast<long long>(kBlock), static_cast<long long>(kBlock),
                                static_cast<long long>(kBlock), gpus.c_str())
                                .c_str());
    auto s3 = Must(client.Create({stack, kBlock, kBlock}, v1::DTYPE_FLOAT32,
                                 {distarray::Split(3, 0, stack, devices)}, uniform(13)),
                   "create the stack");
    auto w = Must(client.Create({kBlock, kBlock}, v1::DTYPE_FLOAT32,
                                {distarray::Replicated(2, devices)}, uniform(14)),
                  "create the matrix");
    const double bm_s =
        timed(1, 5, [&] { return Must(distarray::Matmul(s3, w), "batched matmul"); });
    const double bm_tflops = 2.0 * stack * kBlock * kBlock * kBlock / bm_s / 1e12;
    RowVs("  Matmul RPC + Synchronize, TFLOP/s", bm_tflops, "TF/s",
          "CuPy matmul of the same stack, one GPU", Figure(cupy, "cupy_batched_matmul_TFLOPs"),
          no_cupy);
    std::printf("|   times: distarray %.3f ms, CuPy %s |\n", bm_s * 1e3,
                ms(Figure(cupy, "cupy_batched_matmul_ms")).c_str());
    auto c = Must(distarray::Matmul(s3, w), "batched matmul");
    const int64_t entry = stack - 1, i = kBlock / 2;
    const auto ra = Must(s3.Download<float>(distarray::MakeRegion(
                             {SliceSpec{entry, entry + 1}, SliceSpec{i, i + 1}, SliceSpec{}})),
                         "download a row of the last matrix");
    const auto cw = Must(w.Download<float>(column_of(i)), "download a column of the matrix");
    const auto got =
        Must(c.Download<float>(distarray::MakeRegion(
                 {SliceSpec{entry, entry + 1}, SliceSpec{i, i + 1}, SliceSpec{i, i + 1}})),
             "download C element");
    double want = 0;
    for (size_t k = 0; k < ra.size() && k < cw.size(); ++k) want += double{ra[k]} * cw[k];
    check(got.size() == 1 && ra.size() == static_cast<size_t>(kBlock) &&
              std::fabs(got[0] - want) < 1e-4 * want,
          Fmt("C[%lld, %lld, %lld] = %.7g, float64 dot = %.7g", static_cast<long long>(entry),
              static_cast<long long>(i), static_cast<long long>(i), got.empty() ? 0.0 : got[0],
              want));
  }
  // --- complex64 matmul: A rows split, B replicated; a complex multiply-add is 8 real flops ---
  {
    const int64_t complex_side = std::min<int64_t>(8192, side);  // --compute_side shrinks it
    using C = std::complex<float>;
    std::printf("| %s |\n", Fmt("matmul %lld^3 complex64: A rows split, B replicated, %s",
                                static_cast<long long>(complex_side), gpus.c_str())
                                .c_str());
    auto ca = Must(client.Create({complex_side, complex_side}, v1::DTYPE_COMPLEX64,
                                 {distarray::Split(2, 0, complex_side, devices)}, uniform(15)),
                   "create complex A");
    auto cb = Must(client.Create({complex_side, complex_side}, v1::DTYPE_COMPLEX64,
                                 {distarray::Replicated(2, devices)}, uniform(16)),
                   "create complex B");
    const double cm_s =
        timed(1, 5, [&] { return Must(distarray::Matmul(ca, cb), "complex matmul"); });
    const double cm_tflops = 8.0 * complex_side * complex_side * complex_side / cm_s / 1e12;
    RowVs("  Matmul RPC + Synchronize, TFLOP/s", cm_tflops, "TF/s",
          "CuPy complex64 matmul (cuBLAS), one GPU", Figure(cupy, "cupy_matmul_c64_TFLOPs"),
          no_cupy);
    std::printf("|   times: distarray %.3f ms, CuPy %s |\n", cm_s * 1e3,
                ms(Figure(cupy, "cupy_matmul_c64_ms")).c_str());
    auto c = Must(distarray::Matmul(ca, cb), "complex matmul");
    const int64_t i = complex_side / 3;
    const auto ra = Must(ca.Download<C>(row_of(i)), "download a row of complex A");
    const auto cbc = Must(cb.Download<C>(column_of(i)), "download a column of complex B");
    const auto got =
        Must(c.Download<C>(distarray::MakeRegion({SliceSpec{i, i + 1}, SliceSpec{i, i + 1}})),
             "download complex C element");
    std::complex<double> want = 0;
    double magnitude = 0;
    for (size_t k = 0; k < ra.size() && k < cbc.size(); ++k) {
      want += std::complex<double>(ra[k]) * std::complex<double>(cbc[k]);
      magnitude += std::abs(std::complex<double>(ra[k])) * std::abs(std::complex<double>(cbc[k]));
    }
    check(
        got.size() == 1 && ra.size() == static_cast<size_t>(complex_side) &&
            std::abs(std::complex<double>(got[0]) - want) < 1e-5 * magnitude,
        Fmt("C[%lld, %lld] = (%.7g, %.7g), complex128 dot = (%.7g, %.7g)",
            static_cast<long long>(i), static_cast<long long>(i), got.empty() ? 0.0 : got[0].real(),
            got.empty() ? 0.0 : got[0].imag(), want.real(), want.imag()));
  }
  std::printf("|   (the compute section took %.1f s) |\n", Seconds(start, Clock::now()));
  return ok;
}

}  // namespace

// Serves the baseline service alone until the process is killed, its port in `port_file`.
int ServeBaseline(const std::string& port_file) {
  BaselineService baseline;
  int port = 0;
  auto server = distarray::bench::StartBaseline(baseline, &port);
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "distarray_bench: could not start the baseline server\n");
    return 2;
  }
  {
    std::ofstream out(port_file + ".tmp");
    out << port << "\n";
  }
  std::rename((port_file + ".tmp").c_str(), port_file.c_str());
  server->Wait();
  return 0;
}

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (const std::string file = absl::GetFlag(FLAGS_serve_baseline_port_file); !file.empty()) {
    return ServeBaseline(file);
  }
  const std::set<std::string> sections = ParseSections(absl::GetFlag(FLAGS_only));
  auto want = [&](const char* section) { return sections.count(section) > 0; };
  const auto peer = ReadFigures(absl::GetFlag(FLAGS_peer_file));
  const auto cupyx = ReadFigures(absl::GetFlag(FLAGS_cupyx_file));
  const auto cupy = ReadFigures(absl::GetFlag(FLAGS_compute_file));
  distarray::ConnectOptions options;
  options.parallel_streams = absl::GetFlag(FLAGS_streams);
  // The gRPC figures stay gRPC's: section shm measures shared memory with a client of its own.
  options.shared_memory = distarray::SharedMemoryUse::kNever;
  auto client =
      Must(distarray::Client::Connect(absl::GetFlag(FLAGS_server), 10000, options), "connect");
  auto info = Must(client.ServerInfo(), "server info");
  std::printf("distarrayd %s, backend %s, %d devices (%s)\n\n", info.version().c_str(),
              info.backend().c_str(), info.devices_size(), info.devices(0).name().c_str());
  std::printf("| %-44s | %16s | %-34s | %10s | %7s |\n", "measure", "distarray", "against", "value",
              "ratio");
  std::printf("|%s|%s|%s|%s|%s|\n", std::string(46, '-').c_str(), std::string(18, '-').c_str(),
              std::string(36, '-').c_str(), std::string(12, '-').c_str(),
              std::string(9, '-').c_str());

  using distarray::MakeChunk;
  using distarray::MakeIndexMap;
  using distarray::SliceSpec;
  // --- Reshards on two GPUs ---
  if (want("reshard")) {
    if (info.devices_size() >= 2) {
      const int64_t n = int64_t{1} << 28;  // 1 GiB of float32
      auto map = [&](int d0, int64_t b0, int64_t e0, int d1, int64_t b1, int64_t e1) {
        return MakeIndexMap(
            {MakeChunk(d0, {SliceSpec{b0, e0}}), MakeChunk(d1, {SliceSpec{b1, e1}})});
      };
      distarray::v1::Fill fill;
      fill.mutable_uniform()->set_high(1);
      fill.mutable_uniform()->set_seed(1);
      auto a = Must(
          client.Create({n}, distarray::v1::DTYPE_FLOAT32, {map(0, 0, n / 2, 1, n / 2, n)}, fill),
          "create");
      Must(client.Synchronize(), "sync");
      struct Case {
        const char* name;
        distarray::v1::IndexMap target;
        double moved_bytes;
        const char* peer_key;
        const char* cupyx_key;
      };
      const Case cases[] = {
          {"reshard (a): move 1/4 of 1 GiB GPU0->GPU1", map(0, 0, n / 4, 1, n / 4, n), n / 4 * 4.0,
           "peer_256MiB_GBps", "cupyx_move_quarter_GBps"},
          {"reshard (b): swap two 512 MiB halves", map(0, n / 2, n, 1, 0, n / 2), n * 4.0,
           "peer_swap_2x512MiB_GBps", "cupyx_swap_GBps"},
      };
      for (const Case& c : cases) {
        std::vector<double> single;
        for (int i = 0; i < 7; ++i) {
          const auto t0 = Clock::now();
          auto r = Must(a.Reshard(c.target), "reshard");
          Must(client.Synchronize(), "sync");
          single.push_back(Seconds(t0, Clock::now()));
        }
        // Back to back: RPC latency hides behind the transfers, as in a client's pipeline. The
        // first round grows the memory pools to hold the results; the second is timed. A run of
        // 8 still pays one RPC before the first transfer starts and the Synchronize after the
        // last (together ~0.3 ms against 8 transfers of ~0.7 ms); the difference between 16 and
        // 8 back to back is the steady state, the bandwidth a longer pipeline sustains.
        auto back_to_back = [&](int count) {
          double seconds = 0;
          for (int round = 0; round < 2; ++round) {
            std::vector<distarray::Array> results;
            Must(client.Synchronize(), "sync");
            const auto t0 = Clock::now();
            for (int i = 0; i < count; ++i) results.push_back(Must(a.Reshard(c.target), "reshard"));
            Must(client.Synchronize(), "sync");
            seconds = Seconds(t0, Clock::now());
          }
          return seconds;
        };
        constexpr int kPipelined = 8;
        const double eight = back_to_back(kPipelined);
        const double sixteen = back_to_back(2 * kPipelined);
        const double pipelined = eight / kPipelined;
        const double steady = (sixteen - eight) / kPipelined;
        const double gbps_single = c.moved_bytes / Median(single) / 1e9;
        const double gbps_pipe = c.moved_bytes / pipelined / 1e9;
        const double gbps_steady = c.moved_bytes / steady / 1e9;
        std::printf("| %-44s |\n", c.name);
        Row("  one RPC + Synchronize, GB/s", gbps_single, "GB/s", c.peer_key,
            peer.count(c.peer_key) ? peer.at(c.peer_key) : 0);
        Row("  8 back to back, GB/s", gbps_pipe, "GB/s", c.peer_key,
            peer.count(c.peer_key) ? peer.at(c.peer_key) : 0);
        Row("  steady state (16 minus 8), GB/s", gbps_steady, "GB/s", c.peer_key,
            peer.count(c.peer_key) ? peer.at(c.peer_key) : 0);
        Row("  8 back to back vs cupyx", gbps_pipe, "GB/s", c.cupyx_key,
            cupyx.count(c.cupyx_key) ? cupyx.at(c.cupyx_key) : 0);
        Row("  one RPC + Synchronize vs cupyx", gbps_single, "GB/s", c.cupyx_key,
            cupyx.count(c.cupyx_key) ? cupyx.at(c.cupyx_key) : 0);
      }
      if (info.devices_size() >= 4) {
        // All to all: a 1 GiB float32 matrix from row blocks over 4 GPUs to column blocks over
        // the same 4. Each GPU keeps the 1/16 where its row and column blocks meet and receives 3
        // pieces, one from each other GPU: 3/4 of the matrix crosses devices, every GPU sending
        // and receiving at once. The limit: 4 receivers, each at the measured one-way peer copy
        // rate.
        const int64_t side = 16384;
        std::vector<distarray::v1::Chunk> row_chunks, column_chunks;
        for (int d = 0; d < 4; ++d) {
          row_chunks.push_back(
              MakeChunk(d, {SliceSpec{d * side / 4, (d + 1) * side / 4}, SliceSpec{0, side}}));
          column_chunks.push_back(
              MakeChunk(d, {SliceSpec{0, side}, SliceSpec{d * side / 4, (d + 1) * side / 4}}));
        }
        auto matrix = Must(client.Create({side, side}, distarray::v1::DTYPE_FLOAT32,
                                         {MakeIndexMap(row_chunks)}, fill),
                           "create");
        const distarray::v1::IndexMap columns = MakeIndexMap(column_chunks);
        Must(client.Synchronize(), "sync");
        std::vector<double> times;
        for (int i = 0; i < 7; ++i) {
          const auto t0 = Clock::now();
          auto r = Must(matrix.Reshard(columns), "reshard");
          Must(client.Synchronize(), "sync");
          times.push_back(Seconds(t0, Clock::now()));
        }
        const double moved = side * side * 4.0 * 3 / 4;
        const double limit = peer.count("peer_256MiB_GBps") ? 4 * peer.at("peer_256MiB_GBps") : 0;
        std::printf("| %-44s |\n", "reshard (c): rows to columns over 4 GPUs (all to all)");
        Row("  one RPC + Synchronize, GB/s", moved / Median(times) / 1e9, "GB/s",
            "4 x peer_256MiB_GBps", limit);
      }
    } else {
      std::printf("| reshard: skipped, needs 2 devices |\n");
    }
  }

  // The transport baseline: do-nothing gRPC calls served in this process, single and with as
  // many connections as the SDK uses.
  BaselineService baseline;
  int port = 0;
  auto server = distarray::bench::StartBaseline(baseline, &port);

  // --- Bulk transfer through gRPC ---
  if (want("transfer")) {
    const int64_t bytes = int64_t{1} << 30;
    std::vector<float> host(bytes / 4);
    std::mt19937 rng(3);
    for (size_t i = 0; i < host.size(); i += 4096) host[i] = static_cast<float>(rng());
    std::vector<float> copy(host.size());
    std::vector<double> memcpy_times;
    for (int i = 0; i < 3; ++i) {
      const auto t0 = Clock::now();
      std::memcpy(copy.data(), host.data(), bytes);
      memcpy_times.push_back(Seconds(t0, Clock::now()));
    }
    const double memcpy_gbps = bytes / Median(memcpy_times) / 1e9;

    // An empty byte stream of about `bytes` over `streams` connections, in messages of
    // `message_bytes`; the rate counts the bytes the messages carried. A stream that fails ends
    // the bench: its rate would be meaningless.
    auto stream_gbps = [&](int streams, bool put, int64_t message_bytes = int64_t{1} << 20) {
      const int64_t messages = bytes / streams / message_bytes;
      std::vector<std::thread> threads;
      std::atomic<bool> failed{false};
      const auto t0 = Clock::now();
      for (int s = 0; s < streams; ++s) {
        threads.emplace_back([&] {
          grpc::ChannelArguments args;
          args.SetMaxReceiveMessageSize(64 << 20);
          args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
          auto stub = distarray::bench::Baseline::NewStub(grpc::CreateCustomChannel(
              "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials(), args));
          grpc::ClientContext context;
          distarray::bench::Empty empty;
          distarray::bench::Blob blob;
          if (put) {
            auto writer = stub->Put(&context, &empty);
            blob.mutable_data()->assign(message_bytes, 'z');
            for (int64_t i = 0; i < messages; ++i) writer->Write(blob);
            writer->WritesDone();
            if (!writer->Finish().ok()) failed = true;
          } else {
            distarray::bench::GetRequest request;
            request.set_message_bytes(message_bytes);
            request.set_total_bytes(messages * message_bytes);
            auto reader = stub->Get(&context, request);
            while (reader->Read(&blob)) {
            }
            if (!reader->Finish().ok()) failed = true;
          }
        });
      }
      for (auto& t : threads) t.join();
      if (failed) {
        std::fprintf(stderr, "an empty baseline stream failed\n");
        std::exit(1);
      }
      return static_cast<double>(messages * message_bytes * streams) / Seconds(t0, Clock::now()) /
             1e9;
    };
    const int streams = absl::GetFlag(FLAGS_streams);
    constexpr int64_t kLargeMessage = int64_t{4} << 20;
    double put1 = 0, putn = 0, get1 = 0, getn = 0, getn_large = 0;
    for (int rep = 0; rep < 2; ++rep) {
      put1 = std::max(put1, stream_gbps(1, true));
      putn = std::max(putn, stream_gbps(streams, true));
      get1 = std::max(get1, stream_gbps(1, false));
      getn = std::max(getn, stream_gbps(streams, false));
      getn_large = std::max(getn_large, stream_gbps(streams, false, kLargeMessage));
    }
    std::vector<double> up, down;
    // Downloads land in memory the client already has (as a streaming consumer's would): a fresh
    // 1 GiB vector would time the kernel zeroing its pages, not the transfer.
    std::vector<float> back(host.size());
    std::memset(back.data(), 0, bytes);
    const auto layout = distarray::Split(1, 0, bytes / 4, [&] {
      std::vector<int> all(info.devices_size());
      std::iota(all.begin(), all.end(), 0);
      return all;
    }());
    for (int rep = 0; rep < 3; ++rep) {
      const auto t0 = Clock::now();
      auto array = Must(client.Upload<float>(host, {bytes / 4}, {layout}), "upload");
      Must(client.Synchronize(), "sync");
      const auto t1 = Clock::now();
      Must(client.DownloadAll(array.info(), back.data(), bytes), "download");
      const auto t2 = Clock::now();
      up.push_back(Seconds(t0, t1));
      down.push_back(Seconds(t1, t2));
      if (std::memcmp(back.data(), host.data(), bytes) != 0) {
        std::fprintf(stderr, "download differs from upload\n");
        return 1;
      }
    }
    // The same downloads in 4 MiB messages, against an empty stream of 4 MiB messages.
    distarray::ConnectOptions large_options = options;
    large_options.download_message_bytes = kLargeMessage;
    auto large_client = Must(
        distarray::Client::Connect(absl::GetFlag(FLAGS_server), 10000, large_options), "connect");
    std::vector<double> down_large;
    {
      auto array = Must(client.Upload<float>(host, {bytes / 4}, {layout}), "upload");
      Must(client.Synchronize(), "sync");
      for (int rep = 0; rep < 3; ++rep) {
        std::memset(back.data(), 0, bytes);
        const auto t0 = Clock::now();
        Must(large_client.DownloadAll(array.info(), back.data(), bytes), "download");
        down_large.push_back(Seconds(t0, Clock::now()));
        if (std::memcmp(back.data(), host.data(), bytes) != 0) {
          std::fprintf(stderr, "download in 4 MiB messages differs from upload\n");
          return 1;
        }
      }
    }
    const double up_gbps = bytes / Median(up) / 1e9, down_gbps = bytes / Median(down) / 1e9;
    const double down_large_gbps = bytes / Median(down_large) / 1e9;
    char label[64];
    std::snprintf(label, sizeof label, "empty stream, %d conns", streams);
    Row("upload 1 GiB (SDK, parallel streams)", up_gbps, "GB/s", "host memcpy 1 GiB", memcpy_gbps);
    Row("upload 1 GiB", up_gbps, "GB/s", label, putn);
    Row("upload 1 GiB", up_gbps, "GB/s", "empty stream, 1 conn", put1);
    Row("download 1 GiB (SDK, parallel streams)", down_gbps, "GB/s", "host memcpy 1 GiB",
        memcpy_gbps);
    Row("download 1 GiB", down_gbps, "GB/s", label, getn);
    Row("download 1 GiB", down_gbps, "GB/s", "empty stream, 1 conn", get1);
    std::snprintf(label, sizeof label, "empty stream, 4 MiB msgs, %d conns", streams);
    Row("download 1 GiB, 4 MiB messages", down_large_gbps, "GB/s", label, getn_large);
    Row("download 1 GiB, 4 MiB messages", down_large_gbps, "GB/s", "the same in 1 MiB msgs", getn);
  }

  // --- Bulk transfer through shared memory ---
  if (want("shm")) {
    const int64_t bytes = int64_t{1} << 30;
    std::vector<float> host(bytes / 4);
    std::mt19937 rng(5);
    for (size_t i = 0; i < host.size(); i += 4096) host[i] = static_cast<float>(rng());
    std::vector<float> back(host.size());
    std::memset(back.data(), 0, bytes);  // touched, as in section transfer
    std::vector<double> memcpy_times;
    for (int i = 0; i < 3; ++i) {
      const auto t0 = Clock::now();
      std::memcpy(back.data(), host.data(), bytes);
      memcpy_times.push_back(Seconds(t0, Clock::now()));
    }
    const double memcpy_gbps = bytes / Median(memcpy_times) / 1e9;
    distarray::ConnectOptions shm_options = options;
    shm_options.shared_memory = distarray::SharedMemoryUse::kAlways;
    auto shm_client =
        Must(distarray::Client::Connect(absl::GetFlag(FLAGS_server), 10000, shm_options),
             "connect (shared memory)");
    if (!shm_client.shared_memory_available()) {
      std::fprintf(stderr,
                   "shm: the daemon's host_id is not this host's (or --shared_memory=off); "
                   "the calls below will fail\n");
    }
    const auto layout = distarray::Split(1, 0, bytes / 4, [&] {
      std::vector<int> all(info.devices_size());
      std::iota(all.begin(), all.end(), 0);
      return all;
    }());
    // Upload = create + write of the whole array (as Client::Upload does for large arrays).
    auto time_path = [&](const distarray::Client& c, std::vector<double>& up,
                         std::vector<double>& down) {
      for (int rep = 0; rep < 3; ++rep) {
        const auto t0 = Clock::now();
        auto array = Must(c.Upload<float>(host, {bytes / 4}, {layout}), "upload");
        Must(c.Synchronize(), "sync");
        const auto t1 = Clock::now();
        std::memset(back.data(), 0, 4096);
        Must(c.DownloadAll(array.info(), back.data(), bytes), "download");
        const auto t2 = Clock::now();
        up.push_back(Seconds(t0, t1));
        down.push_back(Seconds(t1, t2));
        if (std::memcmp(back.data(), host.data(), bytes) != 0) {
          std::fprintf(stderr, "download differs from upload\n");
          std::exit(1);
        }
      }
    };
    std::vector<double> shm_up, shm_down, grpc_up, grpc_down;
    time_path(shm_client, shm_up, shm_down);
    time_path(client, grpc_up, grpc_down);
    const double su = bytes / Median(shm_up) / 1e9, sd = bytes / Median(shm_down) / 1e9;
    const double gu = bytes / Median(grpc_up) / 1e9, gd = bytes / Median(grpc_down) / 1e9;
    Row("upload 1 GiB (shared memory)", su, "GB/s", "host memcpy 1 GiB", memcpy_gbps);
    Row("upload 1 GiB (shared memory)", su, "GB/s", "SDK gRPC streams", gu);
    Row("download 1 GiB (shared memory)", sd, "GB/s", "host memcpy 1 GiB", memcpy_gbps);
    Row("download 1 GiB (shared memory)", sd, "GB/s", "SDK gRPC streams", gd);
  }

  // --- One elementwise RPC on 1000 elements vs an empty unary call ---
  if (want("latency")) {
    const distarray::v1::IndexMap one = distarray::OnDevice(1, 0);
    auto x = Must(client.Create({1000}, distarray::v1::DTYPE_FLOAT32, {one}), "create x");
    auto y = Must(client.Create({1000}, distarray::v1::DTYPE_FLOAT32, {one}), "create y");
    auto baseline_stub = distarray::bench::Baseline::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
    const std::string remote_address = absl::GetFlag(FLAGS_baseline_server);
    std::unique_ptr<distarray::bench::Baseline::Stub> remote_stub;
    if (!remote_address.empty()) {
      remote_stub = distarray::bench::Baseline::NewStub(
          grpc::CreateChannel(remote_address, grpc::InsecureChannelCredentials()));
    }
    // KeepAlive is no SDK call: a stub of its own sends it in the client's session.
    auto keepalive_stub = distarray::v1::ArrayService::NewStub(
        grpc::CreateChannel(absl::GetFlag(FLAGS_server), grpc::InsecureChannelCredentials()));
    std::vector<double> add_us, ping_us, info_us, keepalive_us, remote_us;
    for (int i = 0; i < 4000; ++i) {
      auto t0 = Clock::now();
      {
        auto z = Must(x + y, "add");
        const auto t1 = Clock::now();
        if (i >= 500) add_us.push_back(Seconds(t0, t1) * 1e6);
      }  // the result's delete RPC is not timed
      grpc::ClientContext context;
      distarray::bench::Empty empty, out;
      t0 = Clock::now();
      baseline_stub->Ping(&context, empty, &out);
      if (i >= 500) ping_us.push_back(Seconds(t0, Clock::now()) * 1e6);
      if (remote_stub) {
        grpc::ClientContext remote_context;
        t0 = Clock::now();
        const grpc::Status pinged = remote_stub->Ping(&remote_context, empty, &out);
        if (i >= 500 && pinged.ok()) remote_us.push_back(Seconds(t0, Clock::now()) * 1e6);
      }
      t0 = Clock::now();
      Must(client.ServerInfo(), "info");
      if (i >= 500) info_us.push_back(Seconds(t0, Clock::now()) * 1e6);
      // The daemon's smallest call (a session keepalive: empty request and response), which
      // separates the daemon's transport from its work.
      grpc::ClientContext keepalive_context;
      keepalive_context.AddMetadata("distarray-session", client.session_id());
      distarray::v1::KeepAliveResponse keepalive;
      t0 = Clock::now();
      const grpc::Status kept = keepalive_stub->KeepAlive(&keepalive_context, {}, &keepalive);
      if (i >= 500 && kept.ok()) keepalive_us.push_back(Seconds(t0, Clock::now()) * 1e6);
    }
    std::sort(keepalive_us.begin(), keepalive_us.end());
    std::sort(info_us.begin(), info_us.end());
    std::sort(add_us.begin(), add_us.end());
    std::sort(ping_us.begin(), ping_us.end());
    Row("elementwise add RPC, 1000 elements, p50", add_us[add_us.size() / 2], "us",
        "empty unary gRPC call, p50", ping_us[ping_us.size() / 2], false);
    Row("elementwise add RPC, 1000 elements, p99", add_us[add_us.size() * 99 / 100], "us",
        "empty unary gRPC call, p99", ping_us[ping_us.size() * 99 / 100], false);
    Row("GetServerInfo RPC (no device work), p50", info_us[info_us.size() / 2], "us",
        "empty unary gRPC call, p50", ping_us[ping_us.size() / 2], false);
    if (!keepalive_us.empty()) {
      Row("KeepAlive RPC (empty request and response), p50", keepalive_us[keepalive_us.size() / 2],
          "us", "empty unary gRPC call, p50", ping_us[ping_us.size() / 2], false);
    }
    if (!remote_us.empty()) {
      // The same calls against an empty call served by another process: the transport a daemon
      // cannot avoid, without the in-process server's shortcuts.
      std::sort(remote_us.begin(), remote_us.end());
      const double remote_p50 = remote_us[remote_us.size() / 2];
      Row("empty call to another process, p50", remote_p50, "us", "empty unary gRPC call, p50",
          ping_us[ping_us.size() / 2], false);
      Row("elementwise add RPC, p50, vs another process", add_us[add_us.size() / 2], "us",
          "empty call to another process, p50", remote_p50, false);
      Row("elementwise add RPC, p99, vs another process", add_us[add_us.size() * 99 / 100], "us",
          "empty call to another process, p99", remote_us[remote_us.size() * 99 / 100], false);
      if (!keepalive_us.empty()) {
        Row("KeepAlive RPC, p50, vs another process", keepalive_us[keepalive_us.size() / 2], "us",
            "empty call to another process, p50", remote_p50, false);
      }
    } else if (!remote_address.empty()) {
      std::printf("| empty call to another process (%s): no call succeeded |\n",
                  remote_address.c_str());
    }
  }

  // --- Compute on every GPU: A + B, sum, matmul ---
  bool checks_ok = true;
  if (want("compute")) checks_ok = Compute(client, info.devices_size(), peer, cupy);
  server->Shutdown();
  return checks_ok ? 0 : 1;
}
