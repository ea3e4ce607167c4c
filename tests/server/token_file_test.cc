// The tokens file parser and the token store: accepted forms, every refusal naming its line and
// never the token, lookups, and a reload that fails keeping the old table.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/security/token_file.h"
#include "server/security/token_store.h"

namespace distarray {
namespace {

constexpr char kAlice[] = "alice-token-0123456789";
constexpr char kAlice2[] = "alice-second-token-9876";
constexpr char kBob[] = "bob-token-0123456789abc";

TEST(TokenFileTest, ParsesTenantsCommentsBlankLinesAndCrlf) {
  const std::string contents = absl::StrCat("# rotated on Mondays\n\n  alice :  ", kAlice,
                                            "  \r\nbob: ", kBob, "\nalice: ", kAlice2, "\n");
  absl::StatusOr<std::vector<TokenEntry>> entries = ParseTokenFile(contents, "tokens");
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_EQ((*entries)[0].tenant, "alice");
  EXPECT_EQ((*entries)[0].token, kAlice);
  EXPECT_EQ((*entries)[0].line, 3);
  EXPECT_EQ((*entries)[1].tenant, "bob");
  EXPECT_EQ((*entries)[2].token, kAlice2);
  EXPECT_EQ((*entries)[2].line, 5);
}

TEST(TokenFileTest, RefusalsNameTheLineAndNeverTheToken) {
  struct Case {
    std::string contents;
    std::string message;
  };
  const std::string secret = "a-secret-that-must-not-be-logged";
  const Case cases[] = {
      {"", "tokens: no 'tenant: token' line; every call would be refused"},
      {"# only a comment\n", "tokens: no 'tenant: token' line; every call would be refused"},
      {"\n" + secret + "\n", "tokens: line 2: expected 'tenant: token'"},
      {"alice: short\n", "tokens: line 1: the token must have 16 to 4096 bytes, it has 5"},
      {"alice: " + std::string(4097, 'x') + "\n",
       "tokens: line 1: the token must have 16 to 4096 bytes, it has 4097"},
      {"alice: " + secret.substr(0, 10) + " " + secret + "\n",
       "tokens: line 1: the token may hold printable ASCII only, without spaces"},
      {"alice: " + secret + "\nbob: " + secret + "\n",
       "tokens: line 2: the same token as line 1; a token must identify one tenant"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<TokenEntry>> entries = ParseTokenFile(c.contents, "tokens");
    ASSERT_FALSE(entries.ok()) << c.contents;
    EXPECT_EQ(entries.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(entries.status().message(), c.message);
    EXPECT_EQ(entries.status().message().find(secret), std::string::npos);
  }
  // A bad tenant name is refused by the tenant rule, naming the line.
  absl::StatusOr<std::vector<TokenEntry>> bad_tenant =
      ParseTokenFile(absl::StrCat("al ice: ", kAlice, "\n"), "tokens");
  ASSERT_FALSE(bad_tenant.ok());
  EXPECT_EQ(bad_tenant.status().message().rfind("tokens: line 1: tenant", 0), 0u)
      << bad_tenant.status();
}

TEST(TokenStoreTest, LooksUpTenantsAndRefusesEverythingElse) {
  absl::StatusOr<std::vector<TokenEntry>> entries = ParseTokenFile(
      absl::StrCat("alice: ", kAlice, "\nalice: ", kAlice2, "\nbob: ", kBob, "\n"), "tokens");
  ASSERT_TRUE(entries.ok()) << entries.status();
  const TokenStore store(*entries);
  EXPECT_EQ(store.TenantOf(kAlice), "alice");
  EXPECT_EQ(store.TenantOf(kAlice2), "alice");
  EXPECT_EQ(store.TenantOf(kBob), "bob");
  EXPECT_EQ(store.token_count(), 3u);
  EXPECT_EQ(store.tenant_count(), 2u);
  // A prefix, an extension, a one-byte change, the empty token: nobody.
  const std::string alice = kAlice;
  EXPECT_FALSE(store.TenantOf(alice.substr(0, alice.size() - 1)).has_value());
  EXPECT_FALSE(store.TenantOf(alice + "x").has_value());
  std::string changed = alice;
  changed[3] ^= 1;
  EXPECT_FALSE(store.TenantOf(changed).has_value());
  EXPECT_FALSE(store.TenantOf("").has_value());
}

TEST(TokenStoreTest, AFailedReloadKeepsTheTokensInForce) {
  const std::string path =
      (std::filesystem::temp_directory_path() / absl::StrCat("distarray-tokens-", getpid()))
          .string();
  std::ofstream(path) << "alice: " << kAlice << "\n";
  absl::StatusOr<std::unique_ptr<TokenStore>> store = TokenStore::Load(path);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->TenantOf(kAlice), "alice");

  std::ofstream(path) << "bob: " << kBob << "\n";  // rotation: alice's token goes, bob's comes
  ASSERT_TRUE((*store)->Reload().ok());
  EXPECT_FALSE((*store)->TenantOf(kAlice).has_value());
  EXPECT_EQ((*store)->TenantOf(kBob), "bob");

  std::ofstream(path) << "bob " << kBob << "\n";  // malformed: the old table stays
  const absl::Status reloaded = (*store)->Reload();
  EXPECT_EQ(reloaded.code(), absl::StatusCode::kInvalidArgument) << reloaded;
  EXPECT_EQ((*store)->TenantOf(kBob), "bob");

  std::remove(path.c_str());
  const absl::Status gone = (*store)->Reload();
  EXPECT_EQ(gone.code(), absl::StatusCode::kInvalidArgument) << gone;
  EXPECT_EQ((*store)->TenantOf(kBob), "bob");
}

}  // namespace
}  // namespace distarray
