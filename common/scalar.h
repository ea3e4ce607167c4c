// A scalar operand as the wire carries it, before conversion to an array's dtype.
// CUDA-safe: no Abseil or protobuf.
#ifndef DISTARRAY_COMMON_SCALAR_H_
#define DISTARRAY_COMMON_SCALAR_H_

#include <cstdint>

namespace distarray {

struct Scalar {
  enum class Kind { kBool, kInt, kUInt, kFloat };
  Kind kind = Kind::kInt;
  bool b = false;
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;

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

  // The value converted to T (checked for exactness by ValidateScalarFor in scalar_check.h).
  template <typename T>
  T As() const {
    switch (kind) {
      case Kind::kBool:
        return static_cast<T>(b);
      case Kind::kInt:
        return static_cast<T>(i);
      case Kind::kUInt:
        return static_cast<T>(u);
      default:
        return static_cast<T>(f);
    }
  }
};

}  // namespace distarray

#endif  // DISTARRAY_COMMON_SCALAR_H_
