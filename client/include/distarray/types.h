// C++ element types and their distarray dtypes, for the SDK's typed upload and download.
#ifndef DISTARRAY_CLIENT_TYPES_H_
#define DISTARRAY_CLIENT_TYPES_H_

#include <complex>
#include <cstdint>
#include <type_traits>

#include "distarray/v1/distarray.pb.h"

namespace distarray {

template <typename T>
constexpr v1::DType DTypeOf() {
  if constexpr (std::is_same_v<T, bool>)
    return v1::DTYPE_BOOL;
  else if constexpr (std::is_same_v<T, int8_t>)
    return v1::DTYPE_INT8;
  else if constexpr (std::is_same_v<T, int16_t>)
    return v1::DTYPE_INT16;
  else if constexpr (std::is_same_v<T, int32_t>)
    return v1::DTYPE_INT32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return v1::DTYPE_INT64;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return v1::DTYPE_UINT8;
  else if constexpr (std::is_same_v<T, uint16_t>)
    return v1::DTYPE_UINT16;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return v1::DTYPE_UINT32;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return v1::DTYPE_UINT64;
  else if constexpr (std::is_same_v<T, float>)
    return v1::DTYPE_FLOAT32;
  else if constexpr (std::is_same_v<T, double>)
    return v1::DTYPE_FLOAT64;
  // std::complex is laid out as two parts, real first: the daemon's complex elements.
  else if constexpr (std::is_same_v<T, std::complex<float>>)
    return v1::DTYPE_COMPLEX64;
  else if constexpr (std::is_same_v<T, std::complex<double>>)
    return v1::DTYPE_COMPLEX128;
#ifdef __FLT16_MAX__
  // float16 where the compiler has the type (GCC 12+, Clang 15+ on x86-64 and AArch64).
  else if constexpr (std::is_same_v<T, _Float16>)
    return v1::DTYPE_FLOAT16;
#endif
  else
    static_assert(sizeof(T) == 0, "no distarray dtype for this type");
}

// A scalar operand from a C++ value (std::complex included).
template <typename T>
v1::Scalar MakeScalar(T value) {
  v1::Scalar s;
  if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
    s.mutable_complex_value()->set_real(value.real());
    s.mutable_complex_value()->set_imag(value.imag());
  } else if constexpr (std::is_same_v<T, bool>)
    s.set_bool_value(value);
  else if constexpr (std::is_floating_point_v<T>)
    s.set_float_value(value);
  else if constexpr (std::is_signed_v<T>)
    s.set_int_value(value);
  else
    s.set_uint_value(value);
  return s;
}

// The options of a dense linear algebra op (Linalg in client.h, ProgramBuilder::Linalg in
// graph.h).
struct LinalgOptions {
  bool upper = false;          // cholesky: the upper factor
  bool full_matrices = false;  // qr (mode="complete") and svd
  bool compute_uv = true;      // svd and eigh: the vectors too
};

}  // namespace distarray

#endif  // DISTARRAY_CLIENT_TYPES_H_
