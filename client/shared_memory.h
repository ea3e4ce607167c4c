// The SDK's side of shared-memory transfers: a segment the daemon makes for this client's session
// (CreateSharedMemory), opened by name and mapped here, and released when done
// (ReleaseSharedMemory); a cache that keeps one for the next transfer; and this process's host id.
// Internal to the SDK: not installed.
#ifndef DISTARRAY_CLIENT_SHARED_MEMORY_H_
#define DISTARRAY_CLIENT_SHARED_MEMORY_H_

#include <grpcpp/grpcpp.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "distarray/v1/distarray.grpc.pb.h"

namespace distarray::internal {

// The daemon's side of a segment's life, as calls of this client's session.
struct SegmentCalls {
  // CreateSharedMemory: the name of a new segment of `bytes`, the daemon's status otherwise.
  std::function<absl::StatusOr<std::string>(int64_t bytes)> create;
  // ReleaseSharedMemory, best effort (the session's end removes it anyway).
  std::function<void(const std::string& name)> release;
};

// SegmentCalls through `stub`, each call's context completed by `attach` (session and token).
SegmentCalls MakeSegmentCalls(std::shared_ptr<v1::ArrayService::Stub> stub,
                              std::function<void(grpc::ClientContext&)> attach);

// A segment for one transfer (or, through SegmentCache, for one at a time): made by the daemon
// for this client's session, opened here by the name it gave (a regular file of exactly the size
// asked for, or it is refused) and mapped read-write. Unmapped and released when destroyed.
// Move-only.
class SharedMemorySegment {
 public:
  // The daemon's refusal as it came (FAILED_PRECONDITION when shared memory is off,
  // RESOURCE_EXHAUSTED past the tenant's bounds, UNIMPLEMENTED from an older daemon), or
  // FAILED_PRECONDITION when this process cannot open what the daemon made (another /dev/shm,
  // another user).
  static absl::StatusOr<SharedMemorySegment> Create(const SegmentCalls& calls, int64_t bytes);

  SharedMemorySegment(SharedMemorySegment&& other) noexcept;
  SharedMemorySegment& operator=(SharedMemorySegment&&) = delete;
  SharedMemorySegment(const SharedMemorySegment&) = delete;
  SharedMemorySegment& operator=(const SharedMemorySegment&) = delete;
  ~SharedMemorySegment();

  char* data() const { return data_; }
  int64_t size() const { return size_; }
  const std::string& name() const { return name_; }
  // False in a child of fork(): the segment is its parent's, which alone releases or reuses it.
  bool owned_by_this_process() const;
  // `bytes` of the segment from `offset` as a request's range.
  v1::SharedMemoryRange Range(int64_t offset, int64_t bytes) const;

 private:
  SharedMemorySegment(const SegmentCalls& calls, std::string name, char* data, int64_t size,
                      size_t mapped, pid_t owner_pid)
      : release_(calls.release),
        name_(std::move(name)),
        data_(data),
        size_(size),
        mapped_(mapped),
        owner_pid_(owner_pid) {}

  std::function<void(const std::string&)> release_;
  std::string name_;  // empty once moved from
  char* data_ = nullptr;
  int64_t size_ = 0;
  size_t mapped_ = 0;  // bytes mapped (at least one page, even for an empty segment)
  pid_t owner_pid_ = 0;
};

// Keeps the last segment a transfer used, so the next transfer of at most its size reuses it.
// Creating a segment costs more than the copies it saves: on a 16-core GPU host a fresh 1 GiB
// segment (allocating, zeroing and mapping 262,144 pages, then freeing them) took about 0.9 s,
// where the daemon's side of the transfer took 0.17 s (docs/performance.md). One idle segment
// of at most `max_bytes` is kept; concurrent transfers each get their own. Thread-safe.
class SegmentCache {
 public:
  SegmentCache(int64_t max_bytes, SegmentCalls calls)
      : max_bytes_(max_bytes), calls_(std::move(calls)) {}

  // A segment of at least `bytes`: the kept one when it is large enough, else a new one (the
  // kept one, too small, is released first). SharedMemorySegment::Create's errors.
  absl::StatusOr<SharedMemorySegment> Take(int64_t bytes);
  // Hands `segment` back after a transfer; it is kept (in place of a smaller one) when it holds
  // at most max_bytes, and removed otherwise (always, when max_bytes is 0).
  void Give(SharedMemorySegment segment);

 private:
  const int64_t max_bytes_;
  const SegmentCalls calls_;
  std::mutex mu_;
  std::optional<SharedMemorySegment> kept_;  // guarded by mu_
};

// This process's host id: ThisHostId() (common/host_id.h, the daemon's rule); empty when /dev/shm
// or the boot id cannot be read. Computed once.
const std::string& LocalHostId();

}  // namespace distarray::internal

#endif  // DISTARRAY_CLIENT_SHARED_MEMORY_H_
