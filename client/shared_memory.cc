#include "client/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/host_id.h"

namespace distarray::internal {
namespace {

absl::Status SegmentError(const std::string& name, const char* step, int error) {
  return absl::FailedPreconditionError(
      absl::StrCat("shared-memory segment ", name, ": ", step, ": ", std::strerror(error),
                   " (the client must see the daemon's /dev/shm and run as its user)"));
}

absl::Status FromGrpc(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

}  // namespace

SegmentCalls MakeSegmentCalls(std::shared_ptr<v1::ArrayService::Stub> stub,
                              std::function<void(grpc::ClientContext&)> attach) {
  SegmentCalls calls;
  calls.create = [stub, attach](int64_t bytes) -> absl::StatusOr<std::string> {
    grpc::ClientContext context;
    attach(context);
    v1::CreateSharedMemoryRequest request;
    request.set_bytes(bytes);
    v1::CreateSharedMemoryResponse response;
    absl::Status s = FromGrpc(stub->CreateSharedMemory(&context, request, &response));
    if (!s.ok()) return s;
    return response.name();
  };
  calls.release = [stub, attach](const std::string& name) {
    grpc::ClientContext context;
    attach(context);
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::ReleaseSharedMemoryRequest request;
    request.set_name(name);
    v1::ReleaseSharedMemoryResponse response;
    stub->ReleaseSharedMemory(&context, request, &response).IgnoreError();
  };
  return calls;
}

absl::StatusOr<SharedMemorySegment> SharedMemorySegment::Create(const SegmentCalls& calls,
                                                                int64_t bytes) {
  if (bytes < 0) return absl::InvalidArgumentError("a segment's size cannot be negative");
  absl::StatusOr<std::string> made = calls.create(bytes);
  if (!made.ok()) return made.status();
  const std::string& name = *made;
  const auto fail = [&](const char* step, int error) {
    calls.release(name);
    return SegmentError(name, step, error);
  };
  // Only what the daemon made: a regular file (O_NOFOLLOW: not through a link) of the size asked.
  const int fd = shm_open(name.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0);
  if (fd < 0) return fail("shm_open", errno);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int error = errno;
    close(fd);
    return fail("fstat", error);
  }
  if (!S_ISREG(st.st_mode) || st.st_size != bytes) {
    close(fd);
    return fail("not the segment the daemon made", EINVAL);
  }
  // An empty segment still maps one page, so data() is never null.
  const size_t mapped = bytes > 0 ? static_cast<size_t>(bytes) : 1;
  void* data =
      bytes > 0 ? mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0)
                // An empty file cannot be mapped; an anonymous page stands in.
                : mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  const int error = errno;
  close(fd);  // the mapping keeps the segment's pages
  if (data == MAP_FAILED) return fail("mmap", error);
  return SharedMemorySegment(calls, name, static_cast<char*>(data), bytes, mapped, getpid());
}

SharedMemorySegment::SharedMemorySegment(SharedMemorySegment&& other) noexcept
    : release_(other.release_),
      name_(std::exchange(other.name_, std::string())),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, 0)),
      owner_pid_(other.owner_pid_) {}

SharedMemorySegment::~SharedMemorySegment() {
  if (data_ != nullptr) munmap(data_, mapped_);
  // A child of fork() holds a copy of its parent's segments: only their creator releases them.
  if (!name_.empty() && owned_by_this_process() && release_) release_(name_);
}

bool SharedMemorySegment::owned_by_this_process() const { return owner_pid_ == getpid(); }

v1::SharedMemoryRange SharedMemorySegment::Range(int64_t offset, int64_t bytes) const {
  v1::SharedMemoryRange range;
  range.set_name(name_);
  range.set_segment_bytes(size_);
  range.set_offset(offset);
  range.set_bytes(bytes);
  return range;
}

absl::StatusOr<SharedMemorySegment> SegmentCache::Take(int64_t bytes) {
  std::optional<SharedMemorySegment> kept;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (kept_.has_value()) {
      kept.emplace(std::move(*kept_));
      kept_.reset();
    }
  }
  // The kept segment serves when it is large enough and this process made it (after fork() the
  // parent may be using it). Otherwise it is removed before a new one is made, so that the two
  // never hold /dev/shm at once: with both, a full /dev/shm refused the new one.
  if (kept.has_value() && kept->size() >= bytes && kept->owned_by_this_process()) {
    return *std::move(kept);
  }
  kept.reset();
  return SharedMemorySegment::Create(calls_, bytes);
}

void SegmentCache::Give(SharedMemorySegment segment) {
  if (max_bytes_ <= 0 || segment.size() > max_bytes_) return;  // removed here
  std::optional<SharedMemorySegment> dropped;                  // removed after the lock
  std::lock_guard<std::mutex> lock(mu_);
  // A kept segment of a fork()ed parent's counts as none (Take would not use it).
  if (kept_.has_value() && kept_->size() >= segment.size() && kept_->owned_by_this_process()) {
    return;
  }
  if (kept_.has_value()) {
    dropped.emplace(std::move(*kept_));
    kept_.reset();
  }
  kept_.emplace(std::move(segment));
}

const std::string& LocalHostId() {
  static const std::string* const id = new std::string(ThisHostId());
  return *id;
}

}  // namespace distarray::internal
