// Inline programs RunGraph has already checked, by the digest of their bytes as sent
// (ProgramBytesDigest, with the tenant), each with its graph-cache key (the tenant and
// ProgramDigest, which ignores unknown fields). A client that sends the same program with every
// call, as the SDKs do, pays the checks (the size bound and the structure walk) and the
// known-fields digest (a copy of the program) once: 57 us before a replay fell to 15 us on the host
// (docs/performance.md). The checks depend on nothing but the bytes and the daemon's flags, so an
// entry stays valid. Bounded: a full memo starts over, so a client sending ever new programs pays
// the checks once per program, as without it.
#ifndef DISTARRAY_SERVER_GRAPH_CHECKED_PROGRAMS_H_
#define DISTARRAY_SERVER_GRAPH_CHECKED_PROGRAMS_H_

#include <cstddef>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace distarray {

class CheckedPrograms {
 public:
  explicit CheckedPrograms(size_t capacity) : capacity_(capacity) {}

  // The cache key remembered for `bytes_key`, or nullopt.
  std::optional<std::string> Find(const std::string& bytes_key) const {
    absl::MutexLock lock(&mu_);
    auto it = keys_.find(bytes_key);
    if (it == keys_.end()) return std::nullopt;
    return it->second;
  }
  void Insert(const std::string& bytes_key, const std::string& program_key) {
    absl::MutexLock lock(&mu_);
    if (keys_.size() >= capacity_) keys_.clear();
    keys_.insert_or_assign(bytes_key, program_key);
  }

 private:
  const size_t capacity_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::string> keys_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_GRAPH_CHECKED_PROGRAMS_H_
