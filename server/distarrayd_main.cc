// distarrayd: the distarray daemon. Owns the node's devices and serves distarray.v1.ArrayService
// over gRPC, grpc.health.v1 for probes, and Prometheus metrics. The parts live in server/daemon/;
// this file only puts them together in order.
#include <algorithm>
#include <string>

#include <spdlog/spdlog.h>

#include "absl/flags/parse.h"
#include "server/backend/backend_factory.h"
#include "server/daemon/api_server.h"
#include "server/daemon/drain.h"
#include "server/daemon/exit_codes.h"
#include "server/daemon/flags.h"
#include "server/daemon/port_file.h"
#include "server/daemon/server_credentials.h"
#include "server/daemon/signals.h"
#include "server/daemon/usage.h"
#include "server/engine/engine.h"
#include "server/engine/sessions.h"
#include "server/metrics/metrics.h"
#include "server/service/array_service.h"

namespace distarray {
namespace {

int RunDaemon(int argc, char** argv) {
  // Before any thread starts, so that every thread inherits the mask and only the main thread's
  // sigwait sees SIGTERM, SIGINT and SIGHUP.
  daemon::BlockDaemonSignals();
  daemon::ConfigureUsage();
  absl::ParseCommandLine(argc, argv);
  absl::StatusOr<daemon::DaemonOptions> options = daemon::DaemonOptionsFromFlags();
  if (!options.ok()) {
    spdlog::critical("{}", std::string(options.status().message()));
    return daemon::kExitBadFlags;
  }
  spdlog::set_level(options->log_level);

  auto backend = CreateBackend(options->backend);
  if (!backend.ok()) {
    spdlog::critical("{}", std::string(backend.status().message()));
    return backend.status().code() == absl::StatusCode::kUnavailable
               ? daemon::kExitBackendUnavailable
               : daemon::kExitBadFlags;
  }
  auto metrics = Metrics::Create(options->metrics_listen);
  if (!metrics.ok()) {
    spdlog::critical("{}", std::string(metrics.status().message()));
    return daemon::kExitBadFlags;
  }
  Engine engine(std::move(*backend), options->engine);
  // Scrapes read the engine from here on; declared after it, so it stops first.
  const Metrics::EngineObservation observed = (*metrics)->ObserveEngine(engine);
  ArrayServiceImpl service(engine, **metrics);
  // Expired sessions are swept a few times per lease, so their memory returns within about
  // lease * 1.25 of the client's last call.
  Ticker session_sweeper(
      std::clamp(options->engine.session_lease / 4, absl::Milliseconds(100), absl::Seconds(5)),
      [&engine] { engine.SweepExpiredSessions(); });

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

  daemon::SignalDispatcher signals;
  const int signal = signals.WaitForTermination();
  spdlog::info("signal {}: stopping", signal);
  daemon::DrainAndExit(*options, *api->server, engine);
}

}  // namespace
}  // namespace distarray

int main(int argc, char** argv) { return distarray::RunDaemon(argc, argv); }
