// The leader's view of its cluster: which ranks have joined, their links (RemoteNode), the
// rendezvous store, the leader's own end of the data plane, and the heartbeats that find a lost
// member within --cluster_lost_after_seconds. Formation: every rank joins, then every node
// connects the data plane for epoch 1. When a lost member rejoins (a restart), the data plane is
// connected again under the next epoch once every member answers.
#ifndef DISTARRAY_SERVER_CLUSTER_CLUSTER_LEADER_H_
#define DISTARRAY_SERVER_CLUSTER_CLUSTER_LEADER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/backend/backend.h"
#include "server/cluster/cluster_options.h"
#include "server/cluster/data_plane.h"
#include "server/cluster/remote_node.h"
#include "server/cluster/rendezvous_store.h"
#include "server/cluster/wire.h"

namespace distarray::cluster {

class ClusterLeader {
 public:
  // The leader's own backend (rank 0's devices) is named `backend` and has `local_devices`;
  // `version` is the daemon's release. Members must match both names.
  ClusterLeader(const ClusterOptions& options, std::string backend, int local_devices,
                std::string version);
  ~ClusterLeader();  // stops the heartbeats

  // ClusterService.Join. INVALID_ARGUMENT for a rank or size that does not match this cluster,
  // FAILED_PRECONDITION for another protocol, release or backend (or, on a rejoin, another
  // device count), ALREADY_EXISTS when a live daemon holds the rank.
  absl::StatusOr<wire::JoinResponse> Join(const wire::JoinRequest& request);
  LeaderStore& store() { return store_; }

  // Blocks until every rank has joined and the data plane is connected, logging who is missing;
  // DEADLINE_EXCEEDED naming them after --cluster_form_timeout_seconds. Then starts the
  // heartbeats.
  absl::Status Form();

  // After Form: the node of `rank` (its current incarnation; null for rank 0).
  std::shared_ptr<RemoteNode> node(int rank) const;
  // After Form: the first global device of every rank, and the total.
  const std::vector<int>& first_devices() const { return first_devices_; }
  int device_count() const { return total_devices_; }
  int size() const { return options_.size; }
  DataPlane& data_plane() { return data_plane_; }
  uint64_t incarnation() const { return incarnation_; }

 private:
  std::vector<int> MissingRanks() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status ConnectDataPlane(int64_t epoch);
  void Heartbeats();

  const ClusterOptions options_;
  const std::string backend_;
  const int local_devices_;
  const std::string version_;
  const uint64_t incarnation_;
  LeaderStore store_;
  DataPlane data_plane_;

  mutable absl::Mutex mu_;
  std::vector<std::shared_ptr<RemoteNode>> nodes_ ABSL_GUARDED_BY(mu_);  // [0] stays null
  bool formed_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<int> first_devices_;
  int total_devices_ = 0;
  std::thread heartbeats_;
};

// Host-resident facts about this node's devices, for Join and Heartbeat.
std::vector<wire::DeviceDescription> DescribeDevices(const Backend& backend);
// A random 64-bit identity for this process (never 0).
uint64_t NewIncarnation();

}  // namespace distarray::cluster

#endif  // DISTARRAY_SERVER_CLUSTER_CLUSTER_LEADER_H_
