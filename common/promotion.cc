#include "common/promotion.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace distarray {
namespace {

int Bits(DType dtype) { return static_cast<int>(DTypeSize(dtype) * 8); }

DType SignedOfBits(int bits) {
  switch (bits) {
    case 8:
      return DType::kInt8;
    case 16:
      return DType::kInt16;
    case 32:
      return DType::kInt32;
    default:
      return DType::kInt64;
  }
}

bool IsReal(DType dtype) {
  return dtype == DType::kBool || IsSignedInteger(dtype) || IsUnsignedInteger(dtype) ||
         IsFloating(dtype);
}

// Float "rank": float16 and bfloat16 are both 16-bit; their mix is float32.
DType WiderFloat(DType a, DType b) {
  if (a == b) return a;
  if (DTypeSize(a) != DTypeSize(b)) return DTypeSize(a) > DTypeSize(b) ? a : b;
  return DType::kFloat32;  // float16 with bfloat16
}

}  // namespace

DType FloatFor(DType dtype) {
  if (IsFloating(dtype) || IsComplex(dtype)) return dtype;
  switch (Bits(dtype)) {
    case 8:
      return DType::kFloat16;
    case 16:
      return DType::kFloat32;
    default:
      return DType::kFloat64;
  }
}

std::optional<DType> PromoteTypes(DType a, DType b) {
  if (IsComplex(a) || IsComplex(b)) {
    // The complex dtype whose parts hold the promotion of both real parts: complex64 with
    // float16, int16 or float32 stays complex64; with float64, int32 or any 64-bit integer it
    // becomes complex128, as in NumPy.
    if (!IsReal(a) && !IsComplex(a)) return std::nullopt;
    if (!IsReal(b) && !IsComplex(b)) return std::nullopt;
    std::optional<DType> parts = PromoteTypes(RealPartDType(a), RealPartDType(b));
    if (!parts) return std::nullopt;
    return *parts == DType::kFloat64 ? DType::kComplex128 : DType::kComplex64;
  }
  if (!IsReal(a) || !IsReal(b)) return std::nullopt;
  if (a == b) return a;
  if (a == DType::kBool) return b;
  if (b == DType::kBool) return a;
  const bool a_float = IsFloating(a), b_float = IsFloating(b);
  if (a_float && b_float) return WiderFloat(a, b);
  if (a_float || b_float) {
    const DType f = a_float ? a : b;
    const DType i = a_float ? b : a;
    // bfloat16 holds 8-bit integers exactly, as float16 does.
    if (f == DType::kBFloat16 && Bits(i) == 8) return f;
    return WiderFloat(f == DType::kBFloat16 ? DType::kFloat16 : f, FloatFor(i));
  }
  const bool a_signed = IsSignedInteger(a), b_signed = IsSignedInteger(b);
  if (a_signed == b_signed) return Bits(a) >= Bits(b) ? a : b;
  const DType s = a_signed ? a : b;
  const DType u = a_signed ? b : a;
  if (Bits(u) < Bits(s)) return s;
  if (Bits(u) == 64) return DType::kFloat64;  // no integer holds both int64 and uint64
  return SignedOfBits(Bits(u) * 2);
}

DType PromoteWithScalar(DType array_dtype, Scalar::Kind kind) {
  switch (kind) {
    case Scalar::Kind::kBool:
      return array_dtype;
    case Scalar::Kind::kInt:
    case Scalar::Kind::kUInt:
      return array_dtype == DType::kBool ? DType::kInt64 : array_dtype;
    case Scalar::Kind::kComplex:
      // NumPy 2's weak Python complex: complex64 keeps its dtype, and the floats whose values
      // complex64's parts hold (float16, bfloat16, float32) become complex64; the rest complex128.
      if (IsComplex(array_dtype)) return array_dtype;
      return IsFloating(array_dtype) && DTypeSize(array_dtype) <= 4 ? DType::kComplex64
                                                                    : DType::kComplex128;
    default:
      return IsFloating(array_dtype) || IsComplex(array_dtype) ? array_dtype : DType::kFloat64;
  }
}

absl::Status ValidateWeakScalar(const Scalar& scalar, DType dtype, absl::string_view field) {
  if (scalar.kind != Scalar::Kind::kInt && scalar.kind != Scalar::Kind::kUInt) {
    return absl::OkStatus();
  }
  if (!IsSignedInteger(dtype) && !IsUnsignedInteger(dtype)) return absl::OkStatus();
  bool fits = false;
  DispatchDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      fits = scalar.kind == Scalar::Kind::kInt ? std::in_range<T>(scalar.i)
                                               : std::in_range<T>(scalar.u);
    }
  });
  if (fits) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      field, ": the integer ",
      scalar.kind == Scalar::Kind::kInt ? absl::StrCat(scalar.i) : absl::StrCat(scalar.u),
      " is out of bounds for ", DTypeName(dtype),
      " (NumPy 2 raises OverflowError; cast the array or pass a float)"));
}

}  // namespace distarray
