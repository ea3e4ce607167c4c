// The live token table: which tenant a bearer token belongs to. Tokens are kept as SHA-256
// digests and a presented token is compared against every digest in constant time, so the time a
// lookup takes says nothing about how much of a token was right, nor about its length.
// Reload swaps the table atomically; a file that fails to parse leaves the old table in place.
#ifndef DISTARRAY_SERVER_SECURITY_TOKEN_STORE_H_
#define DISTARRAY_SERVER_SECURITY_TOKEN_STORE_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "server/security/token_file.h"

namespace distarray {

class TokenStore {
 public:
  // Reads `path` (INVALID_ARGUMENT naming --auth_tokens_file and the line on a bad file).
  static absl::StatusOr<std::unique_ptr<TokenStore>> Load(const std::string& path);
  // A store over given entries (tests).
  explicit TokenStore(const std::vector<TokenEntry>& entries, std::string path = "");

  // Re-reads the file. On error the previous tokens stay in force and the error is returned (the
  // caller logs it). Thread-safe against concurrent lookups.
  absl::Status Reload();

  // The tenant `token` belongs to, or nullopt. Constant time in the token's content and length.
  std::optional<std::string> TenantOf(absl::string_view token) const;

  // How many tokens and distinct tenants are in force (for the reload log line).
  size_t token_count() const;
  size_t tenant_count() const;
  const std::string& path() const { return path_; }

 private:
  using Digest = std::array<uint8_t, 32>;
  struct Entry {
    Digest digest;
    std::string tenant;
  };
  struct Table {
    std::vector<Entry> entries;
    size_t tenants = 0;
  };
  static std::shared_ptr<const Table> MakeTable(const std::vector<TokenEntry>& entries);
  std::shared_ptr<const Table> table() const;

  const std::string path_;
  mutable absl::Mutex mu_;
  std::shared_ptr<const Table> table_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_SECURITY_TOKEN_STORE_H_
