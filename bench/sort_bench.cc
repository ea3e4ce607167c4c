// sort and argsort of 1 GiB of float32 (2^28 uniform values) split over the GPUs along the one
// axis, against cupy.sort / cupy.argsort on one GPU measured in the same run (cupy_sort.py's
// figures through --peer_file), and the same array on one GPU. Each op is an RPC plus Synchronize,
// the median of 5 after a warm-up. Every result is checked on the host: non-decreasing, and the
// same multiset as the source (count, sum and sum of squares in double); argsort's positions are
// checked to pick the sorted values in a sample.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "bench/figures.h"
#include "distarray/client.h"
#include "distarray/index_maps.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "distarrayd address");
ABSL_FLAG(std::string, peer_file, "", "key value lines from cupy_sort.py");
ABSL_FLAG(int64_t, elements, int64_t{1} << 28, "float32 elements (2^28: 1 GiB)");

namespace {

namespace v1 = distarray::v1;
using Clock = std::chrono::steady_clock;

template <typename T>
T Must(absl::StatusOr<T> v, const char* what) {
  return distarray::bench::Must("sort_bench", std::move(v), what);
}

template <typename Fn>
double MedianMs(distarray::Client& client, Fn&& op) {
  std::vector<double> ms;
  for (int k = 0; k < 6; ++k) {
    const auto t0 = Clock::now();
    auto result = Must(op(), "op");
    if (absl::Status s = client.Synchronize(); !s.ok()) {
      std::fprintf(stderr, "sort_bench: synchronize: %s\n", s.ToString().c_str());
      std::exit(2);
    }
    if (k > 0) ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

struct Moments {
  double sum = 0, squares = 0;
};
Moments MomentsOf(const std::vector<float>& v) {
  Moments m;
  for (float x : v) {
    m.sum += x;
    m.squares += static_cast<double>(x) * x;
  }
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const auto peers = distarray::bench::ReadFigures(absl::GetFlag(FLAGS_peer_file));
  auto client = Must(distarray::Client::Connect(absl::GetFlag(FLAGS_server)), "connect");
  const int gpus = std::min(Must(client.ServerInfo(), "server info").devices_size(), 2);
  const int64_t n = absl::GetFlag(FLAGS_elements);
  std::printf("sort_bench: %lld float32 (%.0f MiB), uniform in [0, 1)\n", static_cast<long long>(n),
              n * 4.0 / (1 << 20));
  v1::Fill fill;
  fill.mutable_uniform()->set_high(1);
  fill.mutable_uniform()->set_seed(11);
  bool ok = true;
  for (int on_gpus : {gpus, 1}) {
    std::vector<int> on;
    for (int d = 0; d < on_gpus; ++d) on.push_back(d);
    auto x = Must(client.Create({n}, v1::DTYPE_FLOAT32, {distarray::Split(1, 0, n, on)}, fill),
                  "create");
    const std::vector<float> source = Must(x.Download<float>(), "download source");
    const Moments want = MomentsOf(source);

    auto sorted = Must(distarray::Sort(x), "sort");
    const std::vector<float> got = Must(sorted.Download<float>(), "download sorted");
    const Moments have = MomentsOf(got);
    const bool ordered = std::is_sorted(got.begin(), got.end());
    const bool same = got.size() == source.size() &&
                      std::abs(have.sum - want.sum) <= 1e-9 * std::abs(want.sum) &&
                      std::abs(have.squares - want.squares) <= 1e-9 * want.squares;
    auto order = Must(distarray::Argsort(x), "argsort");
    const std::vector<int64_t> positions = Must(order.Download<int64_t>(), "download argsort");
    bool picks = positions.size() == got.size();
    for (int64_t i = 0; picks && i < n; i += 9973) {
      picks = positions[i] >= 0 && positions[i] < n && source[positions[i]] == got[i];
    }
    const bool right = ordered && same && picks;
    ok = ok && right;

    const double sort_ms = MedianMs(client, [&] { return distarray::Sort(x); });
    const double argsort_ms = MedianMs(client, [&] { return distarray::Argsort(x); });
    for (const auto& [name, ms, peer] : {std::tuple{"sort", sort_ms, "cupy_sort_ms"},
                                         std::tuple{"argsort", argsort_ms, "cupy_argsort_ms"}}) {
      std::printf("| %-8s | %d GPU(s) | %9.2f ms |", name, on_gpus, ms);
      if (auto p = peers.find(peer); p != peers.end()) {
        std::printf(" cupy on 1 GPU %9.2f ms | %.2fx cupy |", p->second, p->second / ms);
      }
      std::printf(" %s |\n", right ? "checked" : "WRONG");
    }
    if (gpus == 1) break;
  }
  return ok ? 0 : 1;
}
