#include "server/engine/registry.h"
#include "absl/strings/string_view.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
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
        absl::StrCat(field, ": an array named '", name, "' already exists"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ArrayPtr> Registry::Insert(Array array) {
  absl::MutexLock lock(&mu_);
  if (!array.name.empty() && handle_by_name_.contains(array.name)) {
    return absl::AlreadyExistsError(
        absl::StrCat("name: an array named '", array.name, "' already exists"));
  }
  array.handle = NewHandle();
  auto stored = std::make_shared<const Array>(std::move(array));
  by_handle_[stored->handle] = stored;
  if (!stored->name.empty()) handle_by_name_[stored->name] = stored->handle;
  return stored;
}

absl::StatusOr<ArrayPtr> Registry::Replace(Array array) {
  absl::MutexLock lock(&mu_);
  auto it = by_handle_.find(array.handle);
  if (it == by_handle_.end()) {
    return absl::NotFoundError(absl::StrCat("handle: array ", array.handle, " was deleted"));
  }
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
  return absl::NotFoundError(absl::StrCat(field, ": no array '", handle_or_name, "'"));
}

absl::StatusOr<ArrayPtr> Registry::Find(absl::string_view handle_or_name,
                                        absl::string_view field) const {
  absl::ReaderMutexLock lock(&mu_);
  return FindLocked(handle_or_name, field);
}

absl::Status Registry::Erase(absl::string_view handle_or_name, absl::string_view field) {
  ArrayPtr doomed;  // released after the lock: freeing buffers may take a while
  {
    absl::MutexLock lock(&mu_);
    auto found = FindLocked(handle_or_name, field);
    if (!found.ok()) return found.status();
    doomed = *found;
    by_handle_.erase(doomed->handle);
    if (!doomed->name.empty()) handle_by_name_.erase(doomed->name);
  }
  return absl::OkStatus();
}

std::vector<ArrayPtr> Registry::List() const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<ArrayPtr> arrays;
  for (const auto& [handle, array] : by_handle_) arrays.push_back(array);
  std::sort(arrays.begin(), arrays.end(),
            [](const ArrayPtr& a, const ArrayPtr& b) { return a->handle < b->handle; });
  return arrays;
}

size_t Registry::size() const {
  absl::ReaderMutexLock lock(&mu_);
  return by_handle_.size();
}

}  // namespace distarray
