// The transport baseline the benchmarks divide by: a do-nothing gRPC service (bench/baseline.proto)
// served with the same synchronous gRPC API the daemon uses, in the benchmark's own process or,
// with distarray_bench --serve_baseline_port_file, in a process of its own.
#ifndef DISTARRAY_BENCH_BASELINE_SERVICE_H_
#define DISTARRAY_BENCH_BASELINE_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "baseline.grpc.pb.h"

namespace distarray::bench {

// A steady_clock time as nanoseconds of the host's monotonic clock (see HoldTimes).
inline int64_t SteadyNanos(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

class BaselineService final : public Baseline::Service {
 public:
  grpc::Status Ping(grpc::ServerContext*, const Empty*, Empty*) override {
    return grpc::Status::OK;
  }
  // Answers after `micros` with the handler thread awake (yielding), as RunGraph's handler is
  // near a replay's end: what gRPC adds around a call that lasts that long.
  grpc::Status Hold(grpc::ServerContext*, const HoldRequest* request, HoldTimes* times) override {
    const auto entered = std::chrono::steady_clock::now();
    const auto until =
        entered + std::chrono::microseconds(std::clamp<int64_t>(request->micros(), 0, 10'000'000));
    auto now = entered;
    while (now < until) {
      std::this_thread::yield();
      now = std::chrono::steady_clock::now();
    }
    times->set_entered_ns(SteadyNanos(entered));
    times->set_left_ns(SteadyNanos(now));
    return grpc::Status::OK;
  }
  grpc::Status Put(grpc::ServerContext*, grpc::ServerReader<Blob>* reader, Empty*) override {
    Blob blob;
    std::vector<char> sink(1 << 20);
    while (reader->Read(&blob)) {
      std::memcpy(sink.data(), blob.data().data(), std::min(sink.size(), blob.data().size()));
    }
    return grpc::Status::OK;
  }
  grpc::Status Get(grpc::ServerContext*, const GetRequest* request,
                   grpc::ServerWriter<Blob>* writer) override {
    const int64_t message_bytes =
        std::clamp<int64_t>(request->message_bytes(), 1, int64_t{64} << 20);
    const int64_t total_bytes = std::clamp<int64_t>(request->total_bytes(), 0, int64_t{4} << 30);
    Blob blob;
    blob.mutable_data()->assign(message_bytes, 'x');
    for (int64_t i = 0; i < total_bytes / message_bytes; ++i) writer->Write(blob);
    return grpc::Status::OK;
  }
};

// Serves `service` on a free loopback port of this process; the port in `*port`.
inline std::unique_ptr<grpc::Server> StartBaseline(BaselineService& service, int* port) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), port);
  builder.RegisterService(&service);
  builder.SetMaxReceiveMessageSize(64 << 20);
  return builder.BuildAndStart();
}

}  // namespace distarray::bench

#endif  // DISTARRAY_BENCH_BASELINE_SERVICE_H_
