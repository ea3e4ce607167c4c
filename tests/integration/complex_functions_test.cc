// The complex ufuncs beyond arithmetic, end to end on every backend: the elementary functions,
// power, sign and rint against std::complex<long double> on fresh random inputs (normwise: the
// error relative to the exact result's magnitude), and NumPy's lexicographic order (the
// comparisons, maximum/minimum/fmax/fmin and clip) with NaN in either part.
#include <cmath>
#include <complex>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/support/backend_fixture.h"
#include "tests/support/complex_reference.h"
#include "tests/support/compute_reference.h"

namespace distarray::testing {
namespace {

class ComplexFunctionsTest : public BackendTest {
 protected:
  // Rows split over four devices (modulo the machine's), and columns over two.
  v1::IndexMap Rows(int64_t rows) { return Split(2, 0, rows, {dev(0), dev(1), dev(2), dev(3)}); }
  v1::IndexMap Cols(int64_t cols) { return Split(2, 1, cols, {dev(1), dev(0)}); }

  template <typename C>
  void CheckFunctions(v1::DType dtype);
  template <typename C>
  void CheckOrdering(v1::DType dtype);
};

// The largest normwise error of got against want, in units of C's epsilon; NaN where got has a
// NaN or an infinity that want does not.
template <typename C>
long double WorstUlps(const std::vector<C>& got, const std::vector<CL>& want) {
  long double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const long double error = std::abs(Wide(got[i]) - want[i]) / std::abs(want[i]) / Epsilon<C>();
    if (!(error <= worst)) worst = error;  // NaN sticks
  }
  return worst;
}

template <typename C>
void ComplexFunctionsTest::CheckFunctions(v1::DType dtype) {
  SCOPED_TRACE(DTypeStr(dtype));
  std::mt19937_64 rng(dtype + 100);
  const int64_t rows = 8, cols = 10;
  const size_t n = rows * cols;
  std::vector<C> a = RandomComplex<C>(n, rng, -3, 3);
  // Small arguments (where log1p, expm1, asin and atan must not round 1 + z) and ones close to 1
  // (where log, arcsin and arccos cancel in textbook form).
  const std::vector<C> small = RandomComplex<C>(10, rng, -1e-3, 1e-3);
  for (int i = 0; i < 10; ++i) a[i] = small[i];
  for (int i = 10; i < 20; ++i) a[i] = C(1, 0) + small[i - 10] * C(0.1f, 0);
  const std::vector<C> b = RandomComplex<C>(n, rng, -2, 2);
  ASSERT_OK_AND_ASSIGN(Array A, client().Upload<C>(a, {rows, cols}, {Rows(rows)}));
  ASSERT_OK_AND_ASSIGN(Array B, client().Upload<C>(b, {rows, cols}, {Cols(cols)}));

  struct Function {
    v1::ElementwiseOp op;
    std::function<CL(CL)> reference;
  };
  const Function functions[] = {
      {v1::ELEMENTWISE_OP_EXP, [](CL z) { return std::exp(z); }},
      {v1::ELEMENTWISE_OP_EXPM1, [](CL z) { return std::exp(z) - CL(1); }},
      {v1::ELEMENTWISE_OP_LOG, [](CL z) { return std::log(z); }},
      {v1::ELEMENTWISE_OP_LOG1P, [](CL z) { return std::log(CL(1) + z); }},
      {v1::ELEMENTWISE_OP_LOG2, [](CL z) { return std::log(z) / std::log(2.0L); }},
      {v1::ELEMENTWISE_OP_LOG10, [](CL z) { return std::log10(z); }},
      {v1::ELEMENTWISE_OP_SQRT, [](CL z) { return std::sqrt(z); }},
      {v1::ELEMENTWISE_OP_SIN, [](CL z) { return std::sin(z); }},
      {v1::ELEMENTWISE_OP_COS, [](CL z) { return std::cos(z); }},
      {v1::ELEMENTWISE_OP_TAN, [](CL z) { return std::tan(z); }},
      {v1::ELEMENTWISE_OP_ARCSIN, [](CL z) { return std::asin(z); }},
      {v1::ELEMENTWISE_OP_ARCCOS, [](CL z) { return std::acos(z); }},
      {v1::ELEMENTWISE_OP_ARCTAN, [](CL z) { return std::atan(z); }},
      {v1::ELEMENTWISE_OP_SINH, [](CL z) { return std::sinh(z); }},
      {v1::ELEMENTWISE_OP_COSH, [](CL z) { return std::cosh(z); }},
      {v1::ELEMENTWISE_OP_TANH, [](CL z) { return std::tanh(z); }},
      {v1::ELEMENTWISE_OP_ARCSINH, [](CL z) { return std::asinh(z); }},
      {v1::ELEMENTWISE_OP_ARCCOSH, [](CL z) { return std::acosh(z); }},
      {v1::ELEMENTWISE_OP_ARCTANH, [](CL z) { return std::atanh(z); }},
      {v1::ELEMENTWISE_OP_SIGN, [](CL z) { return z / std::abs(z); }},
  };
  for (const Function& f : functions) {
    const std::string name = v1::ElementwiseOp_Name(f.op);
    ASSERT_OK_AND_ASSIGN(Array out, Ufunc(f.op, {A}));
    EXPECT_EQ(out.info().dtype(), dtype) << name;
    ASSERT_OK_AND_ASSIGN(std::vector<C> got, out.Download<C>());
    std::vector<CL> want(n);
    for (size_t i = 0; i < n; ++i) want[i] = f.reference(Wide(a[i]));
    EXPECT_LE(WorstUlps(got, want), 32) << name;
  }

  // power: a ** b is exp(b log a), whose rounding grows with |b log a|; a ** 3 multiplies.
  ASSERT_OK_AND_ASSIGN(Array pow_ab, Ufunc(v1::ELEMENTWISE_OP_POWER, {A, B}));
  ASSERT_OK_AND_ASSIGN(Array cube, Ufunc(v1::ELEMENTWISE_OP_POWER, {A, 3}));
  EXPECT_EQ(cube.info().dtype(), dtype);  // a weak integer scalar keeps the complex dtype
  ASSERT_OK_AND_ASSIGN(std::vector<C> pow_got, pow_ab.Download<C>());
  ASSERT_OK_AND_ASSIGN(std::vector<C> cube_got, cube.Download<C>());
  std::vector<CL> pow_want(n), cube_want(n);
  for (size_t i = 0; i < n; ++i) {
    pow_want[i] = std::pow(Wide(a[i]), Wide(b[i]));
    cube_want[i] = Wide(a[i]) * Wide(a[i]) * Wide(a[i]);
  }
  EXPECT_LE(WorstUlps(pow_got, pow_want), 128) << "power";
  EXPECT_LE(WorstUlps(cube_got, cube_want), 8) << "power by 3";

  // rint rounds each part to the nearest integer, halves to even.
  const std::vector<C> halves_values = {C(1.5, 2.5), C(-0.5, -1.5), C(2.7, -0.2)};
  ASSERT_OK_AND_ASSIGN(Array halves, client().Upload<C>(halves_values, {3}, {OnDevice(1, dev(1))}));
  ASSERT_OK_AND_ASSIGN(Array rounded, Ufunc(v1::ELEMENTWISE_OP_RINT, {halves}));
  ASSERT_OK_AND_ASSIGN(std::vector<C> rv, rounded.Download<C>());
  EXPECT_EQ(rv, (std::vector<C>{C(2, 2), C(-0.0, -2), C(3, -0.0)}));
}

TEST_P(ComplexFunctionsTest, ElementaryFunctionsMatchALongDoubleReference) {
  CheckFunctions<C64>(v1::DTYPE_COMPLEX64);
  CheckFunctions<C128>(v1::DTYPE_COMPLEX128);
}

template <typename C>
void ComplexFunctionsTest::CheckOrdering(v1::DType dtype) {
  SCOPED_TRACE(DTypeStr(dtype));
  using R = typename C::value_type;
  const R nan = std::numeric_limits<R>::quiet_NaN();
  std::mt19937_64 rng(dtype + 200);
  const int64_t n = 60;
  // Parts drawn from a few integers, so that real parts tie often and the imaginary parts decide.
  std::uniform_int_distribution<int> part(-2, 2);
  std::vector<C> a(n), b(n);
  for (int64_t i = 0; i < n; ++i) {
    a[i] = C(part(rng), part(rng));
    b[i] = C(part(rng), part(rng));
  }
  a[0] = C(nan, 0);
  a[1] = C(1, nan);
  b[2] = C(nan, 1);
  b[3] = C(0, nan);
  a[4] = b[4];
  ASSERT_OK_AND_ASSIGN(Array A, client().Upload<C>(a, {n}, {Split(1, 0, n, {dev(0), dev(1)})}));
  ASSERT_OK_AND_ASSIGN(Array B, client().Upload<C>(b, {n}, {Split(1, 0, n, {dev(1), dev(2)})}));

  struct Comparison {
    v1::ElementwiseOp op;
    std::function<bool(C, C)> reference;
  };
  const Comparison comparisons[] = {
      {v1::ELEMENTWISE_OP_LESS, [](C x, C y) { return LexLess(x, y); }},
      {v1::ELEMENTWISE_OP_LESS_EQUAL, [](C x, C y) { return LexLessEqual(x, y); }},
      {v1::ELEMENTWISE_OP_GREATER, [](C x, C y) { return LexLess(y, x); }},
      {v1::ELEMENTWISE_OP_GREATER_EQUAL, [](C x, C y) { return LexLessEqual(y, x); }},
  };
  for (const Comparison& c : comparisons) {
    ASSERT_OK_AND_ASSIGN(Array out, Ufunc(c.op, {A, B}));
    ASSERT_OK_AND_ASSIGN(std::vector<bool> got, out.Download<bool>());
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(got[i], c.reference(a[i], b[i]))
          << v1::ElementwiseOp_Name(c.op) << " at " << i << ": " << a[i] << ", " << b[i];
    }
  }

  struct Selection {
    v1::ElementwiseOp op;
    std::function<C(C, C)> reference;
  };
  const Selection selections[] = {
      {v1::ELEMENTWISE_OP_MAXIMUM,
       [](C x, C y) { return HasNan(x) || LexLessEqual(y, x) ? x : y; }},
      {v1::ELEMENTWISE_OP_MINIMUM,
       [](C x, C y) { return HasNan(x) || LexLessEqual(x, y) ? x : y; }},
      {v1::ELEMENTWISE_OP_FMAX, [](C x, C y) { return HasNan(y) || LexLessEqual(y, x) ? x : y; }},
      {v1::ELEMENTWISE_OP_FMIN, [](C x, C y) { return HasNan(y) || LexLessEqual(x, y) ? x : y; }},
  };
  for (const Selection& s : selections) {
    ASSERT_OK_AND_ASSIGN(Array out, Ufunc(s.op, {A, B}));
    EXPECT_EQ(out.info().dtype(), dtype);
    ASSERT_OK_AND_ASSIGN(std::vector<C> got, out.Download<C>());
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_TRUE(Same(got[i], s.reference(a[i], b[i])))
          << v1::ElementwiseOp_Name(s.op) << " at " << i << ": " << a[i] << ", " << b[i] << " gave "
          << got[i];
    }
  }

  // clip(a, -1 + 1j, 1 - 1j) is minimum(maximum(a, lo), hi), scalars weak.
  const std::complex<double> lo(-1, 1), hi(1, -1);
  ASSERT_OK_AND_ASSIGN(Array clipped, Ufunc(v1::ELEMENTWISE_OP_CLIP, {A, lo, hi}));
  EXPECT_EQ(clipped.info().dtype(), dtype);
  ASSERT_OK_AND_ASSIGN(std::vector<C> got, clipped.Download<C>());
  const C clo(lo), chi(hi);
  for (int64_t i = 0; i < n; ++i) {
    const C raised = HasNan(a[i]) || LexLessEqual(clo, a[i]) ? a[i] : clo;
    const C want = HasNan(raised) || LexLessEqual(raised, chi) ? raised : chi;
    EXPECT_TRUE(Same(got[i], want)) << "clip at " << i << ": " << a[i] << " gave " << got[i];
  }
}

TEST_P(ComplexFunctionsTest, OrderingIsNumPysLexicographicOne) {
  CheckOrdering<C64>(v1::DTYPE_COMPLEX64);
  CheckOrdering<C128>(v1::DTYPE_COMPLEX128);
}

DISTARRAY_INSTANTIATE_BACKENDS(ComplexFunctionsTest);

}  // namespace
}  // namespace distarray::testing
