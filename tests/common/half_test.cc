// float16 and bfloat16 conversions (common/half.h) against independent references: the
// compiler's _Float16 (libgcc's correctly rounded conversions) for float16, and the usual
// round-to-nearest-even on float's upper 16 bits for bfloat16.
#include "common/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

namespace distarray {
namespace {

uint16_t Float16Reference(double v) {
  const _Float16 h = static_cast<_Float16>(v);
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof bits);
  return bits;
}

uint16_t BFloat16Reference(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  if (std::isnan(v)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  return static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
}

bool IsNaN16(uint16_t bits, int mant) {
  const uint16_t exp_mask = static_cast<uint16_t>(((1u << (15 - mant)) - 1) << mant);
  return (bits & exp_mask) == exp_mask && (bits & ((1u << mant) - 1)) != 0;
}

TEST(HalfTest, EveryFloat16DecodesExactlyAndEncodesBack) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    const float decoded = Float16::FromBits(bits);
    _Float16 reference_half;
    std::memcpy(&reference_half, &bits, sizeof bits);
    const float reference = static_cast<float>(reference_half);
    if (IsNaN16(bits, 10)) {
      EXPECT_TRUE(std::isnan(decoded)) << std::hex << b;
      EXPECT_TRUE(IsNaN16(Float16(decoded).bits, 10)) << std::hex << b;
      continue;
    }
    ASSERT_EQ(std::memcmp(&decoded, &reference, sizeof decoded), 0)
        << std::hex << b << ": " << decoded << " vs " << reference;
    EXPECT_EQ(Float16(decoded).bits, bits) << std::hex << b;
    EXPECT_EQ(Float16(static_cast<double>(decoded)).bits, bits) << std::hex << b;
  }
}

TEST(HalfTest, EveryBFloat16DecodesExactlyAndEncodesBack) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    const float decoded = BFloat16::FromBits(bits);
    const uint32_t expected = b << 16;
    ASSERT_EQ(std::memcmp(&decoded, &expected, sizeof decoded), 0) << std::hex << b;
    if (IsNaN16(bits, 7)) {
      EXPECT_TRUE(IsNaN16(BFloat16(decoded).bits, 7)) << std::hex << b;
    } else {
      EXPECT_EQ(BFloat16(decoded).bits, bits) << std::hex << b;
    }
  }
}

// Doubles near every float16 rounding boundary (midpoints, overflow, subnormals, underflow) and
// random ones over the whole range.
TEST(HalfTest, Float16RoundsDoublesToNearestEven) {
  std::mt19937_64 rng(7);
  std::vector<double> inputs = {0.0,
                                -0.0,
                                1.0,
                                65504.0,
                                65519.99,
                                65520.0,
                                -65520.0,
                                1e-8,
                                2.98e-8,
                                2.9802322387695312e-08,
                                5.96e-8,
                                1e300,
                                -1e-300,
                                std::numeric_limits<double>::infinity(),
                                -std::numeric_limits<double>::infinity()};
  for (uint32_t b = 0; b < 0x7c00; b += 7) {
    const double lo = static_cast<float>(Float16::FromBits(static_cast<uint16_t>(b)));
    const double hi = static_cast<float>(Float16::FromBits(static_cast<uint16_t>(b + 1)));
    const double mid = (lo + hi) / 2;
    for (double v : {mid, std::nextafter(mid, 0.0), std::nextafter(mid, 1e9), -mid}) {
      inputs.push_back(v);
    }
  }
  std::uniform_real_distribution<double> exponent(-30, 17), unit(1, 2);
  for (int i = 0; i < 200000; ++i) {
    const double v = std::ldexp(unit(rng), static_cast<int>(exponent(rng)));
    inputs.push_back(i % 2 ? v : -v);
  }
  for (double v : inputs) {
    ASSERT_EQ(Float16(v).bits, Float16Reference(v)) << v;
  }
  EXPECT_TRUE(IsNaN16(Float16(std::nan("")).bits, 10));
}

TEST(HalfTest, BFloat16RoundsFloatsToNearestEven) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<uint32_t> any_bits;
  for (int i = 0; i < 500000; ++i) {
    const uint32_t bits = any_bits(rng);
    float v;
    std::memcpy(&v, &bits, sizeof v);
    const uint16_t got = BFloat16(v).bits;
    if (std::isnan(v)) {
      EXPECT_TRUE(IsNaN16(got, 7));
      continue;
    }
    // A float subnormal rounds to bfloat16's own subnormals; doubles of them round the same.
    ASSERT_EQ(got, BFloat16Reference(v)) << v << " bits " << std::hex << bits;
  }
}

TEST(HalfTest, LimitsAreTheFormatsOwn) {
  EXPECT_EQ(static_cast<float>(std::numeric_limits<Float16>::max()), 65504.0f);
  EXPECT_EQ(static_cast<float>(std::numeric_limits<Float16>::lowest()), -65504.0f);
  EXPECT_TRUE(std::isinf(static_cast<float>(std::numeric_limits<Float16>::infinity())));
  EXPECT_TRUE(std::isnan(static_cast<float>(std::numeric_limits<BFloat16>::quiet_NaN())));
  EXPECT_EQ(static_cast<float>(std::numeric_limits<BFloat16>::max()), 3.3895313892515355e38f);
  EXPECT_EQ(static_cast<float>(std::numeric_limits<Float16>::epsilon()), 0x1p-10f);
  EXPECT_EQ(static_cast<float>(std::numeric_limits<BFloat16>::epsilon()), 0x1p-7f);
}

}  // namespace
}  // namespace distarray
