#include "server/daemon/cluster_roles.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <string>
#include <thread>

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "server/cluster/cluster_backend.h"
#include "server/cluster/cluster_member.h"
#include "server/daemon/cluster_flags.h"
#include "server/daemon/exit_codes.h"
#include "server/daemon/port_file.h"
#include "server/daemon/signals.h"

#ifndef DISTARRAY_VERSION
#error "DISTARRAY_VERSION must name the release"
#endif

namespace distarray::daemon {
namespace {

// Writes the bound cluster port where --cluster_port_file asks (tests, scripts).
void PublishClusterPort(int port) {
  if (absl::Status written = WritePortFile(ClusterPortFile(), port); !written.ok()) {
    spdlog::error("--cluster_port_file: {}", std::string(written.message()));
  }
}

}  // namespace

int ClusterExitCodeFor(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
      return kExitBadFlags;
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAlreadyExists:
      return kExitClusterRefused;
    default:
      return kExitClusterNotFormed;
  }
}

absl::StatusOr<std::unique_ptr<ClusterLeaderRole>> StartClusterLeader(
    const DaemonOptions& options, std::unique_ptr<Backend>& backend) {
  auto role = std::make_unique<ClusterLeaderRole>();
  role->leader = std::make_unique<cluster::ClusterLeader>(
      options.cluster, std::string(backend->name()), backend->device_count(), DISTARRAY_VERSION);
  role->service = std::make_unique<cluster::ClusterServiceImpl>(role->leader.get());
  absl::StatusOr<cluster::ClusterServer> server =
      cluster::StartClusterServer(options.cluster, *role->service);
  if (!server.ok()) return server.status();
  role->server = *std::move(server);
  PublishClusterPort(role->server.port);
  spdlog::info("cluster leader: {} nodes; cluster service on port {}, data plane at {}",
               options.cluster.size, role->server.port, options.cluster.address);
  if (absl::Status formed = role->leader->Form(); !formed.ok()) return formed;
  backend = std::make_unique<cluster::ClusterBackend>(std::move(backend), *role->leader);
  return role;
}

int RunClusterMember(const DaemonOptions& options, std::unique_ptr<Backend> backend,
                     HealthServer* health) {
  cluster::ClusterMember member(options.cluster, *backend, DISTARRAY_VERSION);
  cluster::ClusterServiceImpl service(&member);
  absl::StatusOr<cluster::ClusterServer> server =
      cluster::StartClusterServer(options.cluster, service);
  if (!server.ok()) {
    spdlog::critical("{}", std::string(server.status().message()));
    return kExitBadFlags;
  }
  PublishClusterPort(server->port);
  const std::string advertised = absl::StrCat(options.cluster.address, ":", server->port);
  spdlog::info("cluster member rank {} of {}: {} devices, cluster service at {}",
               options.cluster.rank, options.cluster.size, backend->device_count(), advertised);
  if (absl::Status joined = member.Join(advertised); !joined.ok()) {
    spdlog::critical("{}", std::string(joined.message()));
    return joined.code() == absl::StatusCode::kDeadlineExceeded ? kExitClusterNotFormed
                                                                : kExitClusterRefused;
  }

  // The watcher marks readiness once the data plane is up, and ends the process when the leader
  // is lost: the member's devices hold nothing anyone can reach any more.
  std::atomic<bool> stopping{false};
  std::thread watcher([&] {
    bool ready = false;
    const absl::Status lost = member.WatchLeader([&] {
      if (!ready && health != nullptr && member.connected()) {
        health->SetStarted();
        ready = true;
      }
      return stopping.load();
    });
    if (!lost.ok()) {
      spdlog::critical("{}; exiting for the group to restart", std::string(lost.message()));
      if (health != nullptr) health->SetDraining();
      spdlog::shutdown();
      _exit(kExitClusterLeaderLost);
    }
  });
  SignalDispatcher signals;
  const int signal = signals.WaitForTermination();
  spdlog::info("signal {}: stopping", signal);
  stopping = true;
  watcher.join();
  if (health != nullptr) health->SetDraining();
  server->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  return backend->Synchronize().ok() ? 0 : kExitDevicesFailed;
}

}  // namespace distarray::daemon
