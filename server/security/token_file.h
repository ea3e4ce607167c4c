// The tokens file of --auth_tokens_file: one `tenant: token` per line, `#` comment lines and blank
// lines. A tenant may have several tokens (to rotate one without a gap); a token belongs to one
// tenant. Parsing never quotes a token back: error messages name the line number only.
#ifndef DISTARRAY_SERVER_SECURITY_TOKEN_FILE_H_
#define DISTARRAY_SERVER_SECURITY_TOKEN_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace distarray {

// Tokens are 16 to 4096 bytes of printable ASCII without spaces (they travel in an HTTP/2 header
// as `authorization: Bearer <token>`); shorter ones are refused as too easy to guess.
inline constexpr size_t kMinTokenBytes = 16;
inline constexpr size_t kMaxTokenBytes = 4096;
// A bound on the file itself, so a wrong path (a device, a huge log) fails instead of being read.
inline constexpr int64_t kMaxTokenFileBytes = int64_t{1} << 20;

struct TokenEntry {
  std::string tenant;
  std::string token;
  int line = 0;  // 1-based, for messages
};

// Parses the file's contents. INVALID_ARGUMENT "<source>: line N: ..." for a malformed line, a bad
// tenant name, a bad token, a token repeated, or a file with no token at all.
absl::StatusOr<std::vector<TokenEntry>> ParseTokenFile(absl::string_view contents,
                                                       absl::string_view source);

// Reads and parses `path`; `source` prefixes messages (the flag, e.g. "--auth_tokens_file").
// INVALID_ARGUMENT when the file cannot be read or is larger than kMaxTokenFileBytes.
absl::StatusOr<std::vector<TokenEntry>> LoadTokenFile(const std::string& path,
                                                      absl::string_view source);

}  // namespace distarray

#endif  // DISTARRAY_SERVER_SECURITY_TOKEN_FILE_H_
