// Maps a call to its tenant: the `authorization: Bearer <token>` metadata looked up in the token
// store. Without a store (no --auth_tokens_file) every call is the default tenant, as before
// tenants existed. The API service runs it first on every call (server/service/array_service.cc),
// which works the same over TLS and plaintext; gRPC's AuthMetadataProcessor would not, as gRPC
// refuses one on insecure credentials. The health and metrics servers never see it.
#ifndef DISTARRAY_SERVER_SECURITY_AUTHENTICATOR_H_
#define DISTARRAY_SERVER_SECURITY_AUTHENTICATOR_H_

#include <map>
#include <memory>
#include <string>

#include <grpcpp/support/string_ref.h>

#include "absl/status/statusor.h"
#include "server/security/token_store.h"

namespace distarray {

inline constexpr char kAuthorizationKey[] = "authorization";

class Authenticator {
 public:
  // No store: authentication is off and every call is kDefaultTenant.
  explicit Authenticator(std::unique_ptr<TokenStore> store = nullptr) : store_(std::move(store)) {}

  // An authenticator over the tokens of `path`; authentication off when `path` is empty.
  // INVALID_ARGUMENT naming --auth_tokens_file (and the line) when the file is unusable.
  static absl::StatusOr<std::unique_ptr<Authenticator>> FromTokensFile(const std::string& path);

  // Re-reads the tokens file (SIGHUP) and logs the outcome: on error the previous tokens stay in
  // force. A no-op when authentication is off.
  void ReloadTokens() const;

  bool enabled() const { return store_ != nullptr; }
  TokenStore* store() const { return store_.get(); }

  // The tenant of a call with this client metadata. UNAUTHENTICATED, naming the metadata key and
  // never quoting the token, when the token is missing, malformed or unknown.
  absl::StatusOr<std::string> TenantOf(
      const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) const;

 private:
  std::unique_ptr<TokenStore> store_;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_SECURITY_AUTHENTICATOR_H_
