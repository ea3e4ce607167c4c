#include "server/security/read_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"

namespace distarray {

absl::StatusOr<std::string> ReadSmallFile(const std::string& path, absl::string_view source,
                                          int64_t max_bytes) {
  if (path.empty()) return absl::InvalidArgumentError(absl::StrCat(source, ": no file given"));
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": cannot read ", path, ": ", std::strerror(errno)));
  }
  std::string contents;
  char buffer[4096];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    contents.append(buffer, static_cast<size_t>(in.gcount()));
    if (static_cast<int64_t>(contents.size()) > max_bytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": cannot read ", path, ": larger than ", max_bytes, " bytes"));
    }
  }
  if (in.bad()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": cannot read ", path, ": read error"));
  }
  return contents;
}

}  // namespace distarray
