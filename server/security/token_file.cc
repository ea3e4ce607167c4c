#include "server/security/token_file.h"

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "server/security/read_file.h"
#include "server/security/tenant.h"

namespace distarray {
namespace {

bool IsTokenByte(char c) { return c > ' ' && c <= '~'; }  // printable ASCII, no space

}  // namespace

absl::StatusOr<std::vector<TokenEntry>> ParseTokenFile(absl::string_view contents,
                                                       absl::string_view source) {
  std::vector<TokenEntry> entries;
  absl::flat_hash_map<std::string, int> line_of_token;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(contents, '\n')) {
    ++line_number;
    const std::string where = absl::StrCat(source, ": line ", line_number);
    line = absl::StripAsciiWhitespace(line);  // also drops a '\r' of CRLF files
    if (line.empty() || line.front() == '#') continue;
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": expected 'tenant: token'"));
    }
    TokenEntry entry;
    entry.line = line_number;
    entry.tenant = std::string(absl::StripAsciiWhitespace(line.substr(0, colon)));
    entry.token = std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
    RETURN_IF_ERROR(ValidateTenantName(entry.tenant, absl::StrCat(where, ": tenant")));
    // The token itself is never quoted: this message goes to logs.
    if (entry.token.size() < kMinTokenBytes || entry.token.size() > kMaxTokenBytes) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": the token must have ",
                                                     kMinTokenBytes, " to ", kMaxTokenBytes,
                                                     " bytes, it has ", entry.token.size()));
    }
    for (const char c : entry.token) {
      if (!IsTokenByte(c)) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": the token may hold printable ASCII only, without spaces"));
      }
    }
    auto [it, inserted] = line_of_token.emplace(entry.token, line_number);
    if (!inserted) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": the same token as line ", it->second,
                                                     "; a token must identify one tenant"));
    }
    entries.push_back(std::move(entry));
  }
  if (entries.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": no 'tenant: token' line; every call would be refused"));
  }
  return entries;
}

absl::StatusOr<std::vector<TokenEntry>> LoadTokenFile(const std::string& path,
                                                      absl::string_view source) {
  ASSIGN_OR_RETURN(std::string contents, ReadSmallFile(path, source, kMaxTokenFileBytes));
  return ParseTokenFile(contents, absl::StrCat(source, " ", path));
}

}  // namespace distarray
