// Client-chosen strings: the rule for array names, and how a status message may quote anything a
// client sent. Both exist because the daemon faces remote clients: a name must not be mistaken
// for a handle, and an error message must not grow with (or carry bytes of) a hostile input.
#ifndef DISTARRAY_COMMON_NAMES_H_
#define DISTARRAY_COMMON_NAMES_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace distarray {

inline constexpr int kMaxNameBytes = 256;

// OK for an empty name (unnamed) and for 1 to kMaxNameBytes bytes of [A-Za-z0-9._-] starting
// with a letter or digit that do not look like a handle ("arr-" and 16 hex digits). Otherwise
// INVALID_ARGUMENT naming `field`.
absl::Status ValidateName(absl::string_view name, absl::string_view field);

// Whether `text` has the form of a handle the daemon gives out.
bool LooksLikeHandle(absl::string_view text);

// `text` as a status message may quote it: in single quotes, at most 64 bytes of it, bytes
// outside printable ASCII escaped, and "... (N bytes)" when cut.
std::string QuoteClientString(absl::string_view text);

}  // namespace distarray

#endif  // DISTARRAY_COMMON_NAMES_H_
