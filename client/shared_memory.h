// The SDK's side of shared-memory transfers: a POSIX segment the client creates for one call
// (shm_open + ftruncate + posix_fallocate + mmap) and removes after it, and this process's host
// id. Internal to the SDK: not installed.
#ifndef DISTARRAY_CLIENT_SHARED_MEMORY_H_
#define DISTARRAY_CLIENT_SHARED_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "distarray/v1/distarray.pb.h"

namespace distarray::internal {

// A segment of its own for one transfer: "/distarray-<pid>-<32 random hex digits>", mode 0600,
// its pages reserved up front (posix_fallocate), so a full /dev/shm is an error here rather than
// a SIGBUS when the bytes are written. Removed (unlinked and unmapped) when destroyed. Move-only.
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
  // The whole segment as a request's range.
  v1::SharedMemoryRange Range() const;

 private:
  SharedMemorySegment(std::string name, char* data, int64_t size, size_t mapped)
      : name_(std::move(name)), data_(data), size_(size), mapped_(mapped) {}

  std::string name_;  // empty once moved from
  char* data_ = nullptr;
  int64_t size_ = 0;
  size_t mapped_ = 0;  // bytes mapped (at least one page, even for an empty segment)
};

// This process's host id, computed by the daemon's rule (docs/api.md); empty when /dev/shm or
// the boot id cannot be read. Computed once.
const std::string& LocalHostId();

}  // namespace distarray::internal

#endif  // DISTARRAY_CLIENT_SHARED_MEMORY_H_
