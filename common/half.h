// float16 (IEEE binary16) and bfloat16 as storage types: 16 bits in memory, float32 in
// arithmetic. Each converts implicitly to float, and from any arithmetic type by rounding to
// nearest, ties to even (directly from double, so a double is rounded once, as NumPy's
// npy_double_to_half does). The conversions are integer code shared by the host loops and the
// CUDA kernels, except float <-> 16-bit on the GPU, which is the `cvt` instruction with the same
// rounding (EncodeFloat), so both backends produce the same bits. CUDA-safe: no Abseil or protobuf.
#ifndef DISTARRAY_COMMON_HALF_H_
#define DISTARRAY_COMMON_HALF_H_

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#ifdef __CUDACC__
#define DA_HALF_HD __host__ __device__ __forceinline__
#else
#define DA_HALF_HD inline
#endif

namespace distarray {
namespace half_internal {

DA_HALF_HD uint64_t DoubleBits(double v) {
#ifdef __CUDA_ARCH__
  return static_cast<uint64_t>(__double_as_longlong(v));
#else
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
#endif
}

DA_HALF_HD float FloatFromBits(uint32_t bits) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(bits);
#else
  float v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
#endif
}

// The bits of `v` rounded to a binary format with kExp exponent bits and kMant stored mantissa
// bits (round to nearest, ties to even; overflow to infinity; NaN stays a quiet NaN).
template <int kExp, int kMant>
DA_HALF_HD uint16_t Encode(double v) {
  constexpr int kBias = (1 << (kExp - 1)) - 1;
  constexpr int kMinExp = 1 - kBias;  // the smallest normal's exponent
  constexpr uint32_t kInf = ((1u << kExp) - 1) << kMant;
  const uint64_t bits = DoubleBits(v);
  const auto sign = static_cast<uint16_t>((bits >> 63) << (kExp + kMant));
  const int exp_field = static_cast<int>((bits >> 52) & 0x7ff);
  const uint64_t mant = bits & ((uint64_t{1} << 52) - 1);
  if (exp_field == 0x7ff) {
    return sign | static_cast<uint16_t>(kInf | (mant != 0 ? 1u << (kMant - 1) : 0u));
  }
  if (exp_field == 0) return sign;  // zero, or a double subnormal: far below the smallest value
  const int e = exp_field - 1023;
  if (e > kBias) return sign | static_cast<uint16_t>(kInf);
  // Keep kMant bits below the leading one (fewer below the normal range), rounding the rest.
  const uint64_t m = mant | (uint64_t{1} << 52);
  const int shift = 52 - kMant + (e < kMinExp ? kMinExp - e : 0);
  if (shift > 53) return sign;  // below half the smallest subnormal
  uint64_t r = m >> shift;
  const uint64_t rest = m & ((uint64_t{1} << shift) - 1);
  const uint64_t halfway = uint64_t{1} << (shift - 1);
  if (rest > halfway || (rest == halfway && (r & 1) != 0)) ++r;
  // A subnormal is its mantissa; a carry into bit kMant makes it the smallest normal, and a
  // carry out of a normal's mantissa steps its exponent, both by plain addition.
  uint32_t out = e < kMinExp ? static_cast<uint32_t>(r)
                             : (static_cast<uint32_t>(e + kBias) << kMant) +
                                   static_cast<uint32_t>(r - (uint64_t{1} << kMant));
  if (out >= kInf) out = kInf;
  return sign | static_cast<uint16_t>(out);
}

// The exact float value of the format's bits.
template <int kExp, int kMant>
DA_HALF_HD float Decode(uint16_t h) {
  if constexpr (kExp == 8) {
    return FloatFromBits(static_cast<uint32_t>(h) << 16);  // bfloat16: float's upper half
  } else {
    constexpr int kBias = (1 << (kExp - 1)) - 1;
    const uint32_t sign = static_cast<uint32_t>(h >> (kExp + kMant)) << 31;
    const uint32_t exp_field = (h >> kMant) & ((1u << kExp) - 1);
    const uint32_t mant = h & ((1u << kMant) - 1);
    if (exp_field == (1u << kExp) - 1) {
      return FloatFromBits(sign | 0x7f800000u | (mant << (23 - kMant)));
    }
    if (exp_field == 0) {  // subnormal: mant * 2^(kMinExp - kMant), exact in float
      const float unit = FloatFromBits(static_cast<uint32_t>(127 + 1 - kBias - kMant) << 23);
      const float magnitude = static_cast<float>(mant) * unit;
      return sign != 0 ? -magnitude : magnitude;
    }
    return FloatFromBits(sign | ((exp_field - kBias + 127) << 23) | (mant << (23 - kMant)));
  }
}

// On the GPU, float <-> 16-bit conversions are one instruction each (cvt, round to nearest even,
// the same results as Encode/Decode): the integer code above made a float16 A + B compute-bound
// at 0.30x of the device-copy rate on an H200 (docs/performance.md).
template <int kExp, int kMant>
DA_HALF_HD uint16_t EncodeFloat(float v) {
#if defined(__CUDA_ARCH__)
  uint16_t bits;
  if constexpr (kExp == 5) {
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(v));
    return bits;
  }
#if __CUDA_ARCH__ >= 800
  if constexpr (kExp == 8) {
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(bits) : "f"(v));
    return bits;
  }
#endif
#endif
  return Encode<kExp, kMant>(static_cast<double>(v));
}

template <int kExp, int kMant>
DA_HALF_HD float DecodeFast(uint16_t h) {
#if defined(__CUDA_ARCH__)
  if constexpr (kExp == 5) {
    float v;
    asm("cvt.f32.f16 %0, %1;" : "=f"(v) : "h"(h));
    return v;
  }
#endif
  return Decode<kExp, kMant>(h);
}

// A 16-bit float format; Float16 and BFloat16 below.
template <int kExp, int kMant>
struct SmallFloat {
  uint16_t bits = 0;

  SmallFloat() = default;
  template <typename U, std::enable_if_t<std::is_arithmetic_v<U>, int> = 0>
  DA_HALF_HD SmallFloat(U v)
      : bits(std::is_same_v<U, float> ? EncodeFloat<kExp, kMant>(static_cast<float>(v))
                                      : Encode<kExp, kMant>(static_cast<double>(v))) {}
  DA_HALF_HD operator float() const { return DecodeFast<kExp, kMant>(bits); }

  static constexpr SmallFloat FromBits(uint16_t b) {
    SmallFloat f;
    f.bits = b;
    return f;
  }
};

}  // namespace half_internal

using Float16 = half_internal::SmallFloat<5, 10>;
using BFloat16 = half_internal::SmallFloat<8, 7>;

template <typename T>
inline constexpr bool kIsHalf = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

// Floating point for storage: the C++ floats and the 16-bit formats.
template <typename T>
inline constexpr bool kIsFloatStorage = std::is_floating_point_v<T> || kIsHalf<T>;

}  // namespace distarray

// numeric_limits for the limits the engine asks of an element type (ModeIdentity's infinities).
template <int kExp, int kMant>
class std::numeric_limits<distarray::half_internal::SmallFloat<kExp, kMant>> {
  using F = distarray::half_internal::SmallFloat<kExp, kMant>;
  static constexpr uint16_t kInfBits = ((1u << kExp) - 1) << kMant;
  static constexpr uint16_t kSign = 1u << (kExp + kMant);

 public:
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr int digits = kMant + 1;
  static constexpr F infinity() { return F::FromBits(kInfBits); }
  // The gap between 1 and the next value.
  static constexpr F epsilon() {
    return F::FromBits(static_cast<uint16_t>((((1u << (kExp - 1)) - 1 - kMant) << kMant)));
  }
  static constexpr F quiet_NaN() { return F::FromBits(kInfBits | (1u << (kMant - 1))); }
  static constexpr F max() { return F::FromBits(kInfBits - 1); }
  static constexpr F lowest() { return F::FromBits(kSign | (kInfBits - 1)); }
};

#endif  // DISTARRAY_COMMON_HALF_H_
