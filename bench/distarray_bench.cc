// distarray benchmarks against a running distarrayd, each figure printed beside the limit or
// peer measured in the same run: reshard bandwidth against cudaMemcpyPeerAsync and cupyx
// (figures read from files the run script wrote just before), gRPC upload/download against a
// host memcpy and a do-nothing gRPC byte stream, and one elementwise RPC against an empty call.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "baseline.grpc.pb.h"
#include "distarray/client.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "distarrayd address");
ABSL_FLAG(std::string, peer_file, "", "key value lines from peer_limit");
ABSL_FLAG(std::string, cupyx_file, "", "key value lines from cupyx_reshard.py");
ABSL_FLAG(int, streams, 4, "parallel streams for bulk transfers");

namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::map<std::string, double> ReadFigures(const std::string& path) {
  std::map<std::string, double> figures;
  std::ifstream in(path);
  std::string key;
  double value;
  while (in >> key >> value) figures[key] = value;
  return figures;
}

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

// The transport baseline, served in this process with the same synchronous gRPC API the daemon
// uses.
class BaselineService final : public distarray::bench::Baseline::Service {
  grpc::Status Ping(grpc::ServerContext*, const distarray::bench::Empty*,
                    distarray::bench::Empty*) override {
    return grpc::Status::OK;
  }
  grpc::Status Put(grpc::ServerContext*, grpc::ServerReader<distarray::bench::Blob>* reader,
                   distarray::bench::Empty*) override {
    distarray::bench::Blob blob;
    std::vector<char> sink(1 << 20);
    while (reader->Read(&blob)) {
      std::memcpy(sink.data(), blob.data().data(), std::min(sink.size(), blob.data().size()));
    }
    return grpc::Status::OK;
  }
  grpc::Status Get(grpc::ServerContext*, const distarray::bench::Empty*,
                   grpc::ServerWriter<distarray::bench::Blob>* writer) override {
    distarray::bench::Blob blob;
    blob.mutable_data()->assign(1 << 20, 'x');
    for (int i = 0; i < (1 << 10) / kStreams; ++i) writer->Write(blob);
    return grpc::Status::OK;
  }

 public:
  static inline int kStreams = 1;
};

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const auto peer = ReadFigures(absl::GetFlag(FLAGS_peer_file));
  const auto cupyx = ReadFigures(absl::GetFlag(FLAGS_cupyx_file));
  distarray::ConnectOptions options;
  options.parallel_streams = absl::GetFlag(FLAGS_streams);
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
  if (info.devices_size() >= 2) {
    const int64_t n = int64_t{1} << 28;  // 1 GiB of float32
    auto map = [&](int d0, int64_t b0, int64_t e0, int d1, int64_t b1, int64_t e1) {
      return MakeIndexMap({MakeChunk(d0, {SliceSpec{b0, e0}}), MakeChunk(d1, {SliceSpec{b1, e1}})});
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
      // Back to back: RPC latency hides behind the transfers, as in a client's pipeline. The first
      // round grows the memory pools to hold 8 results; the second is timed.
      constexpr int kPipelined = 8;
      double pipelined = 0;
      for (int round = 0; round < 2; ++round) {
        std::vector<distarray::Array> results;
        Must(client.Synchronize(), "sync");
        const auto t0 = Clock::now();
        for (int i = 0; i < kPipelined; ++i)
          results.push_back(Must(a.Reshard(c.target), "reshard"));
        Must(client.Synchronize(), "sync");
        pipelined = Seconds(t0, Clock::now()) / kPipelined;
      }
      const double gbps_single = c.moved_bytes / Median(single) / 1e9;
      const double gbps_pipe = c.moved_bytes / pipelined / 1e9;
      std::printf("| %-44s |\n", c.name);
      Row("  one RPC + Synchronize, GB/s", gbps_single, "GB/s", c.peer_key,
          peer.count(c.peer_key) ? peer.at(c.peer_key) : 0);
      Row("  8 back to back, GB/s", gbps_pipe, "GB/s", c.peer_key,
          peer.count(c.peer_key) ? peer.at(c.peer_key) : 0);
      Row("  8 back to back vs cupyx", gbps_pipe, "GB/s", c.cupyx_key,
          cupyx.count(c.cupyx_key) ? cupyx.at(c.cupyx_key) : 0);
      Row("  one RPC + Synchronize vs cupyx", gbps_single, "GB/s", c.cupyx_key,
          cupyx.count(c.cupyx_key) ? cupyx.at(c.cupyx_key) : 0);
    }
  } else {
    std::printf("| reshard: skipped, needs 2 devices |\n");
  }

  // --- Bulk transfer through gRPC ---
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

  // The do-nothing byte streams, single and with as many connections as the SDK uses.
  BaselineService baseline;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&baseline);
  builder.SetMaxReceiveMessageSize(64 << 20);
  auto server = builder.BuildAndStart();
  auto stream_gbps = [&](int streams, bool put) {
    BaselineService::kStreams = streams;
    std::vector<std::thread> threads;
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
          blob.mutable_data()->assign(1 << 20, 'z');
          for (int i = 0; i < (1 << 10) / streams; ++i) writer->Write(blob);
          writer->WritesDone();
          writer->Finish().ok();
        } else {
          auto reader = stub->Get(&context, empty);
          while (reader->Read(&blob)) {
          }
          reader->Finish().ok();
        }
      });
    }
    for (auto& t : threads) t.join();
    return bytes / Seconds(t0, Clock::now()) / 1e9;
  };
  const int streams = absl::GetFlag(FLAGS_streams);
  double put1 = 0, putn = 0, get1 = 0, getn = 0;
  for (int rep = 0; rep < 2; ++rep) {
    put1 = std::max(put1, stream_gbps(1, true));
    putn = std::max(putn, stream_gbps(streams, true));
    get1 = std::max(get1, stream_gbps(1, false));
    getn = std::max(getn, stream_gbps(streams, false));
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
  const double up_gbps = bytes / Median(up) / 1e9, down_gbps = bytes / Median(down) / 1e9;
  char label[64];
  std::snprintf(label, sizeof label, "empty stream, %d conns", streams);
  Row("upload 1 GiB (SDK, parallel streams)", up_gbps, "GB/s", "host memcpy 1 GiB", memcpy_gbps);
  Row("upload 1 GiB", up_gbps, "GB/s", label, putn);
  Row("upload 1 GiB", up_gbps, "GB/s", "empty stream, 1 conn", put1);
  Row("download 1 GiB (SDK, parallel streams)", down_gbps, "GB/s", "host memcpy 1 GiB",
      memcpy_gbps);
  Row("download 1 GiB", down_gbps, "GB/s", label, getn);
  Row("download 1 GiB", down_gbps, "GB/s", "empty stream, 1 conn", get1);

  // --- One elementwise RPC on 1000 elements vs an empty unary call ---
  const distarray::v1::IndexMap one = distarray::OnDevice(1, 0);
  auto x = Must(client.Create({1000}, distarray::v1::DTYPE_FLOAT32, {one}), "create x");
  auto y = Must(client.Create({1000}, distarray::v1::DTYPE_FLOAT32, {one}), "create y");
  auto baseline_stub = distarray::bench::Baseline::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  std::vector<double> add_us, ping_us, info_us;
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
    t0 = Clock::now();
    Must(client.ServerInfo(), "info");
    if (i >= 500) info_us.push_back(Seconds(t0, Clock::now()) * 1e6);
  }
  std::sort(info_us.begin(), info_us.end());
  std::sort(add_us.begin(), add_us.end());
  std::sort(ping_us.begin(), ping_us.end());
  Row("elementwise add RPC, 1000 elements, p50", add_us[add_us.size() / 2], "us",
      "empty unary gRPC call, p50", ping_us[ping_us.size() / 2], false);
  Row("elementwise add RPC, 1000 elements, p99", add_us[add_us.size() * 99 / 100], "us",
      "empty unary gRPC call, p99", ping_us[ping_us.size() * 99 / 100], false);
  Row("GetServerInfo RPC (no device work), p50", info_us[info_us.size() / 2], "us",
      "empty unary gRPC call, p50", ping_us[ping_us.size() / 2], false);
  server->Shutdown();
  return 0;
}
