#include "server/engine/registry.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "common/names.h"
#include "server/kernels/ops.h"

namespace distarray {

std::string Registry::NewHandle() {
  // Unguessable-looking but unique: a per-process random salt mixed with a counter.
  static const uint64_t salt = std::random_device{}() * 0x9E3779B97F4A7C15ull;
  return absl::StrFormat("arr-%016x", SplitMix64(salt ^ next_id_++));
}

absl::Status Registry::CheckNameFree(absl::string_view name, absl::string_view field) const {
  absl::ReaderMutexLock lock(&mu_);
  if (!name.empty() && handle_by_name_.contains(name)) {
    return absl::AlreadyExistsError(
        absl::StrCat(field, ": an array named ", QuoteClientString(name), " already exists"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ArrayPtr> Registry::Insert(Array array) {
  absl::MutexLock lock(&mu_);
  if (!array.name.empty() && handle_by_name_.contains(array.name)) {
    return absl::AlreadyExistsError(
        absl::StrCat("name: an array named ", QuoteClientString(array.name), " already exists"));
  }
  if (!array.name.empty()) array.session.clear();  // named arrays outlive sessions
  array.handle = NewHandle();
  auto stored = std::make_shared<const Array>(std::move(array));
  by_handle_[stored->handle] = stored;
  if (!stored->name.empty()) handle_by_name_[stored->name] = stored->handle;
  if (!stored->session.empty()) handles_by_session_[stored->session].insert(stored->handle);
  return stored;
}

absl::StatusOr<ArrayPtr> Registry::Replace(Array array) {
  ArrayPtr previous;  // released after the lock
  absl::MutexLock lock(&mu_);
  auto it = by_handle_.find(array.handle);
  if (it == by_handle_.end()) {
    return absl::NotFoundError(absl::StrCat("handle: array ", array.handle, " was deleted"));
  }
  array.session = it->second->session;  // the handle keeps its owner
  previous = std::move(it->second);
  auto stored = std::make_shared<const Array>(std::move(array));
  it->second = stored;
  return stored;
}

absl::StatusOr<ArrayPtr> Registry::FindLocked(absl::string_view handle_or_name,
                                              absl::string_view field) const {
  if (auto it = by_handle_.find(handle_or_name); it != by_handle_.end()) return it->second;
  if (auto it = handle_by_name_.find(handle_or_name); it != handle_by_name_.end()) {
    return by_handle_.at(it->second);
  }
  if (handle_or_name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": a handle is required"));
  }
  return absl::NotFoundError(absl::StrCat(field, ": no array ", QuoteClientString(handle_or_name)));
}

absl::StatusOr<ArrayPtr> Registry::Find(absl::string_view handle_or_name,
                                        absl::string_view field) const {
  absl::ReaderMutexLock lock(&mu_);
  return FindLocked(handle_or_name, field);
}

void Registry::EraseLocked(const ArrayPtr& array) {
  by_handle_.erase(array->handle);
  if (!array->name.empty()) handle_by_name_.erase(array->name);
  if (!array->session.empty()) {
    auto it = handles_by_session_.find(array->session);
    if (it != handles_by_session_.end()) {
      it->second.erase(array->handle);
      if (it->second.empty()) handles_by_session_.erase(it);
    }
  }
}

absl::Status Registry::Erase(absl::string_view handle_or_name, absl::string_view field) {
  ArrayPtr doomed;  // released after the lock: freeing buffers may take a while
  {
    absl::MutexLock lock(&mu_);
    auto found = FindLocked(handle_or_name, field);
    if (!found.ok()) return found.status();
    doomed = *found;
    EraseLocked(doomed);
  }
  return absl::OkStatus();
}

int64_t Registry::EraseSession(absl::string_view session) {
  std::vector<ArrayPtr> doomed;  // released after the lock
  {
    absl::MutexLock lock(&mu_);
    auto it = handles_by_session_.find(session);
    if (it == handles_by_session_.end()) return 0;
    const absl::flat_hash_set<std::string> handles = std::move(it->second);
    handles_by_session_.erase(it);
    for (const std::string& handle : handles) {
      auto found = by_handle_.find(handle);
      if (found == by_handle_.end()) continue;
      doomed.push_back(found->second);
      by_handle_.erase(found);
    }
  }
  return static_cast<int64_t>(doomed.size());
}

int64_t Registry::SessionArrayCount(absl::string_view session) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = handles_by_session_.find(session);
  return it == handles_by_session_.end() ? 0 : static_cast<int64_t>(it->second.size());
}

std::vector<ArrayPtr> Registry::List() const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<ArrayPtr> arrays;
  arrays.reserve(by_handle_.size());
  for (const auto& [handle, array] : by_handle_) arrays.push_back(array);
  return arrays;
}

std::vector<ArrayPtr> Registry::ListAfter(absl::string_view after, size_t limit) const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<ArrayPtr> arrays;
  auto it = after.empty() ? by_handle_.begin() : by_handle_.upper_bound(after);
  for (; it != by_handle_.end() && arrays.size() < limit; ++it) arrays.push_back(it->second);
  return arrays;
}

size_t Registry::size() const {
  absl::ReaderMutexLock lock(&mu_);
  return by_handle_.size();
}

}  // namespace distarray
