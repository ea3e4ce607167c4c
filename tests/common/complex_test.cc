#include "common/complex.h"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>

#include "common/dtype.h"

namespace distarray {
namespace {

using CL = std::complex<long double>;

template <typename R>
CL Wide(Complex<R> z) {
  return CL(z.re, z.im);
}

TEST(ComplexTest, LayoutIsTwoPartsRealFirst) {
  static_assert(sizeof(Complex64) == 8 && alignof(Complex64) == 8);
  static_assert(sizeof(Complex128) == 16 && alignof(Complex128) == 16);
  static_assert(sizeof(Complex64) == sizeof(std::complex<float>));
  EXPECT_EQ(DTypeSize(DType::kComplex64), 8);
  EXPECT_EQ(DTypeSize(DType::kComplex128), 16);
  const std::complex<float> z(1.5f, -2.25f);
  Complex64 c;
  static_assert(std::is_trivially_copyable_v<Complex64>);
  std::memcpy(&c, &z, sizeof c);
  EXPECT_EQ(c.re, 1.5f);
  EXPECT_EQ(c.im, -2.25f);
  EXPECT_EQ(DTypeFor<Complex128>(), DType::kComplex128);
}

// Each part of every product and quotient is within a few units of the exact value's scale
// (|a| |b| for a product, |a| / |b| for a quotient), over parts from 2^-40 to 2^40 (float) and
// 2^-400 to 2^400 (double): the
// quotient's scaling keeps |b|^2 from overflowing or underflowing where a textbook formula would.
template <typename R>
void CheckAgainstLongDouble(int max_exponent) {
  std::mt19937_64 rng(sizeof(R));
  std::uniform_real_distribution<double> mantissa(0.5, 1);  // normal numbers only
  std::bernoulli_distribution negative(0.5);
  std::uniform_int_distribution<int> exponent(-max_exponent, max_exponent);
  const long double eps = std::numeric_limits<R>::epsilon();
  for (int t = 0; t < 20000; ++t) {
    auto part = [&] {
      const double m = negative(rng) ? -mantissa(rng) : mantissa(rng);
      return static_cast<R>(std::ldexp(m, exponent(rng)));
    };
    const Complex<R> a(part(), part()), b(part(), part());
    const CL x = Wide(a), y = Wide(b);
    const CL product = x * y, quotient = x / y;
    const Complex<R> p = a * b, q = a / b;
    const long double p_tol = 4 * eps * std::abs(x) * std::abs(y);
    const long double q_tol = 8 * eps * std::abs(x) / std::abs(y);
    ASSERT_LE(std::fabs(p.re - product.real()), p_tol) << t;
    ASSERT_LE(std::fabs(p.im - product.imag()), p_tol) << t;
    ASSERT_LE(std::fabs(q.re - quotient.real()), q_tol) << t;
    ASSERT_LE(std::fabs(q.im - quotient.imag()), q_tol) << t;
    ASSERT_EQ((a + b).re, a.re + b.re);
    ASSERT_EQ((a - b).im, a.im - b.im);
  }
}

TEST(ComplexTest, ArithmeticMatchesLongDouble) {
  CheckAgainstLongDouble<float>(40);
  CheckAgainstLongDouble<double>(400);
}

TEST(ComplexTest, DivisionByZeroIsInfinityOrNaNPartByPart) {
  const Complex128 zero(0, 0);
  const Complex128 q = Complex128(1, -2) / zero;
  EXPECT_EQ(q.re, std::numeric_limits<double>::infinity());
  EXPECT_EQ(q.im, -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan((zero / zero).re));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(std::isnan((Complex128(1, 1) / Complex128(nan, 1)).re));
  EXPECT_TRUE(std::isnan((Complex128(1, 1) / Complex128(1, nan)).im));
}

TEST(ComplexTest, ConversionsFollowNumPy) {
  EXPECT_EQ(Complex64(2.5), Complex64(2.5f, 0.0f));
  EXPECT_EQ(static_cast<double>(Complex64(1.5f, 7.0f)), 1.5);  // the real part
  EXPECT_TRUE(static_cast<bool>(Complex64(0.0f, 1.0f)));
  EXPECT_FALSE(static_cast<bool>(Complex64(0.0f, -0.0f)));
  const Complex64 narrowed(Complex128(1.0 / 3, -2.0 / 3));
  EXPECT_EQ(narrowed.re, 1.0f / 3);
  EXPECT_EQ(narrowed.im, -2.0f / 3);
  EXPECT_DOUBLE_EQ(Magnitude(Complex128(3e300, 4e300)), 5e300);  // no overflow in the squares
}

}  // namespace
}  // namespace distarray
