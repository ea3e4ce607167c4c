// A reshard between two nodes of a cluster (docs/cluster.md) against the transport's limit
// measured in the same run: Gloo's TCP transport sending the same bytes between two ranks over
// loopback, in this process, with nothing around it. Also the same reshard between two devices
// of the leader, which crosses no node, and a swap: halves on a device of each node trade places,
// so pieces cross the nodes in both directions in one reshard. Each reshard is an RPC plus
// Synchronize, the median of 5 after a warm-up; the moved array is checked against the uploaded
// values afterwards.
//   cluster_bench --server=LEADER --from=0 --to=DEVICE_ON_NODE_1 --local_to=1 [--mib=256]
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>
#include <sys/socket.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "bench/figures.h"
#include "distarray/client.h"
#include "distarray/index_maps.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "the cluster leader's address");
ABSL_FLAG(int, from, 0, "the source device (on the leader)");
ABSL_FLAG(int, to, 2, "the destination device on another node");
ABSL_FLAG(int, local_to, 1, "a destination device on the leader (-1: none)");
ABSL_FLAG(int64_t, mib, 256, "MiB moved");

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kRuns = 6;  // the first is a warm-up

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Rank 0 sends `bytes` to rank 1 over Gloo's TCP transport on loopback, kRuns times; the median
// of the receiver's time from posting its receive to holding the bytes (both ranks start each
// run together).
double GlooLoopbackMs(int64_t bytes) {
  gloo::rendezvous::HashStore store;
  std::barrier start(2);
  std::vector<double> ms;
  auto rank = [&](int r) {
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    attr.ai_family = AF_INET;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(r, 2);
    context->connectFullMesh(store, device);
    std::vector<char> data(bytes, static_cast<char>(r + 1));
    auto buffer = context->createUnboundBuffer(data.data(), data.size());
    for (int k = 0; k < kRuns; ++k) {
      start.arrive_and_wait();
      const auto t0 = Clock::now();
      if (r == 0) {
        buffer->send(1, 7);
        buffer->waitSend();
      } else {
        buffer->recv(0, 7);
        buffer->waitRecv();
        if (k > 0)
          ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      }
    }
  };
  std::thread receiver(rank, 1);
  rank(0);
  receiver.join();
  return Median(ms);
}

double ReshardMs(distarray::Client& client, const distarray::Array& a,
                 const distarray::v1::IndexMap& to, const std::vector<float>& values) {
  std::vector<double> ms;
  for (int k = 0; k < kRuns; ++k) {
    const auto t0 = Clock::now();
    distarray::Array moved = distarray::bench::Must("cluster_bench", a.Reshard(to), "reshard");
    distarray::bench::Must("cluster_bench", client.Synchronize(), "synchronize");
    if (k > 0) ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (k == kRuns - 1) {
      const std::vector<float> got =
          distarray::bench::Must("cluster_bench", moved.Download<float>(), "download");
      if (got != values) {
        std::fprintf(stderr, "cluster_bench: a reshard changed the values\n");
        std::exit(1);
      }
    }
  }
  return Median(ms);
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int64_t bytes = absl::GetFlag(FLAGS_mib) << 20;
  const int64_t n = bytes / 4;
  distarray::Client client = distarray::bench::Must(
      "cluster_bench", distarray::Client::Connect(absl::GetFlag(FLAGS_server)), "connect");
  std::vector<float> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = static_cast<float>((i * 2654435761u) % 1000003);
  const distarray::Array a = distarray::bench::Must(
      "cluster_bench",
      client.Upload<float>(values, {n}, {distarray::Split(1, 0, n, {absl::GetFlag(FLAGS_from)})}),
      "upload");
  const double gloo_ms = GlooLoopbackMs(bytes);
  const int from = absl::GetFlag(FLAGS_from), to = absl::GetFlag(FLAGS_to);
  const double cross_ms = ReshardMs(client, a, distarray::Split(1, 0, n, {to}), values);
  const double gb = static_cast<double>(bytes) / 1e9;
  std::printf("cluster reshard of %lld MiB, device %d (node 0) -> device %d (node 1)\n",
              static_cast<long long>(absl::GetFlag(FLAGS_mib)), absl::GetFlag(FLAGS_from),
              absl::GetFlag(FLAGS_to));
  std::printf("  Gloo tcp loopback, bare send:  %8.2f ms  %6.2f GB/s\n", gloo_ms,
              gb / gloo_ms * 1e3);
  std::printf("  reshard across nodes:          %8.2f ms  %6.2f GB/s  %.2fx the bare send\n",
              cross_ms, gb / cross_ms * 1e3, gloo_ms / cross_ms);
  if (const int local = absl::GetFlag(FLAGS_local_to); local >= 0) {
    const double local_ms = ReshardMs(client, a, distarray::Split(1, 0, n, {local}), values);
    std::printf("  reshard within the leader:     %8.2f ms  %6.2f GB/s\n", local_ms,
                gb / local_ms * 1e3);
  }
  // Half the bytes each way: the two pieces move at once, each over its own direction.
  const distarray::Array halves = distarray::bench::Must(
      "cluster_bench", client.Upload<float>(values, {n}, {distarray::Split(1, 0, n, {from, to})}),
      "upload halves");
  const double swap_ms = ReshardMs(client, halves, distarray::Split(1, 0, n, {to, from}), values);
  std::printf("  swap halves across the nodes:  %8.2f ms  %6.2f GB/s  %.2fx the bare send\n",
              swap_ms, gb / swap_ms * 1e3, gloo_ms / swap_ms);
  return 0;
}
