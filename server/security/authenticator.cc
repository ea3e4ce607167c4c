#include "server/security/authenticator.h"

#include <spdlog/spdlog.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/security/tenant.h"

namespace distarray {

absl::StatusOr<std::unique_ptr<Authenticator>> Authenticator::FromTokensFile(
    const std::string& path) {
  if (path.empty()) return std::make_unique<Authenticator>();
  absl::StatusOr<std::unique_ptr<TokenStore>> store = TokenStore::Load(path);
  if (!store.ok()) return store.status();
  spdlog::info("authentication: {} tokens of {} tenants from {}", (*store)->token_count(),
               (*store)->tenant_count(), path);
  return std::make_unique<Authenticator>(*std::move(store));
}

void Authenticator::ReloadTokens() const {
  if (!enabled()) {
    spdlog::info("SIGHUP: no --auth_tokens_file to reload");
    return;
  }
  if (absl::Status reloaded = store_->Reload(); !reloaded.ok()) {
    spdlog::error("SIGHUP: {}; the previous tokens stay in force", std::string(reloaded.message()));
    return;
  }
  spdlog::info("SIGHUP: reloaded {} tokens of {} tenants from {}", store_->token_count(),
               store_->tenant_count(), store_->path());
}

absl::StatusOr<std::string> Authenticator::TenantOf(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) const {
  if (!enabled()) return std::string(kDefaultTenant);
  const auto [first, last] = metadata.equal_range(kAuthorizationKey);
  if (first == last) {
    return absl::UnauthenticatedError(
        absl::StrCat(kAuthorizationKey, ": this daemon requires a token; send the metadata '",
                     kAuthorizationKey, ": Bearer <token>'"));
  }
  if (std::next(first) != last) {
    return absl::UnauthenticatedError(
        absl::StrCat(kAuthorizationKey, ": more than one value; send one token per call"));
  }
  const absl::string_view value(first->second.data(), first->second.size());
  // The scheme is case-insensitive (RFC 7235); one or more spaces separate it from the token.
  constexpr absl::string_view kScheme = "bearer ";
  if (value.size() <= kScheme.size() || !absl::StartsWithIgnoreCase(value, kScheme)) {
    return absl::UnauthenticatedError(
        absl::StrCat(kAuthorizationKey, ": expected 'Bearer <token>'"));
  }
  const absl::string_view token = absl::StripLeadingAsciiWhitespace(value.substr(kScheme.size()));
  std::optional<std::string> tenant = store_->TenantOf(token);
  if (!tenant) {
    return absl::UnauthenticatedError(
        absl::StrCat(kAuthorizationKey, ": the bearer token is not valid"));
  }
  return *std::move(tenant);
}

}  // namespace distarray
