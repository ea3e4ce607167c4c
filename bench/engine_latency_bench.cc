// Where an eager RPC's server time goes, with no gRPC in the way: the engine and backend calls an
// elementwise RPC on 1,000 float32 elements makes, each timed alone in this process (p50 and p90
// of 20,000 after 2,000 warm-ups; then 5,000 more, each after the thread slept 200 us, as a
// handler thread does between RPCs). Set against the `latency` section of distarray_bench (the same
// op through the daemon), it splits an RPC's cost into transport, service and engine.
//   engine_latency_bench [--backend=auto|cuda|host] [--iterations=20000]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "bench/figures.h"
#include "common/box.h"
#include "distarray/graph.h"
#include "server/daemon/backend_factory.h"
#include "server/engine/engine.h"

ABSL_FLAG(std::string, backend, "auto", "auto, cuda or host");
ABSL_FLAG(int, iterations, 20000, "timed calls per row (after a tenth as many warm-ups)");
ABSL_FLAG(int, idle_us, 200, "the idle columns' sleep before each call (a quarter as many calls)");

namespace {

namespace v1 = distarray::v1;
using Clock = std::chrono::steady_clock;

template <typename T>
T Must(absl::StatusOr<T> v, const char* what) {
  return distarray::bench::Must("engine_latency_bench", std::move(v), what);
}

void Must(const absl::Status& status, const char* what) {
  distarray::bench::Must("engine_latency_bench", status, what);
}

// p50 and p90 of `call`'s microseconds (it returns its own start-to-end time, so it can leave
// cleanup untimed), after a tenth as many warm-ups; with `idle_us`, the thread sleeps that long
// before each call, as a daemon's handler thread waits between RPCs (caches and branch
// predictors go cold meanwhile).
template <typename Call>
std::pair<double, double> Percentiles(int iterations, int idle_us, Call& call) {
  for (int i = 0; i < iterations / 10; ++i) call();
  std::vector<double> us;
  us.reserve(iterations);
  for (int i = 0; i < iterations; ++i) {
    if (idle_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(idle_us));
    us.push_back(call());
  }
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us[us.size() * 9 / 10]};
}

// One row: back to back, then with the thread idle between calls.
template <typename Call>
void Row(const char* what, int iterations, Call&& call) {
  const auto hot = Percentiles(iterations, 0, call);
  const auto idle = Percentiles(std::max(iterations / 4, 10), absl::GetFlag(FLAGS_idle_us), call);
  std::printf("| %-58s | %8.2f | %8.2f | %8.2f | %8.2f |\n", what, hot.first, hot.second,
              idle.first, idle.second);
}

double Us(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

// `chunks` row blocks of 64 float32 each, dealt round-robin to devices 0 and 1 (or all on 0).
v1::CreateArrayRequest RowBlocks(int chunks, int devices) {
  v1::CreateArrayRequest request;
  v1::ArraySpec& spec = *request.mutable_spec();
  spec.mutable_shape()->add_dims(int64_t{64} * chunks);
  spec.set_dtype(v1::DTYPE_FLOAT32);
  for (int c = 0; c < chunks; ++c) {
    v1::Chunk& chunk = *spec.mutable_index_map()->add_chunks();
    chunk.set_device(c % devices);
    v1::Slice& slice = *chunk.add_slices();
    slice.set_start(int64_t{64} * c);
    slice.set_stop(int64_t{64} * (c + 1));
  }
  request.mutable_fill()->mutable_arange()->set_step(1);
  return request;
}

v1::CreateArrayRequest OneDeviceArray() {
  v1::CreateArrayRequest request;
  v1::ArraySpec& spec = *request.mutable_spec();
  spec.mutable_shape()->add_dims(1000);
  spec.set_dtype(v1::DTYPE_FLOAT32);
  v1::Chunk& chunk = *spec.mutable_index_map()->add_chunks();
  chunk.set_device(0);
  chunk.add_slices()->set_stop(1000);
  request.mutable_fill()->mutable_arange()->set_step(1);
  return request;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  distarray::BackendOptions options;
  options.kind = absl::GetFlag(FLAGS_backend);
  options.host_devices = 2;
  auto backend = Must(distarray::CreateBackend(options), "backend");
  const std::string name(backend->name());
  distarray::Backend* raw = backend.get();
  distarray::Engine engine(std::move(backend));
  const int n = absl::GetFlag(FLAGS_iterations);
  if (n < 10 || absl::GetFlag(FLAGS_idle_us) < 0) {
    std::fprintf(stderr, "engine_latency_bench: --iterations must be >= 10, --idle_us >= 0\n");
    return 2;
  }

  distarray::CallContext call;
  call.session = "bench";
  call.alive = [] { return absl::OkStatus(); };
  const auto x = Must(engine.Create(OneDeviceArray(), call), "create x");
  const auto y = Must(engine.Create(OneDeviceArray(), call), "create y");
  v1::ElementwiseRequest add;
  add.mutable_spec()->set_op(v1::ELEMENTWISE_OP_ADD);
  add.mutable_spec()->add_operands()->set_handle(x->handle);
  add.mutable_spec()->add_operands()->set_handle(y->handle);
  Must(engine.Synchronize({}, call), "synchronize");

  std::printf("engine_latency_bench: backend %s, %d calls per row after %d warm-ups\n\n",
              name.c_str(), n, n / 10);
  std::printf("| %-58s | %8s | %8s | %8s | %8s |\n|---|---|---|---|---|\n",
              "call (1,000 float32 on device 0)", "p50 us", "p90 us", "idle p50", "idle p90");
  std::string last;
  Row("Engine::Elementwise x + y (plan, allocate, launch, register)", n, [&] {
    const auto t0 = Clock::now();
    last = Must(engine.Elementwise(add, call), "add")->handle;
    const double us = Us(t0, Clock::now());
    Must(engine.Delete(last, call), "delete");
    return us;
  });
  {
    // Per-chunk costs: the same op over many chunks (one launch each).
    constexpr int kChunks = 256;
    const int devices = std::min(raw->device_count(), 2);
    const auto a = Must(engine.Create(RowBlocks(kChunks, devices), call), "create a");
    const auto b = Must(engine.Create(RowBlocks(kChunks, devices), call), "create b");
    v1::ElementwiseRequest many;
    many.mutable_spec()->set_op(v1::ELEMENTWISE_OP_ADD);
    many.mutable_spec()->add_operands()->set_handle(a->handle);
    many.mutable_spec()->add_operands()->set_handle(b->handle);
    Row("the same over 256 chunks of 64 on 2 devices, per chunk", std::max(n / 50, 10), [&] {
      const auto t0 = Clock::now();
      last = Must(engine.Elementwise(many, call), "add")->handle;
      const double us = Us(t0, Clock::now()) / kChunks;
      Must(engine.Delete(last, call), "delete");
      return us;
    });
  }
  {
    // RunGraph's host work around a replay: the one-statement program z = x + y, replayed from
    // the graph cache (check, key, copy in, launch, copy out, wait, register).
    distarray::graph::ProgramBuilder p;
    p.Output("z", p.Input("x") + p.Input("y"));
    v1::RunGraphRequest run;
    *run.mutable_program() = p.program();
    (*run.mutable_arguments())["x"] = x->handle;
    (*run.mutable_arguments())["y"] = y->handle;
    Row("Engine::RunGraph z = x + y, cached graph (whole call)", std::max(n / 10, 10), [&] {
      const auto t0 = Clock::now();
      auto outcome = Must(engine.RunGraph(run, call), "RunGraph");
      const double us = Us(t0, Clock::now());
      for (const auto& [unused, array] : outcome.outputs) {
        Must(engine.Delete(array->handle, call), "delete");
      }
      return us;
    });
  }
  Row("Engine::Delete of that result", n, [&] {
    last = Must(engine.Elementwise(add, call), "add")->handle;
    const auto t0 = Clock::now();
    Must(engine.Delete(last, call), "delete");
    return Us(t0, Clock::now());
  });
  Row("Engine::TouchSession (every RPC, twice)", n, [&] {
    const auto t0 = Clock::now();
    Must(engine.TouchSession(call), "touch");
    return Us(t0, Clock::now());
  });
  Row("Engine::ServerInfo (GetServerInfo's body)", n, [&] {
    const auto t0 = Clock::now();
    const v1::GetServerInfoResponse info = engine.ServerInfo();
    const double us = Us(t0, Clock::now());
    if (info.devices_size() == 0) std::exit(2);
    return us;
  });
  Row("Backend::Allocate 4,000 bytes (and its release, untimed)", n, [&] {
    const auto t0 = Clock::now();
    distarray::BufferPtr buffer = Must(raw->Allocate(0, 4000), "allocate");
    const double us = Us(t0, Clock::now());
    buffer.reset();
    return us;
  });
  Row("release of a 4,000-byte buffer", n, [&] {
    distarray::BufferPtr buffer = Must(raw->Allocate(0, 4000), "allocate");
    const auto t0 = Clock::now();
    buffer.reset();
    return Us(t0, Clock::now());
  });
  distarray::BufferPtr out = Must(raw->Allocate(0, 4000), "allocate out");
  const std::vector<distarray::ElementwiseArg> args = [&] {
    std::vector<distarray::ElementwiseArg> a(2);
    a[0].buffer = x->chunks[0].buffer;
    a[1].buffer = y->chunks[0].buffer;
    for (auto& arg : a) {
      arg.view = distarray::MakeStridedBox({1000}, distarray::Box{distarray::Range{0, 1000}});
      arg.contiguous = true;
    }
    return a;
  }();
  const distarray::ElementwiseOpId op = distarray::ElementwiseOpId::kAdd;
  Row("Backend::Elementwise into an existing buffer (one launch)", n, [&] {
    const auto t0 = Clock::now();
    Must(raw->Elementwise(op, distarray::DType::kFloat32, distarray::DType::kFloat32, out, 1000,
                          args),
         "elementwise");
    return Us(t0, Clock::now());
  });
  Row("Engine::Synchronize (all devices idle)", n, [&] {
    const auto t0 = Clock::now();
    Must(engine.Synchronize({}, call), "synchronize");
    return Us(t0, Clock::now());
  });
  Must(engine.Synchronize({}, call), "synchronize");
  return 0;
}
