// The C++ SDK's composed linear algebra (distarray/linalg_functions.h) and Take, Tile and Repeat
// (distarray/array_functions.h) against host references in long double on fresh random data,
// with operands split over devices along different axes: matrix_transpose, diagonal and trace at
// every offset, vecdot with broadcasting, tensordot by pairs and by count, cross along either
// axis, the vector norms of every order and the matrix norms without singular values; and the
// refusals of bad arguments by name.
#include <algorithm>
#include <cmath>
#include <complex>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "distarray/array_functions.h"
#include "distarray/index_maps.h"
#include "distarray/linalg_functions.h"
#include "tests/support/backend_fixture.h"

namespace distarray::testing {
namespace {

// A host array: C-order values and shape, read by multi-index.
struct Host {
  std::vector<int64_t> shape;
  std::vector<double> v;
  double at(const std::vector<int64_t>& index) const {
    int64_t flat = 0;
    for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + index[d];
    return v[flat];
  }
};

std::vector<int64_t> Unflatten(int64_t i, const std::vector<int64_t>& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = i % shape[d];
    i /= shape[d];
  }
  return index;
}

class LinalgFunctionsTest : public BackendTest {
 protected:
  Host Random(std::vector<int64_t> shape) {
    Host h{std::move(shape), {}};
    int64_t n = 1;
    for (int64_t e : h.shape) n *= e;
    std::uniform_real_distribution<double> u(-1, 1);
    for (int64_t i = 0; i < n; ++i) h.v.push_back(u(rng_));
    return h;
  }

  // `h` on the devices, split along `axis` over two of them.
  Array Put(const Host& h, int axis = 0) {
    std::vector<int> on = {dev(0)};
    if (devices() > 1) on.push_back(dev(1));
    absl::StatusOr<Array> a = client().Upload<double>(
        h.v, h.shape, {Split(static_cast<int>(h.shape.size()), axis, h.shape[axis], on)});
    EXPECT_TRUE(a.ok()) << a.status();
    return *std::move(a);
  }

  // `got` is `shape` with element (multi-index) equal to want(index) within `tolerance`.
  static void Expect(const absl::StatusOr<Array>& got, const std::vector<int64_t>& shape,
                     const std::function<double(const std::vector<int64_t>&)>& want,
                     const std::string& what, double tolerance = 1e-12) {
    ASSERT_TRUE(got.ok()) << what << ": " << got.status();
    ASSERT_EQ(got->shape(), shape) << what;
    ASSERT_OK_AND_ASSIGN(std::vector<double> values, got->Download<double>());
    for (size_t i = 0; i < values.size(); ++i) {
      const std::vector<int64_t> index = Unflatten(static_cast<int64_t>(i), shape);
      EXPECT_NEAR(values[i], want(index), tolerance) << what << " at " << i;
    }
  }

  static void ExpectInvalid(const absl::Status& status, const std::string& field,
                            const std::string& what) {
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << what << ": " << status;
    EXPECT_TRUE(absl::StartsWith(status.message(), field + ":")) << what << ": " << status;
  }

  std::mt19937_64 rng_{93};
};

TEST_P(LinalgFunctionsTest, TakeTileAndRepeatMatchTheHost) {
  const Host m = Random({6, 5});
  for (int split : {0, 1}) {
    const Array a = Put(m, split);
    const std::vector<int64_t> positions = {4, -1, 0, 0, 2};
    ASSERT_OK_AND_ASSIGN(Array idx,
                         client().Upload<int64_t>(positions, {5}, {OnDevice(1, dev(1))}));
    for (int axis : {0, 1}) {
      std::vector<int64_t> shape = m.shape;
      shape[axis] = 5;
      Expect(
          Take(a, idx, axis), shape,
          [&](std::vector<int64_t> i) {
            const int64_t p = positions[i[axis]];
            i[axis] = p < 0 ? p + m.shape[axis] : p;
            return m.at(i);
          },
          "take axis " + std::to_string(axis));
      Expect(
          Repeat(a, 3, axis), axis == 0 ? std::vector<int64_t>{18, 5} : std::vector<int64_t>{6, 15},
          [&](std::vector<int64_t> i) {
            i[axis] /= 3;
            return m.at(i);
          },
          "repeat axis " + std::to_string(axis));
    }
    Expect(
        Tile(a, {2, 3}), {12, 15},
        [&](const std::vector<int64_t>& i) {
          return m.at({i[0] % 6, i[1] % 5});
        },
        "tile (2, 3)");
    Expect(
        Tile(a, {2, 1, 2}), {2, 6, 10},
        [&](const std::vector<int64_t>& i) {
          return m.at({i[1], i[2] % 5});
        },
        "tile with a longer reps");
    Expect(
        Tile(a, {3}), {6, 15},
        [&](const std::vector<int64_t>& i) {
          return m.at({i[0], i[1] % 5});
        },
        "tile with a shorter reps");
    Expect(
        Repeat(a, 0, 1), {6, 0}, [](const std::vector<int64_t>&) { return 0.0; }, "repeat 0 times");
    // An index past the axis is OUT_OF_RANGE (the daemon's check), naming the axis.
    ASSERT_OK_AND_ASSIGN(
        Array far, client().Upload<int64_t>(std::vector<int64_t>{7}, {1}, {OnDevice(1, dev(0))}));
    EXPECT_EQ(Take(a, far, 0).status().code(), absl::StatusCode::kOutOfRange);
  }
}

TEST_P(LinalgFunctionsTest, TransposeDiagonalAndTraceMatchTheHost) {
  const Host t = Random({3, 4, 6});
  for (int split : {0, 2}) {
    const Array a = Put(t, split);
    Expect(
        MatrixTranspose(a), {3, 6, 4},
        [&](const std::vector<int64_t>& i) {
          return t.at({i[0], i[2], i[1]});
        },
        "matrix_transpose");
    for (int64_t offset = -4; offset <= 7; ++offset) {
      const int64_t length = std::max<int64_t>(
          0, offset >= 0 ? std::min<int64_t>(4, 6 - offset) : std::min<int64_t>(4 + offset, 6));
      const std::string what = "offset " + std::to_string(offset);
      auto element = [&](int64_t b, int64_t k) {
        return offset >= 0 ? t.at({b, k, k + offset}) : t.at({b, k - offset, k});
      };
      Expect(
          Diagonal(a, offset), {3, length},
          [&](const std::vector<int64_t>& i) { return element(i[0], i[1]); }, "diagonal " + what);
      Expect(
          Trace(a, offset), {3},
          [&](const std::vector<int64_t>& i) {
            long double sum = 0;
            for (int64_t k = 0; k < length; ++k) sum += element(i[0], k);
            return static_cast<double>(sum);
          },
          "trace " + what);
    }
  }
}

TEST_P(LinalgFunctionsTest, ProductsMatchTheHost) {
  const Host x = Random({4, 5, 3}), y = Random({5, 3});
  const Array a = Put(x, 1), b = Put(y, 0);
  Expect(
      Vecdot(a, b), {4, 5},
      [&](const std::vector<int64_t>& i) {
        long double s = 0;
        for (int64_t k = 0; k < 3; ++k) s += x.at({i[0], i[1], k}) * y.at({i[1], k});
        return static_cast<double>(s);
      },
      "vecdot axis -1");
  Expect(
      Vecdot(a, b, -2), {4, 3},
      [&](const std::vector<int64_t>& i) {
        long double s = 0;
        for (int64_t k = 0; k < 5; ++k) s += x.at({i[0], k, i[1]}) * y.at({k, i[1]});
        return static_cast<double>(s);
      },
      "vecdot axis -2");

  const Host p = Random({3, 4, 5}), q = Random({5, 4, 2});
  const Array c = Put(p, 2), d = Put(q, 0);
  Expect(
      Tensordot(c, d, {1, 2}, {1, 0}), {3, 2},
      [&](const std::vector<int64_t>& i) {
        long double s = 0;
        for (int64_t j = 0; j < 4; ++j) {
          for (int64_t k = 0; k < 5; ++k) s += p.at({i[0], j, k}) * q.at({k, j, i[1]});
        }
        return static_cast<double>(s);
      },
      "tensordot by pairs");
  Expect(
      Tensordot(c, d, 1), {3, 4, 4, 2},
      [&](const std::vector<int64_t>& i) {
        long double s = 0;
        for (int64_t k = 0; k < 5; ++k) s += p.at({i[0], i[1], k}) * q.at({k, i[2], i[3]});
        return static_cast<double>(s);
      },
      "tensordot n = 1");
  Expect(
      Tensordot(c, d, 0), {3, 4, 5, 5, 4, 2},
      [&](const std::vector<int64_t>& i) {
        return p.at({i[0], i[1], i[2]}) * q.at({i[3], i[4], i[5]});
      },
      "tensordot n = 0 (outer)");

  const Host u = Random({4, 3}), w = Random({4, 3});
  for (int split : {0, 1}) {
    Expect(
        Cross(Put(u, split), Put(w, split)), {4, 3},
        [&](const std::vector<int64_t>& i) {
          const int64_t r = i[0], j = (i[1] + 1) % 3, k = (i[1] + 2) % 3;
          return u.at({r, j}) * w.at({r, k}) - u.at({r, k}) * w.at({r, j});
        },
        "cross along the last axis");
  }
  const Host ut = Random({3, 5}), wt = Random({3, 5});
  Expect(
      Cross(Put(ut, 1), Put(wt, 0), 0), {3, 5},
      [&](const std::vector<int64_t>& i) {
        const int64_t c0 = i[1], j = (i[0] + 1) % 3, k = (i[0] + 2) % 3;
        return ut.at({j, c0}) * wt.at({k, c0}) - ut.at({k, c0}) * wt.at({j, c0});
      },
      "cross along axis 0");
}

TEST_P(LinalgFunctionsTest, NormsMatchTheHost) {
  const Host m = Random({2, 6, 5});
  const Array a = Put(m, 1);
  // |x| over the elements of matrix b (axes {1, 2}) or of row (b, r) (axis {2}).
  auto elements = [&](int64_t b, int64_t row) {
    std::vector<long double> out;
    for (int64_t r = 0; r < 6; ++r) {
      for (int64_t c = 0; c < 5; ++c) {
        if (row < 0 || r == row) out.push_back(std::fabs(m.at({b, r, c})));
      }
    }
    return out;
  };
  auto norm = [](const std::vector<long double>& x, double ord) {
    long double r = 0;
    if (std::isinf(ord)) {
      r = ord > 0 ? *std::max_element(x.begin(), x.end()) : *std::min_element(x.begin(), x.end());
    } else if (ord == 0) {
      for (long double e : x) r += e != 0;
    } else {
      for (long double e : x) r += std::pow(e, static_cast<long double>(ord));
      r = std::pow(r, 1 / static_cast<long double>(ord));
    }
    return static_cast<double>(r);
  };
  for (double ord : {2.0, 1.0, 3.0, 0.0, 0.5, double(INFINITY), -double(INFINITY)}) {
    const std::string what = "ord " + std::to_string(ord);
    Expect(
        VectorNorm(a, ord, {1, 2}), {2},
        [&](const std::vector<int64_t>& i) { return norm(elements(i[0], -1), ord); },
        "vector_norm of each matrix, " + what, 1e-11);
    Expect(
        VectorNorm(a, ord, {-1}, /*keepdims=*/true), {2, 6, 1},
        [&](const std::vector<int64_t>& i) { return norm(elements(i[0], i[1]), ord); },
        "vector_norm of each row, " + what, 1e-11);
  }
  Expect(
      VectorNorm(a), {},
      [&](const std::vector<int64_t>&) {
        std::vector<long double> all = elements(0, -1), second = elements(1, -1);
        all.insert(all.end(), second.begin(), second.end());
        return norm(all, 2);
      },
      "vector_norm of every element");

  auto column_sums = [&](int64_t b) {
    std::vector<long double> s(5, 0);
    for (int64_t r = 0; r < 6; ++r) {
      for (int64_t c = 0; c < 5; ++c) s[c] += std::fabs(m.at({b, r, c}));
    }
    return s;
  };
  auto row_sums = [&](int64_t b) {
    std::vector<long double> s(6, 0);
    for (int64_t r = 0; r < 6; ++r) {
      for (int64_t c = 0; c < 5; ++c) s[r] += std::fabs(m.at({b, r, c}));
    }
    return s;
  };
  auto extreme = [](const std::vector<long double>& s, bool largest) {
    return static_cast<double>(largest ? *std::max_element(s.begin(), s.end())
                                       : *std::min_element(s.begin(), s.end()));
  };
  Expect(
      MatrixNorm(a), {2},
      [&](const std::vector<int64_t>& i) { return norm(elements(i[0], -1), 2); }, "frobenius");
  Expect(
      MatrixNorm(a, MatrixNormOrd::kMaxColumnSum), {2},
      [&](const std::vector<int64_t>& i) { return extreme(column_sums(i[0]), true); }, "ord 1");
  Expect(
      MatrixNorm(a, MatrixNormOrd::kMinColumnSum, /*keepdims=*/true), {2, 1, 1},
      [&](const std::vector<int64_t>& i) { return extreme(column_sums(i[0]), false); }, "ord -1");
  Expect(
      MatrixNorm(a, MatrixNormOrd::kMaxRowSum), {2},
      [&](const std::vector<int64_t>& i) { return extreme(row_sums(i[0]), true); }, "ord inf");
  Expect(
      MatrixNorm(a, MatrixNormOrd::kMinRowSum), {2},
      [&](const std::vector<int64_t>& i) { return extreme(row_sums(i[0]), false); }, "ord -inf");
}

TEST_P(LinalgFunctionsTest, BadArgumentsAreRefusedByName) {
  const Array m = Put(Random({4, 3}));
  const Array v = Put(Random({4}));
  ASSERT_OK_AND_ASSIGN(Array f32, client().Upload<float>(std::vector<float>(12, 1.0f), {4, 3},
                                                         {OnDevice(2, dev(0))}));
  ExpectInvalid(MatrixTranspose(v).status(), "a", "transpose of a vector");
  ExpectInvalid(Diagonal(v).status(), "a", "diagonal of a vector");
  ExpectInvalid(Vecdot(m, f32).status(), "b", "vecdot of two dtypes");
  ExpectInvalid(Vecdot(m, m, 2).status(), "axis", "vecdot along a missing axis");
  ExpectInvalid(Tensordot(m, m, {0}, {0, 1}).status(), "b_axes", "unequal axis lists");
  ExpectInvalid(Tensordot(m, m, {1}, {1, 1}).status(), "b_axes", "unequal axis lists");
  ExpectInvalid(Tensordot(m, m, {1}, {0}).status(), "b_axes", "lengths 3 and 4");
  ExpectInvalid(Tensordot(m, m, {0, 0}, {0, 1}).status(), "a_axes", "an axis twice");
  ExpectInvalid(Tensordot(m, m, 3).status(), "n", "more axes than a has");
  ExpectInvalid(Cross(m, m, 0).status(), "axis", "cross along 4 elements");
  ExpectInvalid(Cross(m, v).status(), "b", "cross of two shapes");
  ExpectInvalid(VectorNorm(m, NAN).status(), "ord", "a NaN order");
  ExpectInvalid(VectorNorm(m, 2, {2}).status(), "axes", "a norm over a missing axis");
  ExpectInvalid(MatrixNorm(v).status(), "a", "a matrix norm of a vector");
  ExpectInvalid(Take(m, m).status(), "indices", "a 2-D index array");
  ExpectInvalid(Take(m, v, 2).status(), "axis", "take along a missing axis");
  ExpectInvalid(Tile(m, {2, -1}).status(), "reps", "a negative count");
  ExpectInvalid(Repeat(m, -2, 0).status(), "repeats", "a negative count");
  ExpectInvalid(Repeat(m, 2, -3).status(), "axis", "repeat along a missing axis");
}

// Complex operands as NumPy's and the array API's: Vecdot conjugates its first operand, Cross
// conjugates nothing, Variance and Std are real (|x - mean|^2), against long-double host sums on
// fresh random values, one device and split.
TEST_P(LinalgFunctionsTest, ComplexVecdotCrossAndVarianceMatchTheHost) {
  using C = std::complex<double>;
  std::mt19937_64 rng(59);
  std::uniform_real_distribution<double> u(-1, 1);
  const int64_t rows = 6;
  std::vector<C> x(rows * 3), y(rows * 3);
  for (C& v : x) v = C(u(rng), u(rng));
  for (C& v : y) v = C(u(rng), u(rng));
  for (const v1::IndexMap& map :
       {OnDevice(2, dev(0)), Split(2, 0, rows, {dev(0), dev(1), dev(2)})}) {
    ASSERT_OK_AND_ASSIGN(Array a, client().Upload<C>(x, {rows, 3}, {map}));
    ASSERT_OK_AND_ASSIGN(Array b, client().Upload<C>(y, {rows, 3}, {map}));
    ASSERT_OK_AND_ASSIGN(Array dot, Vecdot(a, b));
    ASSERT_OK_AND_ASSIGN(std::vector<C> dots, dot.Download<C>());
    ASSERT_EQ(dots.size(), static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      long double re = 0, im = 0;
      for (int k = 0; k < 3; ++k) {
        const C p = std::conj(x[r * 3 + k]) * y[r * 3 + k];
        re += p.real();
        im += p.imag();
      }
      EXPECT_NEAR(dots[r].real(), static_cast<double>(re), 1e-14) << r;
      EXPECT_NEAR(dots[r].imag(), static_cast<double>(im), 1e-14) << r;
    }
    ASSERT_OK_AND_ASSIGN(Array cross, Cross(a, b));
    ASSERT_OK_AND_ASSIGN(std::vector<C> crosses, cross.Download<C>());
    ASSERT_EQ(crosses.size(), x.size());
    for (int64_t r = 0; r < rows; ++r) {
      const C* p = &x[r * 3];
      const C* q = &y[r * 3];
      const C want[3] = {p[1] * q[2] - p[2] * q[1], p[2] * q[0] - p[0] * q[2],
                         p[0] * q[1] - p[1] * q[0]};
      for (int k = 0; k < 3; ++k) {
        EXPECT_NEAR(std::abs(crosses[r * 3 + k] - want[k]), 0.0, 1e-14) << r << "," << k;
      }
    }
    ASSERT_OK_AND_ASSIGN(Array var, Variance(a, {0}, 1.0));
    EXPECT_EQ(var.info().dtype(), v1::DTYPE_FLOAT64);
    ASSERT_OK_AND_ASSIGN(std::vector<double> vars, var.Download<double>());
    ASSERT_OK_AND_ASSIGN(Array sd, Std(a));
    ASSERT_OK_AND_ASSIGN(std::vector<double> sds, sd.Download<double>());
    long double all_re = 0, all_im = 0;
    for (const C& v : x) {
      all_re += v.real();
      all_im += v.imag();
    }
    const long double all_mean_re = all_re / x.size(), all_mean_im = all_im / x.size();
    long double all_squares = 0;
    for (const C& v : x) {
      all_squares += (v.real() - all_mean_re) * (v.real() - all_mean_re) +
                     (v.imag() - all_mean_im) * (v.imag() - all_mean_im);
    }
    EXPECT_NEAR(sds.at(0), std::sqrt(static_cast<double>(all_squares / x.size())), 1e-14);
    for (int k = 0; k < 3; ++k) {
      long double mre = 0, mim = 0;
      for (int64_t r = 0; r < rows; ++r) {
        mre += x[r * 3 + k].real();
        mim += x[r * 3 + k].imag();
      }
      mre /= rows;
      mim /= rows;
      long double squares = 0;
      for (int64_t r = 0; r < rows; ++r) {
        const long double dr = x[r * 3 + k].real() - mre, di = x[r * 3 + k].imag() - mim;
        squares += dr * dr + di * di;
      }
      EXPECT_NEAR(vars.at(k), static_cast<double>(squares / (rows - 1)), 1e-14) << k;
    }
  }
}

DISTARRAY_INSTANTIATE_BACKENDS(LinalgFunctionsTest);

}  // namespace
}  // namespace distarray::testing
