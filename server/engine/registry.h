// The thread-safe table of live arrays: by handle, by (tenant, client-chosen name), by tenant in
// handle order (ListArrays pages), and by owning session. Every lookup is scoped to a tenant:
// another tenant's handle or name answers exactly as a missing one does, so existence does not
// leak. Registered arrays are charged to their tenant's memory quota (tenant_memory.h) until the
// last holder of the snapshot lets go.
#ifndef DISTARRAY_SERVER_ENGINE_REGISTRY_H_
#define DISTARRAY_SERVER_ENGINE_REGISTRY_H_

#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "server/ops/array.h"
#include "server/ops/tenant_memory.h"

namespace distarray {

class Registry {
 public:
  explicit Registry(TenantQuotaOptions quotas = {})
      : memory_(std::make_shared<TenantMemory>(std::move(quotas))) {}

  // Gives `array` (its `tenant` set) a fresh handle and stores it. ALREADY_EXISTS when the tenant
  // has an array of that name; RESOURCE_EXHAUSTED when it would pass the tenant's memory quota.
  // A named array belongs to no session.
  absl::StatusOr<ArrayPtr> Insert(Array array);
  // Replaces the array under `handle` (an in-place reshard), keeping its owner; NOT_FOUND when
  // it was deleted; RESOURCE_EXHAUSTED when the new snapshot does not fit the quota beside the old
  // one (which is still held while the operation's inputs are).
  absl::StatusOr<ArrayPtr> Replace(Array array);
  // Looks up a handle or a name of `tenant`'s; NOT_FOUND naming `field` otherwise.
  absl::StatusOr<ArrayPtr> Find(absl::string_view tenant, absl::string_view handle_or_name,
                                absl::string_view field) const;
  // NOT_FOUND when absent. The memory returns once running work that uses it is done.
  absl::Status Erase(absl::string_view tenant, absl::string_view handle_or_name,
                     absl::string_view field);
  // Deletes the arrays the session `session_key` ("tenant/session") owns; returns how many.
  int64_t EraseSession(absl::string_view session_key);
  // How many arrays `session_key` owns.
  int64_t SessionArrayCount(absl::string_view session_key) const;
  // Check used before allocating: ALREADY_EXISTS when `tenant` has an array named `name`.
  absl::Status CheckNameFree(absl::string_view tenant, absl::string_view name,
                             absl::string_view field) const;
  // Every array of every tenant (metrics, the fuzzer's leak check).
  std::vector<ArrayPtr> List() const;
  // Up to `limit` of `tenant`'s arrays with handles after `after` (empty: from the first), in
  // handle order.
  std::vector<ArrayPtr> ListAfter(absl::string_view tenant, absl::string_view after,
                                  size_t limit) const;
  size_t size() const;

  TenantMemory& tenant_memory() const { return *memory_; }
  // The same, for holders that may outlive the registry (cached graphs' charges).
  std::shared_ptr<TenantMemory> shared_tenant_memory() const { return memory_; }

 private:
  // One tenant's arrays.
  struct TenantIndex {
    std::set<std::string, std::less<>> handles;  // ordered: pages continue after a handle
    absl::flat_hash_map<std::string, std::string> handle_by_name;
  };

  std::string NewHandle() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The snapshot to store: charged to its tenant, released when its last holder lets go.
  absl::StatusOr<ArrayPtr> Charged(Array array);
  absl::StatusOr<ArrayPtr> FindLocked(absl::string_view tenant, absl::string_view handle_or_name,
                                      absl::string_view field) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Removes `array`'s entries; the caller releases the returned pointer outside the lock.
  void EraseLocked(const ArrayPtr& array) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Shared with every stored snapshot's deleter, so it outlives arrays still held by running work.
  const std::shared_ptr<TenantMemory> memory_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, ArrayPtr> by_handle_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, TenantIndex> tenants_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, absl::flat_hash_set<std::string>> handles_by_session_
      ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_ENGINE_REGISTRY_H_
