#include "server/security/token_store.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "absl/container/flat_hash_set.h"
#include "common/status_macros.h"

namespace distarray {
namespace {

constexpr char kFlag[] = "--auth_tokens_file";

std::array<uint8_t, 32> Sha256(absl::string_view text) {
  std::array<uint8_t, 32> digest;
  static_assert(sizeof(digest) == SHA256_DIGEST_LENGTH);
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest.data());
  return digest;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TokenStore>> TokenStore::Load(const std::string& path) {
  ASSIGN_OR_RETURN(std::vector<TokenEntry> entries, LoadTokenFile(path, kFlag));
  return std::make_unique<TokenStore>(entries, path);
}

TokenStore::TokenStore(const std::vector<TokenEntry>& entries, std::string path)
    : path_(std::move(path)), table_(MakeTable(entries)) {}

std::shared_ptr<const TokenStore::Table> TokenStore::MakeTable(
    const std::vector<TokenEntry>& entries) {
  auto table = std::make_shared<Table>();
  absl::flat_hash_set<std::string> tenants;
  for (const TokenEntry& entry : entries) {
    table->entries.push_back(Entry{Sha256(entry.token), entry.tenant});
    tenants.insert(entry.tenant);
  }
  table->tenants = tenants.size();
  return table;
}

std::shared_ptr<const TokenStore::Table> TokenStore::table() const {
  absl::MutexLock lock(&mu_);
  return table_;
}

absl::Status TokenStore::Reload() {
  ASSIGN_OR_RETURN(std::vector<TokenEntry> entries, LoadTokenFile(path_, kFlag));
  std::shared_ptr<const Table> fresh = MakeTable(entries);
  absl::MutexLock lock(&mu_);
  table_ = std::move(fresh);
  return absl::OkStatus();
}

std::optional<std::string> TokenStore::TenantOf(absl::string_view token) const {
  // Hashing first makes every comparison 32 bytes whatever the token's length; CRYPTO_memcmp
  // does not stop at the first differing byte, and the loop visits every entry.
  const Digest presented = Sha256(token);
  const std::shared_ptr<const Table> current = table();
  const Entry* match = nullptr;
  for (const Entry& entry : current->entries) {
    const bool equal = CRYPTO_memcmp(entry.digest.data(), presented.data(), presented.size()) == 0;
    if (equal) match = &entry;
  }
  if (match == nullptr) return std::nullopt;
  return match->tenant;
}

size_t TokenStore::token_count() const { return table()->entries.size(); }
size_t TokenStore::tenant_count() const { return table()->tenants; }

}  // namespace distarray
