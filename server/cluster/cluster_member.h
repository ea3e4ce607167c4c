// A member daemon's part (rank > 0): it joins the leader, connects the data plane when the
// leader asks, runs the device work the leader forwards, and watches the leader's heartbeats. It
// serves no clients. When the leader goes silent for --cluster_lost_after_seconds (or comes back
// as another process), the member's work is over: the caller exits so that the group restarts.
#ifndef DISTARRAY_SERVER_CLUSTER_CLUSTER_MEMBER_H_
#define DISTARRAY_SERVER_CLUSTER_CLUSTER_MEMBER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "distarray/internal/v1/cluster.grpc.pb.h"
#include "server/backend/backend.h"
#include "server/cluster/cluster_options.h"
#include "server/cluster/data_plane.h"
#include "server/cluster/member_work.h"

namespace distarray::cluster {

class ClusterMember {
 public:
  ClusterMember(const ClusterOptions& options, Backend& backend, std::string version);

  // Joins the leader, retrying with backoff (and saying so) while it cannot be reached.
  // DEADLINE_EXCEEDED after --cluster_form_timeout_seconds without an answer; the leader's
  // refusal (INVALID_ARGUMENT, FAILED_PRECONDITION, ALREADY_EXISTS) at once.
  absl::Status Join(const std::string& advertised_address);

  // ClusterService handlers.
  absl::Status Connect(int64_t epoch);
  wire::HeartbeatResponse Heartbeat(const wire::HeartbeatRequest& request);
  MemberWork& work() { return work_; }
  Backend& backend() { return backend_; }

  // Whether the data plane is connected (readiness).
  bool connected() const { return data_plane_.epoch() > 0; }
  // Blocks until the leader is lost, and says how; returns early (OK) once `stop` returns true
  // (checked every 100 ms).
  absl::Status WatchLeader(const std::function<bool()>& stop);

 private:
  const ClusterOptions options_;
  Backend& backend_;
  const std::string version_;
  const uint64_t incarnation_;
  DataPlane data_plane_;
  MemberWork work_;
  std::shared_ptr<internal::v1::ClusterService::Stub> leader_;

  mutable absl::Mutex mu_;
  absl::Time last_heartbeat_ ABSL_GUARDED_BY(mu_);
  uint64_t leader_incarnation_ ABSL_GUARDED_BY(mu_) = 0;
  std::string leader_changed_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distarray::cluster

#endif  // DISTARRAY_SERVER_CLUSTER_CLUSTER_MEMBER_H_
