// The complex elementary functions and NumPy's complex ordering (server/kernels/complex_math.h),
// the element-level code the host loops and the CUDA kernels share. Values are checked against
// std::complex<long double> normwise; special values against glibc's C99 functions; the ordering,
// sign and power against what NumPy 2 computes.
#include "server/kernels/complex_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "server/kernels/ufuncs.h"

namespace distarray::ufunc {
namespace {

using CL = std::complex<long double>;
template <typename R>
using Fn = std::function<Complex<R>(Complex<R>)>;
using Reference = std::function<CL(CL)>;

struct Function {
  std::string name;
  Fn<float> single;
  Fn<double> twice;
  Reference reference;
};

#define DA_FUNCTION(fn, expr)                                                                      \
  Function {                                                                                       \
#fn, [](Complex <float>                                                                        \
                z) { return math::fn(z); },                                                        \
                                         [](Complex <double>                                       \
                                                z) { return math::fn(z); },                        \
                                                                         [](CL z) { return expr; } \
  }

std::vector<Function> Functions() {
  return {
      DA_FUNCTION(exp, std::exp(z)),
      DA_FUNCTION(expm1, std::exp(z) - CL(1)),
      DA_FUNCTION(log, std::log(z)),
      DA_FUNCTION(log1p, std::log(CL(1) + z)),
      DA_FUNCTION(log2, std::log(z) / std::log(2.0L)),
      DA_FUNCTION(log10, std::log10(z)),
      DA_FUNCTION(sqrt, std::sqrt(z)),
      DA_FUNCTION(sin, std::sin(z)),
      DA_FUNCTION(cos, std::cos(z)),
      DA_FUNCTION(tan, std::tan(z)),
      DA_FUNCTION(asin, std::asin(z)),
      DA_FUNCTION(acos, std::acos(z)),
      DA_FUNCTION(atan, std::atan(z)),
      DA_FUNCTION(sinh, std::sinh(z)),
      DA_FUNCTION(cosh, std::cosh(z)),
      DA_FUNCTION(tanh, std::tanh(z)),
  };
}
#undef DA_FUNCTION

// Random points in the regions where textbook formulas lose digits: a box around the origin,
// tiny arguments, just off 1 (log, log1p's large branch, arcsin, arccos), near the unit circle,
// and near tan's and tanh's poles.
template <typename R>
std::vector<Complex<R>> Points() {
  std::mt19937_64 rng(sizeof(R));
  std::uniform_real_distribution<double> unit(-1, 1);
  std::vector<Complex<R>> points;
  for (int i = 0; i < 4000; ++i) {
    const double a = unit(rng), b = unit(rng);
    const double angle = 3.14159265358979 * unit(rng), radius = 1 + 1e-3 * unit(rng);
    for (auto [re, im] : {std::pair{3 * a, 3 * b},
                          {1e-3 * a, 1e-3 * b},
                          {1 + 1e-4 * a, 1e-4 * b},
                          {radius * std::cos(angle), radius * std::sin(angle)},
                          {1e-3 * a, 1.5707963267948966 + 1e-3 * b}}) {
      points.push_back(Complex<R>(static_cast<R>(re), static_cast<R>(im)));
    }
  }
  return points;
}

template <typename R>
void CheckNormwise(const std::string& name, const Fn<R>& ours, const Reference& reference) {
  const long double eps = std::numeric_limits<R>::epsilon();
  long double worst = 0;
  for (Complex<R> z : Points<R>()) {
    const Complex<R> got = ours(z);
    const CL want = reference(CL(z.re, z.im));
    const long double error = std::abs(CL(got.re, got.im) - want) / std::abs(want) / eps;
    ASSERT_LE(error, 32) << name << "(" << z.re << ", " << z.im << ") = (" << got.re << ", "
                         << got.im << "), want (" << static_cast<double>(want.real()) << ", "
                         << static_cast<double>(want.imag()) << ")";
    worst = std::max(worst, error);
  }
  ::testing::Test::RecordProperty(
      name + (sizeof(R) == 4 ? "_complex64" : "_complex128") + "_worst_ulps",
      std::to_string(static_cast<double>(worst)));
}

TEST(ComplexMathTest, FunctionsAreWithinAFewUlpsNormwise) {
  for (const Function& f : Functions()) {
    CheckNormwise<float>(f.name, f.single, f.reference);
    CheckNormwise<double>(f.name, f.twice, f.reference);
  }
}

// NaN matches NaN; zeros and infinities match with their signs; other values within 4 ulps.
::testing::AssertionResult SameSpecial(Complex<double> got, std::complex<double> want) {
  auto same = [](double a, double b) {
    if (std::isnan(b)) return std::isnan(a);
    if (b == 0 || std::isinf(b)) return a == b && std::signbit(a) == std::signbit(b);
    return std::fabs(a - b) <= 4 * std::numeric_limits<double>::epsilon() * std::fabs(b);
  };
  if (same(got.re, want.real()) && same(got.im, want.imag())) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "(" << got.re << ", " << got.im << "), C99 says ("
                                       << want.real() << ", " << want.imag() << ")";
}

// C99 Annex G's special values (glibc implements them; NumPy's loops call glibc) for the
// functions whose header says so. Where Annex G leaves a sign unspecified the test skips it.
TEST(ComplexMathTest, SpecialValuesFollowC99) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> parts = {0.0, -0.0, 1.5, -2.5, inf, -inf, nan};
  using C = std::complex<double>;
  struct Special {
    const char* name;
    std::function<Complex<double>(Complex<double>)> ours;
    std::function<C(C)> c99;
  };
  const Special functions[] = {
      {"exp", [](Complex<double> z) { return math::exp(z); }, [](C z) { return std::exp(z); }},
      {"log", [](Complex<double> z) { return math::log(z); }, [](C z) { return std::log(z); }},
      {"sqrt", [](Complex<double> z) { return math::sqrt(z); }, [](C z) { return std::sqrt(z); }},
      {"sinh", [](Complex<double> z) { return math::sinh(z); }, [](C z) { return std::sinh(z); }},
      {"cosh", [](Complex<double> z) { return math::cosh(z); }, [](C z) { return std::cosh(z); }},
      {"tanh", [](Complex<double> z) { return math::tanh(z); }, [](C z) { return std::tanh(z); }},
      {"acos", [](Complex<double> z) { return math::acos(z); }, [](C z) { return std::acos(z); }},
      {"asinh", [](Complex<double> z) { return math::asinh(z); },
       [](C z) { return std::asinh(z); }},
      {"acosh", [](Complex<double> z) { return math::acosh(z); },
       [](C z) { return std::acosh(z); }},
      {"atanh", [](Complex<double> z) { return math::atanh(z); },
       [](C z) { return std::atanh(z); }},
      {"atan", [](Complex<double> z) { return math::atan(z); }, [](C z) { return std::atan(z); }},
  };
  int checked = 0;
  for (const Special& f : functions) {
    for (double re : parts) {
      for (double im : parts) {
        const Complex<double> z(re, im);
        const C want = f.c99(C(re, im));
        const Complex<double> got = f.ours(z);
        // Annex G leaves the sign of a zero or infinite part unspecified in these cases.
        const bool unspecified_sign = (std::isinf(re) && !std::isfinite(im)) ||
                                      (std::isnan(re) && im == 0) ||
                                      (re == 0 && !std::isfinite(im));
        // tanh(+-inf + iy) for finite y: C99 signs the zero by sin(2y), the array API standard
        // by y (1 + 0j for y > 0, and conj(tanh z) = tanh(conj z)); we follow the standard.
        if (std::string_view(f.name) == "tanh" && std::isinf(re) && std::isfinite(im)) {
          EXPECT_EQ(got.re, want.real()) << f.name << "(" << re << ", " << im << ")";
          EXPECT_TRUE(got.im == 0 && std::signbit(got.im) == std::signbit(im))
              << f.name << "(" << re << ", " << im << ") gave " << got.im;
          ++checked;
          continue;
        }
        if (unspecified_sign) {
          EXPECT_EQ(std::isnan(got.re), std::isnan(want.real()))
              << f.name << "(" << re << ", " << im << ")";
          EXPECT_EQ(std::isnan(got.im), std::isnan(want.imag()))
              << f.name << "(" << re << ", " << im << ")";
          continue;
        }
        EXPECT_TRUE(SameSpecial(got, want)) << f.name << "(" << re << ", " << im << ")";
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 200);
}

// What NumPy 2.4 prints for np.less, np.maximum, np.fmax, ... on these pairs.
TEST(ComplexMathTest, OrderingIsNumPysLexicographicOne) {
  using C = Complex64;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const C a[] = {C(1, 2), C(1, 2), C(nan, 0), C(1, 1), C(1, nan), C(2, 0), C(1, 2)};
  const C b[] = {C(1, 3), C(1, nan), C(1, 0), C(nan, 0), C(1, 1), C(1, nan), C(1, 2)};
  const bool less[] = {true, false, false, false, false, false, false};
  const bool less_equal[] = {true, false, false, false, false, false, true};
  const bool greater[] = {false, false, false, false, false, false, false};
  const C maximum[] = {C(1, 3), C(1, nan), C(nan, 0), C(nan, 0), C(1, nan), C(1, nan), C(1, 2)};
  const C fmax[] = {C(1, 3), C(1, 2), C(1, 0), C(1, 1), C(1, 1), C(2, 0), C(1, 2)};
  const C fmin[] = {C(1, 2), C(1, 2), C(1, 0), C(1, 1), C(1, 1), C(2, 0), C(1, 2)};
  auto same = [](C x, C y) {
    auto part = [](float p, float q) { return std::isnan(q) ? std::isnan(p) : p == q; };
    return part(x.re, y.re) && part(x.im, y.im);
  };
  for (int i = 0; i < 7; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(Less{}(a[i], b[i]), less[i]);
    EXPECT_EQ(LessEqual{}(a[i], b[i]), less_equal[i]);
    EXPECT_EQ(Greater{}(a[i], b[i]), greater[i]);
    EXPECT_EQ(GreaterEqual{}(a[i], b[i]), i == 6);
    EXPECT_TRUE(same(Maximum{}(a[i], b[i]), maximum[i]));
    EXPECT_TRUE(same(Fmax{}(a[i], b[i]), fmax[i]));
    EXPECT_TRUE(same(Fmin{}(a[i], b[i]), fmin[i]));
  }
  // np.clip(1+5j, 1+1j, 2+2j) is 1+5j: the real parts decide first.
  EXPECT_TRUE(same(Clip{}(C(1, 5), C(1, 1), C(2, 2)), C(1, 5)));
  EXPECT_TRUE(same(Clip{}(C(3, 0), C(1, 1), C(2, 2)), C(2, 2)));
}

TEST(ComplexMathTest, SignAndPowerAreNumPys) {
  using C = Complex128;
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  struct Case {
    C z, want;
  };
  for (const Case& c : {Case{C(inf, nan), C(1, 0)},
                        {C(nan, inf), C(0, 1)},
                        {C(-inf, 0), C(-1, 0)},
                        {C(0, -inf), C(0, -1)},
                        {C(-3, -4), C(-0.6, -0.8)},
                        {C(-0.0, -0.0), C(0, 0)},
                        {C(1e-320, 0), C(1, 0)},
                        {C(1e300, 1e300), C(M_SQRT1_2, M_SQRT1_2)}}) {
    const C got = Sign{}(c.z);
    EXPECT_NEAR(got.re, c.want.re, 1e-15) << c.z.re << ", " << c.z.im;
    EXPECT_NEAR(got.im, c.want.im, 1e-15) << c.z.re << ", " << c.z.im;
  }
  EXPECT_TRUE(std::isnan(Sign{}(C(inf, inf)).re));
  EXPECT_TRUE(std::isnan(Sign{}(C(nan, 0)).im));

  // 0 ** 2 = 0, 0 ** -1 and 0 ** 1j are NaN, z ** 0 = 1.
  EXPECT_EQ(Power{}(C(0, 0), C(2, 0)), C(0, 0));
  EXPECT_TRUE(std::isnan(Power{}(C(0, 0), C(-1, 0)).re));
  EXPECT_TRUE(std::isnan(Power{}(C(0, 0), C(0, 1)).im));
  EXPECT_EQ(Power{}(C(2, 1), C(0, 0)), C(1, 0));
  // Integer exponents multiply: (1 + i) ** 8 = 16 exactly; (1 + i) ** -2 = -i / 2.
  EXPECT_EQ(Power{}(C(1, 1), C(8, 0)), C(16, 0));
  EXPECT_EQ(Power{}(C(1, 1), C(-2, 0)), C(0, -0.5));
  // Other exponents are exp(w log z): i ** i = exp(-pi / 2).
  const C i_to_i = Power{}(C(0, 1), C(0, 1));
  EXPECT_NEAR(i_to_i.re, std::exp(-M_PI / 2), 1e-16);
  EXPECT_NEAR(i_to_i.im, 0, 1e-16);
  // rint rounds each part half to even.
  EXPECT_EQ(Rint{}(C(1.5, 2.5)), C(2, 2));
  EXPECT_EQ(Rint{}(C(-0.5, -1.5)), C(-0.0, -2));
}

}  // namespace
}  // namespace distarray::ufunc
