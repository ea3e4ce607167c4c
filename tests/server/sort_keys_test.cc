// The sort order's codes (server/kernels/sort_keys.h) against the order they stand for: for random
// values and the special ones of every real dtype, comparing codes must agree with comparing
// values (NaNs last ascending, first descending; -0.0 before +0.0), and decoding a code must give
// the value back (NaNs as the canonical quiet NaN).
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "common/half.h"
#include "gtest/gtest.h"
#include "server/kernels/sort_keys.h"

namespace distarray {
namespace {

template <typename T>
auto Bits(T v) {
  if constexpr (sizeof(T) == 1) {
    uint8_t u;
    std::memcpy(&u, &v, 1);
    return u;
  } else if constexpr (sizeof(T) == 2) {
    uint16_t u;
    std::memcpy(&u, &v, 2);
    return u;
  } else if constexpr (sizeof(T) == 4) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    return u;
  } else {
    uint64_t u;
    std::memcpy(&u, &v, 8);
    return u;
  }
}

template <typename T>
double AsDouble(T v) {
  return static_cast<double>(static_cast<float>(v));
}
double AsDouble(double v) { return v; }

// Ascending order of the values the codes stand for: NaN last; -0.0 before +0.0.
template <typename T>
bool ValueBefore(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return a < b;
  } else {
    const double x = AsDouble(a), y = AsDouble(b);
    if (std::isnan(y)) return !std::isnan(x);
    if (std::isnan(x)) return false;
    if (x == 0 && y == 0) return std::signbit(x) && !std::signbit(y);
    return x < y;
  }
}

template <typename T>
void CheckOrder(DType dtype, const std::vector<T>& values) {
  const SortKeyCodec codec = SortKeyCodecFor(dtype);
  ASSERT_EQ(codec.bytes, static_cast<int>(sizeof(T))) << DTypeName(dtype);
  for (bool descending : {false, true}) {
    for (size_t i = 0; i < values.size(); ++i) {
      const auto ci = codec.Encode(Bits(values[i]), descending);
      // Round trip: the canonical value back.
      const auto back = codec.Decode(ci, descending);
      EXPECT_EQ(back, codec.Canonical(Bits(values[i]))) << DTypeName(dtype) << " value " << i;
      for (size_t j = 0; j < values.size(); ++j) {
        const auto cj = codec.Encode(Bits(values[j]), descending);
        const bool want =
            descending ? ValueBefore(values[j], values[i]) : ValueBefore(values[i], values[j]);
        ASSERT_EQ(ci < cj, want) << DTypeName(dtype) << (descending ? " descending" : "")
                                 << ": values " << i << " and " << j;
      }
    }
  }
}

template <typename T>
std::vector<T> Draw(std::mt19937_64& rng, std::vector<T> specials) {
  for (int i = 0; i < 60; ++i) {
    if constexpr (std::is_integral_v<T>) {
      specials.push_back(static_cast<T>(rng()));
    } else {
      specials.push_back(static_cast<T>(std::uniform_real_distribution<float>(-1e4, 1e4)(rng)));
    }
  }
  return specials;
}

TEST(SortKeysTest, IntegerCodesOrderAsTheValues) {
  std::mt19937_64 rng(1);
  CheckOrder(DType::kInt8, Draw<int8_t>(rng, {-128, 127, 0, -1}));
  CheckOrder(DType::kInt16, Draw<int16_t>(rng, {-32768, 32767, 0, -1}));
  CheckOrder(DType::kInt32, Draw<int32_t>(rng, {INT32_MIN, INT32_MAX, 0, -1}));
  CheckOrder(DType::kInt64, Draw<int64_t>(rng, {INT64_MIN, INT64_MAX, 0, -1}));
  CheckOrder(DType::kUInt8, Draw<uint8_t>(rng, {0, 255}));
  CheckOrder(DType::kUInt16, Draw<uint16_t>(rng, {0, 65535}));
  CheckOrder(DType::kUInt32, Draw<uint32_t>(rng, {0, UINT32_MAX}));
  CheckOrder(DType::kUInt64, Draw<uint64_t>(rng, {0, UINT64_MAX}));
  CheckOrder(DType::kBool, std::vector<uint8_t>{0, 1, 1, 0});
}

template <typename T>
std::vector<T> FloatSpecials() {
  const T inf = std::numeric_limits<T>::infinity();
  const T nan = std::numeric_limits<T>::quiet_NaN();
  auto negated = [](T v) { return static_cast<T>(-static_cast<float>(v)); };
  return {inf,
          negated(inf),
          nan,
          negated(nan),
          static_cast<T>(0.0f),
          static_cast<T>(-0.0f),
          static_cast<T>(1e-7f),  // subnormal in float16
          std::numeric_limits<T>::lowest(),
          std::numeric_limits<T>::max()};
}

TEST(SortKeysTest, FloatCodesOrderAsTheValuesWithNaNsLast) {
  std::mt19937_64 rng(2);
  CheckOrder(DType::kFloat32, Draw<float>(rng, FloatSpecials<float>()));
  CheckOrder(DType::kFloat64, Draw<double>(rng, FloatSpecials<double>()));
  CheckOrder(DType::kFloat16, Draw<Float16>(rng, FloatSpecials<Float16>()));
  CheckOrder(DType::kBFloat16, Draw<BFloat16>(rng, FloatSpecials<BFloat16>()));
}

TEST(SortKeysTest, SignedZerosTieWhenAsked) {
  const SortKeyCodec ties = SortKeyCodecFor(DType::kFloat64, /*zeros_equal=*/true);
  const SortKeyCodec total = SortKeyCodecFor(DType::kFloat64);
  const uint64_t plus = Bits(0.0), minus = Bits(-0.0);
  for (bool descending : {false, true}) {
    EXPECT_EQ(ties.Encode(minus, descending), ties.Encode(plus, descending));
    EXPECT_NE(total.Encode(minus, descending), total.Encode(plus, descending));
    // Still ordered against their neighbours.
    EXPECT_LT(ties.Encode(Bits(-1e-300), false), ties.Encode(minus, false));
    EXPECT_LT(ties.Encode(minus, false), ties.Encode(Bits(1e-300), false));
  }
}

TEST(SortKeysTest, ComplexHasNoCodec) {
  EXPECT_EQ(SortKeyCodecFor(DType::kComplex64).bytes, 0);
  EXPECT_EQ(SortKeyCodecFor(DType::kComplex128).bytes, 0);
}

}  // namespace
}  // namespace distarray
