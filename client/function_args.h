// Argument checks the SDK's composed functions share (array_functions.cc, linalg_functions.cc):
// shapes as NumPy prints them and axes normalized, with INVALID_ARGUMENT naming the argument.
#ifndef DISTARRAY_CLIENT_FUNCTION_ARGS_H_
#define DISTARRAY_CLIENT_FUNCTION_ARGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "distarray/v1/distarray.pb.h"

namespace distarray::internal {

inline std::string ShapeText(const std::vector<int64_t>& shape) {
  return absl::StrCat("(", absl::StrJoin(shape, ", "), shape.size() == 1 ? ",)" : ")");
}

// `axis` in [-rank, rank) as a position, or INVALID_ARGUMENT naming `what`.
inline absl::StatusOr<int> AxisOf(int64_t axis, size_t rank, const std::string& what) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": axis ", axis, " is out of range for an array of ", rank, " axes"));
  }
  return static_cast<int>(axis < 0 ? axis + r : axis);
}

inline bool IsComplexDType(v1::DType dtype) {
  return dtype == v1::DTYPE_COMPLEX64 || dtype == v1::DTYPE_COMPLEX128;
}

}  // namespace distarray::internal

#endif  // DISTARRAY_CLIENT_FUNCTION_ARGS_H_
