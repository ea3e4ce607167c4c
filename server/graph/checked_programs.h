// Inline programs whose structure RunGraph has already checked, by key (the tenant and the
// program's ProgramDigest). A client that sends the same program with every call, as the SDKs do,
// pays the structure walk once instead of on each call (docs/performance.md). Past the size bound
// (CheckProgramSize, which counts unknown fields and so runs on every call), the check depends on
// nothing but the program's known fields and the daemon's flags, so a key seen once stays valid.
// Bounded: a full set starts over, so a client sending ever new programs pays one walk per
// program, as without it.
#ifndef DISTARRAY_SERVER_GRAPH_CHECKED_PROGRAMS_H_
#define DISTARRAY_SERVER_GRAPH_CHECKED_PROGRAMS_H_

#include <cstddef>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"

namespace distarray {

class CheckedPrograms {
 public:
  explicit CheckedPrograms(size_t capacity) : capacity_(capacity) {}

  bool Contains(const std::string& key) const {
    absl::MutexLock lock(&mu_);
    return keys_.contains(key);
  }
  void Insert(const std::string& key) {
    absl::MutexLock lock(&mu_);
    if (keys_.size() >= capacity_) keys_.clear();
    keys_.insert(key);
  }

 private:
  const size_t capacity_;
  mutable absl::Mutex mu_;
  absl::flat_hash_set<std::string> keys_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_GRAPH_CHECKED_PROGRAMS_H_
