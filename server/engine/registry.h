// The thread-safe table of live arrays, by handle, by client-chosen name, and by owning session.
#ifndef DISTARRAY_SERVER_ENGINE_REGISTRY_H_
#define DISTARRAY_SERVER_ENGINE_REGISTRY_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "server/engine/array.h"

namespace distarray {

class Registry {
 public:
  // Gives `array` a fresh handle and stores it. ALREADY_EXISTS when its name is taken. A named
  // array belongs to no session.
  absl::StatusOr<ArrayPtr> Insert(Array array);
  // Replaces the array under `handle` (an in-place reshard), keeping its owner; NOT_FOUND when
  // it was deleted.
  absl::StatusOr<ArrayPtr> Replace(Array array);
  // Looks up a handle or a name; NOT_FOUND naming `field` otherwise.
  absl::StatusOr<ArrayPtr> Find(absl::string_view handle_or_name, absl::string_view field) const;
  // NOT_FOUND when absent. The memory returns once running work that uses it is done.
  absl::Status Erase(absl::string_view handle_or_name, absl::string_view field);
  // Deletes the arrays `session` owns; returns how many.
  int64_t EraseSession(absl::string_view session);
  // How many arrays `session` owns.
  int64_t SessionArrayCount(absl::string_view session) const;
  // FAILED-free check used before allocating: ALREADY_EXISTS when `name` is taken.
  absl::Status CheckNameFree(absl::string_view name, absl::string_view field) const;
  std::vector<ArrayPtr> List() const;
  // Up to `limit` arrays with handles after `after` (empty: from the first), in handle order.
  std::vector<ArrayPtr> ListAfter(absl::string_view after, size_t limit) const;
  size_t size() const;

 private:
  std::string NewHandle() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<ArrayPtr> FindLocked(absl::string_view handle_or_name,
                                      absl::string_view field) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Removes `array`'s entries; the caller releases the returned pointer outside the lock.
  void EraseLocked(const ArrayPtr& array) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  // Ordered, so a page of ListArrays starts after the previous page's last handle in O(log n).
  std::map<std::string, ArrayPtr, std::less<>> by_handle_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::string> handle_by_name_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, absl::flat_hash_set<std::string>> handles_by_session_
      ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_ENGINE_REGISTRY_H_
