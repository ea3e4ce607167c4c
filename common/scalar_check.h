#ifndef DISTARRAY_COMMON_SCALAR_CHECK_H_
#define DISTARRAY_COMMON_SCALAR_CHECK_H_

#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/dtype.h"
#include "common/scalar.h"

namespace distarray {

// OK when `scalar` converts to `dtype` without changing its value (2.0 into int32 is fine, 2.5
// is not; 300 into uint8 is not; only bools go into bool arrays). Otherwise INVALID_ARGUMENT
// naming `field`. We do not promote dtypes, so a lossy scalar is the caller's mistake.
absl::Status ValidateScalarFor(const Scalar& scalar, DType dtype, absl::string_view field);

}  // namespace distarray

#endif  // DISTARRAY_COMMON_SCALAR_CHECK_H_
