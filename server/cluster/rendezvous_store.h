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
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "distarray/internal/v1/cluster.grpc.pb.h"

namespace distarray::cluster {

// The leader's store: Gloo's in-memory HashStore, with a Get that waits, bounded in keys and
// bytes (a peer on the cluster port sets keys at will), and scoped by connection epoch: the data
// plane's keys are "epoch<N>/...", and a new epoch's connection forgets every other epoch's.
class LeaderStore {
 public:
  // A rendezvous of the largest cluster (64 ranks) sets a few keys per rank and epoch.
  static constexpr int64_t kMaxKeys = 4096;
  static constexpr int64_t kMaxBytes = int64_t{16} << 20;

  // ALREADY_EXISTS for a key set before; RESOURCE_EXHAUSTED naming the bound when the store is
  // full.
  absl::Status Set(const std::string& key, const std::string& value) ABSL_LOCKS_EXCLUDED(mu_);
  // Waits up to `timeout` for the key: DEADLINE_EXCEEDED naming it when it does not appear.
  absl::StatusOr<std::string> Get(const std::string& key, absl::Duration timeout);
  // Drops every key but those of `epoch` (before the leader connects it): what earlier epochs
  // left, and anything set outside an epoch.
  void KeepOnlyEpoch(int64_t epoch) ABSL_LOCKS_EXCLUDED(mu_);
  int64_t keys() const ABSL_LOCKS_EXCLUDED(mu_);
  // The leader's own rendezvous, through the same bounds.
  gloo::rendezvous::Store& store() { return gloo_view_; }

 private:
  // Gloo's HashStore, with its map reachable to erase keys.
  class ErasableHashStore final : public gloo::rendezvous::HashStore {
   public:
    // Erases the keys `drop` selects; returns the bytes of their values.
    template <typename Drop>
    int64_t EraseIf(Drop drop);
  };
  // What the leader's data plane sees: set() through Set's bounds.
  class GlooView final : public gloo::rendezvous::Store {
   public:
    explicit GlooView(LeaderStore& owner) : owner_(owner) {}
    void set(const std::string& key, const std::vector<char>& data) override;
    std::vector<char> get(const std::string& key) override { return owner_.store_.get(key); }
    void wait(const std::vector<std::string>& keys) override { owner_.store_.wait(keys); }
    void wait(const std::vector<std::string>& keys,
              const std::chrono::milliseconds& timeout) override {
      owner_.store_.wait(keys, timeout);
    }

   private:
    LeaderStore& owner_;
  };

  ErasableHashStore store_;
  GlooView gloo_view_{*this};
  mutable absl::Mutex mu_;  // serializes sets and erasures with the counts
  int64_t keys_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
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
