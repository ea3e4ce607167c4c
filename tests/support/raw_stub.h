// The daemon's API called directly, for the requests the SDK never sends: hostile, malformed,
// half-finished or session-less ones. The SDK keeps its stub to itself, so a test makes its own on
// a channel to the daemon (with the SDK's channel arguments: the same message sizes and retries)
// and sets the call metadata the way the SDK does: the session id under "distarray-session", the
// token as "authorization: Bearer <token>".
#ifndef DISTARRAY_TESTS_SUPPORT_RAW_STUB_H_
#define DISTARRAY_TESTS_SUPPORT_RAW_STUB_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <optional>
#include <string>

#include "client/channel.h"
#include "distarray/client.h"
#include "distarray/v1/distarray.grpc.pb.h"

namespace distarray::testing {

class RawStub {
 public:
  // Calls that carry no metadata: no session, no tenant token.
  explicit RawStub(const std::string& address)
      : stub_(v1::ArrayService::NewStub(grpc::CreateCustomChannel(
            address, grpc::InsecureChannelCredentials(), internal::SdkChannelArguments()))) {}
  // Calls in `client`'s session, with `token` (the one the client connected with; empty: none).
  RawStub(const std::string& address, const Client& client, const std::string& token = "")
      : RawStub(address) {
    session_id_ = client.session_id();
    token_ = token;
  }

  v1::ArrayService::Stub& stub() const { return *stub_; }

  // Adds the session id and token to `context`, as the SDK does on each of its calls.
  void AttachSession(grpc::ClientContext& context) const {
    if (!session_id_.has_value()) return;
    context.AddMetadata("distarray-session", *session_id_);
    if (!token_.empty()) context.AddMetadata("authorization", "Bearer " + token_);
  }

 private:
  std::shared_ptr<v1::ArrayService::Stub> stub_;
  std::optional<std::string> session_id_;
  std::string token_;
};

}  // namespace distarray::testing

#endif  // DISTARRAY_TESTS_SUPPORT_RAW_STUB_H_
