// Helpers of the complex tests: random complex inputs, and comparison against a
// std::complex<long double> reference within a tolerance relative to a scale.
#ifndef DISTARRAY_TESTS_SUPPORT_COMPLEX_REFERENCE_H_
#define DISTARRAY_TESTS_SUPPORT_COMPLEX_REFERENCE_H_

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace distarray::testing {

using C64 = std::complex<float>;
using C128 = std::complex<double>;
using CL = std::complex<long double>;

template <typename C>
std::vector<C> RandomComplex(size_t n, std::mt19937_64& rng, double lo = -2, double hi = 2) {
  std::uniform_real_distribution<double> part(lo, hi);
  std::vector<C> out(n);
  for (C& z : out) {
    const double re = part(rng), im = part(rng);
    z = C(static_cast<typename C::value_type>(re), static_cast<typename C::value_type>(im));
  }
  return out;
}

template <typename C>
constexpr long double Epsilon() {
  return std::numeric_limits<typename C::value_type>::epsilon();
}

template <typename C>
CL Wide(C z) {
  return CL(z.real(), z.imag());
}

// got within tol of want (NaN matches NaN; an infinity matches itself).
inline bool Near(long double got, long double want, long double tol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= tol;
}

// Each part of got[i] within ulps * epsilon * scale[i] of want[i].
template <typename C>
::testing::AssertionResult ComplexMatch(const std::vector<C>& got, const std::vector<CL>& want,
                                        const std::vector<long double>& scale, long double ulps,
                                        const std::string& what) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure()
           << what << ": " << got.size() << " elements, want " << want.size();
  }
  for (size_t i = 0; i < got.size(); ++i) {
    const long double tol = ulps * Epsilon<C>() * scale[i];
    if (!Near(got[i].real(), want[i].real(), tol) || !Near(got[i].imag(), want[i].imag(), tol)) {
      return ::testing::AssertionFailure()
             << what << ": element " << i << " is (" << got[i].real() << ", " << got[i].imag()
             << "), want (" << static_cast<double>(want[i].real()) << ", "
             << static_cast<double>(want[i].imag()) << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

// NumPy's order: by real parts, then imaginary parts; NaN in either part of either operand makes
// each ordered comparison false; maximum/minimum propagate a NaN operand, fmax/fmin prefer the
// other.
template <typename C>
bool LexLess(C x, C y) {
  const bool nan = std::isnan(x.imag()) || std::isnan(y.imag());
  return (x.real() < y.real() && !nan) || (x.real() == y.real() && x.imag() < y.imag());
}
template <typename C>
bool LexLessEqual(C x, C y) {
  const bool nan = std::isnan(x.imag()) || std::isnan(y.imag());
  return (x.real() < y.real() && !nan) || (x.real() == y.real() && x.imag() <= y.imag());
}
template <typename C>
bool HasNan(C z) {
  return std::isnan(z.real()) || std::isnan(z.imag());
}
template <typename C>
bool Same(C x, C y) {
  auto part = [](auto p, auto q) { return std::isnan(q) ? std::isnan(p) : p == q; };
  return part(x.real(), y.real()) && part(x.imag(), y.imag());
}

}  // namespace distarray::testing

#endif  // DISTARRAY_TESTS_SUPPORT_COMPLEX_REFERENCE_H_
