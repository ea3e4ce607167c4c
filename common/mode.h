// Modes: how overlapping copies of an element combine. Values equal distarray.v1.Mode.
// CUDA-safe header.
#ifndef DISTARRAY_COMMON_MODE_H_
#define DISTARRAY_COMMON_MODE_H_

#include <limits>
#include <string_view>

#include "common/complex.h"

namespace distarray {

enum class Mode : int { kReplica = 0, kSum = 1, kProd = 2, kMax = 3, kMin = 4 };

inline const char* ModeName(Mode mode) {
  switch (mode) {
    case Mode::kReplica:
      return "REPLICA";
    case Mode::kSum:
      return "SUM";
    case Mode::kProd:
      return "PROD";
    case Mode::kMax:
      return "MAX";
    default:
      return "MIN";
  }
}

// The value an uncovered element (or a non-owning copy) holds in `mode`. REPLICA reads as zero.
template <typename T>
constexpr T ModeIdentity(Mode mode) {
  if constexpr (kIsComplex<T>) {
    // Complex numbers are ordered as NumPy's maximum orders them, by real part and then imaginary
    // part: (-inf, -inf) is below every other value and (inf, inf) above.
    using R = typename T::Real;
    const R inf = std::numeric_limits<R>::infinity();
    switch (mode) {
      case Mode::kProd:
        return T(R(1), R(0));
      case Mode::kMax:
        return T(-inf, -inf);
      case Mode::kMin:
        return T(inf, inf);
      default:
        return T(R(0), R(0));
    }
  }
  switch (mode) {
    case Mode::kProd:
      return T(1);
    case Mode::kMax:
      if constexpr (std::numeric_limits<T>::has_infinity)
        return -std::numeric_limits<T>::infinity();
      return std::numeric_limits<T>::lowest();
    case Mode::kMin:
      if constexpr (std::numeric_limits<T>::has_infinity) return std::numeric_limits<T>::infinity();
      return std::numeric_limits<T>::max();
    default:
      return T(0);
  }
}

}  // namespace distarray

#endif  // DISTARRAY_COMMON_MODE_H_
