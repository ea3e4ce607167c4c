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
    default:
      return absl::StrCat(s.f);
  }
}

template <typename T>
bool RoundTripsNumeric(const Scalar& s) {
  const T v = s.As<T>();
  switch (s.kind) {
    case Scalar::Kind::kBool:
      return true;
    case Scalar::Kind::kInt:
      if constexpr (std::is_floating_point_v<T>) {
        return static_cast<int64_t>(v) == s.i;
      } else {
        return std::cmp_greater_equal(s.i, std::numeric_limits<T>::lowest()) &&
               std::cmp_less_equal(s.i, std::numeric_limits<T>::max());
      }
    case Scalar::Kind::kUInt:
      if constexpr (std::is_floating_point_v<T>) {
        return static_cast<uint64_t>(v) == s.u;
      } else {
        return std::cmp_less_equal(s.u, std::numeric_limits<T>::max());
      }
    default:
      if constexpr (std::is_floating_point_v<T>) {
        return std::isnan(s.f) || std::isinf(s.f) || static_cast<double>(v) == s.f ||
               std::is_same_v<T, float>;  // float32 rounding of a double literal is expected
      } else {
        return std::isfinite(s.f) && std::trunc(s.f) == s.f &&
               s.f >= static_cast<double>(std::numeric_limits<T>::lowest()) &&
               s.f <= static_cast<double>(std::numeric_limits<T>::max());
      }
  }
}

template <typename T>
bool RoundTrips(const Scalar& s) {
  if constexpr (std::is_same_v<T, bool>) {
    return s.kind == Scalar::Kind::kBool;
  } else {
    return RoundTripsNumeric<T>(s);
  }
}

}  // namespace

absl::Status ValidateScalarFor(const Scalar& scalar, DType dtype, absl::string_view field) {
  if (dtype == DType::kBool) {
    if (scalar.kind == Scalar::Kind::kBool) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": only a bool scalar combines with a bool array, got ", Describe(scalar)));
  }
  const bool ok = DispatchDType(dtype, [&](auto tag) { return RoundTrips<decltype(tag)>(scalar); });
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      field, ": scalar ", Describe(scalar), " is not exactly representable as ", DTypeName(dtype)));
}

}  // namespace distarray
