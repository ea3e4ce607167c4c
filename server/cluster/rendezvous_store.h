// The rendezvous store the data plane's bootstrap reads and writes (Gloo's Store interface). The
// leader keeps it in memory and serves it over ClusterService (StoreSet, StoreGet); the members
// reach it through GrpcStore. Keys are write-once, so every connection epoch scopes its own.
#ifndef DISTARRAY_SERVER_CLUSTER_RENDEZVOUS_STORE_H_
#define DISTARRAY_SERVER_CLUSTER_RENDEZVOUS_STORE_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <gloo/rendezvous/hash_store.h>
#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "distarray/internal/v1/cluster.grpc.pb.h"

namespace distarray::cluster {

// The leader's store: Gloo's in-memory HashStore, with a Get that waits.
class LeaderStore {
 public:
  absl::Status Set(const std::string& key, const std::string& value);
  // Waits up to `timeout` for the key: DEADLINE_EXCEEDED naming it when it does not appear.
  absl::StatusOr<std::string> Get(const std::string& key, absl::Duration timeout);
  gloo::rendezvous::Store& store() { return store_; }

 private:
  gloo::rendezvous::HashStore store_;
};

// A member's view of the leader's store, over the leader's ClusterService.
class GrpcStore final : public gloo::rendezvous::Store {
 public:
  explicit GrpcStore(std::shared_ptr<internal::v1::ClusterService::Stub> leader)
      : leader_(std::move(leader)) {}
  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override { wait(keys, kDefaultTimeout); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

 private:
  std::shared_ptr<internal::v1::ClusterService::Stub> leader_;
  std::chrono::milliseconds last_timeout_ = kDefaultTimeout;
};

}  // namespace distarray::cluster

#endif  // DISTARRAY_SERVER_CLUSTER_RENDEZVOUS_STORE_H_
