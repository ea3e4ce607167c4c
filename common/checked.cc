#include "common/checked.h"

namespace distarray {

absl::Status OverflowError(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": size arithmetic overflows int64 (", what, ")"));
}

}  // namespace distarray
