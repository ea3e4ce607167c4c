// The SDK's side of shared-memory transfers: a POSIX segment the client creates
// (shm_open + ftruncate + posix_fallocate + mmap) and removes when done, a cache that keeps one
// for the next transfer, and this process's host id. Internal to the SDK: not installed.
#ifndef DISTARRAY_CLIENT_SHARED_MEMORY_H_
#define DISTARRAY_CLIENT_SHARED_MEMORY_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "distarray/v1/distarray.pb.h"

namespace distarray::internal {

// A segment of its own for one transfer (or, through SegmentCache, for one at a time):
// "/distarray-<pid>-<32 random hex digits>", mode 0600, its pages reserved up front
// (posix_fallocate), so a full /dev/shm is an error here rather than a SIGBUS when the bytes are
// written. Removed (unlinked and unmapped) when destroyed. Move-only.
class SharedMemorySegment {
 public:
  // FAILED_PRECONDITION (the transfer then streams) when the segment cannot be made: /dev/shm
  // missing, full, or not writable.
  static absl::StatusOr<SharedMemorySegment> Create(int64_t bytes);

  SharedMemorySegment(SharedMemorySegment&& other) noexcept;
  SharedMemorySegment& operator=(SharedMemorySegment&&) = delete;
  SharedMemorySegment(const SharedMemorySegment&) = delete;
  SharedMemorySegment& operator=(const SharedMemorySegment&) = delete;
  ~SharedMemorySegment();

  char* data() const { return data_; }
  int64_t size() const { return size_; }
  const std::string& name() const { return name_; }
  // False in a child of fork(): the segment is its parent's, which alone removes or reuses it.
  bool owned_by_this_process() const;
  // `bytes` of the segment from `offset` as a request's range.
  v1::SharedMemoryRange Range(int64_t offset, int64_t bytes) const;

 private:
  SharedMemorySegment(std::string name, char* data, int64_t size, size_t mapped, pid_t owner_pid)
      : name_(std::move(name)), data_(data), size_(size), mapped_(mapped), owner_pid_(owner_pid) {}

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
  explicit SegmentCache(int64_t max_bytes) : max_bytes_(max_bytes) {}

  // A segment of at least `bytes`: the kept one when it is large enough, else a new one (the
  // kept one, too small, is removed first). A failure here is the client's own (FAILED_PRECONDITION
  // from SharedMemorySegment::Create), never the daemon's refusal.
  absl::StatusOr<SharedMemorySegment> Take(int64_t bytes);
  // Hands `segment` back after a transfer; it is kept (in place of a smaller one) when it holds
  // at most max_bytes, and removed otherwise (always, when max_bytes is 0).
  void Give(SharedMemorySegment segment);

 private:
  const int64_t max_bytes_;
  std::mutex mu_;
  std::optional<SharedMemorySegment> kept_;  // guarded by mu_
};

// This process's host id, computed by the daemon's rule (docs/api.md); empty when /dev/shm or
// the boot id cannot be read. Computed once.
const std::string& LocalHostId();

}  // namespace distarray::internal

#endif  // DISTARRAY_CLIENT_SHARED_MEMORY_H_
