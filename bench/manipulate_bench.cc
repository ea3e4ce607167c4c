// Indexing and shape ops on 1 GiB of float32 (16384 x 16384) against the device-copy limit of the
// same run (peer_limit's device_copy_1GiB_GBps, bytes read + written per second on one GPU, times
// the GPUs that work at once): permute_dims (.T), a reshape whose chunks are not runs of the new
// shape (elements move), and the slice u[1:-1, 1:-1]. Each op is an RPC plus Synchronize, the
// median of 7 after one warm-up; every result is checked against the host on a few rows.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "bench/figures.h"
#include "distarray/client.h"
#include "distarray/index_maps.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "distarrayd address");
ABSL_FLAG(std::string, peer_file, "", "key value lines from peer_limit (device copy rate)");
ABSL_FLAG(int64_t, side, 16384, "the matrix side (float32)");

namespace {

namespace v1 = distarray::v1;
using distarray::Slice;
using Clock = std::chrono::steady_clock;

template <typename T>
T Must(absl::StatusOr<T> v, const char* what) {
  return distarray::bench::Must("manipulate_bench", std::move(v), what);
}

template <typename Fn>
double MedianSeconds(distarray::Client& client, Fn&& op) {
  std::vector<double> seconds;
  for (int k = 0; k < 8; ++k) {
    const auto t0 = Clock::now();
    auto result = Must(op(), "op");
    if (absl::Status s = client.Synchronize(); !s.ok()) {
      std::fprintf(stderr, "manipulate_bench: synchronize: %s\n", s.ToString().c_str());
      std::exit(2);
    }
    if (k > 0) seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const auto limits = distarray::bench::ReadFigures(absl::GetFlag(FLAGS_peer_file));
  auto client = Must(distarray::Client::Connect(absl::GetFlag(FLAGS_server)), "connect");
  const int gpus = std::min(Must(client.ServerInfo(), "server info").devices_size(), 2);
  const int64_t n = absl::GetFlag(FLAGS_side);
  const double bytes = static_cast<double>(n) * n * 4;
  std::vector<int> on;
  for (int d = 0; d < gpus; ++d) on.push_back(d);
  v1::Fill fill;
  fill.mutable_uniform()->set_high(1);
  fill.mutable_uniform()->set_seed(3);
  auto rows = Must(client.Create({n, n}, v1::DTYPE_FLOAT32, {distarray::Split(2, 0, n, on)}, fill),
                   "create rows");
  auto columns = Must(
      client.Create({n, n}, v1::DTYPE_FLOAT32, {distarray::Split(2, 1, n, on)}, fill), "create");
  const auto copy = limits.find("device_copy_1GiB_GBps");
  std::printf("manipulate_bench: %lld x %lld float32 (%.0f MiB), %d GPU(s)\n",
              static_cast<long long>(n), static_cast<long long>(n), bytes / (1 << 20), gpus);

  // Spot checks on the host: row 3 of each result against the source's values.
  const std::vector<float> source_row =
      Must(rows.Download<float>(distarray::MakeRegion({Slice{3, 4}, Slice{}})), "download row");
  const std::vector<float> source_column =
      Must(rows.Download<float>(distarray::MakeRegion({Slice{}, Slice{3, 4}})), "download column");
  bool ok = true;
  struct Case {
    const char* name;
    double moved;  // bytes read + written
    std::function<absl::StatusOr<distarray::Array>()> op;
    std::function<bool(distarray::Array&)> check;
  };
  const std::vector<Case> cases = {
      {"permute_dims (.T), rows over the GPUs", 2 * bytes,
       [&] {
         return distarray::PermuteDims(rows, {1, 0});
       },
       [&](distarray::Array& t) {
         // Row 3 of the transpose is column 3 of the source.
         return Must(t.Download<float>(distarray::MakeRegion({Slice{3, 4}, Slice{}})), "check") ==
                source_column;
       }},
      {"reshape (n, n) -> (n / 2, 2n) of a column split (elements move)", 2 * bytes,
       [&] {
         return distarray::Reshape(columns, {n / 2, 2 * n});
       },
       [&](distarray::Array& r) {
         // Row 1 of the result holds source rows 2 and 3 end to end.
         const auto got = Must(
             r.Download<float>(distarray::MakeRegion({Slice{1, 2}, Slice{n, 2 * n}})), "check");
         const auto want =
             Must(columns.Download<float>(distarray::MakeRegion({Slice{3, 4}, Slice{}})), "check");
         return got == want;
       }},
      {"u[1:-1, 1:-1], rows over the GPUs", 2 * bytes,
       [&] {
         return distarray::GetItem(rows, {Slice{1, -1}, Slice{1, -1}});
       },
       [&](distarray::Array& s) {
         const auto got =
             Must(s.Download<float>(distarray::MakeRegion({Slice{2, 3}, Slice{}})), "check");
         return got == std::vector<float>(source_row.begin() + 1, source_row.end() - 1);
       }},
  };
  for (const Case& c : cases) {
    auto result = Must(c.op(), c.name);
    const bool right = c.check(result);
    ok = ok && right;
    const double seconds = MedianSeconds(client, c.op);
    const double gbps = c.moved / seconds / 1e9;
    std::printf("| %-66s | %8.2f ms | %7.1f GB/s |", c.name, seconds * 1e3, gbps);
    if (copy != limits.end()) {
      std::printf(" %.2fx the device copy x %d |", gbps / (copy->second * gpus), gpus);
    }
    std::printf(" %s |\n", right ? "checked" : "WRONG");
  }
  return ok ? 0 : 1;
}
