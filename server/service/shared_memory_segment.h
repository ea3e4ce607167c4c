// The daemon's POSIX shared-memory segments (CreateSharedMemory), and the checks of a request's
// range in one. The daemon makes every segment it copies through itself, under a name a client
// cannot guess, and keeps its descriptor and mapping: it never opens a name a request gives, so a
// request can reach no file of the daemon's user but these (docs/design.md says why this design).
#ifndef DISTARRAY_SERVER_SERVICE_SHARED_MEMORY_SEGMENT_H_
#define DISTARRAY_SERVER_SERVICE_SHARED_MEMORY_SEGMENT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "distarray/v1/distarray.pb.h"

namespace distarray {

// The longest segment name after its leading '/'. NAME_MAX is 255; staying well below it keeps
// the error for a long name ours (INVALID_ARGUMENT) rather than the kernel's.
inline constexpr size_t kMaxSharedMemoryNameBytes = 200;

// What every name the daemon makes starts with (then 32 random hex digits).
inline constexpr char kSharedMemoryNamePrefix[] = "/distarray-shm-";

// INVALID_ARGUMENT naming `field` unless `name` is "/" followed by 1 to
// kMaxSharedMemoryNameBytes bytes of [A-Za-z0-9._-] and is not "/." or "/..". Syntax only: a
// well-formed name is then looked up among the caller's segments.
absl::Status CheckSharedMemoryName(absl::string_view name, absl::string_view field);

// INVALID_ARGUMENT naming the field of `range` (prefixed by `field`) that is malformed: the name,
// a negative size, offset or length, or offset + bytes past segment_bytes (checked arithmetic).
// Checks the request alone, before any segment is looked up.
absl::Status CheckSharedMemoryRange(const v1::SharedMemoryRange& range, absl::string_view field);

// A segment the daemon made: "/distarray-shm-<32 random hex digits>" in /dev/shm, mode 0600, its
// pages reserved (posix_fallocate, so a full /dev/shm fails here rather than as a SIGBUS on a
// copy), mapped read-write for its whole life. Unlink() removes the name; the destructor removes
// it too (if still there), then unmaps and closes. Thread-safe.
class DaemonSegment {
 public:
  // RESOURCE_EXHAUSTED when /dev/shm, memory, descriptors or address space run out;
  // FAILED_PRECONDITION when /dev/shm cannot be written at all.
  static absl::StatusOr<std::unique_ptr<DaemonSegment>> Create(int64_t bytes);

  DaemonSegment(const DaemonSegment&) = delete;
  DaemonSegment& operator=(const DaemonSegment&) = delete;
  ~DaemonSegment();

  const std::string& name() const { return name_; }
  int64_t size() const { return size_; }
  char* data() const { return data_; }  // null for an empty segment

  // Removes the name now (once); the mapping stays until the segment is destroyed, so a copy in
  // flight finishes.
  void Unlink();

  // Whether the file still holds size() bytes, checked (fstat) right before each copy: a process
  // that can open the segment (the daemon's user) could shrink it, and a copy touching a page past
  // the end would be a SIGBUS. FAILED_PRECONDITION naming `field` when it shrank. A shrink between
  // this check and the copy's end is not caught (docs/operations.md, "Shared memory").
  absl::Status CheckIntact(absl::string_view field) const;

 private:
  DaemonSegment(std::string name, int fd, char* data, int64_t size)
      : name_(std::move(name)), fd_(fd), data_(data), size_(size) {}

  const std::string name_;
  const int fd_;
  char* const data_;
  const int64_t size_;
  std::atomic<bool> unlinked_{false};
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_SERVICE_SHARED_MEMORY_SEGMENT_H_
