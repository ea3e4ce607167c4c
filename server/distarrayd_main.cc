// distarrayd: the distarray daemon. Owns the node's devices and serves distarray.v1.ArrayService
// over gRPC, grpc.health.v1 for probes, and Prometheus metrics.
#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <spdlog/spdlog.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/index_map.h"
#include "common/sizes.h"
#include "server/backend/backend_factory.h"
#include "server/engine/engine.h"
#include "server/engine/sessions.h"
#include "server/metrics/metrics.h"
#include "server/service/array_service.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "gRPC listen address (host:port; port 0 picks one). Loopback by default: serving other "
          "hosts is an explicit choice, e.g. 0.0.0.0:50051");
ABSL_FLAG(std::string, backend, "auto",
          "Device backend: auto (cuda if a GPU is usable), cuda, host");
ABSL_FLAG(int, host_devices, 4, "Number of simulated devices of the host backend");
ABSL_FLAG(std::string, memory_limit, "",
          "Per-device memory limit, bytes with optional KiB/MiB/GiB suffix (default: host 1GiB, "
          "cuda --memory_fraction of each card)");
ABSL_FLAG(double, memory_fraction, 0.9, "CUDA: fraction of each card's memory to admit");
ABSL_FLAG(std::string, transfer, "peer",
          "CUDA: cross-device copies by peer (cudaMemcpyPeerAsync, measured fastest on NVLink) or "
          "nccl (send/recv, all transfers of a reshard in one NCCL group)");
ABSL_FLAG(std::string, metrics_listen, "127.0.0.1:9464",
          "Prometheus /metrics address (loopback by default, e.g. 0.0.0.0:9464 for a scraper on "
          "another host); empty disables");
ABSL_FLAG(std::string, port_file, "", "Write the bound gRPC port to this file once serving");
ABSL_FLAG(std::string, log_level, "info", "trace, debug, info, warn, error");
ABSL_FLAG(int, drain_seconds, 10,
          "On SIGTERM/SIGINT, how long in-flight calls may finish; the process exits at most 1 s "
          "after this even if a call is still running");
ABSL_FLAG(int64_t, session_lease_seconds, 60,
          "A client session with no call or KeepAlive for this long expires and its unnamed "
          "arrays are deleted");
ABSL_FLAG(int64_t, max_chunks, distarray::kDefaultMaxChunks,
          "Most chunks an index map may have (more is INVALID_ARGUMENT)");
ABSL_FLAG(int64_t, upload_idle_timeout_ms, 30000,
          "An upload stream that sends no message for this long is cancelled (CANCELLED) and its "
          "memory released; 0 disables");
ABSL_FLAG(int, max_list_page_size, 1000, "Most arrays in one ListArrays page");
ABSL_FLAG(int, max_concurrent_calls, 128,
          "Most calls served at once (each holds at most two transfer slabs, 32 MiB); a call "
          "beyond it is answered RESOURCE_EXHAUSTED at once");
ABSL_FLAG(std::string, graphs, "on",
          "RunGraph: 'on' runs single-device programs as recorded CUDA graphs with conditional "
          "nodes (CUDA backend); 'off' runs every program eagerly from the host");
ABSL_FLAG(int64_t, max_loop_iterations, int64_t{1} << 30,
          "RunGraph: the largest max_iterations a program's loop may ask for");
ABSL_FLAG(int, max_program_statements, 4096,
          "RunGraph: most statements in a program, counted over every body");
ABSL_FLAG(int, max_registered_programs, 1024, "Most programs kept by RegisterProgram");
ABSL_FLAG(int, max_cached_graphs, 64,
          "Most executable graphs RunGraph keeps (least recently used goes first)");

#if defined(__SANITIZE_ADDRESS__)
#define DISTARRAY_LEAK_CHECK_AT_EXIT 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DISTARRAY_LEAK_CHECK_AT_EXIT 1
#endif
#endif
#ifndef DISTARRAY_LEAK_CHECK_AT_EXIT
#define DISTARRAY_LEAK_CHECK_AT_EXIT 0
#endif
#if DISTARRAY_LEAK_CHECK_AT_EXIT
#include <sanitizer/lsan_interface.h>
#endif

namespace {

constexpr int kExitBadFlags = 2;
constexpr int kExitBackendUnavailable = 3;
constexpr int kExitDrainTimedOut = 4;

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }

// Parses "123", "64MiB", "1GiB", "512KiB".
bool ParseBytes(std::string text, int64_t* bytes) {
  int64_t unit = 1;
  for (auto [suffix, scale] : {std::pair{"KiB", distarray::operator""_KiB(1)},
                               std::pair{"MiB", distarray::operator""_MiB(1)},
                               std::pair{"GiB", distarray::operator""_GiB(1)}}) {
    if (text.size() > 3 && text.ends_with(suffix)) {
      unit = scale;
      text.resize(text.size() - 3);
      break;
    }
  }
  int64_t n = 0;
  if (!absl::SimpleAtoi(text, &n) || n <= 0) return false;
  *bytes = n * unit;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "serves distributed arrays on this node's GPUs over gRPC.\n"
      "  distarrayd --backend=host --host_devices=4 --listen=127.0.0.1:50051");
  absl::ParseCommandLine(argc, argv);

  spdlog::set_level(spdlog::level::from_str(absl::GetFlag(FLAGS_log_level)));
  distarray::BackendOptions options;
  options.kind = absl::GetFlag(FLAGS_backend);
  options.host_devices = absl::GetFlag(FLAGS_host_devices);
  options.memory_fraction = absl::GetFlag(FLAGS_memory_fraction);
  options.transfer = absl::GetFlag(FLAGS_transfer);
  if (const std::string limit = absl::GetFlag(FLAGS_memory_limit); !limit.empty()) {
    if (!ParseBytes(limit, &options.memory_limit_bytes)) {
      spdlog::critical("--memory_limit: expected a positive byte count such as 512MiB, got '{}'",
                       limit);
      return kExitBadFlags;
    }
  }
  if (options.memory_fraction <= 0 || options.memory_fraction > 1) {
    spdlog::critical("--memory_fraction: must be in (0, 1]");
    return kExitBadFlags;
  }

  auto backend = distarray::CreateBackend(options);
  if (!backend.ok()) {
    spdlog::critical("{}", std::string(backend.status().message()));
    return backend.status().code() == absl::StatusCode::kUnavailable ? kExitBackendUnavailable
                                                                     : kExitBadFlags;
  }
  const int device_count = (*backend)->device_count();
  auto metrics = distarray::Metrics::Create(absl::GetFlag(FLAGS_metrics_listen), device_count);
  if (!metrics.ok()) {
    spdlog::critical("{}", std::string(metrics.status().message()));
    return kExitBadFlags;
  }
  distarray::EngineOptions engine_options;
  engine_options.max_chunks = absl::GetFlag(FLAGS_max_chunks);
  engine_options.session_lease = absl::Seconds(absl::GetFlag(FLAGS_session_lease_seconds));
  engine_options.upload_idle_timeout_ms = absl::GetFlag(FLAGS_upload_idle_timeout_ms);
  engine_options.max_list_page_size = absl::GetFlag(FLAGS_max_list_page_size);
  engine_options.default_list_page_size =
      std::min(engine_options.default_list_page_size, engine_options.max_list_page_size);
  if (engine_options.max_chunks < 1) {
    spdlog::critical("--max_chunks: must be at least 1");
    return kExitBadFlags;
  }
  if (absl::GetFlag(FLAGS_session_lease_seconds) < 1) {
    spdlog::critical("--session_lease_seconds: must be at least 1");
    return kExitBadFlags;
  }
  if (engine_options.upload_idle_timeout_ms < 0) {
    spdlog::critical("--upload_idle_timeout_ms: must be >= 0");
    return kExitBadFlags;
  }
  if (absl::GetFlag(FLAGS_max_concurrent_calls) < 1) {
    spdlog::critical("--max_concurrent_calls: must be at least 1");
    return kExitBadFlags;
  }
  if (engine_options.max_list_page_size < 1) {
    spdlog::critical("--max_list_page_size: must be at least 1");
    return kExitBadFlags;
  }
  const std::string graphs = absl::GetFlag(FLAGS_graphs);
  if (graphs != "on" && graphs != "off") {
    spdlog::critical("--graphs: 'on' or 'off', got '{}'", graphs);
    return kExitBadFlags;
  }
  engine_options.use_graphs = graphs == "on";
  engine_options.programs.max_loop_iterations = absl::GetFlag(FLAGS_max_loop_iterations);
  engine_options.programs.max_statements = absl::GetFlag(FLAGS_max_program_statements);
  engine_options.programs.max_registered_programs = absl::GetFlag(FLAGS_max_registered_programs);
  engine_options.programs.max_cached_graphs = absl::GetFlag(FLAGS_max_cached_graphs);
  if (engine_options.programs.max_loop_iterations < 1 ||
      engine_options.programs.max_statements < 1 ||
      engine_options.programs.max_registered_programs < 0 ||
      engine_options.programs.max_cached_graphs < 0) {
    spdlog::critical(
        "--max_loop_iterations and --max_program_statements must be at least 1; "
        "--max_registered_programs and --max_cached_graphs at least 0");
    return kExitBadFlags;
  }
  distarray::Engine engine(std::move(*backend), engine_options);
  distarray::ArrayServiceImpl service(engine, **metrics);
  // Expired sessions are swept a few times per lease, so their memory returns within about
  // lease * 1.25 of the client's last call.
  distarray::Ticker session_sweeper(
      std::clamp(engine_options.session_lease / 4, absl::Milliseconds(100), absl::Seconds(5)),
      [&engine] { engine.SweepExpiredSessions(); });

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(absl::GetFlag(FLAGS_listen), grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  // The synchronous server runs each call on a thread of its own and would otherwise start one per
  // concurrent call without bound, each able to hold transfer slabs: a thread quota bounds the
  // host memory and threads that concurrent clients can take. gRPC answers a call that finds
  // the quota spent with RESOURCE_EXHAUSTED; its polling thread counts against the quota too.
  constexpr int kPollerThreads = 1;
  grpc::ResourceQuota quota("distarrayd");
  quota.SetMaxThreads(absl::GetFlag(FLAGS_max_concurrent_calls) + kPollerThreads);
  builder.SetResourceQuota(quota);
  // Bulk data is streamed in pieces, so messages stay small; 64 MiB leaves room for large maps.
  builder.SetMaxReceiveMessageSize(64 << 20);
  builder.SetMaxSendMessageSize(64 << 20);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 30000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    spdlog::critical("--listen: cannot bind {}", absl::GetFlag(FLAGS_listen));
    return kExitBadFlags;
  }
  const auto info = engine.ServerInfo();
  spdlog::info("distarrayd {} serving on port {} with the {} backend, {} devices", info.version(),
               port, info.backend(), info.devices_size());
  for (const auto& d : info.devices()) {
    spdlog::info("  device {} ({}): limit {} MiB", d.id(), d.name(), d.memory_limit_bytes() >> 20);
  }
  if (const std::string path = absl::GetFlag(FLAGS_port_file); !path.empty()) {
    // Write then rename, so a reader never sees a partial file.
    const std::string tmp = path + ".tmp";
    std::ofstream(tmp) << port << "\n";
    std::rename(tmp.c_str(), path.c_str());
  }

  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  while (!g_stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(100));

  // Drain: report NOT_SERVING to probes, let in-flight calls finish, then stop.
  const int drain_seconds = absl::GetFlag(FLAGS_drain_seconds);
  spdlog::info("draining for up to {} s", drain_seconds);
  // Shutdown() cancels the calls still running at the deadline, but a handler in CPU-bound work
  // (planning a huge map, say) does not look at its cancellation until that work ends, and
  // Wait() waits for every handler. An orchestrator's grace period expects us gone within the
  // drain time, so a watchdog ends the process 1 s after it. _Exit skips destructors on purpose:
  // they would wait for the same busy handler; device memory returns with the process.
  std::thread([drain_seconds] {
    std::this_thread::sleep_for(std::chrono::seconds(drain_seconds) + std::chrono::seconds(1));
    spdlog::error("calls still running {} s after SIGTERM; exiting without waiting for them",
                  drain_seconds + 1);
    spdlog::default_logger()->flush();
    std::_Exit(kExitDrainTimedOut);
  }).detach();
  server->GetHealthCheckService()->SetServingStatus(false);
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(drain_seconds));
  server->Wait();
  // Every call has ended. Finish the devices' queued work, then leave without running the
  // destructors of gRPC's globals: gRPC 1.51's global shutdown joins an executor thread that
  // sleeps in epoll for up to 10 s (measured: 3 s and more on a loaded 2-core machine), which
  // would stretch SIGTERM-to-exit past the drain time. The process's exit returns host and
  // device memory; a sanitizer build still runs its leak check first.
  const absl::Status synced = engine.backend().Synchronize();
  if (!synced.ok()) spdlog::error("devices at exit: {}", synced.ToString());
  spdlog::info("stopped");
  spdlog::default_logger()->flush();
#if DISTARRAY_LEAK_CHECK_AT_EXIT
  __lsan_do_leak_check();
#endif
  std::fflush(nullptr);
  std::_Exit(synced.ok() ? EXIT_SUCCESS : EXIT_FAILURE);
}
