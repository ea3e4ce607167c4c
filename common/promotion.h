// NumPy 2's type promotion (NEP 50): the dtype mixed operands compute in. Array dtypes promote by
// numpy.result_type; scalars are "weak", as Python scalars: they take the arrays' dtype, except
// that a float scalar lifts integer and bool arrays to float64 and an integer scalar lifts bool
// arrays to int64. docs/api.md prints the table this implements.
#ifndef DISTARRAY_COMMON_PROMOTION_H_
#define DISTARRAY_COMMON_PROMOTION_H_

#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/dtype.h"
#include "common/scalar.h"

namespace distarray {

// numpy.result_type(a, b) over every implemented dtype. bfloat16, which NumPy lacks, promotes as
// JAX does: with float16 to float32, with 8-bit integers to bfloat16, otherwise as float16 would.
// A complex dtype with anything is the complex dtype whose parts hold both real parts. nullopt
// for unspecified dtypes.
std::optional<DType> PromoteTypes(DType a, DType b);

// The dtype of `array_dtype` (already the promotion of every array operand) combined with a weak
// scalar of `kind`. A complex scalar gives complex64 with float16, bfloat16, float32 and
// complex64 arrays, and complex128 with the rest.
DType PromoteWithScalar(DType array_dtype, Scalar::Kind kind);

// The smallest float dtype that holds every value of `dtype` (NumPy's loop for float-only ufuncs
// on integer input): bool and 8-bit integers give float16, 16-bit integers float32, wider
// integers float64; floats and complex dtypes are themselves.
DType FloatFor(DType dtype);

// OK when the weak scalar can take part in an op computing in `dtype`: an integer scalar must lie
// in an integer dtype's range (NumPy 2 raises OverflowError); otherwise INVALID_ARGUMENT naming
// `field`. Floats and bools always convert.
absl::Status ValidateWeakScalar(const Scalar& scalar, DType dtype, absl::string_view field);

}  // namespace distarray

#endif  // DISTARRAY_COMMON_PROMOTION_H_
