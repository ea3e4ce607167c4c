// The C math functions by their float/double names, as templates over the real type. Those names
// exist both in host libm and in CUDA's device library (std:: overloads are host-only under some
// toolchains, and the runtime compiler has no <cmath>). CUDA-safe header.
#ifndef DISTARRAY_SERVER_KERNELS_REAL_MATH_H_
#define DISTARRAY_SERVER_KERNELS_REAL_MATH_H_

#include <math.h>

#include <type_traits>

#include "server/kernels/wrapping.h"

namespace distarray {
namespace ufunc {

#define DA_MATH1(name)                      \
  template <typename T>                     \
  DA_HD T name(T x) {                       \
    if constexpr (std::is_same_v<T, float>) \
      return ::name##f(x);                  \
    else                                    \
      return ::name(x);                     \
  }
#define DA_MATH2(name)                      \
  template <typename T>                     \
  DA_HD T name(T x, T y) {                  \
    if constexpr (std::is_same_v<T, float>) \
      return ::name##f(x, y);               \
    else                                    \
      return ::name(x, y);                  \
  }
namespace math {
DA_MATH1(sqrt)
DA_MATH1(exp)
DA_MATH1(expm1)
DA_MATH1(log)
DA_MATH1(log1p)
DA_MATH1(log2)
DA_MATH1(log10)
DA_MATH1(sin)
DA_MATH1(cos)
DA_MATH1(tan)
DA_MATH1(asin)
DA_MATH1(acos)
DA_MATH1(atan)
DA_MATH1(asinh)
DA_MATH1(acosh)
DA_MATH1(atanh)
DA_MATH1(sinh)
DA_MATH1(cosh)
DA_MATH1(tanh)
DA_MATH1(floor)
DA_MATH1(ceil)
DA_MATH1(trunc)
DA_MATH1(rint)
DA_MATH2(atan2)
DA_MATH2(hypot)
DA_MATH2(pow)
DA_MATH2(fmod)
DA_MATH2(fmax)
DA_MATH2(fmin)
DA_MATH2(copysign)
DA_MATH2(nextafter)
}  // namespace math
#undef DA_MATH1
#undef DA_MATH2

}  // namespace ufunc
}  // namespace distarray

#endif  // DISTARRAY_SERVER_KERNELS_REAL_MATH_H_
