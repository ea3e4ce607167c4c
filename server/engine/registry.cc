#include "server/engine/registry.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "common/names.h"
#include "common/status_macros.h"
#include "server/kernels/ops.h"

namespace distarray {

std::string Registry::NewHandle() {
  // Unguessable-looking but unique: a per-process random salt mixed with a counter.
  static const uint64_t salt = std::random_device{}() * 0x9E3779B97F4A7C15ull;
  return absl::StrFormat("arr-%016x", SplitMix64(salt ^ next_id_++));
}

absl::StatusOr<ArrayPtr> Registry::Charged(Array array) {
  if (array.tenant.empty()) {
    // Every path that makes an array sets its tenant; an empty one would be nobody's.
    return absl::InternalError(absl::StrCat("array ", array.handle, " has no tenant"));
  }
  DeviceCharges charges = ChargesOf(array);
  RETURN_IF_ERROR(memory_->Reserve(array.tenant, charges));
  std::string tenant = array.tenant;
  return ArrayPtr(new Array(std::move(array)), [memory = memory_, tenant = std::move(tenant),
                                                charges = std::move(charges)](const Array* stored) {
    delete stored;
    memory->Release(tenant, charges);
  });
}

absl::Status Registry::CheckNameFree(absl::string_view tenant, absl::string_view name,
                                     absl::string_view field) const {
  absl::ReaderMutexLock lock(&mu_);
  if (name.empty()) return absl::OkStatus();
  auto it = tenants_.find(tenant);
  if (it != tenants_.end() && it->second.handle_by_name.contains(name)) {
    return absl::AlreadyExistsError(
        absl::StrCat(field, ": an array named ", QuoteClientString(name), " already exists"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ArrayPtr> Registry::Insert(Array array) {
  if (!array.name.empty()) array.session.clear();  // named arrays outlive sessions
  absl::MutexLock lock(&mu_);
  if (!array.name.empty()) {
    auto it = tenants_.find(array.tenant);
    if (it != tenants_.end() && it->second.handle_by_name.contains(array.name)) {
      return absl::AlreadyExistsError(
          absl::StrCat("name: an array named ", QuoteClientString(array.name), " already exists"));
    }
  }
  array.handle = NewHandle();
  ASSIGN_OR_RETURN(ArrayPtr stored, Charged(std::move(array)));
  by_handle_[stored->handle] = stored;
  TenantIndex& index = tenants_[stored->tenant];
  index.handles.insert(stored->handle);
  if (!stored->name.empty()) index.handle_by_name[stored->name] = stored->handle;
  if (!stored->session.empty()) handles_by_session_[stored->session].insert(stored->handle);
  return stored;
}

absl::StatusOr<ArrayPtr> Registry::Replace(Array array) {
  ArrayPtr previous;  // released after the lock
  absl::MutexLock lock(&mu_);
  auto it = by_handle_.find(array.handle);
  if (it == by_handle_.end() || it->second->tenant != array.tenant) {
    return absl::NotFoundError(absl::StrCat("handle: array ", array.handle, " was deleted"));
  }
  array.session = it->second->session;  // the handle keeps its owner
  ASSIGN_OR_RETURN(ArrayPtr stored, Charged(std::move(array)));
  previous = std::exchange(it->second, stored);
  return stored;
}

absl::StatusOr<ArrayPtr> Registry::FindLocked(absl::string_view tenant,
                                              absl::string_view handle_or_name,
                                              absl::string_view field) const {
  if (auto it = by_handle_.find(handle_or_name);
      it != by_handle_.end() && it->second->tenant == tenant) {
    return it->second;
  }
  if (auto t = tenants_.find(tenant); t != tenants_.end()) {
    if (auto it = t->second.handle_by_name.find(handle_or_name);
        it != t->second.handle_by_name.end()) {
      return by_handle_.at(it->second);
    }
  }
  if (handle_or_name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": a handle is required"));
  }
  // The same answer for another tenant's array as for none at all.
  return absl::NotFoundError(absl::StrCat(field, ": no array ", QuoteClientString(handle_or_name)));
}

absl::StatusOr<ArrayPtr> Registry::Find(absl::string_view tenant, absl::string_view handle_or_name,
                                        absl::string_view field) const {
  absl::ReaderMutexLock lock(&mu_);
  return FindLocked(tenant, handle_or_name, field);
}

void Registry::EraseLocked(const ArrayPtr& array) {
  by_handle_.erase(array->handle);
  if (auto t = tenants_.find(array->tenant); t != tenants_.end()) {
    t->second.handles.erase(array->handle);
    if (!array->name.empty()) t->second.handle_by_name.erase(array->name);
    if (t->second.handles.empty()) tenants_.erase(t);
  }
  if (!array->session.empty()) {
    auto it = handles_by_session_.find(array->session);
    if (it != handles_by_session_.end()) {
      it->second.erase(array->handle);
      if (it->second.empty()) handles_by_session_.erase(it);
    }
  }
}

absl::Status Registry::Erase(absl::string_view tenant, absl::string_view handle_or_name,
                             absl::string_view field) {
  ArrayPtr doomed;  // released after the lock: freeing buffers may take a while
  {
    absl::MutexLock lock(&mu_);
    auto found = FindLocked(tenant, handle_or_name, field);
    if (!found.ok()) return found.status();
    doomed = *found;
    EraseLocked(doomed);
  }
  return absl::OkStatus();
}

int64_t Registry::EraseSession(absl::string_view session_key) {
  std::vector<ArrayPtr> doomed;  // released after the lock
  {
    absl::MutexLock lock(&mu_);
    auto it = handles_by_session_.find(session_key);
    if (it == handles_by_session_.end()) return 0;
    absl::flat_hash_set<std::string> handles = std::move(it->second);
    handles_by_session_.erase(it);
    for (const std::string& handle : handles) {
      auto found = by_handle_.find(handle);
      if (found == by_handle_.end()) continue;
      // EraseLocked erases the map slot `found` points into: hand it our own reference.
      doomed.push_back(found->second);
      EraseLocked(doomed.back());
    }
  }
  return static_cast<int64_t>(doomed.size());
}

int64_t Registry::SessionArrayCount(absl::string_view session_key) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = handles_by_session_.find(session_key);
  return it == handles_by_session_.end() ? 0 : static_cast<int64_t>(it->second.size());
}

std::vector<ArrayPtr> Registry::List() const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<ArrayPtr> arrays;
  arrays.reserve(by_handle_.size());
  for (const auto& [handle, array] : by_handle_) arrays.push_back(array);
  std::sort(arrays.begin(), arrays.end(),
            [](const ArrayPtr& a, const ArrayPtr& b) { return a->handle < b->handle; });
  return arrays;
}

std::vector<ArrayPtr> Registry::ListAfter(absl::string_view tenant, absl::string_view after,
                                          size_t limit) const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<ArrayPtr> arrays;
  auto t = tenants_.find(tenant);
  if (t == tenants_.end()) return arrays;
  const auto& handles = t->second.handles;
  auto it = after.empty() ? handles.begin() : handles.upper_bound(after);
  for (; it != handles.end() && arrays.size() < limit; ++it) arrays.push_back(by_handle_.at(*it));
  return arrays;
}

size_t Registry::size() const {
  absl::ReaderMutexLock lock(&mu_);
  return by_handle_.size();
}

}  // namespace distarray
