// A daemon's part in a cluster (docs/cluster.md), as main runs it: the leader forms the cluster
// before it serves clients; a member serves the leader until SIGTERM or the leader's loss.
#ifndef DISTARRAY_SERVER_DAEMON_CLUSTER_ROLES_H_
#define DISTARRAY_SERVER_DAEMON_CLUSTER_ROLES_H_

#include <memory>

#include "absl/status/statusor.h"
#include "server/backend/backend.h"
#include "server/cluster/cluster_leader.h"
#include "server/cluster/cluster_service.h"
#include "server/daemon/flags.h"
#include "server/daemon/health_server.h"

namespace distarray::daemon {

// What the leader keeps running while it serves: declared before the engine, so it outlives it.
struct ClusterLeaderRole {
  std::unique_ptr<cluster::ClusterLeader> leader;
  std::unique_ptr<cluster::ClusterServiceImpl> service;
  cluster::ClusterServer server;
};

// Serves the cluster service, waits until every member has joined and the data plane is up
// (readiness stays NOT_SERVING meanwhile), then replaces `backend` with the cluster's. The
// error's exit code: ExitCodeFor.
absl::StatusOr<std::unique_ptr<ClusterLeaderRole>> StartClusterLeader(
    const DaemonOptions& options, std::unique_ptr<Backend>& backend);

// A member's whole life; returns the process's exit code.
int RunClusterMember(const DaemonOptions& options, std::unique_ptr<Backend> backend,
                     HealthServer* health);

// The exit code for a failed StartClusterLeader.
int ClusterExitCodeFor(const absl::Status& status);

}  // namespace distarray::daemon

#endif  // DISTARRAY_SERVER_DAEMON_CLUSTER_ROLES_H_
