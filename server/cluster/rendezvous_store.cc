#include "server/cluster/rendezvous_store.h"

#include <exception>

#include <gloo/common/error.h>

#include "absl/strings/str_cat.h"

namespace distarray::cluster {

absl::Status LeaderStore::Set(const std::string& key, const std::string& value) {
  try {
    store_.set(key, std::vector<char>(value.begin(), value.end()));
  } catch (const std::exception& e) {  // a key set twice
    return absl::AlreadyExistsError(absl::StrCat("rendezvous key ", key, ": ", e.what()));
  }
  return absl::OkStatus();
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
