#include "server/service/shared_memory_table.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/checked.h"
#include "common/status_macros.h"

namespace distarray {
namespace {

// The one answer for every name that is not the caller's segment: the same words whether the
// name is another session's, another tenant's, a file the daemon did not make, or nothing.
absl::Status NotFound(absl::string_view field) {
  return absl::NotFoundError(absl::StrCat(
      field,
      ": no shared-memory segment of this session has this name (CreateSharedMemory makes one; "
      "it ends with ReleaseSharedMemory or with its session)"));
}

}  // namespace

SharedMemoryTable::~SharedMemoryTable() {
  absl::MutexLock lock(&mu_);
  for (auto& [name, entry] : by_name_) entry.segment->Unlink();
}

absl::StatusOr<SharedMemoryTable::SegmentPtr> SharedMemoryTable::Create(const CallContext& call,
                                                                        int64_t bytes) {
  if (bytes < 0) {
    return absl::InvalidArgumentError(absl::StrCat("bytes: must not be negative, got ", bytes));
  }
  if (bytes > limits_.max_bytes_per_tenant) {
    return absl::ResourceExhaustedError(
        absl::StrCat("bytes: ", bytes, " is above the ", limits_.max_bytes_per_tenant,
                     " bytes of shared memory a tenant may hold (--shared_memory_max_bytes)"));
  }
  if (call.session.empty()) {
    return absl::InvalidArgumentError(
        "metadata distarray-session: CreateSharedMemory needs a session, whose end removes the "
        "segment");
  }
  {
    absl::MutexLock lock(&mu_);
    Usage& usage = usage_[call.tenant];
    if (usage.segments >= limits_.max_segments_per_tenant) {
      return absl::ResourceExhaustedError(
          absl::StrCat("bytes: the tenant holds ", usage.segments,
                       " shared-memory segments, the most it may "
                       "(--shared_memory_max_segments); release one (ReleaseSharedMemory) first"));
    }
    ASSIGN_OR_RETURN(const int64_t total,
                     CheckedAdd(usage.bytes, bytes, "bytes (with the tenant's segments)"));
    if (total > limits_.max_bytes_per_tenant) {
      return absl::ResourceExhaustedError(
          absl::StrCat("bytes: ", bytes, " more would bring the tenant's shared memory to ", total,
                       " bytes, above the ", limits_.max_bytes_per_tenant,
                       " it may hold (--shared_memory_max_bytes); release a segment first"));
    }
    if (total_segments_ >= kMaxSharedMemorySegments) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "bytes: the daemon holds ", total_segments_,
          " shared-memory segments, the most it keeps for all tenants; retry later or stream"));
    }
    usage.segments += 1;
    usage.bytes = total;
    total_segments_ += 1;
  }
  absl::StatusOr<std::unique_ptr<DaemonSegment>> made = DaemonSegment::Create(bytes);
  absl::MutexLock lock(&mu_);
  if (!made.ok()) {
    Unreserve(call.tenant, bytes);
    return made.status();
  }
  SegmentPtr segment(std::move(*made));
  by_name_.emplace(segment->name(), Entry{call.tenant, call.session_key(), segment});
  return segment;
}

void SharedMemoryTable::Unreserve(const std::string& tenant, int64_t bytes) {
  auto it = usage_.find(tenant);
  if (it == usage_.end()) return;
  it->second.segments -= 1;
  it->second.bytes -= bytes;
  if (it->second.segments == 0) usage_.erase(it);
  total_segments_ -= 1;
}

absl::StatusOr<SharedMemoryTable::SegmentPtr> SharedMemoryTable::Find(
    const CallContext& call, absl::string_view name, absl::string_view field) const {
  RETURN_IF_ERROR(CheckSharedMemoryName(name, field));
  absl::ReaderMutexLock lock(&mu_);
  auto it = by_name_.find(name);
  if (it == by_name_.end() || it->second.tenant != call.tenant || call.session.empty() ||
      it->second.session_key != call.session_key()) {
    return NotFound(field);
  }
  return it->second.segment;
}

absl::Status SharedMemoryTable::Release(const CallContext& call, absl::string_view name,
                                        absl::string_view field) {
  RETURN_IF_ERROR(CheckSharedMemoryName(name, field));
  SegmentPtr released;  // unmapped after the lock, unless a transfer still holds it
  absl::MutexLock lock(&mu_);
  auto it = by_name_.find(name);
  if (it == by_name_.end() || it->second.tenant != call.tenant || call.session.empty() ||
      it->second.session_key != call.session_key()) {
    return NotFound(field);
  }
  released = std::move(it->second.segment);
  released->Unlink();
  Unreserve(it->second.tenant, released->size());
  by_name_.erase(it);
  return absl::OkStatus();
}

int64_t SharedMemoryTable::ReleaseSession(const std::string& session_key) {
  std::vector<SegmentPtr> released;  // unmapped after the lock
  absl::MutexLock lock(&mu_);
  for (auto it = by_name_.begin(); it != by_name_.end();) {
    if (it->second.session_key != session_key) {
      ++it;
      continue;
    }
    it->second.segment->Unlink();
    Unreserve(it->second.tenant, it->second.segment->size());
    released.push_back(std::move(it->second.segment));
    by_name_.erase(it++);
  }
  return static_cast<int64_t>(released.size());
}

int64_t SharedMemoryTable::ReleaseAll() {
  std::vector<SegmentPtr> released;  // unmapped after the lock
  absl::MutexLock lock(&mu_);
  for (auto& [name, entry] : by_name_) {
    entry.segment->Unlink();
    released.push_back(std::move(entry.segment));
  }
  by_name_.clear();
  usage_.clear();
  total_segments_ = 0;
  return static_cast<int64_t>(released.size());
}

SharedMemoryTable::Usage SharedMemoryTable::UsageOf(const std::string& tenant) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = usage_.find(tenant);
  return it == usage_.end() ? Usage{} : it->second;
}

int64_t SharedMemoryTable::size() const {
  absl::ReaderMutexLock lock(&mu_);
  return static_cast<int64_t>(by_name_.size());
}

}  // namespace distarray
