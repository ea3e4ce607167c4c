// Reading a small configuration file (tokens, certificates) whole, with a size bound.
#ifndef DISTARRAY_SERVER_SECURITY_READ_FILE_H_
#define DISTARRAY_SERVER_SECURITY_READ_FILE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace distarray {

// The contents of `path`. INVALID_ARGUMENT "<source>: cannot read <path>: <reason>" when it cannot
// be opened or read, or holds more than `max_bytes`.
absl::StatusOr<std::string> ReadSmallFile(const std::string& path, absl::string_view source,
                                          int64_t max_bytes);

}  // namespace distarray

#endif  // DISTARRAY_SERVER_SECURITY_READ_FILE_H_
