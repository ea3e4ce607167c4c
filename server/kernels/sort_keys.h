// The order every sort and merge uses, as an order-preserving map from an element's bits to an
// unsigned integer of the same width: sorting the codes ascending sorts the values. One map for
// both backends, so the host and the GPUs agree on every tie and every NaN, and one radix sort
// per width on the GPU serves every dtype of that width (a code is just bits).
//
// The order is IEEE 754's totalOrder on the canonical values: -inf < ... < -0.0 < +0.0 < ... <
// +inf < NaN, with every NaN first made the canonical quiet NaN (so NaNs tie with each other and
// sort last). Descending is the bitwise complement of the ascending code: the exact reverse order,
// NaNs first, and a stable sort of the codes keeps equal values in their input order either way.
// With `zeros_equal` -0.0 encodes as +0.0, so the two tie (NumPy's order, for argsort and
// searchsorted, whose results are positions); without it -0.0 sorts first, which keeps a sort's
// values bit for bit (docs/api.md, "Sorting").
#ifndef DISTARRAY_SERVER_KERNELS_SORT_KEYS_H_
#define DISTARRAY_SERVER_KERNELS_SORT_KEYS_H_

#include <cstdint>

#include "common/dtype.h"
#include "server/kernels/wrapping.h"

namespace distarray {

// How a dtype's bits map to codes; all fields hold the dtype's bit patterns (width `bytes`).
struct SortKeyCodec {
  enum Kind : uint8_t { kUnsigned, kSigned, kFloat };
  Kind kind = kUnsigned;
  int bytes = 0;
  uint64_t sign = 0;         // the sign bit (kSigned, kFloat)
  uint64_t infinity = 0;     // kFloat: +inf
  uint64_t quiet_nan = 0;    // kFloat: the canonical quiet NaN
  bool zeros_equal = false;  // kFloat: -0.0 encodes as +0.0

  template <typename U>
  DA_HD U Canonical(U bits) const {
    if (kind == kFloat && static_cast<U>(bits & ~static_cast<U>(sign)) > static_cast<U>(infinity)) {
      return static_cast<U>(quiet_nan);
    }
    return bits;
  }
  template <typename U>
  DA_HD U Encode(U bits, bool descending) const {
    const U s = static_cast<U>(sign);
    U code = bits;
    if (kind == kSigned) {
      code = static_cast<U>(bits ^ s);
    } else if (kind == kFloat) {
      bits = Canonical(bits);
      if (zeros_equal && static_cast<U>(bits & ~s) == 0) bits = 0;
      code = (bits & s) ? static_cast<U>(~bits) : static_cast<U>(bits | s);
    }
    return descending ? static_cast<U>(~code) : code;
  }
  template <typename U>
  DA_HD U Decode(U code, bool descending) const {
    const U s = static_cast<U>(sign);
    if (descending) code = static_cast<U>(~code);
    if (kind == kSigned) return static_cast<U>(code ^ s);
    if (kind == kFloat) return (code & s) ? static_cast<U>(code & ~s) : static_cast<U>(~code);
    return code;
  }
};

// Where `value` goes among the `count` elements of `sorted` (ascending codes): before every equal
// element, or after them with `right` (searchsorted's binary search, on both backends).
template <typename U>
DA_HD int64_t InsertionPosition(const SortKeyCodec& codec, const U* sorted, int64_t count, U value,
                                bool right) {
  const U code = codec.Encode(value, false);
  int64_t lo = 0, hi = count;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    const U at = codec.Encode(sorted[mid], false);
    if (right ? at <= code : at < code) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// Calls fn with a value of the unsigned type of a codec's width (1, 2, 4 or 8 bytes).
template <typename Fn>
auto DispatchSortWidth(int bytes, Fn&& fn) {
  switch (bytes) {
    case 1:
      return fn(uint8_t{});
    case 2:
      return fn(uint16_t{});
    case 4:
      return fn(uint32_t{});
    default:
      return fn(uint64_t{});
  }
}

// The codec of a dtype's bits (SortKeyCodecFor adds the treatment of signed zeros).
inline SortKeyCodec SortKeyCodecForBits(DType dtype) {
  using C = SortKeyCodec;
  switch (dtype) {
    case DType::kBool:
    case DType::kUInt8:
      return {C::kUnsigned, 1};
    case DType::kUInt16:
      return {C::kUnsigned, 2};
    case DType::kUInt32:
      return {C::kUnsigned, 4};
    case DType::kUInt64:
      return {C::kUnsigned, 8};
    case DType::kInt8:
      return {C::kSigned, 1, 0x80};
    case DType::kInt16:
      return {C::kSigned, 2, 0x8000};
    case DType::kInt32:
      return {C::kSigned, 4, 0x80000000u};
    case DType::kInt64:
      return {C::kSigned, 8, 0x8000000000000000ull};
    case DType::kFloat16:
      return {C::kFloat, 2, 0x8000, 0x7C00, 0x7E00};
    case DType::kBFloat16:
      return {C::kFloat, 2, 0x8000, 0x7F80, 0x7FC0};
    case DType::kFloat32:
      return {C::kFloat, 4, 0x80000000u, 0x7F800000u, 0x7FC00000u};
    case DType::kFloat64:
      return {C::kFloat, 8, 0x8000000000000000ull, 0x7FF0000000000000ull, 0x7FF8000000000000ull};
    default:
      return {};
  }
}

// The codec of a sortable dtype (bool, integers, floats); bytes 0 for complex, which has no order.
inline SortKeyCodec SortKeyCodecFor(DType dtype, bool zeros_equal = false) {
  SortKeyCodec codec = SortKeyCodecForBits(dtype);
  codec.zeros_equal = zeros_equal;
  return codec;
}

}  // namespace distarray

#endif  // DISTARRAY_SERVER_KERNELS_SORT_KEYS_H_