// distarrayd: the distarray daemon. Owns the node's devices and serves distarray.v1.ArrayService
// over gRPC, grpc.health.v1 for probes, and Prometheus metrics. The parts live in server/daemon/;
// this file only puts them together in order.
#include <algorithm>
#include <csignal>
#include <memory>
#include <optional>
#include <string>

#include <spdlog/spdlog.h>

#include "absl/synchronization/mutex.h"

#include "server/daemon/api_server.h"
#include "server/daemon/backend_factory.h"
#include "server/daemon/cluster_roles.h"
#include "server/daemon/command_line.h"
#include "server/daemon/device_health.h"
#include "server/daemon/drain.h"
#include "server/daemon/exit_codes.h"
#include "server/daemon/flags.h"
#include "server/daemon/health_server.h"
#include "server/daemon/log_setup.h"
#include "server/daemon/port_file.h"
#include "server/daemon/server_credentials.h"
#include "server/daemon/signals.h"
#include "server/daemon/usage.h"
#include "server/engine/engine.h"
#include "server/engine/sessions.h"
#include "server/logging/transfer_log.h"
#include "server/metrics/metrics.h"
#include "server/security/authenticator.h"
#include "server/service/array_service.h"
#include "server/service/drain_gate.h"

namespace distarray {
namespace {

int RunDaemon(int argc, char** argv) {
  // Before any thread starts, so that every thread inherits the mask and only the main thread's
  // sigwait sees SIGTERM, SIGINT and SIGHUP.
  daemon::BlockDaemonSignals();
  daemon::InstallCrashReport(argv[0]);
#if defined(NDEBUG) && !defined(DISTARRAY_SANITIZED)
  // Abseil's deadlock detection, on in the system's Abseil, keeps a global graph of every
  // absl::Mutex (gRPC's included) updated on each lock: the first user-space symbol in a profile
  // of the daemon serving small RPCs (docs/performance.md). Debug and sanitizer builds keep it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
#endif
  daemon::ConfigureUsage();
  daemon::CommandLineSources sources;
  if (absl::Status parsed = daemon::ParseDaemonCommandLine(argc, argv, &sources); !parsed.ok()) {
    spdlog::critical("{}", std::string(parsed.message()));
    return daemon::kExitBadFlags;
  }
  absl::StatusOr<daemon::DaemonOptions> options = daemon::DaemonOptionsFromFlags();
  if (!options.ok()) {
    spdlog::critical("{}", sources.Explain(options.status().message()));
    return daemon::kExitBadFlags;
  }
  daemon::ConfigureLogging(options->log_level, options->log_json);
  for (const std::string& variable : sources.ignored_env) {
    spdlog::info("environment variable {} names no flag of distarrayd; ignored", variable);
  }
  absl::StatusOr<std::unique_ptr<Authenticator>> authenticator =
      Authenticator::FromTokensFile(options->auth_tokens_file);
  if (!authenticator.ok()) {
    spdlog::critical("{}", std::string(authenticator.status().message()));
    return daemon::kExitBadFlags;
  }

  // Health first: probes see readiness NOT_SERVING while the devices start, not a refused port.
  std::unique_ptr<daemon::HealthServer> health;
  if (!options->health_listen.empty()) {
    absl::StatusOr<std::unique_ptr<daemon::HealthServer>> started =
        daemon::HealthServer::Start(options->health_listen);
    if (!started.ok()) {
      spdlog::critical("{}", std::string(started.status().message()));
      return daemon::kExitBadFlags;
    }
    health = *std::move(started);
    if (absl::Status written = daemon::WritePortFile(options->health_port_file, health->port());
        !written.ok()) {
      spdlog::error("--health_port_file: {}", std::string(written.message()));
    }
  }

  auto backend = CreateBackend(options->backend);
  if (!backend.ok()) {
    spdlog::critical("{}", std::string(backend.status().message()));
    return backend.status().code() == absl::StatusCode::kUnavailable
               ? daemon::kExitBackendUnavailable
               : daemon::kExitBadFlags;
  }
  // A cluster (docs/cluster.md): a member serves the leader and no clients; the leader forms the
  // cluster before anything below, so readiness stays NOT_SERVING until every member is in.
  std::unique_ptr<daemon::ClusterLeaderRole> cluster_role;
  if (options->cluster.enabled()) {
    if (options->cluster.rank > 0) {
      return daemon::RunClusterMember(*options, std::move(*backend), health.get());
    }
    absl::StatusOr<std::unique_ptr<daemon::ClusterLeaderRole>> role =
        daemon::StartClusterLeader(*options, *backend);
    if (!role.ok()) {
      spdlog::critical("{}", std::string(role.status().message()));
      return daemon::ClusterExitCodeFor(role.status());
    }
    cluster_role = *std::move(role);
  }
  auto metrics = Metrics::Create(options->metrics_listen);
  if (!metrics.ok()) {
    spdlog::critical("{}", std::string(metrics.status().message()));
    return daemon::kExitBadFlags;
  }
  Engine engine(std::move(*backend), options->engine);
  // Scrapes read the engine from here on; declared after it, so it stops first.
  const Metrics::EngineObservation observed =
      (*metrics)->ObserveEngine(engine, options->metrics_tenant_labels);
  ArrayServiceImpl service(
      engine, **metrics,
      MakeSharedMemoryOptions(options->shared_memory, options->shared_memory_limits,
                              options->shared_memory_off_reason));
  // Expired sessions are swept a few times per lease, so their memory returns within about
  // lease * 1.25 of the client's last call.
  Ticker session_sweeper(
      std::clamp(options->engine.session_lease / 4, absl::Milliseconds(100), absl::Seconds(5)),
      [&engine] { engine.SweepExpiredSessions(); });

  DrainGate drain_gate;
  service.set_drain_gate(&drain_gate);
  // A transfer waits this long for another stream of its array before it is logged, so a
  // shared-memory transfer's calls (not always overlapping) make one line (transfer_log.h).
  constexpr absl::Duration kTransferLinger = absl::Milliseconds(20);
  // A transfer that has not yet moved its whole array waits longer for its other streams: a
  // fresh client starts its last parallel stream tens of milliseconds after its first.
  constexpr absl::Duration kPartialTransferLinger = absl::Milliseconds(500);
  TransferLog transfer_log(options->log_progress, int64_t{64} << 20, kTransferLinger,
                           kPartialTransferLinger);
  Ticker transfer_log_flusher(kTransferLinger, [&transfer_log] { transfer_log.FlushLingering(); });
  service.set_transfer_log(&transfer_log);
  service.set_authenticator(authenticator->get());
  // A per-tenant bound at or above the server's adds nothing (gRPC's thread quota holds every
  // tenant to that one), so the service then counts nothing: single-tenant daemons pay no lock.
  if (options->max_concurrent_calls_per_tenant < options->max_concurrent_calls) {
    service.set_max_calls_per_tenant(options->max_concurrent_calls_per_tenant);
  }
  service.set_health_port(health != nullptr ? health->port() : 0);

  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      daemon::ApiServerCredentials(*options);
  if (!credentials.ok()) {
    spdlog::critical("{}", std::string(credentials.status().message()));
    return daemon::kExitBadFlags;
  }
  daemon::ApiServerConfig api_config;
  api_config.credentials = *std::move(credentials);
  api_config.services = {&service};
  // First, so that it also counts the codes of the interceptors after it.
  api_config.interceptors.insert(api_config.interceptors.begin(),
                                 (*metrics)->grpc().NewInterceptorFactory());
  absl::StatusOr<daemon::ApiServer> api = daemon::StartApiServer(*options, std::move(api_config));
  if (!api.ok()) {
    spdlog::critical("{}", std::string(api.status().message()));
    return daemon::kExitBadFlags;
  }
  const auto info = engine.ServerInfo();
  spdlog::info("distarrayd {} serving on port {} with the {} backend, {} devices", info.version(),
               api->port, info.backend(), info.devices_size());
  for (const auto& d : info.devices()) {
    spdlog::info("  device {} ({}): limit {} MiB", d.id(), d.name(), d.memory_limit_bytes() >> 20);
  }
  if (absl::Status written = daemon::WritePortFile(options->port_file, api->port); !written.ok()) {
    spdlog::error("--port_file: {}", std::string(written.message()));
  }

  std::optional<daemon::DeviceHealthMonitor> device_health;
  if (health != nullptr) {
    health->SetStarted();
    device_health.emplace(engine.backend(), *health, absl::Seconds(1));
  }

  daemon::SignalDispatcher signals;
  signals.On(SIGHUP, [&] { (*authenticator)->ReloadTokens(); });
  const int signal = signals.WaitForTermination();
  spdlog::info("signal {}: stopping", signal);
  daemon::DrainParts drain;
  drain.health = health.get();
  drain.gate = &drain_gate;
  drain.api = api->server.get();
  drain.after_calls = [&transfer_log, &service] {
    transfer_log.FlushAll();
    if (const int64_t n = service.ReleaseAllSharedMemory(); n > 0) {
      spdlog::info("removed {} shared-memory segments", n);
    }
  };
  drain.release_devices = [&] {
    device_health.reset();
    // The graph cache's slots are device memory of their own; the arrays' memory is freed with
    // the devices' contexts when the process exits, once their queued work is done.
    engine.ClearGraphCache();
    return engine.backend().Synchronize();
  };
  daemon::DrainAndExit(*options, drain);
}

}  // namespace
}  // namespace distarray

int main(int argc, char** argv) { return distarray::RunDaemon(argc, argv); }
