// cumulative_sum of 1 GiB of float32 through the daemon's scan, against cupy.cumsum on one GPU
// (cupy_scan.py's figures through --peers_file) and the device-copy limit (peer_limit's
// device_copy_1GiB_GBps through --peer_file: a scan reads and writes every element once, so its
// floor is a copy of the array) measured in the same run. Three shapes: one line of 2^28 elements
// split over the GPUs (each block starts from the carry of the blocks before it), and a
// 16384 x 16384 matrix split by rows, scanned along the rows (contiguous lines, no carries) and
// down the columns (strided lines, carries between the GPUs). Each scan is an RPC plus
// Synchronize, the median of 5 after a warm-up; every result is checked on the host afterwards
// (sampled lines against a double-precision running sum, Checked).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "bench/figures.h"
#include "distarray/client.h"
#include "distarray/index_maps.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "distarrayd address");
ABSL_FLAG(std::string, peers_file, "", "key value lines from cupy_scan.py");
ABSL_FLAG(std::string, peer_file, "", "key value lines from peer_limit (device copy rate)");
ABSL_FLAG(int64_t, elements, int64_t{1} << 28, "float32 elements of the 1-D case (2^28: 1 GiB)");
ABSL_FLAG(int64_t, side, 16384, "the matrix side (float32)");

namespace {

namespace v1 = distarray::v1;
using Clock = std::chrono::steady_clock;

template <typename T>
T Must(absl::StatusOr<T> v, const char* what) {
  return distarray::bench::Must("scan_bench", std::move(v), what);
}

double MedianMs(distarray::Client& client, const distarray::Array& x, int axis) {
  std::vector<double> ms;
  for (int k = 0; k < 6; ++k) {
    const auto t0 = Clock::now();
    auto result = Must(distarray::CumulativeSum(x, axis), "cumulative_sum");
    distarray::bench::Must("scan_bench", client.Synchronize(), "synchronize");
    if (k > 0) ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// Whether `got` holds the running sums of `source` (rows x cols, row-major) along `axis`, for a
// sample of lines: within 1e-4 of the line's magnitude so far of a double-precision running sum.
// Float32 sums of up to 2^28 terms round by less than that in the orders a scan takes; a carry
// missed or counted twice is off by a large part of the magnitude.
bool Checked(const std::vector<float>& source, const std::vector<float>& got, int64_t rows,
             int64_t cols, int axis) {
  const int64_t lines = axis == 1 ? rows : cols, length = axis == 1 ? cols : rows;
  auto at = [&](int64_t line, int64_t i) { return axis == 1 ? line * cols + i : i * cols + line; };
  for (int64_t line = 0; line < lines; line += std::max<int64_t>(1, lines / 16)) {
    double sum = 0, magnitude = 0;
    for (int64_t i = 0; i < length; ++i) {
      sum += source[at(line, i)];
      magnitude += std::fabs(source[at(line, i)]);
      if (std::fabs(got[at(line, i)] - sum) > 1e-4 * magnitude + 1e-6) return false;
    }
  }
  return got.size() == source.size();
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const auto peers = distarray::bench::ReadFigures(absl::GetFlag(FLAGS_peers_file));
  const auto limits = distarray::bench::ReadFigures(absl::GetFlag(FLAGS_peer_file));
  auto client = Must(distarray::Client::Connect(absl::GetFlag(FLAGS_server)), "connect");
  const int gpus = std::min(Must(client.ServerInfo(), "server info").devices_size(), 2);
  std::vector<int> on;
  for (int d = 0; d < gpus; ++d) on.push_back(d);
  std::optional<double> copy_gbps;
  if (auto c = limits.find("device_copy_1GiB_GBps"); c != limits.end()) copy_gbps = c->second;
  v1::Fill fill;
  fill.mutable_uniform()->set_high(1);
  fill.mutable_uniform()->set_seed(13);

  const int64_t n = absl::GetFlag(FLAGS_elements), side = absl::GetFlag(FLAGS_side);
  struct Case {
    const char* name;
    int64_t rows, cols;
    int axis;
    const char* peer;
  };
  bool ok = true;
  std::printf("scan_bench: cumulative_sum, float32, over %d GPU(s)\n", gpus);
  std::printf(
      "| case | shape | ms | GB/s (read + written) | of device copy | cupy.cumsum on 1 GPU "
      "| vs cupy | check |\n");
  for (const Case& c : {Case{"one line", 1, n, 1, "cupy_cumsum_1d_ms"},
                        Case{"along rows", side, side, 1, "cupy_cumsum_axis1_ms"},
                        Case{"down columns", side, side, 0, "cupy_cumsum_axis0_ms"}}) {
    const std::vector<int64_t> shape =
        c.rows == 1 ? std::vector<int64_t>{c.cols} : std::vector<int64_t>{c.rows, c.cols};
    // The 1-D case splits its one axis; the matrix its rows (so a column scan carries).
    const int axis = c.rows == 1 ? 0 : c.axis;
    auto x = Must(
        client.Create(shape, v1::DTYPE_FLOAT32,
                      {distarray::Split(static_cast<int>(shape.size()), 0, shape[0], on)}, fill),
        "create");
    const double ms = MedianMs(client, x, axis);
    const std::vector<float> source = Must(x.Download<float>(), "download source");
    auto scanned = Must(distarray::CumulativeSum(x, axis), "cumulative_sum");
    const bool right =
        Checked(source, Must(scanned.Download<float>(), "download"), c.rows, c.cols, c.axis);
    ok = ok && right;
    const double bytes = 2.0 * 4 * c.rows * c.cols;
    const double gbps = bytes / (ms * 1e-3) / 1e9;
    std::printf("| %s | %lld x %lld | %.2f | %.0f |", c.name, static_cast<long long>(c.rows),
                static_cast<long long>(c.cols), ms, gbps);
    // Each GPU scans its share: the floor is its share copied at one GPU's copy rate.
    if (copy_gbps) {
      std::printf(" %.2fx |", gbps / (*copy_gbps * gpus));
    } else {
      std::printf(" - |");
    }
    if (auto p = peers.find(c.peer); p != peers.end()) {
      std::printf(" %.2f ms | %.2fx |", p->second, p->second / ms);
    } else {
      std::printf(" - | - |");
    }
    std::printf(" %s |\n", right ? "checked" : "WRONG");
  }
  return ok ? 0 : 1;
}
