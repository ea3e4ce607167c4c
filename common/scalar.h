// A scalar operand as the wire carries it, before conversion to an array's dtype.
// CUDA-safe: no Abseil or protobuf.
#ifndef DISTARRAY_COMMON_SCALAR_H_
#define DISTARRAY_COMMON_SCALAR_H_

#include <cstdint>
#include <type_traits>

#include "common/complex.h"

namespace distarray {

struct Scalar {
  enum class Kind { kBool, kInt, kUInt, kFloat, kComplex };
  Kind kind = Kind::kInt;
  bool b = false;
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;     // kFloat's value, kComplex's real part
  double imag = 0;  // kComplex's imaginary part

  static Scalar Bool(bool v) {
    Scalar s;
    s.kind = Kind::kBool;
    s.b = v;
    return s;
  }
  static Scalar Int(int64_t v) {
    Scalar s;
    s.kind = Kind::kInt;
    s.i = v;
    return s;
  }
  static Scalar UInt(uint64_t v) {
    Scalar s;
    s.kind = Kind::kUInt;
    s.u = v;
    return s;
  }
  static Scalar Float(double v) {
    Scalar s;
    s.kind = Kind::kFloat;
    s.f = v;
    return s;
  }

  static Scalar ComplexValue(double real, double imaginary) {
    Scalar s;
    s.kind = Kind::kComplex;
    s.f = real;
    s.imag = imaginary;
    return s;
  }

  // The value converted to T (checked for exactness by ValidateScalarFor in scalar_check.h). A
  // complex value converts to a real T as NumPy's astype does: to bool, whether either part is
  // nonzero (where's condition reads a scalar so); to a number, its real part (never asked for:
  // a complex scalar operand makes the operation complex).
  template <typename T>
  T As() const {
    if constexpr (kIsComplex<T>) {
      using R = typename T::Real;
      if (kind == Kind::kComplex) return T(static_cast<R>(f), static_cast<R>(imag));
    }
    switch (kind) {
      case Kind::kBool:
        return static_cast<T>(b);
      case Kind::kInt:
        return static_cast<T>(i);
      case Kind::kUInt:
        return static_cast<T>(u);
      case Kind::kComplex:
        if constexpr (std::is_same_v<T, bool>) return f != 0 || imag != 0;
        return static_cast<T>(f);
      default:
        return static_cast<T>(f);
    }
  }
};

}  // namespace distarray

#endif  // DISTARRAY_COMMON_SCALAR_H_
