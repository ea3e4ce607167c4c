#include "common/names.h"

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace distarray {
namespace {

constexpr size_t kMaxQuotedBytes = 64;

bool IsNameChar(char c) { return absl::ascii_isalnum(c) || c == '.' || c == '_' || c == '-'; }

}  // namespace

bool LooksLikeHandle(absl::string_view text) {
  constexpr absl::string_view kPrefix = "arr-";
  if (text.size() != kPrefix.size() + 16 || !absl::StartsWithIgnoreCase(text, kPrefix)) {
    return false;
  }
  for (char c : text.substr(kPrefix.size())) {
    if (!absl::ascii_isxdigit(c)) return false;
  }
  return true;
}

absl::Status ValidateName(absl::string_view name, absl::string_view field) {
  if (name.empty()) return absl::OkStatus();
  if (name.size() > static_cast<size_t>(kMaxNameBytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": a name has at most ", kMaxNameBytes, " bytes, got ", name.size()));
  }
  if (!absl::ascii_isalnum(name[0])) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": a name starts with a letter or digit, got ", QuoteClientString(name)));
  }
  for (size_t i = 0; i < name.size(); ++i) {
    if (!IsNameChar(name[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": a name holds only letters, digits, '.', '_' and '-'; byte ", i,
                       " of ", QuoteClientString(name), " is not one"));
    }
  }
  if (LooksLikeHandle(name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": ", QuoteClientString(name), " has the form of a handle and cannot be a name"));
  }
  return absl::OkStatus();
}

std::string QuoteClientString(absl::string_view text) {
  const absl::string_view shown = text.substr(0, kMaxQuotedBytes);
  std::string out = absl::StrCat("'", absl::CHexEscape(shown), "'");
  if (shown.size() < text.size()) absl::StrAppend(&out, "... (", text.size(), " bytes)");
  return out;
}

}  // namespace distarray
