#include "server/service/shared_memory_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/checked.h"
#include "common/status_macros.h"

namespace distarray {
namespace {

bool IsNameByte(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
}

// 32 lowercase hex digits of the kernel's random bytes (getrandom): 128 bits no client can
// guess, though a name is a capability only together with the tenant and session that own it.
absl::StatusOr<std::string> RandomHex128() {
  unsigned char bytes[16];
  size_t got = 0;
  while (got < sizeof(bytes)) {
    const ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::InternalError(absl::StrCat("getrandom: ", std::strerror(errno)));
    }
    got += static_cast<size_t>(n);
  }
  std::string hex;
  for (unsigned char b : bytes) absl::StrAppend(&hex, absl::Hex(b, absl::kZeroPad2));
  return hex;
}

absl::Status CreateError(const char* step, int error) {
  const std::string what =
      absl::StrCat("cannot make a shared-memory segment: ", step, ": ", std::strerror(error));
  switch (error) {
    case ENOSPC:
    case ENOMEM:
    case EMFILE:
    case ENFILE:
    case EFBIG:
      return absl::ResourceExhaustedError(absl::StrCat(what, " (is /dev/shm full?)"));
    default:
      return absl::FailedPreconditionError(
          absl::StrCat(what, "; the daemon cannot make segments in /dev/shm, so stream"));
  }
}

}  // namespace

absl::Status CheckSharedMemoryName(absl::string_view name, absl::string_view field) {
  const auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": a shared-memory segment name is \"/\" followed by 1 to ",
        kMaxSharedMemoryNameBytes, " bytes of [A-Za-z0-9._-] (not \".\" or \"..\"); ", why));
  };
  if (name.empty() || name[0] != '/') return bad("it must start with \"/\"");
  const absl::string_view rest = name.substr(1);
  if (rest.empty() || rest.size() > kMaxSharedMemoryNameBytes) {
    return bad(absl::StrCat("got ", rest.size(), " bytes after the \"/\""));
  }
  for (size_t i = 0; i < rest.size(); ++i) {
    if (!IsNameByte(rest[i])) {
      return bad(absl::StrFormat("byte %d is 0x%02x", i + 1, static_cast<unsigned char>(rest[i])));
    }
  }
  if (rest == "." || rest == "..") return bad("got a directory name");
  return absl::OkStatus();
}

absl::Status CheckSharedMemoryRange(const v1::SharedMemoryRange& range, absl::string_view field) {
  RETURN_IF_ERROR(CheckSharedMemoryName(range.name(), absl::StrCat(field, ".name")));
  const auto non_negative = [&](int64_t value, absl::string_view name) -> absl::Status {
    if (value >= 0) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".", name, ": must not be negative, got ", value));
  };
  RETURN_IF_ERROR(non_negative(range.segment_bytes(), "segment_bytes"));
  RETURN_IF_ERROR(non_negative(range.offset(), "offset"));
  RETURN_IF_ERROR(non_negative(range.bytes(), "bytes"));
  ASSIGN_OR_RETURN(const int64_t end,
                   CheckedAdd(range.offset(), range.bytes(),
                              absl::StrCat(field, ".offset + ", field, ".bytes")));
  if (end > range.segment_bytes()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".offset + ", field, ".bytes: the range ends at byte ", end, ", past ",
                     field, ".segment_bytes (", range.segment_bytes(), ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<DaemonSegment>> DaemonSegment::Create(int64_t bytes) {
  if (bytes < 0) return absl::InvalidArgumentError("bytes: must not be negative");
  ASSIGN_OR_RETURN(const std::string suffix, RandomHex128());
  const std::string name = absl::StrCat(kSharedMemoryNamePrefix, suffix);
  // O_EXCL: never a file that is already there, whoever made it.
  const int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return CreateError("shm_open", errno);
  const auto fail = [&](const char* step, int error) {
    close(fd);
    shm_unlink(name.c_str());
    return CreateError(step, error);
  };
  if (fchmod(fd, 0600) != 0) return fail("fchmod", errno);  // exactly 0600, whatever the umask
  char* data = nullptr;
  if (bytes > 0) {
    if (ftruncate(fd, bytes) != 0) return fail("ftruncate", errno);
    // posix_fallocate returns the error rather than setting errno.
    if (const int error = posix_fallocate(fd, 0, bytes); error != 0) {
      return fail("posix_fallocate", error);
    }
    // MAP_POPULATE builds the page tables now, once, rather than a fault per page on each copy.
    void* base = mmap(nullptr, static_cast<size_t>(bytes), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_POPULATE, fd, 0);
    if (base == MAP_FAILED) return fail("mmap", errno);
    data = static_cast<char*>(base);
  }
  return std::unique_ptr<DaemonSegment>(new DaemonSegment(name, fd, data, bytes));
}

DaemonSegment::~DaemonSegment() {
  Unlink();
  if (data_ != nullptr) munmap(data_, static_cast<size_t>(size_));
  close(fd_);
}

void DaemonSegment::Unlink() {
  if (!unlinked_.exchange(true)) shm_unlink(name_.c_str());
}

absl::Status DaemonSegment::CheckIntact(absl::string_view field) const {
  struct stat st;
  if (fstat(fd_, &st) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(field, ": cannot check the segment: ", std::strerror(errno)));
  }
  if (st.st_size >= size_) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat(field, ": the segment holds ", static_cast<int64_t>(st.st_size),
                   " bytes, fewer than the ", size_,
                   " it was made with: a process of the daemon's user truncated it; release it and "
                   "make another"));
}

}  // namespace distarray
