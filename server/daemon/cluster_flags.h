// The --cluster_* flags, and LeaderWorkerSet's environment where the flags leave a value unset
// (docs/cluster.md).
#ifndef DISTARRAY_SERVER_DAEMON_CLUSTER_FLAGS_H_
#define DISTARRAY_SERVER_DAEMON_CLUSTER_FLAGS_H_

#include <string>

#include "absl/status/statusor.h"
#include "server/cluster/cluster_options.h"

namespace distarray::daemon {

// Reads the (parsed) flags and, where --cluster_size, --cluster_rank or --cluster_leader are
// unset, LWS_GROUP_SIZE, LWS_WORKER_INDEX and LWS_LEADER_ADDRESS. INVALID_ARGUMENT naming the
// flag (or variable) for a size outside [1, 64], a rank outside [0, size), a member without a
// leader address, or a cluster without an address its peers can reach.
absl::StatusOr<cluster::ClusterOptions> ClusterOptionsFromFlags();

// Where the bound cluster port is written (--cluster_port_file; empty: nowhere).
std::string ClusterPortFile();

}  // namespace distarray::daemon

#endif  // DISTARRAY_SERVER_DAEMON_CLUSTER_FLAGS_H_
