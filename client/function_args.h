// Argument checks the SDK's composed functions share (array_functions.cc, linalg_functions.cc):
// shapes as NumPy prints them and axes normalized, with INVALID_ARGUMENT naming the argument.
#ifndef DISTARRAY_CLIENT_FUNCTION_ARGS_H_
#define DISTARRAY_CLIENT_FUNCTION_ARGS_H_

#include <complex>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "distarray/client.h"
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

// The real dtype of a complex one's parts (complex64: float32).
inline v1::DType ComplexPartDType(v1::DType dtype) {
  return dtype == v1::DTYPE_COMPLEX64 ? v1::DTYPE_FLOAT32 : v1::DTYPE_FLOAT64;
}

// The real and imaginary parts of a complex array, in its part dtype, as the Python SDK composes
// them: the daemon's cast to a real dtype keeps the real part, and imag(x) = real(x * -1j).
inline absl::StatusOr<Array> RealPart(const Array& x) {
  return AsType(x, ComplexPartDType(x.info().dtype()));
}
inline absl::StatusOr<Array> ImagPart(const Array& x) {
  absl::StatusOr<Array> turned =
      Ufunc(v1::ELEMENTWISE_OP_MULTIPLY, {x, std::complex<double>(0, -1)});
  if (!turned.ok()) return turned.status();
  return RealPart(*turned);
}
// conj(x) = real(x) - 1j * imag(x), in x's dtype.
inline absl::StatusOr<Array> Conjugate(const Array& x) {
  absl::StatusOr<Array> re = RealPart(x);
  if (!re.ok()) return re.status();
  absl::StatusOr<Array> im = ImagPart(x);
  if (!im.ok()) return im.status();
  absl::StatusOr<Array> turned =
      Ufunc(v1::ELEMENTWISE_OP_MULTIPLY, {*im, std::complex<double>(0, 1)});
  if (!turned.ok()) return turned.status();
  absl::StatusOr<Array> sum = Ufunc(v1::ELEMENTWISE_OP_SUBTRACT, {*re, *turned});
  if (!sum.ok() || sum->info().dtype() == x.info().dtype()) return sum;
  return AsType(*sum, x.info().dtype());
}
// |x|^2 in x's part dtype: re*re + im*im (NumPy's var computes it so, not the complex x * x).
inline absl::StatusOr<Array> AbsSquared(const Array& x) {
  absl::StatusOr<Array> re = RealPart(x);
  if (!re.ok()) return re.status();
  absl::StatusOr<Array> im = ImagPart(x);
  if (!im.ok()) return im.status();
  absl::StatusOr<Array> re2 = Ufunc(v1::ELEMENTWISE_OP_SQUARE, {*re});
  if (!re2.ok()) return re2.status();
  absl::StatusOr<Array> im2 = Ufunc(v1::ELEMENTWISE_OP_SQUARE, {*im});
  if (!im2.ok()) return im2.status();
  return Ufunc(v1::ELEMENTWISE_OP_ADD, {*re2, *im2});
}

}  // namespace distarray::internal

#endif  // DISTARRAY_CLIENT_FUNCTION_ARGS_H_
