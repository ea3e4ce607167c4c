// complex64 and complex128 arrays end to end: stored as (real, imaginary) pairs as NumPy and
// std::complex lay them out, moved and combined like any array, and computed with the ufuncs
// NumPy defines on complex numbers that the daemon builds. Values are checked against
// std::complex<long double> on fresh random inputs. A complex result is within a relative error
// of its operands' scale: a product's rounding error is relative to |a| |b|, not to |a b| (which
// cancellation can make small), and a sum's to |a| + |b|.
#include <cmath>
#include <complex>
#include <limits>
#include <random>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "distarray/graph.h"
#include "tests/support/backend_fixture.h"
#include "tests/support/complex_reference.h"
#include "tests/support/compute_reference.h"

namespace distarray::testing {
namespace {

class ComplexTest : public BackendTest {
 protected:
  // Rows split over four devices (modulo the machine's): one chunk each.
  v1::IndexMap Rows(int64_t rows) { return Split(2, 0, rows, {dev(0), dev(1), dev(2), dev(3)}); }
  v1::IndexMap Cols(int64_t cols) { return Split(2, 1, cols, {dev(1), dev(0)}); }

  template <typename C>
  void CheckArithmetic(v1::DType dtype);
};

TEST_P(ComplexTest, ValuesRoundTripThroughReshardsAndModes) {
  std::mt19937_64 rng(41);
  const std::vector<C128> z = RandomComplex<C128>(24 * 10, rng);
  ASSERT_OK_AND_ASSIGN(Array a, client().Upload<C128>(z, {24, 10}, {Rows(24)}));
  EXPECT_EQ(a.info().dtype(), v1::DTYPE_COMPLEX128);
  ASSERT_OK_AND_ASSIGN(Array moved, a.Reshard(Cols(10)));
  ASSERT_OK_AND_ASSIGN(std::vector<C128> got, moved.Download<C128>());
  EXPECT_EQ(got, z) << "bits changed on the way";

  // Replicated on two devices, then SUM mode: each element is owned once, so the logical value
  // is unchanged; back to REPLICA, the partial copies combine to it again.
  ASSERT_OK_AND_ASSIGN(Array both, a.Reshard(Replicated(2, {dev(0), dev(1)})));
  ASSERT_OK_AND_ASSIGN(Array sum, both.ChangeMode(v1::MODE_SUM));
  ASSERT_OK_AND_ASSIGN(got, sum.Download<C128>());
  EXPECT_EQ(got, z) << "SUM mode";
  ASSERT_OK_AND_ASSIGN(Array prod, sum.ChangeMode(v1::MODE_PROD));
  ASSERT_OK_AND_ASSIGN(Array back, prod.Reshard(Rows(24), v1::MODE_REPLICA));
  ASSERT_OK_AND_ASSIGN(got, back.Download<C128>());
  for (size_t i = 0; i < z.size(); ++i) {
    ASSERT_NEAR(got[i].real(), z[i].real(), 1e-15) << i;
    ASSERT_NEAR(got[i].imag(), z[i].imag(), 1e-15) << i;
  }

  // MAX and MIN modes order as NumPy's maximum does (real part, then imaginary part): the
  // non-owning copies hold (-inf, -inf) or (inf, inf), which every value beats, so the logical
  // values come back unchanged whatever the signs of their parts.
  for (v1::Mode mode : {v1::MODE_MAX, v1::MODE_MIN}) {
    ASSERT_OK_AND_ASSIGN(Array extreme, both.ChangeMode(mode));
    ASSERT_OK_AND_ASSIGN(got, extreme.Download<C128>());
    EXPECT_EQ(got, z) << v1::Mode_Name(mode);
    ASSERT_OK_AND_ASSIGN(Array combined, extreme.Reshard(Cols(10), v1::MODE_REPLICA));
    ASSERT_OK_AND_ASSIGN(got, combined.Download<C128>());
    EXPECT_EQ(got, z) << v1::Mode_Name(mode) << " combined";
  }
}

TEST_P(ComplexTest, FillsPutTheirValuesInTheRealPart) {
  const std::vector<int64_t> shape = {6, 5};
  v1::Fill arange;
  arange.mutable_arange()->set_start(-3);
  arange.mutable_arange()->set_step(0.5);
  ASSERT_OK_AND_ASSIGN(Array a,
                       client().Create(shape, v1::DTYPE_COMPLEX64, ArrayOpts(Rows(6)), arange));
  ASSERT_OK_AND_ASSIGN(std::vector<C64> got, a.Download<C64>());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], C64(-3 + 0.5f * i, 0)) << i;

  // uniform draws both parts from [low, high), the same values whatever the layout.
  v1::Fill uniform;
  uniform.mutable_uniform()->set_low(-1);
  uniform.mutable_uniform()->set_high(1);
  uniform.mutable_uniform()->set_seed(7);
  ASSERT_OK_AND_ASSIGN(Array u1,
                       client().Create(shape, v1::DTYPE_COMPLEX128, ArrayOpts(Rows(6)), uniform));
  ASSERT_OK_AND_ASSIGN(Array u2,
                       client().Create(shape, v1::DTYPE_COMPLEX128, ArrayOpts(Cols(5)), uniform));
  ASSERT_OK_AND_ASSIGN(std::vector<C128> v1s, u1.Download<C128>());
  ASSERT_OK_AND_ASSIGN(std::vector<C128> v2s, u2.Download<C128>());
  EXPECT_EQ(v1s, v2s);
  int nonzero_imag = 0;
  for (const C128& v : v1s) {
    EXPECT_TRUE(v.real() >= -1 && v.real() < 1 && v.imag() >= -1 && v.imag() < 1) << v;
    nonzero_imag += v.imag() != 0;
    EXPECT_NE(v.real(), v.imag());
  }
  EXPECT_GT(nonzero_imag, 25);

  v1::Fill full;
  full.mutable_full()->mutable_value()->set_float_value(2.5);
  ASSERT_OK_AND_ASSIGN(
      Array f, client().Create({3}, v1::DTYPE_COMPLEX128, ArrayOpts(OnDevice(1, dev(1))), full));
  ASSERT_OK_AND_ASSIGN(std::vector<C128> fv, f.Download<C128>());
  EXPECT_EQ(fv, std::vector<C128>(3, C128(2.5, 0)));
}

template <typename C>
void ComplexTest::CheckArithmetic(v1::DType dtype) {
  SCOPED_TRACE(DTypeStr(dtype));
  std::mt19937_64 rng(dtype);
  const int64_t rows = 12, cols = 9;
  const size_t n = rows * cols;
  std::vector<C> a = RandomComplex<C>(n, rng);
  const std::vector<C> b = RandomComplex<C>(n, rng);
  const std::vector<C> row = RandomComplex<C>(cols, rng);  // broadcast along the rows
  a[3] = b[3];                                             // equal elements for equal()
  a[5] = C(0, 0);
  ASSERT_OK_AND_ASSIGN(Array A, client().Upload<C>(a, {rows, cols}, {Rows(rows)}));
  ASSERT_OK_AND_ASSIGN(Array B, client().Upload<C>(b, {rows, cols}, {Cols(cols)}));
  ASSERT_OK_AND_ASSIGN(Array Row, client().Upload<C>(row, {cols}, {OnDevice(1, dev(2))}));

  struct Binary {
    v1::ElementwiseOp op;
    const Array* rhs;
  };
  for (const Binary& bin : {Binary{v1::ELEMENTWISE_OP_ADD, &B},
                            {v1::ELEMENTWISE_OP_SUBTRACT, &Row},
                            {v1::ELEMENTWISE_OP_MULTIPLY, &B},
                            {v1::ELEMENTWISE_OP_MULTIPLY, &Row},
                            {v1::ELEMENTWISE_OP_DIVIDE, &B},
                            {v1::ELEMENTWISE_OP_DIVIDE, &Row}}) {
    const bool broadcast = bin.rhs == &Row;
    const std::string what =
        absl::StrCat(v1::ElementwiseOp_Name(bin.op), broadcast ? " by a row" : "");
    ASSERT_OK_AND_ASSIGN(Array out, Ufunc(bin.op, {A, *bin.rhs}));
    EXPECT_EQ(out.info().dtype(), dtype) << what;
    EXPECT_TRUE(SameIndexMap(out.info().index_map(), A.info().index_map())) << what;
    ASSERT_OK_AND_ASSIGN(std::vector<C> got, out.Download<C>());
    std::vector<CL> want(n);
    std::vector<long double> scale(n);
    for (size_t i = 0; i < n; ++i) {
      const CL x = Wide(a[i]);
      const CL y = Wide(broadcast ? row[i % cols] : b[i]);
      switch (bin.op) {
        case v1::ELEMENTWISE_OP_ADD:
          want[i] = x + y;
          scale[i] = std::abs(x) + std::abs(y);
          break;
        case v1::ELEMENTWISE_OP_SUBTRACT:
          want[i] = x - y;
          scale[i] = std::abs(x) + std::abs(y);
          break;
        case v1::ELEMENTWISE_OP_MULTIPLY:
          want[i] = x * y;
          scale[i] = std::abs(x) * std::abs(y);
          break;
        default:
          want[i] = x / y;
          scale[i] = std::abs(x) / std::abs(y);
          break;
      }
    }
    EXPECT_TRUE(ComplexMatch(got, want, scale, 8, what));
  }

  // Unary ops keep the dtype; absolute gives the real part's dtype.
  for (v1::ElementwiseOp op :
       {v1::ELEMENTWISE_OP_NEGATIVE, v1::ELEMENTWISE_OP_POSITIVE, v1::ELEMENTWISE_OP_SQUARE}) {
    ASSERT_OK_AND_ASSIGN(Array out, Ufunc(op, {A}));
    ASSERT_OK_AND_ASSIGN(std::vector<C> got, out.Download<C>());
    std::vector<CL> want(n);
    std::vector<long double> scale(n);
    for (size_t i = 0; i < n; ++i) {
      const CL x = Wide(a[i]);
      want[i] = op == v1::ELEMENTWISE_OP_NEGATIVE   ? -x
                : op == v1::ELEMENTWISE_OP_POSITIVE ? x
                                                    : x * x;
      scale[i] = std::norm(x) + std::abs(x);
    }
    EXPECT_TRUE(ComplexMatch(got, want, scale, 4, v1::ElementwiseOp_Name(op)));
  }
  using R = typename C::value_type;
  ASSERT_OK_AND_ASSIGN(Array magnitude, Ufunc(v1::ELEMENTWISE_OP_ABS, {A}));
  EXPECT_EQ(magnitude.info().dtype(),
            dtype == v1::DTYPE_COMPLEX64 ? v1::DTYPE_FLOAT32 : v1::DTYPE_FLOAT64);
  ASSERT_OK_AND_ASSIGN(std::vector<R> mag, magnitude.Download<R>());
  for (size_t i = 0; i < n; ++i) {
    const long double want = std::abs(Wide(a[i]));
    EXPECT_LE(std::fabs(mag[i] - want), 2 * Epsilon<C>() * want) << "absolute, element " << i;
  }

  // Comparisons and predicates give bool.
  ASSERT_OK_AND_ASSIGN(Array eq, Ufunc(v1::ELEMENTWISE_OP_EQUAL, {A, B}));
  ASSERT_OK_AND_ASSIGN(Array ne, Ufunc(v1::ELEMENTWISE_OP_NOT_EQUAL, {A, B}));
  ASSERT_OK_AND_ASSIGN(Array nonzero, Ufunc(v1::ELEMENTWISE_OP_LOGICAL_NOT, {A}));
  ASSERT_OK_AND_ASSIGN(std::vector<bool> eqv, eq.Download<bool>());
  ASSERT_OK_AND_ASSIGN(std::vector<bool> nev, ne.Download<bool>());
  ASSERT_OK_AND_ASSIGN(std::vector<bool> notv, nonzero.Download<bool>());
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(eqv[i], a[i] == b[i]) << i;
    EXPECT_EQ(nev[i], a[i] != b[i]) << i;
    EXPECT_EQ(notv[i], a[i] == C(0, 0)) << i;
  }
  EXPECT_TRUE(eqv[3]);
  EXPECT_TRUE(notv[5]);

  // where(a == b, a, b * 2): a weak float scalar keeps the complex dtype.
  ASSERT_OK_AND_ASSIGN(Array twice, B * 2.0);
  EXPECT_EQ(twice.info().dtype(), dtype);
  ASSERT_OK_AND_ASSIGN(Array picked, Ufunc(v1::ELEMENTWISE_OP_WHERE, {eq, A, twice}));
  ASSERT_OK_AND_ASSIGN(std::vector<C> pv, picked.Download<C>());
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(pv[i], eqv[i] ? a[i] : b[i] * R(2)) << i;
}

TEST_P(ComplexTest, ArithmeticMatchesALongDoubleReference) {
  CheckArithmetic<C64>(v1::DTYPE_COMPLEX64);
  CheckArithmetic<C128>(v1::DTYPE_COMPLEX128);
}

TEST_P(ComplexTest, PredicatesSeeInfinitiesAndNaNsInEitherPart) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<C128> z = {{1, 2}, {inf, 0}, {0, -inf}, {nan, 1}, {1, nan}, {inf, nan}};
  ASSERT_OK_AND_ASSIGN(Array a, client().Upload<C128>(z, {6}, {Split(1, 0, 6, {dev(0), dev(1)})}));
  const std::vector<std::pair<v1::ElementwiseOp, std::vector<bool>>> cases = {
      {v1::ELEMENTWISE_OP_ISNAN, {false, false, false, true, true, true}},
      {v1::ELEMENTWISE_OP_ISINF, {false, true, true, false, false, true}},
      {v1::ELEMENTWISE_OP_ISFINITE, {true, false, false, false, false, false}},
  };
  for (const auto& [op, want] : cases) {
    ASSERT_OK_AND_ASSIGN(Array out, Ufunc(op, {a}));
    ASSERT_OK_AND_ASSIGN(std::vector<bool> got, out.Download<bool>());
    EXPECT_EQ(got, want) << v1::ElementwiseOp_Name(op);
  }
  // Division by zero gives inf or NaN part by part, as NumPy's does.
  ASSERT_OK_AND_ASSIGN(Array zero, client().Create({6}, v1::DTYPE_COMPLEX128,
                                                   ArrayOpts(Split(1, 0, 6, {dev(1), dev(0)}))));
  ASSERT_OK_AND_ASSIGN(Array q, Ufunc(v1::ELEMENTWISE_OP_DIVIDE, {a, zero}));
  ASSERT_OK_AND_ASSIGN(std::vector<C128> qv, q.Download<C128>());
  EXPECT_EQ(qv[0].real(), inf);
  EXPECT_EQ(qv[0].imag(), inf);
}

TEST_P(ComplexTest, MixedDTypesPromoteAsNumPy) {
  std::mt19937_64 rng(5);
  const std::vector<C64> z = RandomComplex<C64>(8, rng);
  std::vector<double> d(8);
  std::vector<float> f(8);
  std::vector<int32_t> k(8);
  for (int i = 0; i < 8; ++i) {
    d[i] = 0.1 * i - 0.3;
    f[i] = 0.25f * i;
    k[i] = 3 * i - 7;
  }
  const v1::IndexMap map = Split(1, 0, 8, {dev(0), dev(1)});
  ASSERT_OK_AND_ASSIGN(Array Z, client().Upload<C64>(z, {8}, {map}));
  ASSERT_OK_AND_ASSIGN(Array D, client().Upload<double>(d, {8}, {map}));
  ASSERT_OK_AND_ASSIGN(Array F, client().Upload<float>(f, {8}, {map}));
  ASSERT_OK_AND_ASSIGN(Array K, client().Upload<int32_t>(k, {8}, {map}));

  // complex64 + float64 and complex64 + int32 are complex128; complex64 + float32 stays.
  ASSERT_OK_AND_ASSIGN(Array zd, Z + D);
  ASSERT_OK_AND_ASSIGN(Array kz, K * Z);
  ASSERT_OK_AND_ASSIGN(Array zf, Z - F);
  EXPECT_EQ(zd.info().dtype(), v1::DTYPE_COMPLEX128);
  EXPECT_EQ(kz.info().dtype(), v1::DTYPE_COMPLEX128);
  EXPECT_EQ(zf.info().dtype(), v1::DTYPE_COMPLEX64);
  ASSERT_OK_AND_ASSIGN(std::vector<C128> zdv, zd.Download<C128>());
  ASSERT_OK_AND_ASSIGN(std::vector<C128> kzv, kz.Download<C128>());
  ASSERT_OK_AND_ASSIGN(std::vector<C64> zfv, zf.Download<C64>());
  for (int i = 0; i < 8; ++i) {
    const C128 wide(z[i].real(), z[i].imag());
    EXPECT_EQ(zdv[i], wide + d[i]) << i;
    EXPECT_EQ(kzv[i], static_cast<double>(k[i]) * wide) << i;
    EXPECT_EQ(zfv[i], z[i] - f[i]) << i;
  }

  // astype: real to complex has a zero imaginary part; complex to real keeps the real part (as
  // NumPy, which also warns); to bool, whether either part is nonzero; complex128 -> complex64
  // rounds each part.
  ASSERT_OK_AND_ASSIGN(Array fz, AsType(F, v1::DTYPE_COMPLEX128));
  ASSERT_OK_AND_ASSIGN(std::vector<C128> fzv, fz.Download<C128>());
  ASSERT_OK_AND_ASSIGN(Array re, AsType(Z, v1::DTYPE_FLOAT64));
  ASSERT_OK_AND_ASSIGN(std::vector<double> rev, re.Download<double>());
  ASSERT_OK_AND_ASSIGN(Array narrowed, AsType(zd, v1::DTYPE_COMPLEX64));
  ASSERT_OK_AND_ASSIGN(std::vector<C64> nv, narrowed.Download<C64>());
  ASSERT_OK_AND_ASSIGN(Array truth, AsType(fz, v1::DTYPE_BOOL));
  ASSERT_OK_AND_ASSIGN(std::vector<bool> tv, truth.Download<bool>());
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(fzv[i], C128(f[i], 0)) << i;
    EXPECT_EQ(rev[i], static_cast<double>(z[i].real())) << i;
    EXPECT_EQ(nv[i], C64(static_cast<float>(zdv[i].real()), static_cast<float>(zdv[i].imag())))
        << i;
    EXPECT_EQ(tv[i], f[i] != 0) << i;
  }
}

// Complex scalars are weak, as Python's complex in NumPy 2: complex64 with float32 arrays (and
// complex ones), complex128 with float64 and integers; a fill takes one as its value.
TEST_P(ComplexTest, ComplexScalarsAreWeakAsInNumPy) {
  const v1::IndexMap map = Split(1, 0, 6, {dev(0), dev(1)});
  const std::vector<float> f = {0.5f, -1.25f, 2, 0, 3.5f, -7};
  const std::vector<int32_t> k = {1, -2, 3, 0, 5, -6};
  ASSERT_OK_AND_ASSIGN(Array F, client().Upload<float>(f, {6}, {map}));
  ASSERT_OK_AND_ASSIGN(Array K, client().Upload<int32_t>(k, {6}, {map}));
  const std::complex<double> w(0.5, -2);
  ASSERT_OK_AND_ASSIGN(Array fw, Ufunc(v1::ELEMENTWISE_OP_MULTIPLY, {F, w}));
  ASSERT_OK_AND_ASSIGN(Array kw, Ufunc(v1::ELEMENTWISE_OP_ADD, {w, K}));
  EXPECT_EQ(fw.info().dtype(), v1::DTYPE_COMPLEX64);
  EXPECT_EQ(kw.info().dtype(), v1::DTYPE_COMPLEX128);
  ASSERT_OK_AND_ASSIGN(std::vector<C64> fwv, fw.Download<C64>());
  ASSERT_OK_AND_ASSIGN(std::vector<C128> kwv, kw.Download<C128>());
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(fwv[i], C64(f[i], 0) * C64(0.5f, -2.0f)) << i;
    EXPECT_EQ(kwv[i], w + static_cast<double>(k[i])) << i;
  }
  // A complex condition is true where either part is nonzero (NumPy's bool(1j)).
  ASSERT_OK_AND_ASSIGN(Array picked,
                       Ufunc(v1::ELEMENTWISE_OP_WHERE, {std::complex<double>(0, 1), F, 0.0f}));
  ASSERT_OK_AND_ASSIGN(std::vector<float> pv, picked.Download<float>());
  EXPECT_EQ(pv, f);
  // z == (0.5 - 2j) picks the elements equal to the scalar.
  ASSERT_OK_AND_ASSIGN(Array eq,
                       Ufunc(v1::ELEMENTWISE_OP_EQUAL, {fw, std::complex<double>(0.25, -1)}));
  ASSERT_OK_AND_ASSIGN(std::vector<bool> eqv, eq.Download<bool>());
  EXPECT_EQ(eqv, (std::vector<bool>{true, false, false, false, false, false}));

  v1::Fill full;
  full.mutable_full()->mutable_value()->mutable_complex_value()->set_real(1.5);
  full.mutable_full()->mutable_value()->mutable_complex_value()->set_imag(-0.25);
  ASSERT_OK_AND_ASSIGN(
      Array c, client().Create({3}, v1::DTYPE_COMPLEX64, ArrayOpts(OnDevice(1, dev(1))), full));
  ASSERT_OK_AND_ASSIGN(std::vector<C64> cv, c.Download<C64>());
  EXPECT_EQ(cv, std::vector<C64>(3, C64(1.5f, -0.25f)));
  EXPECT_TRUE(StatusIs(
      client().Create({3}, v1::DTYPE_FLOAT32, ArrayOpts(OnDevice(1, dev(1))), full).status(),
      absl::StatusCode::kInvalidArgument, {"fill.full.value", "(1.5-0.25j)", "float32"}));
}

TEST_P(ComplexTest, WhatNumPyDoesNotDefineSaysSo) {
  std::mt19937_64 rng(3);
  const std::vector<C64> z = RandomComplex<C64>(4, rng);
  ASSERT_OK_AND_ASSIGN(Array a, client().Upload<C64>(z, {4}, {OnDevice(1, dev(0))}));
  // Ufuncs NumPy has no complex loop for.
  for (v1::ElementwiseOp op : {v1::ELEMENTWISE_OP_FLOOR_DIVIDE, v1::ELEMENTWISE_OP_BITWISE_AND,
                               v1::ELEMENTWISE_OP_ARCTAN2}) {
    EXPECT_TRUE(StatusIs(Ufunc(op, {a, a}).status(), absl::StatusCode::kInvalidArgument,
                         {"spec.op", "complex64"}))
        << v1::ElementwiseOp_Name(op);
  }
  ASSERT_OK_AND_ASSIGN(
      Array m, client().Create({2, 2}, v1::DTYPE_COMPLEX128, ArrayOpts(OnDevice(2, dev(0)))));
  ASSERT_OK_AND_ASSIGN(
      Array m64, client().Create({2, 2}, v1::DTYPE_COMPLEX64, ArrayOpts(OnDevice(2, dev(0)))));
  EXPECT_TRUE(StatusIs(Matmul(m, m64).status(), absl::StatusCode::kInvalidArgument,
                       {"spec.b", "complex64", "complex128"}));
  ASSERT_OK_AND_ASSIGN(std::vector<C64> after, a.Download<C64>());
  EXPECT_EQ(after, z);
}

// sum, prod and mean of complex arrays accumulate in complex128 and return the array's dtype;
// all and any test either part. Rows 2 and 3 are held twice and count once.
template <typename C>
void CheckReductions(const Client& client, int d0, int d1) {
  SCOPED_TRACE(DTypeStr(DTypeOf<C>()));
  using R = typename C::value_type;
  std::mt19937_64 rng(sizeof(C));
  const int64_t rows = 6, cols = 8, depth = 5;
  const size_t n = rows * cols * depth;
  // Values near 1 in magnitude, so that products of 40 neither overflow nor vanish.
  std::vector<C> z = RandomComplex<C>(n, rng, -1, 1);
  for (C& v : z) v = C(v.real() * R(0.3) + R(0.9), v.imag() * R(0.3));
  z[7] = C(0, 0);  // a zero for all()
  const v1::IndexMap overlapping = MakeIndexMap(
      {MakeChunk(d0, {SliceSpec{0, 4}, {}, {}}), MakeChunk(d1, {SliceSpec{2, 6}, {}, {}})});
  ASSERT_OK_AND_ASSIGN(Array a, client.Upload<C>(z, {rows, cols, depth}, {overlapping}));
  auto at = [&](int64_t i, int64_t j, int64_t k) { return Wide(z[(i * cols + j) * depth + k]); };
  struct Case {
    v1::ReduceOp op;
    std::vector<int32_t> axes;
  };
  for (const Case& c : {Case{v1::REDUCE_OP_SUM, {0}}, Case{v1::REDUCE_OP_SUM, {1, 2}},
                        Case{v1::REDUCE_OP_MEAN, {1}}, Case{v1::REDUCE_OP_PROD, {2}},
                        Case{v1::REDUCE_OP_PROD, {0, 1}}, Case{v1::REDUCE_OP_MEAN, {}}}) {
    const std::string what = absl::StrCat(v1::ReduceOp_Name(c.op), " over ", c.axes.size(),
                                          c.axes.empty() ? " (all)" : " axes");
    ASSERT_OK_AND_ASSIGN(Array out, Reduce(a, c.op, c.axes));
    EXPECT_EQ(out.info().dtype(), DTypeOf<C>()) << what;
    ASSERT_OK_AND_ASSIGN(std::vector<C> got, out.Download<C>());
    const std::vector<bool> reduced = {c.axes.empty() || absl::c_linear_search(c.axes, 0),
                                       c.axes.empty() || absl::c_linear_search(c.axes, 1),
                                       c.axes.empty() || absl::c_linear_search(c.axes, 2)};
    const int64_t extent[3] = {rows, cols, depth};
    std::vector<CL> want;
    std::vector<long double> scale;
    // Outputs in C order over the kept axes.
    for (int64_t i = 0; i < (reduced[0] ? 1 : rows); ++i) {
      for (int64_t j = 0; j < (reduced[1] ? 1 : cols); ++j) {
        for (int64_t k = 0; k < (reduced[2] ? 1 : depth); ++k) {
          CL acc = c.op == v1::REDUCE_OP_PROD ? CL(1) : CL(0);
          long double magnitude = 0;
          int64_t count = 0;
          for (int64_t x = 0; x < (reduced[0] ? extent[0] : 1); ++x) {
            for (int64_t y = 0; y < (reduced[1] ? extent[1] : 1); ++y) {
              for (int64_t w = 0; w < (reduced[2] ? extent[2] : 1); ++w) {
                const CL v = at(reduced[0] ? x : i, reduced[1] ? y : j, reduced[2] ? w : k);
                acc = c.op == v1::REDUCE_OP_PROD ? acc * v : acc + v;
                magnitude += std::abs(v);
                ++count;
              }
            }
          }
          if (c.op == v1::REDUCE_OP_MEAN) {
            acc /= static_cast<long double>(count);
            magnitude /= static_cast<long double>(count);
          }
          want.push_back(acc);
          // A sum's partials round to the dtype on each device before they combine: an error
          // relative to the summed magnitudes; a product's is relative to itself.
          scale.push_back(c.op == v1::REDUCE_OP_PROD ? std::abs(acc) : std::abs(acc) + magnitude);
        }
      }
    }
    EXPECT_TRUE(ComplexMatch(got, want, scale, 8, what));
  }
  ASSERT_OK_AND_ASSIGN(Array all, Reduce(a, v1::REDUCE_OP_ALL, {2}));
  ASSERT_OK_AND_ASSIGN(Array any, Reduce(a, v1::REDUCE_OP_ANY));
  ASSERT_OK_AND_ASSIGN(std::vector<bool> allv, all.Download<bool>());
  ASSERT_OK_AND_ASSIGN(std::vector<bool> anyv, any.Download<bool>());
  for (int64_t r = 0; r < rows * cols; ++r) EXPECT_EQ(allv[r], r != 1) << "all, output " << r;
  EXPECT_EQ(anyv, std::vector<bool>{true});
}

TEST_P(ComplexTest, SumsProductsAndMeansCountEachElementOnce) {
  CheckReductions<C64>(client(), dev(0), dev(1));
  CheckReductions<C128>(client(), dev(0), dev(1));
}

// max/min/argmax/argmin in NumPy's order, over rows split across devices (the partial maxima
// combine in MAX/MIN mode). Parts are small integers, so real parts tie often and the imaginary
// parts decide; a NaN in either part wins max and min, and argmax/argmin point at the first.
template <typename C>
void CheckExtremes(const Client& client, int d0, int d1) {
  SCOPED_TRACE(DTypeStr(DTypeOf<C>()));
  using R = typename C::value_type;
  std::mt19937_64 rng(sizeof(C) + 7);
  std::uniform_int_distribution<int> part(-3, 3);
  const int64_t rows = 7, cols = 6;
  std::vector<C> z(rows * cols);
  for (C& v : z) v = C(part(rng), part(rng));
  const R nan = std::numeric_limits<R>::quiet_NaN();
  z[2 * cols + 4] = C(1, nan);  // row 2
  z[5 * cols + 1] = C(nan, 0);  // row 5
  z[5 * cols + 3] = C(2, nan);
  ASSERT_OK_AND_ASSIGN(Array a,
                       client.Upload<C>(z, {rows, cols},
                                        {MakeIndexMap({MakeChunk(d0, {SliceSpec{0, 4}, {}}),
                                                       MakeChunk(d1, {SliceSpec{3, 7}, {}})})}));
  // Over each row (axis 1) and over everything.
  for (bool max : {true, false}) {
    const std::string what = max ? "max" : "min";
    auto beats = [&](C x, C best) { return max ? LexLess(best, x) : LexLess(x, best); };
    std::vector<C> want_value;
    std::vector<int64_t> want_index;
    for (int64_t r = 0; r <= rows; ++r) {  // r == rows: the whole array
      const int64_t begin = r == rows ? 0 : r * cols, end = r == rows ? rows * cols : begin + cols;
      int64_t best = begin;
      for (int64_t i = begin; i < end && !HasNan(z[best]); ++i) {
        if (HasNan(z[i]) || beats(z[i], z[best])) best = i;
      }
      want_value.push_back(z[best]);
      want_index.push_back(r == rows ? best : best - begin);
    }
    const v1::ReduceOp value_op = max ? v1::REDUCE_OP_MAX : v1::REDUCE_OP_MIN;
    const v1::ReduceOp index_op = max ? v1::REDUCE_OP_ARGMAX : v1::REDUCE_OP_ARGMIN;
    ASSERT_OK_AND_ASSIGN(Array per_row, Reduce(a, value_op, {1}));
    ASSERT_OK_AND_ASSIGN(Array overall, Reduce(a, value_op));
    ASSERT_OK_AND_ASSIGN(Array per_row_index, Reduce(a, index_op, {1}));
    ASSERT_OK_AND_ASSIGN(Array overall_index, Reduce(a, index_op));
    EXPECT_EQ(per_row.info().dtype(), DTypeOf<C>());
    ASSERT_OK_AND_ASSIGN(std::vector<C> values, per_row.Download<C>());
    ASSERT_OK_AND_ASSIGN(std::vector<C> value, overall.Download<C>());
    ASSERT_OK_AND_ASSIGN(std::vector<int64_t> indices, per_row_index.Download<int64_t>());
    ASSERT_OK_AND_ASSIGN(std::vector<int64_t> index, overall_index.Download<int64_t>());
    values.push_back(value.at(0));
    indices.push_back(index.at(0));
    for (int64_t r = 0; r <= rows; ++r) {
      // Which NaN a max returns is unspecified between NaN elements (as for real NaNs); it is
      // one of them.
      if (HasNan(want_value[r])) {
        EXPECT_TRUE(HasNan(values[r])) << what << " of row " << r;
      } else {
        EXPECT_EQ(values[r], want_value[r]) << what << " of row " << r;
      }
      EXPECT_EQ(indices[r], want_index[r]) << "arg" << what << " of row " << r;
    }
  }
}

TEST_P(ComplexTest, MaximaAndMinimaFollowNumPysOrder) {
  CheckExtremes<C64>(client(), dev(0), dev(1));
  CheckExtremes<C128>(client(), dev(0), dev(1));
}

// Complex GEMM (cuBLAS's C/Z types, OpenBLAS's cgemm/zgemm) against a long double reference: a
// k-split product (a SUM-mode result) and a stack times a matrix. Each part is within a few units
// per product of sum_p |a_ip| |b_pj|, the scale of the rounding error.
template <typename C>
void CheckMatmul(const Client& client, int d0, int d1, int64_t batch, int64_t m, int64_t k,
                 int64_t n, bool split_k) {
  SCOPED_TRACE(absl::StrCat(DTypeStr(DTypeOf<C>()), " batch ", batch, split_k ? " k-split" : ""));
  std::mt19937_64 rng(m * 1000 + k);
  const std::vector<C> a = RandomComplex<C>(batch * m * k, rng);
  const std::vector<C> b = RandomComplex<C>(k * n, rng);
  const std::vector<int64_t> a_shape =
      batch > 1 ? std::vector<int64_t>{batch, m, k} : std::vector<int64_t>{m, k};
  const int rank = static_cast<int>(a_shape.size());
  const v1::IndexMap a_map =
      split_k ? Split(rank, rank - 1, k, {d0, d1}) : Split(rank, 0, a_shape[0], {d0, d1});
  const v1::IndexMap b_map = split_k ? Split(2, 0, k, {d0, d1}) : Replicated(2, {d0, d1});
  ASSERT_OK_AND_ASSIGN(Array A, client.Upload<C>(a, a_shape, {a_map}));
  ASSERT_OK_AND_ASSIGN(Array B, client.Upload<C>(b, {k, n}, {b_map}));
  ASSERT_OK_AND_ASSIGN(Array P, Matmul(A, B));
  EXPECT_EQ(P.info().dtype(), DTypeOf<C>());
  ASSERT_OK_AND_ASSIGN(std::vector<C> got, P.Download<C>());
  std::vector<CL> want(batch * m * n);
  std::vector<long double> scale(batch * m * n);
  for (int64_t e = 0; e < batch; ++e) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        CL acc = 0;
        long double magnitude = 0;
        for (int64_t p = 0; p < k; ++p) {
          const CL x = Wide(a[(e * m + i) * k + p]), y = Wide(b[p * n + j]);
          acc += x * y;
          magnitude += std::abs(x) * std::abs(y);
        }
        want[(e * m + i) * n + j] = acc;
        scale[(e * m + i) * n + j] = magnitude;
      }
    }
  }
  EXPECT_TRUE(ComplexMatch(got, want, scale, 4, "matmul"));
}

TEST_P(ComplexTest, MatmulMatchesALongDoubleReference) {
  CheckMatmul<C64>(client(), dev(0), dev(1), 1, 33, 40, 17, /*split_k=*/true);
  CheckMatmul<C128>(client(), dev(0), dev(1), 1, 33, 40, 17, /*split_k=*/true);
  CheckMatmul<C64>(client(), dev(0), dev(1), 6, 9, 12, 7, /*split_k=*/false);
  CheckMatmul<C128>(client(), dev(0), dev(1), 6, 9, 12, 7, /*split_k=*/false);
}

// A loop over a complex array runs in RunGraph (op by op: fused kernels hold real numbers).
TEST_P(ComplexTest, AProgramLoopsOverAComplexArray) {
  std::mt19937_64 rng(11);
  const std::vector<C64> z = RandomComplex<C64>(16, rng, -1, 1);
  ASSERT_OK_AND_ASSIGN(Array a, client().Upload<C64>(z, {16}, {Split(1, 0, 16, {dev(0), dev(1)})}));
  ASSERT_OK_AND_ASSIGN(Array i0,
                       client().Create({}, v1::DTYPE_INT32, ArrayOpts(OnDevice(0, dev(0)))));
  // while i < 5: z = z * w; i += 1, with w = 1j everywhere (a quarter turn per iteration).
  ASSERT_OK_AND_ASSIGN(Array w, client().Upload<C64>(std::vector<C64>(16, C64(0, 1)), {16},
                                                     {Split(1, 0, 16, {dev(0), dev(1)})}));
  namespace g = distarray::graph;
  g::ProgramBuilder p;
  const g::Var z_in = p.Input("z");
  const g::Var w_in = p.Input("w");
  const g::Var i_in = p.Input("i");
  g::Vars out = p.WhileLoop([](auto v) { return g::All(v[1] < 5); },
                            [&](auto v) {
                              return g::Vars{v[0] * w_in, v[1] + 1};
                            },
                            {z_in, i_in}, 100);
  p.Output("z", out[0]);
  ASSERT_OK_AND_ASSIGN(GraphRun r,
                       client().RunGraph(p.program(), {{"z", &a}, {"w", &w}, {"i", &i0}}));
  EXPECT_EQ(r.iterations, 5);
  EXPECT_FALSE(r.hit_iteration_cap);
  ASSERT_OK_AND_ASSIGN(std::vector<C64> got, r.outputs.at("z").Download<C64>());
  for (size_t k = 0; k < z.size(); ++k) {
    // Five quarter turns: z * i^5 = z * i = (-im, re), exactly.
    EXPECT_EQ(got[k], C64(-z[k].imag(), z[k].real())) << k;
  }
}

DISTARRAY_INSTANTIATE_BACKENDS(ComplexTest);

}  // namespace
}  // namespace distarray::testing
