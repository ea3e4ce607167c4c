// A client's POSIX shared-memory segment, opened by name and mapped for one transfer
// (UploadFromSharedMemory / DownloadToSharedMemory). Every field of the request's range is
// checked before anything is opened, and the segment itself before anything is mapped: mapping
// past a segment's end faults (SIGBUS) on first touch, so the size from fstat must cover the range
// first. docs/api.md gives the rules and docs/design.md why they are these.
#ifndef DISTARRAY_SERVER_SERVICE_SHARED_MEMORY_SEGMENT_H_
#define DISTARRAY_SERVER_SERVICE_SHARED_MEMORY_SEGMENT_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "distarray/v1/distarray.pb.h"

namespace distarray {

// The longest segment name after its leading '/'. NAME_MAX is 255; staying well below it keeps
// the error for a long name ours (INVALID_ARGUMENT) rather than the kernel's.
inline constexpr size_t kMaxSharedMemoryNameBytes = 200;

// INVALID_ARGUMENT naming `field` unless `name` is "/" followed by 1 to
// kMaxSharedMemoryNameBytes bytes of [A-Za-z0-9._-] and is not "/." or "/..": one path component
// of /dev/shm, nothing the kernel would resolve elsewhere.
absl::Status CheckSharedMemoryName(absl::string_view name, absl::string_view field);

// INVALID_ARGUMENT naming the field of `range` (prefixed by `field`) that is malformed: the name,
// a negative size, offset or length, or offset + bytes past segment_bytes (checked arithmetic).
absl::Status CheckSharedMemoryRange(const v1::SharedMemoryRange& range, absl::string_view field);

enum class SegmentAccess { kRead, kReadWrite };

// The bytes [offset, offset + bytes) of a segment, mapped. Move-only; unmaps when destroyed (the
// file descriptor is closed as soon as the mapping exists).
class MappedSegment {
 public:
  // Checks the range, opens the segment (O_NOFOLLOW, O_NONBLOCK so a FIFO planted under the name
  // cannot block the call), checks what it is, and maps the range. Errors, each naming `field`:
  //   INVALID_ARGUMENT     a malformed range; not a regular file; a symbolic link; a segment
  //                        smaller than range.segment_bytes
  //   FAILED_PRECONDITION  no segment of that name: the client does not share /dev/shm with the
  //                        daemon (GetServerInfoResponse.host_id differs)
  //   PERMISSION_DENIED    the daemon may not open it, it is owned by another user than the
  //                        daemon's, or users other than its owner may write it
  //   RESOURCE_EXHAUSTED   no file descriptors or address space left
  static absl::StatusOr<MappedSegment> Open(const v1::SharedMemoryRange& range,
                                            SegmentAccess access, absl::string_view field);

  MappedSegment(MappedSegment&& other) noexcept;
  MappedSegment& operator=(MappedSegment&& other) noexcept;
  MappedSegment(const MappedSegment&) = delete;
  MappedSegment& operator=(const MappedSegment&) = delete;
  ~MappedSegment();

  // The range's first byte (null when the range is empty) and its length.
  char* data() const { return data_; }
  int64_t size() const { return size_; }

 private:
  MappedSegment(void* base, size_t length, char* data, int64_t size)
      : base_(base), length_(length), data_(data), size_(size) {}
  void Unmap();

  void* base_ = nullptr;  // the mapping (page aligned), as mmap returned it
  size_t length_ = 0;
  char* data_ = nullptr;
  int64_t size_ = 0;
};

// The host id GetServerInfo reports: equal for two processes exactly when they see the same
// /dev/shm. 16 lowercase hex digits of the 64-bit FNV-1a hash of "<boot_id>:<st_dev>:<st_ino>"
// (the kernel's /proc/sys/kernel/random/boot_id without its newline; the device and inode of
// /dev/shm from stat, in decimal). Empty when either cannot be read: no shared memory then.
std::string SharedMemoryHostId();

}  // namespace distarray

#endif  // DISTARRAY_SERVER_SERVICE_SHARED_MEMORY_SEGMENT_H_
