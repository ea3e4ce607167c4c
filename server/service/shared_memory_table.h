// The shared-memory segments the daemon made, each the capability of the tenant and session that
// asked for it (CreateSharedMemory): the transfers find a segment only by a name this table holds
// for the calling tenant and session, and answer every other name alike (NOT_FOUND, one message,
// no size), so a request learns nothing of other segments or files. Bounded per tenant (count and
// bytes) and in all; a session's segments go when it expires. Thread-safe.
#ifndef DISTARRAY_SERVER_SERVICE_SHARED_MEMORY_TABLE_H_
#define DISTARRAY_SERVER_SERVICE_SHARED_MEMORY_TABLE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "server/engine/engine.h"
#include "server/service/shared_memory_segment.h"

namespace distarray {

// Per-tenant bounds (--shared_memory_max_segments, --shared_memory_max_bytes).
struct SharedMemoryLimits {
  int32_t max_segments_per_tenant = 16;
  int64_t max_bytes_per_tenant = int64_t{4} << 30;
};

// Segments of all tenants together: each holds a file descriptor of the daemon's.
inline constexpr int64_t kMaxSharedMemorySegments = 4096;

class SharedMemoryTable {
 public:
  using SegmentPtr = std::shared_ptr<DaemonSegment>;

  explicit SharedMemoryTable(SharedMemoryLimits limits) : limits_(limits) {}
  // Removes every segment's name (a transfer still holding one finishes first).
  ~SharedMemoryTable();
  SharedMemoryTable(const SharedMemoryTable&) = delete;
  SharedMemoryTable& operator=(const SharedMemoryTable&) = delete;

  const SharedMemoryLimits& limits() const { return limits_; }

  // A new segment of `bytes` for the call's tenant and session. INVALID_ARGUMENT for negative
  // bytes or a call without a session (nothing would remove the segment); RESOURCE_EXHAUSTED,
  // naming the flag, past the tenant's bounds or the daemon's; DaemonSegment::Create's errors.
  absl::StatusOr<SegmentPtr> Create(const CallContext& call, int64_t bytes);

  // The segment named `name` of the call's tenant and session. INVALID_ARGUMENT for a malformed
  // name; NOT_FOUND, the same message whatever the reason, for any other name.
  absl::StatusOr<SegmentPtr> Find(const CallContext& call, absl::string_view name,
                                  absl::string_view field) const;

  // Removes the call's segment `name` (Find's errors).
  absl::Status Release(const CallContext& call, absl::string_view name, absl::string_view field);

  // Removes every segment of the session (its key, CallContext::session_key); returns how many.
  int64_t ReleaseSession(const std::string& session_key);
  // Removes every segment (the daemon stopping: it exits without running destructors).
  int64_t ReleaseAll();

  struct Usage {
    int64_t segments = 0;
    int64_t bytes = 0;
  };
  Usage UsageOf(const std::string& tenant) const;
  int64_t size() const;

 private:
  struct Entry {
    std::string tenant;
    std::string session_key;
    SegmentPtr segment;
  };
  // Gives back a tenant's reservation of one segment of `bytes`.
  void Unreserve(const std::string& tenant, int64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const SharedMemoryLimits limits_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> by_name_ ABSL_GUARDED_BY(mu_);
  // Segments made or being made, per tenant: a reservation is taken before the segment is made
  // (outside the lock: reserving a large one takes a while) and given back if that fails.
  absl::flat_hash_map<std::string, Usage> usage_ ABSL_GUARDED_BY(mu_);
  int64_t total_segments_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_SERVICE_SHARED_MEMORY_TABLE_H_
