#include "common/scalar_check.h"
#include "absl/strings/string_view.h"

#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace distarray {
namespace {

std::string Describe(const Scalar& s) {
  switch (s.kind) {
    case Scalar::Kind::kBool:
      return s.b ? "true" : "false";
    case Scalar::Kind::kInt:
      return absl::StrCat(s.i);
    case Scalar::Kind::kUInt:
      return absl::StrCat(s.u);
    case Scalar::Kind::kComplex:
      return absl::StrCat("(", s.f, std::signbit(s.imag) ? "" : "+", s.imag, "j)");
    default:
      return absl::StrCat(s.f);
  }
}

// Whether the double `f` is an integer in T's range. The bounds are powers of two, exact in a
// double: lowest() and max() + 1. Comparing with static_cast<double>(max()) instead would round
// 2^63 - 1 up to 2^63 and let 2^63 through into an int64 (where it became -2^63).
template <typename T>
bool IntegralInRange(double f) {
  const double lowest = static_cast<double>(std::numeric_limits<T>::lowest());
  const double max_plus_one = (static_cast<double>(std::numeric_limits<T>::max() / 2) + 1) * 2;
  return std::isfinite(f) && std::trunc(f) == f && f >= lowest && f < max_plus_one;
}

// Whether the integer `v` is exactly representable in the floating type T.
template <typename T, typename I>
bool ExactInFloat(I v) {
  if constexpr (kIsHalf<T>) {
    // Every finite 16-bit float is an exact float; an integer beyond float's range is not a
    // finite 16-bit float either.
    const float f = T(v);
    return std::isfinite(f) && static_cast<long double>(f) == static_cast<long double>(v);
  } else {
    const T f = static_cast<T>(v);
    // A rounded-up value can equal 2^63 or 2^64, outside I: compare in long double, which holds
    // every int64 and uint64 exactly on x86-64.
    return static_cast<long double>(f) == static_cast<long double>(v);
  }
}

template <typename T>
bool RoundTripsNumeric(const Scalar& s) {
  switch (s.kind) {
    case Scalar::Kind::kBool:
      return true;
    case Scalar::Kind::kInt:
      if constexpr (kIsFloatStorage<T>) {
        return ExactInFloat<T>(s.i);
      } else {
        return std::cmp_greater_equal(s.i, std::numeric_limits<T>::lowest()) &&
               std::cmp_less_equal(s.i, std::numeric_limits<T>::max());
      }
    case Scalar::Kind::kUInt:
      if constexpr (kIsFloatStorage<T>) {
        return ExactInFloat<T>(s.u);
      } else {
        return std::cmp_less_equal(s.u, std::numeric_limits<T>::max());
      }
    default:
      if constexpr (kIsFloatStorage<T>) {
        const T v = static_cast<T>(s.f);
        // Rounding a double literal to a narrower float is expected (1/3 into float32).
        return std::isnan(s.f) || std::isinf(s.f) || static_cast<double>(v) == s.f ||
               !std::is_same_v<T, double>;
      } else {
        return IntegralInRange<T>(s.f);
      }
  }
}

template <typename T>
bool RoundTrips(const Scalar& s) {
  if constexpr (kIsComplex<T>) {
    // A real scalar is the real part; a complex one's parts each round to the part's type.
    using R = typename T::Real;
    if (s.kind != Scalar::Kind::kComplex) return RoundTripsNumeric<R>(s);
    return RoundTripsNumeric<R>(Scalar::Float(s.f)) && RoundTripsNumeric<R>(Scalar::Float(s.imag));
  } else if constexpr (std::is_same_v<T, bool>) {
    return s.kind == Scalar::Kind::kBool;
  } else {
    return RoundTripsNumeric<T>(s);
  }
}

}  // namespace

absl::Status ValidateScalarFor(const Scalar& scalar, DType dtype, absl::string_view field) {
  if (scalar.kind == Scalar::Kind::kComplex && !IsComplex(dtype)) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": the complex scalar ", Describe(scalar),
                                                   " does not fit a ", DTypeName(dtype),
                                                   " array (use a complex64 or complex128 one)"));
  }
  if (dtype == DType::kBool) {
    if (scalar.kind == Scalar::Kind::kBool) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": only a bool scalar combines with a bool array, got ", Describe(scalar)));
  }
  const bool ok =
      DispatchStorageDType(dtype, [&](auto tag) { return RoundTrips<decltype(tag)>(scalar); });
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      field, ": scalar ", Describe(scalar), " is not exactly representable as ", DTypeName(dtype)));
}

}  // namespace distarray
