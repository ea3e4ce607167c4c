#include "server/service/shared_memory_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
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

// Closes a descriptor on every path out of Open.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

absl::Status OpenError(int error, absl::string_view field, const std::string& name) {
  const std::string what = absl::StrCat(field, ".name: cannot open shared-memory segment \"", name,
                                        "\": ", std::strerror(error));
  switch (error) {
    case ENOENT:
      return absl::FailedPreconditionError(absl::StrCat(
          what,
          "; the daemon does not see it, so the client does not share /dev/shm with it (compare "
          "GetServerInfo's host_id with the client's) or the segment was removed"));
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(what);
    case ELOOP:
      return absl::InvalidArgumentError(absl::StrCat(what, " (a symbolic link is refused)"));
    case EMFILE:
    case ENFILE:
    case ENOMEM:
      return absl::ResourceExhaustedError(what);
    default:
      return absl::InvalidArgumentError(what);
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

absl::StatusOr<MappedSegment> MappedSegment::Open(const v1::SharedMemoryRange& range,
                                                  SegmentAccess access, absl::string_view field) {
  RETURN_IF_ERROR(CheckSharedMemoryRange(range, field));
  const std::string& name = range.name();
  const int flags =
      (access == SegmentAccess::kRead ? O_RDONLY : O_RDWR) | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
  const FileDescriptor fd(shm_open(name.c_str(), flags, 0));
  if (fd.get() < 0) return OpenError(errno, field, name);

  struct stat st;
  if (fstat(fd.get(), &st) != 0) return OpenError(errno, field, name);
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".name: \"", name, "\" is not a regular shared-memory file"));
  }
  // Only the daemon's own user may have made the segment, and only that user may write it: a
  // writer could shrink it while the daemon copies, and touching a mapped page past the end of a
  // file is SIGBUS, which ends the daemon. A process of the daemon's user can end it anyway.
  if (st.st_uid != geteuid()) {
    return absl::PermissionDeniedError(
        absl::StrCat(field, ".name: segment \"", name, "\" is owned by uid ", st.st_uid,
                     "; the daemon takes only segments of its own user (uid ", geteuid(), ")"));
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return absl::PermissionDeniedError(
        absl::StrFormat("%s.name: segment \"%s\" has mode %04o; users other than its owner may "
                        "write it (and shrink it under the daemon), so it is refused",
                        field, name, st.st_mode & 07777));
  }
  if (st.st_size < range.segment_bytes()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".segment_bytes: ", range.segment_bytes(),
                                                   ", but segment \"", name, "\" holds only ",
                                                   static_cast<int64_t>(st.st_size), " bytes"));
  }
  if (range.bytes() == 0) return MappedSegment(nullptr, 0, nullptr, 0);

  // mmap's offset must be page aligned: map from the page holding range.offset.
  const int64_t page = sysconf(_SC_PAGESIZE);
  const int64_t map_offset = range.offset() - range.offset() % page;
  const int64_t length = range.offset() + range.bytes() - map_offset;  // checked above
  const int prot = access == SegmentAccess::kRead ? PROT_READ : PROT_READ | PROT_WRITE;
  // MAP_POPULATE builds the page tables now: one call instead of a fault per 4 KiB page.
  void* base = mmap(nullptr, static_cast<size_t>(length), prot, MAP_SHARED | MAP_POPULATE, fd.get(),
                    static_cast<off_t>(map_offset));
  if (base == MAP_FAILED) {
    const int error = errno;
    const std::string what = absl::StrCat(field, ": cannot map ", length, " bytes of segment \"",
                                          name, "\": ", std::strerror(error));
    if (error == ENOMEM) return absl::ResourceExhaustedError(what);
    if (error == EACCES || error == EPERM) return absl::PermissionDeniedError(what);
    return absl::InvalidArgumentError(what);
  }
  return MappedSegment(base, static_cast<size_t>(length),
                       static_cast<char*>(base) + (range.offset() - map_offset), range.bytes());
}

MappedSegment::MappedSegment(MappedSegment&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)),
      length_(std::exchange(other.length_, 0)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

MappedSegment& MappedSegment::operator=(MappedSegment&& other) noexcept {
  if (this != &other) {
    Unmap();
    base_ = std::exchange(other.base_, nullptr);
    length_ = std::exchange(other.length_, 0);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedSegment::~MappedSegment() { Unmap(); }

void MappedSegment::Unmap() {
  if (base_ != nullptr) munmap(base_, length_);
  base_ = nullptr;
  length_ = 0;
  data_ = nullptr;
  size_ = 0;
}

std::string SharedMemoryHostId() {
  std::ifstream boot_id_file("/proc/sys/kernel/random/boot_id");
  std::string boot_id;
  if (!std::getline(boot_id_file, boot_id)) return "";
  boot_id = std::string(absl::StripAsciiWhitespace(boot_id));
  struct stat st;
  if (boot_id.empty() || stat("/dev/shm", &st) != 0) return "";
  const std::string key = absl::StrCat(boot_id, ":", static_cast<uint64_t>(st.st_dev), ":",
                                       static_cast<uint64_t>(st.st_ino));
  uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a, 64 bits
  for (unsigned char c : key) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return absl::StrFormat("%016x", hash);
}

}  // namespace distarray
