// The complex functions at infinities, NaNs and signed zeros, end to end on every backend: each
// case is a row of C99 Annex G's tables (or the array API standard's, where it picks a sign Annex
// G leaves open or differs), checked bit for bit in the sign of each zero and infinity, for
// complex64 and complex128 alike.
#include <cmath>
#include <complex>
#include <limits>
#include <string>
#include <vector>

#include "tests/support/backend_fixture.h"
#include "tests/support/complex_reference.h"
#include "tests/support/compute_reference.h"

namespace distarray::testing {
namespace {

class ComplexSpecialValuesTest : public BackendTest {
 protected:
  template <typename C>
  void CheckTable(v1::DType dtype);
};

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kPi = 3.14159265358979323846;

// One row: f(x + iy) = re + i im. `free_re`/`free_im`: the standard leaves that part's sign open.
struct Row {
  v1::ElementwiseOp op;
  double x, y, re, im;
  bool free_re = false, free_im = false;
};

const std::vector<Row>& Table() {
  using v1::ELEMENTWISE_OP_ARCCOS;
  using v1::ELEMENTWISE_OP_ARCCOSH;
  using v1::ELEMENTWISE_OP_ARCSINH;
  using v1::ELEMENTWISE_OP_ARCTANH;
  using v1::ELEMENTWISE_OP_EXPM1;
  using v1::ELEMENTWISE_OP_TANH;
  static const std::vector<Row> kRows = {
      // arccos
      {ELEMENTWISE_OP_ARCCOS, 0.0, 0.0, kPi / 2, -0.0},
      {ELEMENTWISE_OP_ARCCOS, -0.0, kNan, kPi / 2, kNan},
      {ELEMENTWISE_OP_ARCCOS, 2.0, kInf, kPi / 2, -kInf},
      {ELEMENTWISE_OP_ARCCOS, 2.0, kNan, kNan, kNan},
      {ELEMENTWISE_OP_ARCCOS, -kInf, 1.0, kPi, -kInf},
      {ELEMENTWISE_OP_ARCCOS, kInf, 1.0, 0.0, -kInf},
      {ELEMENTWISE_OP_ARCCOS, -kInf, kInf, 3 * kPi / 4, -kInf},
      {ELEMENTWISE_OP_ARCCOS, kInf, kInf, kPi / 4, -kInf},
      {ELEMENTWISE_OP_ARCCOS, kInf, -kInf, kPi / 4, kInf},
      {ELEMENTWISE_OP_ARCCOS, kInf, kNan, kNan, kInf, false, true},
      {ELEMENTWISE_OP_ARCCOS, kNan, 1.0, kNan, kNan},
      {ELEMENTWISE_OP_ARCCOS, kNan, kInf, kNan, -kInf},
      // arcsinh
      {ELEMENTWISE_OP_ARCSINH, 0.0, 0.0, 0.0, 0.0},
      {ELEMENTWISE_OP_ARCSINH, -0.0, -0.0, -0.0, -0.0},
      {ELEMENTWISE_OP_ARCSINH, 1.0, kInf, kInf, kPi / 2},
      {ELEMENTWISE_OP_ARCSINH, 1.0, kNan, kNan, kNan},
      {ELEMENTWISE_OP_ARCSINH, kInf, 1.0, kInf, 0.0},
      {ELEMENTWISE_OP_ARCSINH, -kInf, -1.0, -kInf, -0.0},
      {ELEMENTWISE_OP_ARCSINH, kInf, kInf, kInf, kPi / 4},
      {ELEMENTWISE_OP_ARCSINH, kInf, kNan, kInf, kNan},
      {ELEMENTWISE_OP_ARCSINH, kNan, 0.0, kNan, 0.0},
      {ELEMENTWISE_OP_ARCSINH, kNan, 1.0, kNan, kNan},
      {ELEMENTWISE_OP_ARCSINH, kNan, kInf, kInf, kNan, true, false},
      {ELEMENTWISE_OP_ARCSINH, kNan, kNan, kNan, kNan},
      // arccosh
      {ELEMENTWISE_OP_ARCCOSH, 0.0, 0.0, 0.0, kPi / 2},
      {ELEMENTWISE_OP_ARCCOSH, -0.0, -0.0, 0.0, -kPi / 2},
      {ELEMENTWISE_OP_ARCCOSH, 1.0, kInf, kInf, kPi / 2},
      {ELEMENTWISE_OP_ARCCOSH, 0.0, kNan, kNan, kPi / 2, false, true},
      {ELEMENTWISE_OP_ARCCOSH, 1.0, kNan, kNan, kNan},
      {ELEMENTWISE_OP_ARCCOSH, -kInf, 1.0, kInf, kPi},
      {ELEMENTWISE_OP_ARCCOSH, kInf, 1.0, kInf, 0.0},
      {ELEMENTWISE_OP_ARCCOSH, -kInf, kInf, kInf, 3 * kPi / 4},
      {ELEMENTWISE_OP_ARCCOSH, kInf, kInf, kInf, kPi / 4},
      {ELEMENTWISE_OP_ARCCOSH, -kInf, kNan, kInf, kNan},
      {ELEMENTWISE_OP_ARCCOSH, kNan, 1.0, kNan, kNan},
      {ELEMENTWISE_OP_ARCCOSH, kNan, kInf, kInf, kNan},
      {ELEMENTWISE_OP_ARCCOSH, kNan, kNan, kNan, kNan},
      // arctanh
      {ELEMENTWISE_OP_ARCTANH, 0.0, 0.0, 0.0, 0.0},
      {ELEMENTWISE_OP_ARCTANH, 0.0, kNan, 0.0, kNan},
      {ELEMENTWISE_OP_ARCTANH, 1.0, 0.0, kInf, 0.0},
      {ELEMENTWISE_OP_ARCTANH, 0.5, kInf, 0.0, kPi / 2},
      {ELEMENTWISE_OP_ARCTANH, 0.5, kNan, kNan, kNan},
      {ELEMENTWISE_OP_ARCTANH, kInf, 0.5, 0.0, kPi / 2},
      {ELEMENTWISE_OP_ARCTANH, -kInf, -0.5, -0.0, -kPi / 2},
      {ELEMENTWISE_OP_ARCTANH, kInf, kInf, 0.0, kPi / 2},
      {ELEMENTWISE_OP_ARCTANH, kInf, kNan, 0.0, kNan},
      {ELEMENTWISE_OP_ARCTANH, kNan, 0.5, kNan, kNan},
      {ELEMENTWISE_OP_ARCTANH, kNan, kInf, 0.0, kPi / 2, true, false},
      {ELEMENTWISE_OP_ARCTANH, kNan, kNan, kNan, kNan},
      // expm1 (the array API's zeros)
      {ELEMENTWISE_OP_EXPM1, 0.0, 0.0, 0.0, 0.0},
      {ELEMENTWISE_OP_EXPM1, -0.0, 0.0, 0.0, 0.0},
      {ELEMENTWISE_OP_EXPM1, kInf, 0.0, kInf, 0.0},
      {ELEMENTWISE_OP_EXPM1, -kInf, kInf, -1.0, 0.0, false, true},
      {ELEMENTWISE_OP_EXPM1, kInf, kInf, kInf, kNan, true, false},
      {ELEMENTWISE_OP_EXPM1, -kInf, kNan, -1.0, 0.0, false, true},
      {ELEMENTWISE_OP_EXPM1, kInf, kNan, kInf, kNan, true, false},
      {ELEMENTWISE_OP_EXPM1, kNan, 0.0, kNan, 0.0},
      {ELEMENTWISE_OP_EXPM1, kNan, 1.0, kNan, kNan},
      {ELEMENTWISE_OP_EXPM1, 1.0, kInf, kNan, kNan},
      // tanh
      {ELEMENTWISE_OP_TANH, 0.0, 0.0, 0.0, 0.0},
      {ELEMENTWISE_OP_TANH, 1.0, kInf, kNan, kNan},
      {ELEMENTWISE_OP_TANH, 30.0, kInf, kNan, kNan},
      {ELEMENTWISE_OP_TANH, 0.0, kInf, 0.0, kNan},
      {ELEMENTWISE_OP_TANH, 30.0, kNan, kNan, kNan},
      {ELEMENTWISE_OP_TANH, kInf, 2.0, 1.0, 0.0},
      {ELEMENTWISE_OP_TANH, kInf, -2.0, 1.0, -0.0},
      {ELEMENTWISE_OP_TANH, -kInf, kInf, -1.0, 0.0, false, true},
      {ELEMENTWISE_OP_TANH, kInf, kNan, 1.0, 0.0, false, true},
      {ELEMENTWISE_OP_TANH, kNan, 0.0, kNan, 0.0},
      {ELEMENTWISE_OP_TANH, kNan, 1.0, kNan, kNan},
  };
  return kRows;
}

// got matches want: NaN for NaN (any sign); otherwise the value within a few ulps, and the sign
// of a zero or an infinity exactly unless `free`.
template <typename R>
bool PartMatches(R got, double want, bool free) {
  if (std::isnan(want)) return std::isnan(got);
  if (free) return std::fabs(static_cast<double>(got)) == std::fabs(static_cast<double>(R(want)));
  if (want == 0 || std::isinf(want)) {
    return got == R(want) && std::signbit(got) == std::signbit(want);
  }
  return std::fabs(static_cast<long double>(got) - want) <=
         4 * std::numeric_limits<R>::epsilon() * std::fabs(want);
}

template <typename C>
void ComplexSpecialValuesTest::CheckTable(v1::DType dtype) {
  SCOPED_TRACE(DTypeStr(dtype));
  using R = typename C::value_type;
  for (v1::ElementwiseOp op :
       {v1::ELEMENTWISE_OP_ARCCOS, v1::ELEMENTWISE_OP_ARCSINH, v1::ELEMENTWISE_OP_ARCCOSH,
        v1::ELEMENTWISE_OP_ARCTANH, v1::ELEMENTWISE_OP_EXPM1, v1::ELEMENTWISE_OP_TANH}) {
    std::vector<Row> rows;
    std::vector<C> inputs;
    for (const Row& row : Table()) {
      if (row.op != op) continue;
      rows.push_back(row);
      inputs.push_back(C(static_cast<R>(row.x), static_cast<R>(row.y)));
    }
    const int64_t n = static_cast<int64_t>(inputs.size());
    // Split over two devices, so both halves of the table run on a device of their own.
    ASSERT_OK_AND_ASSIGN(Array in,
                         client().Upload<C>(inputs, {n}, {Split(1, 0, n, {dev(0), dev(1)})}));
    ASSERT_OK_AND_ASSIGN(Array out, Ufunc(op, {in}));
    ASSERT_OK_AND_ASSIGN(std::vector<C> got, out.Download<C>());
    for (int64_t i = 0; i < n; ++i) {
      const Row& r = rows[i];
      EXPECT_TRUE(PartMatches<R>(got[i].real(), r.re, r.free_re) &&
                  PartMatches<R>(got[i].imag(), r.im, r.free_im))
          << v1::ElementwiseOp_Name(op) << "(" << r.x << " + " << r.y << "j) gave " << got[i]
          << ", want (" << r.re << ", " << r.im << ")";
    }
  }
}

TEST_P(ComplexSpecialValuesTest, FollowAnnexGAndTheArrayApi) {
  CheckTable<C64>(v1::DTYPE_COMPLEX64);
  CheckTable<C128>(v1::DTYPE_COMPLEX128);
}

DISTARRAY_INSTANTIATE_BACKENDS(ComplexSpecialValuesTest);

}  // namespace
}  // namespace distarray::testing
