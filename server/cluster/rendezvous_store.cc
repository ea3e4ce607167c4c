#include "server/cluster/rendezvous_store.h"

#include <exception>

#include <gloo/common/error.h>
#include <mutex>

#include "absl/strings/str_cat.h"

namespace distarray::cluster {

template <typename Drop>
int64_t LeaderStore::ErasableHashStore::EraseIf(Drop drop) {
  std::lock_guard<std::mutex> lock(m_);
  int64_t bytes = 0;
  for (auto it = map_.begin(); it != map_.end();) {
    if (drop(it->first)) {
      bytes += static_cast<int64_t>(it->second.size());
      it = map_.erase(it);
    } else {
      ++it;
    }
  }
  return bytes;
}

absl::Status LeaderStore::Set(const std::string& key, const std::string& value) {
  absl::MutexLock lock(&mu_);
  const int64_t size = static_cast<int64_t>(key.size() + value.size());
  if (keys_ >= kMaxKeys || bytes_ + size > kMaxBytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the rendezvous store holds ", keys_, " keys of ", bytes_, " bytes, its most (", kMaxKeys,
        " keys, ", kMaxBytes, " bytes); it is emptied of other epochs when the next connects"));
  }
  try {
    store_.set(key, std::vector<char>(value.begin(), value.end()));
  } catch (const std::exception& e) {  // a key set twice
    return absl::AlreadyExistsError(absl::StrCat("rendezvous key ", key, ": ", e.what()));
  }
  ++keys_;
  bytes_ += size;
  return absl::OkStatus();
}

void LeaderStore::KeepOnlyEpoch(int64_t epoch) {
  const std::string prefix = absl::StrCat("epoch", epoch, "/");
  absl::MutexLock lock(&mu_);
  int64_t dropped_keys = 0;
  int64_t dropped_key_bytes = 0;
  const int64_t dropped_value_bytes = store_.EraseIf([&](const std::string& key) {
    if (key.compare(0, prefix.size(), prefix) == 0) return false;
    ++dropped_keys;
    dropped_key_bytes += static_cast<int64_t>(key.size());
    return true;
  });
  keys_ -= dropped_keys;
  bytes_ -= dropped_key_bytes + dropped_value_bytes;
}

int64_t LeaderStore::keys() const {
  absl::MutexLock lock(&mu_);
  return keys_;
}

void LeaderStore::GlooView::set(const std::string& key, const std::vector<char>& data) {
  if (absl::Status s = owner_.Set(key, std::string(data.begin(), data.end())); !s.ok()) {
    throw gloo::IoException(std::string(s.message()));
  }
}

absl::StatusOr<std::string> LeaderStore::Get(const std::string& key, absl::Duration timeout) {
  try {
    store_.wait({key}, std::chrono::milliseconds(absl::ToInt64Milliseconds(timeout)));
    const std::vector<char> value = store_.get(key);
    return std::string(value.begin(), value.end());
  } catch (const std::exception& e) {
    return absl::DeadlineExceededError(
        absl::StrCat("rendezvous key ", key, " did not appear: ", e.what()));
  }
}

void GrpcStore::set(const std::string& key, const std::vector<char>& data) {
  internal::v1::StoreSetRequest request;
  request.set_key(key);
  request.set_value(std::string(data.begin(), data.end()));
  internal::v1::StoreSetResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + last_timeout_);
  if (grpc::Status s = leader_->StoreSet(&context, request, &response); !s.ok()) {
    throw gloo::IoException(absl::StrCat("rendezvous set ", key, ": ", s.error_message()));
  }
}

void GrpcStore::wait(const std::vector<std::string>& keys,
                     const std::chrono::milliseconds& timeout) {
  // A get waits on the leader; the value is fetched again by get() (they are small).
  last_timeout_ = timeout;
  for (const std::string& key : keys) get(key);
}

std::vector<char> GrpcStore::get(const std::string& key) {
  internal::v1::StoreGetRequest request;
  request.set_key(key);
  internal::v1::StoreGetResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + last_timeout_);
  if (grpc::Status s = leader_->StoreGet(&context, request, &response); !s.ok()) {
    throw gloo::IoException(absl::StrCat("rendezvous get ", key, ": ", s.error_message()));
  }
  return std::vector<char>(response.value().begin(), response.value().end());
}

}  // namespace distarray::cluster
