// Dense linear algebra (Linalg: solve, inv, cholesky, qr, eigh, svd, det, slogdet) on float32,
// float64, complex64 and complex128, checked in long double on fresh random inputs: residuals and
// reconstructions (a x = b, Q R = a with Q orthonormal, V diag(w) V^H = a, U S Vh = a) within a
// multiple of n * epsilon of the operands' scale, and det against an LU factorization in long
// double. Well- and ill-conditioned matrices, on one device and split over several (the operand
// is gathered onto the device holding most of it); and the errors (singular, not positive
// definite, not square, mismatched b), after which the daemon still serves and a bystander array
// is intact.
#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/support/backend_fixture.h"
#include "tests/support/compute_reference.h"

namespace distarray::testing {
namespace {

using CL = std::complex<long double>;

template <typename T>
struct Kind {
  static constexpr bool kComplex = false;
  using Real = T;
};
template <typename R>
struct Kind<std::complex<R>> {
  static constexpr bool kComplex = true;
  using Real = R;
};

template <typename T>
v1::DType DTypeOf() {
  if constexpr (std::is_same_v<T, float>) return v1::DTYPE_FLOAT32;
  if constexpr (std::is_same_v<T, double>) return v1::DTYPE_FLOAT64;
  if constexpr (std::is_same_v<T, std::complex<float>>) return v1::DTYPE_COMPLEX64;
  return v1::DTYPE_COMPLEX128;
}

template <typename T>
long double Eps() {
  return std::numeric_limits<typename Kind<T>::Real>::epsilon();
}

template <typename T>
CL Wide(T x) {
  if constexpr (Kind<T>::kComplex) {
    return CL(x.real(), x.imag());
  } else {
    return CL(x, 0);
  }
}

template <typename T>
T Narrow(CL x) {
  if constexpr (Kind<T>::kComplex) {
    using R = typename Kind<T>::Real;
    return T(static_cast<R>(x.real()), static_cast<R>(x.imag()));
  } else {
    return static_cast<T>(x.real());
  }
}

// A stack of `batch` matrices rows x cols, C order, in long double.
struct Mats {
  int64_t batch = 1, rows = 0, cols = 0;
  std::vector<CL> v;
  CL& at(int64_t b, int64_t i, int64_t j) { return v[(b * rows + i) * cols + j]; }
  CL at(int64_t b, int64_t i, int64_t j) const { return v[(b * rows + i) * cols + j]; }
};

Mats Zeros(int64_t batch, int64_t rows, int64_t cols) {
  return Mats{batch, rows, cols, std::vector<CL>(batch * rows * cols)};
}

// a @ b (conjugating a with `ha`: a^H @ b).
Mats Product(const Mats& a, const Mats& b, bool ha = false) {
  const int64_t rows = ha ? a.cols : a.rows, inner = ha ? a.rows : a.cols;
  Mats c = Zeros(a.batch, rows, b.cols);
  for (int64_t s = 0; s < a.batch; ++s) {
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < b.cols; ++j) {
        CL sum = 0;
        for (int64_t k = 0; k < inner; ++k) {
          sum += (ha ? std::conj(a.at(s, k, i)) : a.at(s, i, k)) * b.at(s, k, j);
        }
        c.at(s, i, j) = sum;
      }
    }
  }
  return c;
}

long double MaxAbs(const Mats& a) {
  long double m = 0;
  for (const CL& x : a.v) m = std::max(m, std::abs(x));
  return m;
}

// The largest |a - b|, or infinity for a NaN.
long double MaxDiff(const Mats& a, const Mats& b) {
  long double m = 0;
  for (size_t i = 0; i < a.v.size(); ++i) {
    const long double d = std::abs(a.v[i] - b.v[i]);
    if (std::isnan(d)) return std::numeric_limits<long double>::infinity();
    m = std::max(m, d);
  }
  return m;
}

Mats Identity(int64_t batch, int64_t n) {
  Mats e = Zeros(batch, n, n);
  for (int64_t s = 0; s < batch; ++s) {
    for (int64_t i = 0; i < n; ++i) e.at(s, i, i) = 1;
  }
  return e;
}

// Uniform parts in [-1, 1], never exactly zero.
template <typename T>
Mats RandomMats(int64_t batch, int64_t rows, int64_t cols, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> part(-1, 1);
  auto draw = [&] {
    double x = 0;
    while (x == 0) x = part(rng);
    return x;
  };
  Mats a = Zeros(batch, rows, cols);
  for (CL& x : a.v) x = Kind<T>::kComplex ? CL(draw(), draw()) : CL(draw(), 0);
  return a;
}

// Rounds to T, so the reference sees exactly what is uploaded.
template <typename T>
void RoundTo(Mats& a) {
  for (CL& x : a.v) x = Wide(Narrow<T>(x));
}

// Well conditioned: a random matrix plus n on the diagonal. Ill conditioned: rows scaled from 1
// down to 10^-`decades` (condition about 10^decades).
template <typename T>
Mats SquareMats(int64_t batch, int64_t n, bool ill, std::mt19937_64& rng, double decades = 5) {
  Mats a = RandomMats<T>(batch, n, n, rng);
  for (int64_t s = 0; s < batch; ++s) {
    for (int64_t i = 0; i < n; ++i) {
      if (ill) {
        const long double scale = std::pow(10.0L, -decades * i / std::max<int64_t>(1, n - 1));
        for (int64_t j = 0; j < n; ++j) a.at(s, i, j) *= scale;
      } else {
        a.at(s, i, i) += static_cast<long double>(n);
      }
    }
  }
  RoundTo<T>(a);
  return a;
}

// Hermitian: (r + r^H) / 2, plus n * I when positive definite is wanted (well conditioned) or
// r r^H + 10^-3 I (ill conditioned, still positive definite).
template <typename T>
Mats HermitianMats(int64_t batch, int64_t n, bool positive, bool ill, std::mt19937_64& rng) {
  const Mats r = RandomMats<T>(batch, n, n, rng);
  Mats a = Zeros(batch, n, n);
  if (ill) {
    // r r^H, rounded then mirrored so it stays exactly Hermitian in T.
    for (int64_t s = 0; s < batch; ++s) {
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          CL sum = 0;
          for (int64_t k = 0; k < n; ++k) sum += r.at(s, i, k) * std::conj(r.at(s, j, k));
          a.at(s, i, j) = sum;
        }
        a.at(s, i, i) += 1e-3L;
      }
    }
  } else {
    for (int64_t s = 0; s < batch; ++s) {
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          a.at(s, i, j) = (r.at(s, i, j) + std::conj(r.at(s, j, i))) / 2.0L;
        }
        if (positive) a.at(s, i, i) += static_cast<long double>(n);
      }
    }
  }
  RoundTo<T>(a);
  for (int64_t s = 0; s < batch; ++s) {
    for (int64_t i = 0; i < n; ++i) {
      a.at(s, i, i) = CL(a.at(s, i, i).real(), 0);
      for (int64_t j = 0; j < i; ++j) a.at(s, j, i) = std::conj(a.at(s, i, j));
    }
  }
  return a;
}

// det in long double by LU with partial pivoting.
CL DetReference(const Mats& a, int64_t s) {
  const int64_t n = a.rows;
  std::vector<CL> m(a.v.begin() + s * n * n, a.v.begin() + (s + 1) * n * n);
  CL det = 1;
  for (int64_t k = 0; k < n; ++k) {
    int64_t p = k;
    for (int64_t i = k + 1; i < n; ++i) {
      if (std::abs(m[i * n + k]) > std::abs(m[p * n + k])) p = i;
    }
    if (m[p * n + k] == CL(0)) return 0;
    if (p != k) {
      for (int64_t j = 0; j < n; ++j) std::swap(m[k * n + j], m[p * n + j]);
      det = -det;
    }
    det *= m[k * n + k];
    for (int64_t i = k + 1; i < n; ++i) {
      const CL f = m[i * n + k] / m[k * n + k];
      for (int64_t j = k; j < n; ++j) m[i * n + j] -= f * m[k * n + j];
    }
  }
  return det;
}

std::string ShapeString(const Shape& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) absl::StrAppend(&out, i ? ", " : "", shape[i]);
  return out + ")";
}

Shape StackShape(const Shape& stack, std::initializer_list<int64_t> dims) {
  Shape s = stack;
  s.insert(s.end(), dims);
  return s;
}

class LinalgTest : public BackendTest {
 protected:
  template <typename T>
  absl::StatusOr<Array> Up(const Mats& a, const Shape& shape, const v1::IndexMap& map) {
    std::vector<T> data;
    for (const CL& x : a.v) data.push_back(Narrow<T>(x));
    return client().Upload<T>(std::span<const T>(data), shape, ArrayOptions{map});
  }

  template <typename T>
  absl::StatusOr<Mats> Down(const Array& array, int64_t batch, int64_t rows, int64_t cols) {
    absl::StatusOr<std::vector<T>> got = array.Download<T>();
    if (!got.ok()) return got.status();
    Mats m = Zeros(batch, rows, cols);
    if (static_cast<int64_t>(got->size()) != batch * rows * cols) {
      return absl::InternalError(absl::StrCat("downloaded ", got->size(), " elements"));
    }
    for (size_t i = 0; i < got->size(); ++i) m.v[i] = Wide((*got)[i]);
    return m;
  }

  // The layouts each case runs on: one device, rows split over three devices, columns over two,
  // and for stacks the stack axis split over four; the result must be one chunk, on the device
  // holding most of a (`expect_device`, or any of the layout's devices when -1).
  struct Layout {
    std::string name;
    v1::IndexMap map;
    int expect_device;
  };
  std::vector<Layout> Layouts(const Shape& shape) {
    const int rank = static_cast<int>(shape.size());
    const int64_t rows = shape[rank - 2], cols = shape[rank - 1];
    std::vector<Layout> layouts = {{"one device", OnDevice(rank, dev(1)), dev(1)}};
    if (rows >= 3) {
      layouts.push_back(
          {"rows over 3 devices", Split(rank, rank - 2, rows, {dev(0), dev(1), dev(2)}), -1});
      // Uneven: the last device holds all but one row, so the gather goes there.
      std::vector<SliceSpec> first(rank), rest(rank);
      first[rank - 2] = SliceSpec{0, 1};
      rest[rank - 2] = SliceSpec{1, rows};
      layouts.push_back({"uneven rows",
                         MakeIndexMap({MakeChunk(dev(0), first), MakeChunk(dev(3), rest)}),
                         dev(3)});
    }
    if (cols >= 2) {
      layouts.push_back(
          {"columns over 2 devices", Split(rank, rank - 1, cols, {dev(2), dev(3)}), -1});
    }
    if (rank > 2 && shape[0] >= 2) {
      layouts.push_back(
          {"stack over 4 devices", Split(rank, 0, shape[0], {dev(0), dev(1), dev(2), dev(3)}), -1});
    }
    return layouts;
  }

  void CheckOneChunk(const Array& result, const Array& a, int expect_device,
                     const std::string& what) {
    ASSERT_EQ(result.info().index_map().chunks_size(), 1) << what;
    const int device = result.info().index_map().chunks(0).device();
    if (expect_device >= 0) {
      EXPECT_EQ(device, expect_device) << what;
    } else {
      bool among = false;
      for (const v1::Chunk& c : a.info().index_map().chunks()) among |= c.device() == device;
      EXPECT_TRUE(among) << what << ": result on device " << device;
    }
    EXPECT_EQ(result.info().mode(), v1::MODE_REPLICA) << what;
  }

  template <typename T>
  void CheckSolve(const Shape& stack, int64_t n, int64_t nrhs, bool ill, bool vector);
  template <typename T>
  void CheckInv(const Shape& stack, int64_t n, bool ill);
  template <typename T>
  void CheckCholesky(const Shape& stack, int64_t n, bool upper, bool ill);
  template <typename T>
  void CheckQr(const Shape& stack, int64_t m, int64_t n, bool complete, bool ill);
  template <typename T>
  void CheckEigh(const Shape& stack, int64_t n, bool ill);
  template <typename T>
  void CheckSvd(const Shape& stack, int64_t m, int64_t n, bool full, bool ill);
  template <typename T>
  void CheckDet(const Shape& stack, int64_t n);

  std::mt19937_64 rng_{2027};
};

int64_t BatchOf(const Shape& stack) {
  int64_t b = 1;
  for (int64_t d : stack) b *= d;
  return b;
}

template <typename T>
void LinalgTest::CheckSolve(const Shape& stack, int64_t n, int64_t nrhs, bool ill, bool vector) {
  const int64_t batch = BatchOf(stack);
  const Mats a = SquareMats<T>(batch, n, ill, rng_);
  Mats b = RandomMats<T>(batch, n, vector ? 1 : nrhs, rng_);
  RoundTo<T>(b);
  const Shape a_shape = StackShape(stack, {n, n});
  const Shape b_shape = vector ? StackShape(stack, {n}) : StackShape(stack, {n, nrhs});
  for (const Layout& layout : Layouts(a_shape)) {
    const std::string what =
        absl::StrCat("solve ", v1::DType_Name(DTypeOf<T>()), " ", ShapeString(a_shape),
                     ill ? " ill" : "", " ", layout.name);
    ASSERT_OK_AND_ASSIGN(Array A, Up<T>(a, a_shape, layout.map));
    ASSERT_OK_AND_ASSIGN(
        Array B, Up<T>(b, b_shape,
                       Split(static_cast<int>(b_shape.size()), 0, b_shape[0], {dev(2), dev(0)})));
    ASSERT_OK_AND_ASSIGN(Array X, Solve(A, B));
    EXPECT_EQ(X.shape(), b_shape) << what;
    EXPECT_EQ(X.info().dtype(), DTypeOf<T>()) << what;
    CheckOneChunk(X, A, layout.expect_device, what);
    ASSERT_OK_AND_ASSIGN(Mats x, Down<T>(X, batch, n, b.cols));
    // Backward stable: |a x - b| <= c n eps (|a| |x| + |b|), normwise.
    long double norm_a = 0;
    for (int64_t s = 0; s < batch; ++s) {
      for (int64_t i = 0; i < n; ++i) {
        long double row = 0;
        for (int64_t j = 0; j < n; ++j) row += std::abs(a.at(s, i, j));
        norm_a = std::max(norm_a, row);
      }
    }
    const long double tol = 30 * n * Eps<T>() * (norm_a * MaxAbs(x) + MaxAbs(b));
    EXPECT_LE(MaxDiff(Product(a, x), b), tol) << what;
  }
}

template <typename T>
void LinalgTest::CheckInv(const Shape& stack, int64_t n, bool ill) {
  const int64_t batch = BatchOf(stack);
  const Mats a = SquareMats<T>(batch, n, ill, rng_);
  const Shape shape = StackShape(stack, {n, n});
  for (const Layout& layout : Layouts(shape)) {
    const std::string what = absl::StrCat("inv ", v1::DType_Name(DTypeOf<T>()), " ",
                                          ShapeString(shape), ill ? " ill" : "", " ", layout.name);
    ASSERT_OK_AND_ASSIGN(Array A, Up<T>(a, shape, layout.map));
    ASSERT_OK_AND_ASSIGN(Array X, Inv(A));
    EXPECT_EQ(X.shape(), shape) << what;
    CheckOneChunk(X, A, layout.expect_device, what);
    ASSERT_OK_AND_ASSIGN(Mats x, Down<T>(X, batch, n, n));
    long double norm_a = 0;
    for (int64_t s = 0; s < batch; ++s) {
      for (int64_t i = 0; i < n; ++i) {
        long double row = 0;
        for (int64_t j = 0; j < n; ++j) row += std::abs(a.at(s, i, j));
        norm_a = std::max(norm_a, row);
      }
    }
    EXPECT_LE(MaxDiff(Product(a, x), Identity(batch, n)), 30 * n * Eps<T>() * norm_a * MaxAbs(x))
        << what;
  }
}

template <typename T>
void LinalgTest::CheckCholesky(const Shape& stack, int64_t n, bool upper, bool ill) {
  const int64_t batch = BatchOf(stack);
  Mats a = HermitianMats<T>(batch, n, /*positive=*/true, ill, rng_);
  const Shape shape = StackShape(stack, {n, n});
  // Only the factor's triangle of a is read: junk in the other one must not matter.
  Mats sent = a;
  for (int64_t s = 0; s < batch; ++s) {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        if (upper ? j < i : j > i) sent.at(s, i, j) = 7.5L;
      }
    }
  }
  for (const Layout& layout : Layouts(shape)) {
    const std::string what =
        absl::StrCat("cholesky ", upper ? "upper " : "", v1::DType_Name(DTypeOf<T>()), " ",
                     ShapeString(shape), ill ? " ill" : "", " ", layout.name);
    ASSERT_OK_AND_ASSIGN(Array A, Up<T>(sent, shape, layout.map));
    ASSERT_OK_AND_ASSIGN(std::vector<Array> out,
                         Linalg(v1::LINALG_OP_CHOLESKY, A, nullptr, {.upper = upper}));
    ASSERT_EQ(out.size(), 1u) << what;
    EXPECT_EQ(out[0].shape(), shape) << what;
    CheckOneChunk(out[0], A, layout.expect_device, what);
    ASSERT_OK_AND_ASSIGN(Mats f, Down<T>(out[0], batch, n, n));
    long double diag = 0;
    for (int64_t s = 0; s < batch; ++s) {
      for (int64_t i = 0; i < n; ++i) {
        diag = std::max(diag, a.at(s, i, i).real());
        EXPECT_GT(f.at(s, i, i).real(), 0) << what;
        EXPECT_EQ(f.at(s, i, i).imag(), 0) << what;
        for (int64_t j = 0; j < n; ++j) {
          if (upper ? j < i : j > i) ASSERT_EQ(f.at(s, i, j), CL(0)) << what << " " << i << j;
        }
      }
    }
    const Mats back = upper ? Product(f, f, /*ha=*/true) : [&] {
      Mats fh = Zeros(batch, n, n);
      for (int64_t s = 0; s < batch; ++s)
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < n; ++j) fh.at(s, i, j) = std::conj(f.at(s, j, i));
      return Product(f, fh);
    }();
    EXPECT_LE(MaxDiff(back, a), 30 * n * Eps<T>() * diag) << what;
  }
}

template <typename T>
void LinalgTest::CheckQr(const Shape& stack, int64_t m, int64_t n, bool complete, bool ill) {
  const int64_t batch = BatchOf(stack), k = std::min(m, n), q = complete ? m : k;
  Mats a = RandomMats<T>(batch, m, n, rng_);
  if (ill) {
    for (int64_t s = 0; s < batch; ++s)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < m; ++i) a.at(s, i, j) *= std::pow(10.0L, -6.0L * j / n);
  }
  RoundTo<T>(a);
  const Shape shape = StackShape(stack, {m, n});
  for (const Layout& layout : Layouts(shape)) {
    const std::string what =
        absl::StrCat("qr ", complete ? "complete " : "", v1::DType_Name(DTypeOf<T>()), " ",
                     ShapeString(shape), ill ? " ill" : "", " ", layout.name);
    ASSERT_OK_AND_ASSIGN(Array A, Up<T>(a, shape, layout.map));
    ASSERT_OK_AND_ASSIGN(std::vector<Array> out,
                         Linalg(v1::LINALG_OP_QR, A, nullptr, {.full_matrices = complete}));
    ASSERT_EQ(out.size(), 2u) << what;
    EXPECT_EQ(out[0].shape(), StackShape(stack, {m, q})) << what;
    EXPECT_EQ(out[1].shape(), StackShape(stack, {q, n})) << what;
    CheckOneChunk(out[0], A, layout.expect_device, what);
    CheckOneChunk(out[1], A, layout.expect_device, what);
    ASSERT_OK_AND_ASSIGN(Mats Q, Down<T>(out[0], batch, m, q));
    ASSERT_OK_AND_ASSIGN(Mats R, Down<T>(out[1], batch, q, n));
    for (int64_t s = 0; s < batch; ++s)
      for (int64_t i = 0; i < q; ++i)
        for (int64_t j = 0; j < std::min(i, n); ++j) ASSERT_EQ(R.at(s, i, j), CL(0)) << what;
    const int64_t big = std::max(m, n);
    EXPECT_LE(MaxDiff(Product(Q, Q, /*ha=*/true), Identity(batch, q)), 30 * big * Eps<T>()) << what;
    EXPECT_LE(MaxDiff(Product(Q, R), a), 30 * big * Eps<T>() * MaxAbs(a) * std::sqrt(m)) << what;
  }
}

template <typename T>
void LinalgTest::CheckEigh(const Shape& stack, int64_t n, bool ill) {
  const int64_t batch = BatchOf(stack);
  Mats a = HermitianMats<T>(batch, n, /*positive=*/false, ill, rng_);
  const Shape shape = StackShape(stack, {n, n});
  // Only the lower triangle is read (NumPy's UPLO="L"): junk above it must not matter.
  Mats sent = a;
  for (int64_t s = 0; s < batch; ++s)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = i + 1; j < n; ++j) sent.at(s, i, j) = -3.25L;
  for (const Layout& layout : Layouts(shape)) {
    const std::string what = absl::StrCat("eigh ", v1::DType_Name(DTypeOf<T>()), " ",
                                          ShapeString(shape), ill ? " ill" : "", " ", layout.name);
    ASSERT_OK_AND_ASSIGN(Array A, Up<T>(sent, shape, layout.map));
    ASSERT_OK_AND_ASSIGN(std::vector<Array> out, Linalg(v1::LINALG_OP_EIGH, A));
    ASSERT_EQ(out.size(), 2u) << what;
    EXPECT_EQ(out[0].shape(), StackShape(stack, {n})) << what;
    EXPECT_EQ(out[1].shape(), shape) << what;
    CheckOneChunk(out[0], A, layout.expect_device, what);
    using R = typename Kind<T>::Real;
    ASSERT_OK_AND_ASSIGN(std::vector<R> w, out[0].Download<R>());
    ASSERT_OK_AND_ASSIGN(Mats V, Down<T>(out[1], batch, n, n));
    Mats vw = V;
    for (int64_t s = 0; s < batch; ++s) {
      for (int64_t j = 0; j < n; ++j) {
        if (j > 0) EXPECT_LE(w[s * n + j - 1], w[s * n + j]) << what << ": not ascending";
        for (int64_t i = 0; i < n; ++i) vw.at(s, i, j) *= static_cast<long double>(w[s * n + j]);
      }
    }
    const long double scale = MaxAbs(a) * n;
    EXPECT_LE(MaxDiff(Product(a, V), vw), 30 * n * Eps<T>() * scale) << what;
    EXPECT_LE(MaxDiff(Product(V, V, /*ha=*/true), Identity(batch, n)), 30 * n * Eps<T>()) << what;
    // eigvalsh: the same values without vectors.
    ASSERT_OK_AND_ASSIGN(std::vector<Array> values,
                         Linalg(v1::LINALG_OP_EIGH, A, nullptr, {.compute_uv = false}));
    ASSERT_EQ(values.size(), 1u) << what;
    ASSERT_OK_AND_ASSIGN(std::vector<R> w2, values[0].Download<R>());
    for (size_t i = 0; i < w.size(); ++i) {
      EXPECT_NEAR(w2[i], w[i], 30 * n * Eps<T>() * scale) << what;
    }
  }
}

template <typename T>
void LinalgTest::CheckSvd(const Shape& stack, int64_t m, int64_t n, bool full, bool ill) {
  const int64_t batch = BatchOf(stack), k = std::min(m, n);
  const int64_t ucols = full ? m : k, vrows = full ? n : k;
  Mats a = RandomMats<T>(batch, m, n, rng_);
  if (ill) {
    for (int64_t s = 0; s < batch; ++s)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) a.at(s, i, j) *= std::pow(10.0L, -6.0L * i / m);
  }
  RoundTo<T>(a);
  const Shape shape = StackShape(stack, {m, n});
  using R = typename Kind<T>::Real;
  for (const Layout& layout : Layouts(shape)) {
    const std::string what =
        absl::StrCat("svd ", full ? "full " : "", v1::DType_Name(DTypeOf<T>()), " ",
                     ShapeString(shape), ill ? " ill" : "", " ", layout.name);
    ASSERT_OK_AND_ASSIGN(Array A, Up<T>(a, shape, layout.map));
    ASSERT_OK_AND_ASSIGN(std::vector<Array> out,
                         Linalg(v1::LINALG_OP_SVD, A, nullptr, {.full_matrices = full}));
    ASSERT_EQ(out.size(), 3u) << what;
    EXPECT_EQ(out[0].shape(), StackShape(stack, {m, ucols})) << what;
    EXPECT_EQ(out[1].shape(), StackShape(stack, {k})) << what;
    EXPECT_EQ(out[2].shape(), StackShape(stack, {vrows, n})) << what;
    for (const Array& r : out) CheckOneChunk(r, A, layout.expect_device, what);
    ASSERT_OK_AND_ASSIGN(Mats U, Down<T>(out[0], batch, m, ucols));
    ASSERT_OK_AND_ASSIGN(std::vector<R> S, out[1].Download<R>());
    ASSERT_OK_AND_ASSIGN(Mats Vh, Down<T>(out[2], batch, vrows, n));
    const int64_t big = std::max(m, n);
    EXPECT_LE(MaxDiff(Product(U, U, /*ha=*/true), Identity(batch, ucols)), 30 * big * Eps<T>())
        << what;
    Mats V = Zeros(batch, n, vrows);  // Vh^H, so Vh Vh^H = V^H V
    for (int64_t s = 0; s < batch; ++s)
      for (int64_t i = 0; i < vrows; ++i)
        for (int64_t j = 0; j < n; ++j) V.at(s, j, i) = std::conj(Vh.at(s, i, j));
    EXPECT_LE(MaxDiff(Product(V, V, /*ha=*/true), Identity(batch, vrows)), 30 * big * Eps<T>())
        << what;
    Mats us = Zeros(batch, m, k);
    for (int64_t s = 0; s < batch; ++s) {
      for (int64_t j = 0; j < k; ++j) {
        EXPECT_GE(S[s * k + j], 0) << what;
        if (j > 0) EXPECT_LE(S[s * k + j], S[s * k + j - 1]) << what << ": not descending";
        for (int64_t i = 0; i < m; ++i) us.at(s, i, j) = U.at(s, i, j) * (long double)S[s * k + j];
      }
    }
    Mats vk = Zeros(batch, k, n);
    for (int64_t s = 0; s < batch; ++s)
      for (int64_t i = 0; i < k; ++i)
        for (int64_t j = 0; j < n; ++j) vk.at(s, i, j) = Vh.at(s, i, j);
    EXPECT_LE(MaxDiff(Product(us, vk), a), 30 * big * Eps<T>() * MaxAbs(a) * std::sqrt(big))
        << what;
    // svdvals: the same S without vectors.
    ASSERT_OK_AND_ASSIGN(std::vector<Array> values,
                         Linalg(v1::LINALG_OP_SVD, A, nullptr, {.compute_uv = false}));
    ASSERT_EQ(values.size(), 1u) << what;
    ASSERT_OK_AND_ASSIGN(std::vector<R> S2, values[0].Download<R>());
    ASSERT_EQ(S2.size(), S.size()) << what;
    for (size_t i = 0; i < S.size(); ++i) {
      EXPECT_NEAR(S2[i], S[i], 30 * big * Eps<T>() * MaxAbs(a) * big) << what;
    }
  }
}

template <typename T>
void LinalgTest::CheckDet(const Shape& stack, int64_t n) {
  const int64_t batch = BatchOf(stack);
  // Entries of modulus ~1 without the diagonal shift: determinants of either sign, moderately
  // conditioned.
  Mats a = RandomMats<T>(batch, n, n, rng_);
  for (int64_t s = 0; s < batch; ++s)
    for (int64_t i = 0; i < n; ++i) a.at(s, i, i) += 2.0L;
  RoundTo<T>(a);
  const Shape shape = StackShape(stack, {n, n});
  using R = typename Kind<T>::Real;
  for (const Layout& layout : Layouts(shape)) {
    const std::string what = absl::StrCat("det ", v1::DType_Name(DTypeOf<T>()), " ",
                                          ShapeString(shape), " ", layout.name);
    ASSERT_OK_AND_ASSIGN(Array A, Up<T>(a, shape, layout.map));
    ASSERT_OK_AND_ASSIGN(Array D, Det(A));
    EXPECT_EQ(D.shape(), stack) << what;
    CheckOneChunk(D, A, layout.expect_device, what);
    ASSERT_OK_AND_ASSIGN(std::vector<T> det, D.Download<T>());
    ASSERT_OK_AND_ASSIGN(std::vector<Array> sl, Linalg(v1::LINALG_OP_SLOGDET, A));
    ASSERT_EQ(sl.size(), 2u) << what;
    EXPECT_EQ(sl[0].info().dtype(), DTypeOf<T>()) << what;
    ASSERT_OK_AND_ASSIGN(std::vector<T> sign, sl[0].Download<T>());
    ASSERT_OK_AND_ASSIGN(std::vector<R> logabs, sl[1].Download<R>());
    for (int64_t s = 0; s < batch; ++s) {
      const CL want = DetReference(a, s);
      const long double tol = 50 * n * Eps<T>() * std::abs(want);
      EXPECT_LE(std::abs(Wide(det[s]) - want), tol) << what << " matrix " << s;
      EXPECT_NEAR(std::abs(Wide(sign[s])), 1.0L, 10 * Eps<T>()) << what;
      EXPECT_LE(std::abs(Wide(sign[s]) - want / std::abs(want)), 50 * n * Eps<T>()) << what;
      EXPECT_NEAR(logabs[s], std::log(std::abs(want)), 50 * n * Eps<T>()) << what;
    }
  }
}

// Runs `check.template operator()<T>()` for the four dtypes.
template <typename Fn>
void ForEachLinalgType(Fn&& fn) {
  fn(float{});
  fn(double{});
  fn(std::complex<float>{});
  fn(std::complex<double>{});
}

TEST_P(LinalgTest, SolveResidualsAreSmall) {
  ForEachLinalgType([&](auto tag) {
    using T = decltype(tag);
    for (bool ill : {false, true}) {
      CheckSolve<T>({}, 23, 5, ill, /*vector=*/false);
      CheckSolve<T>({}, 17, 1, ill, /*vector=*/true);
      CheckSolve<T>({3}, 9, 4, ill, /*vector=*/false);
      CheckSolve<T>({4}, 6, 1, ill, /*vector=*/true);
    }
  });
}

TEST_P(LinalgTest, InverseTimesMatrixIsIdentity) {
  ForEachLinalgType([&](auto tag) {
    using T = decltype(tag);
    for (bool ill : {false, true}) {
      CheckInv<T>({}, 21, ill);
      CheckInv<T>({2, 2}, 7, ill);
    }
  });
}

TEST_P(LinalgTest, CholeskyFactorsReconstruct) {
  ForEachLinalgType([&](auto tag) {
    using T = decltype(tag);
    for (bool ill : {false, true}) {
      CheckCholesky<T>({}, 19, /*upper=*/false, ill);
      CheckCholesky<T>({3}, 8, /*upper=*/true, ill);
    }
  });
}

TEST_P(LinalgTest, QrIsOrthonormalTimesUpperTriangular) {
  ForEachLinalgType([&](auto tag) {
    using T = decltype(tag);
    for (bool complete : {false, true}) {
      CheckQr<T>({}, 21, 13, complete, /*ill=*/false);
      CheckQr<T>({}, 9, 16, complete, /*ill=*/true);
      CheckQr<T>({2}, 11, 11, complete, /*ill=*/false);
    }
  });
}

TEST_P(LinalgTest, EighDiagonalizes) {
  ForEachLinalgType([&](auto tag) {
    using T = decltype(tag);
    for (bool ill : {false, true}) {
      CheckEigh<T>({}, 20, ill);
      CheckEigh<T>({3}, 7, ill);
    }
  });
}

TEST_P(LinalgTest, SvdReconstructs) {
  ForEachLinalgType([&](auto tag) {
    using T = decltype(tag);
    for (bool full : {false, true}) {
      CheckSvd<T>({}, 19, 12, full, /*ill=*/false);
      CheckSvd<T>({}, 8, 15, full, /*ill=*/true);
      CheckSvd<T>({2}, 6, 6, full, /*ill=*/false);
    }
  });
}

TEST_P(LinalgTest, DetMatchesLongDoubleLu) {
  ForEachLinalgType([&](auto tag) {
    using T = decltype(tag);
    CheckDet<T>({}, 12);
    CheckDet<T>({5}, 6);
    CheckDet<T>({}, 1);
  });
}

// Past LAPACK's block sizes (32 to 64 columns): the blocked factorizations, and orgqr's blocked
// generation of a complete Q from fewer reflectors.
TEST_P(LinalgTest, LargerMatricesTakeTheBlockedPaths) {
  CheckSolve<double>({}, 130, 7, /*ill=*/true, /*vector=*/false);
  CheckInv<std::complex<double>>({}, 97, /*ill=*/false);
  CheckCholesky<double>({}, 128, /*upper=*/false, /*ill=*/true);
  CheckQr<std::complex<float>>({}, 150, 90, /*complete=*/true, /*ill=*/false);
  CheckEigh<double>({}, 120, /*ill=*/true);
  CheckSvd<double>({}, 140, 100, /*full=*/true, /*ill=*/false);
  CheckSvd<float>({}, 70, 133, /*full=*/false, /*ill=*/true);
  CheckDet<double>({}, 100);
}

// An operand replicated on several devices, or in SUM mode (copies that add up), is factorized
// by its logical values.
TEST_P(LinalgTest, ReplicatedAndSumModeOperandsUseTheirLogicalValues) {
  std::mt19937_64 rng(91);
  const Mats a = SquareMats<double>(1, 9, false, rng);
  ASSERT_OK_AND_ASSIGN(Array replicated,
                       Up<double>(a, {9, 9}, Replicated(2, {dev(1), dev(2), dev(3)})));
  ASSERT_OK_AND_ASSIGN(Array sum, replicated.ChangeMode(v1::MODE_SUM));
  for (const Array* operand : {&replicated, &sum}) {
    ASSERT_OK_AND_ASSIGN(Array D, Det(*operand));
    ASSERT_OK_AND_ASSIGN(std::vector<double> det, D.Download<double>());
    EXPECT_NEAR(det[0], static_cast<double>(DetReference(a, 0).real()),
                1e-12 * std::abs(static_cast<double>(DetReference(a, 0).real())))
        << v1::Mode_Name(operand->info().mode());
    ASSERT_OK_AND_ASSIGN(Array X, Inv(*operand));
    ASSERT_OK_AND_ASSIGN(Mats x, Down<double>(X, 1, 9, 9));
    EXPECT_LE(MaxDiff(Product(a, x), Identity(1, 9)), 1e-12)
        << v1::Mode_Name(operand->info().mode());
  }
}

TEST_P(LinalgTest, EmptyMatricesGiveNumPysResults) {
  // A stack of 0 x 0 matrices: det 1, sign 1, logabsdet 0; a complete Q of m x 0 is I_m.
  const std::vector<double> none;
  ASSERT_OK_AND_ASSIGN(Array a, client().Upload<double>(none, {3, 0, 0}, {OnDevice(3, dev(1))}));
  ASSERT_OK_AND_ASSIGN(Array d, Det(a));
  ASSERT_OK_AND_ASSIGN(std::vector<double> det, d.Download<double>());
  EXPECT_EQ(det, (std::vector<double>{1, 1, 1}));
  ASSERT_OK_AND_ASSIGN(Array tall, client().Upload<double>(none, {4, 0}, {OnDevice(2, dev(2))}));
  ASSERT_OK_AND_ASSIGN(std::vector<Array> qr,
                       Linalg(v1::LINALG_OP_QR, tall, nullptr, {.full_matrices = true}));
  ASSERT_OK_AND_ASSIGN(std::vector<double> q, qr[0].Download<double>());
  EXPECT_EQ(q.size(), 16u);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(q[i * 4 + j], i == j ? 1.0 : 0.0);
  EXPECT_EQ(qr[1].shape(), (Shape{4, 0}));
  ASSERT_OK_AND_ASSIGN(Array inv, Inv(a));
  EXPECT_EQ(inv.shape(), (Shape{3, 0, 0}));
}

TEST_P(LinalgTest, ResultNamesAreAppliedAndChecked) {
  std::mt19937_64 rng(5);
  const Mats a = SquareMats<double>(1, 5, false, rng);
  ASSERT_OK_AND_ASSIGN(Array A, Up<double>(a, {5, 5}, OnDevice(2, dev(0))));
  v1::LinalgRequest request;
  request.mutable_spec()->set_op(v1::LINALG_OP_QR);
  *request.mutable_spec()->mutable_a() = A.AsOperand();
  request.add_result_names("linalg-test-q");
  request.add_result_names("linalg-test-r");
  ASSERT_OK_AND_ASSIGN(std::vector<Array> out, client().Linalg(request));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].info().name(), "linalg-test-q");
  EXPECT_EQ(out[1].info().name(), "linalg-test-r");
  // A name taken (by the first call's Q): refused whole, and the other name stays free.
  v1::LinalgRequest again = request;
  again.set_result_names(1, "linalg-test-r2");
  EXPECT_TRUE(StatusIs(client().Linalg(again).status(), absl::StatusCode::kAlreadyExists,
                       {"result_names[0]"}));
  EXPECT_FALSE(client().Open("linalg-test-r2").ok());
  // Duplicates and a wrong count.
  v1::LinalgRequest dup = request;
  dup.set_result_names(0, "linalg-test-x");
  dup.set_result_names(1, "linalg-test-x");
  EXPECT_TRUE(StatusIs(client().Linalg(dup).status(), absl::StatusCode::kInvalidArgument,
                       {"result_names[1]"}));
  v1::LinalgRequest one = request;
  one.clear_result_names();
  one.add_result_names("linalg-test-y");
  EXPECT_TRUE(StatusIs(client().Linalg(one).status(), absl::StatusCode::kInvalidArgument,
                       {"result_names"}));
  ASSERT_OK(out[0].Delete());
  ASSERT_OK(out[1].Delete());
}

TEST_P(LinalgTest, ErrorsLeaveTheDaemonAndOtherArraysIntact) {
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  const auto kPrecondition = absl::StatusCode::kFailedPrecondition;
  std::mt19937_64 rng(77);
  // A bystander split over every device.
  const Mats by = RandomMats<double>(1, 8, 8, rng);
  ASSERT_OK_AND_ASSIGN(Array bystander,
                       Up<double>(by, {8, 8}, Split(2, 0, 8, {dev(0), dev(1), dev(2), dev(3)})));

  // Singular: a zero column (split over two devices), for solve and inv. It keeps LU's pivot
  // in that column exactly zero; equal rows may leave a rounding residue instead.
  Mats singular = RandomMats<double>(1, 6, 6, rng);
  for (int64_t i = 0; i < 6; ++i) singular.at(0, i, 4) = 0;
  ASSERT_OK_AND_ASSIGN(Array S, Up<double>(singular, {6, 6}, Split(2, 0, 6, {dev(1), dev(2)})));
  const Mats rhs = RandomMats<double>(1, 6, 1, rng);
  ASSERT_OK_AND_ASSIGN(Array b, Up<double>(rhs, {6}, OnDevice(1, dev(0))));
  EXPECT_TRUE(StatusIs(Solve(S, b).status(), kPrecondition, {"spec.a", "singular"}));
  EXPECT_TRUE(StatusIs(Inv(S).status(), kPrecondition, {"spec.a", "singular"}));
  // det of it is a value: 0 (sign 0, logabsdet -inf).
  ASSERT_OK_AND_ASSIGN(std::vector<Array> sl, Linalg(v1::LINALG_OP_SLOGDET, S));
  ASSERT_OK_AND_ASSIGN(std::vector<double> logabs, sl[1].Download<double>());
  ASSERT_OK_AND_ASSIGN(std::vector<double> sign, sl[0].Download<double>());
  EXPECT_EQ(sign[0], 0);
  EXPECT_EQ(logabs[0], -std::numeric_limits<double>::infinity());

  // Singular in one matrix of a stack: the message names it.
  Mats stack = SquareMats<double>(3, 4, false, rng);
  for (int64_t j = 0; j < 4; ++j) stack.at(2, 3, j) = 0;
  ASSERT_OK_AND_ASSIGN(Array St, Up<double>(stack, {3, 4, 4}, Split(3, 0, 3, {dev(0), dev(3)})));
  EXPECT_TRUE(StatusIs(Inv(St).status(), kPrecondition, {"spec.a", "matrix 2", "singular"}));

  // Not positive definite: a symmetric matrix with a negative eigenvalue.
  Mats indefinite = HermitianMats<double>(1, 5, /*positive=*/false, false, rng);
  indefinite.at(0, 0, 0) = -1;
  ASSERT_OK_AND_ASSIGN(Array N, Up<double>(indefinite, {5, 5}, OnDevice(2, dev(2))));
  EXPECT_TRUE(StatusIs(Linalg(v1::LINALG_OP_CHOLESKY, N).status(), kPrecondition,
                       {"spec.a", "positive definite"}));

  // Not square, for every op that needs it; qr and svd take it.
  const Mats wide = RandomMats<double>(1, 3, 5, rng);
  ASSERT_OK_AND_ASSIGN(Array W, Up<double>(wide, {3, 5}, Split(2, 1, 5, {dev(0), dev(1)})));
  for (v1::LinalgOp op : {v1::LINALG_OP_INV, v1::LINALG_OP_CHOLESKY, v1::LINALG_OP_EIGH,
                          v1::LINALG_OP_DET, v1::LINALG_OP_SLOGDET}) {
    EXPECT_TRUE(StatusIs(Linalg(op, W).status(), kInvalid, {"spec.a", "square"}))
        << v1::LinalgOp_Name(op);
  }
  EXPECT_TRUE(StatusIs(Linalg(v1::LINALG_OP_SOLVE, W, &b).status(), kInvalid, {"spec.a"}));
  EXPECT_TRUE(Linalg(v1::LINALG_OP_QR, W).ok());
  EXPECT_TRUE(Linalg(v1::LINALG_OP_SVD, W).ok());

  // b of the wrong shape or dtype; b where the op takes none; no b for solve.
  const Mats good = SquareMats<double>(1, 6, false, rng);
  ASSERT_OK_AND_ASSIGN(Array G, Up<double>(good, {6, 6}, OnDevice(2, dev(1))));
  ASSERT_OK_AND_ASSIGN(Array b5,
                       Up<double>(RandomMats<double>(1, 5, 1, rng), {5}, OnDevice(1, dev(1))));
  EXPECT_TRUE(StatusIs(Solve(G, b5).status(), kInvalid, {"spec.b"}));
  std::vector<float> bf(6, 1.5f);
  ASSERT_OK_AND_ASSIGN(Array b32, client().Upload<float>(bf, {6}, {OnDevice(1, dev(1))}));
  EXPECT_TRUE(StatusIs(Solve(G, b32).status(), kInvalid, {"spec.b", "dtype"}));
  EXPECT_TRUE(StatusIs(Linalg(v1::LINALG_OP_INV, G, &b).status(), kInvalid, {"spec.b"}));
  EXPECT_TRUE(StatusIs(Linalg(v1::LINALG_OP_SOLVE, G).status(), kInvalid, {"spec.b"}));

  // Dtypes without a factorization, a vector, an unknown op.
  std::vector<int64_t> ints(36, 3);
  ASSERT_OK_AND_ASSIGN(Array I, client().Upload<int64_t>(ints, {6, 6}, {OnDevice(2, dev(0))}));
  EXPECT_TRUE(StatusIs(Inv(I).status(), kInvalid, {"spec.a", "int64"}));
  EXPECT_TRUE(StatusIs(Det(b).status(), kInvalid, {"spec.a"}));
  v1::LinalgRequest unknown;
  unknown.mutable_spec()->set_op(static_cast<v1::LinalgOp>(99));
  *unknown.mutable_spec()->mutable_a() = G.AsOperand();
  EXPECT_TRUE(StatusIs(client().Linalg(unknown).status(), kInvalid, {"spec.op"}));
  v1::LinalgRequest scalar;
  scalar.mutable_spec()->set_op(v1::LINALG_OP_DET);
  scalar.mutable_spec()->mutable_a()->mutable_scalar()->set_float_value(2.0);
  EXPECT_TRUE(StatusIs(client().Linalg(scalar).status(), kInvalid, {"spec.a"}));
  v1::LinalgRequest missing;
  missing.mutable_spec()->set_op(v1::LINALG_OP_DET);
  missing.mutable_spec()->mutable_a()->set_handle("arr-00000000deadbeef");
  EXPECT_TRUE(StatusIs(client().Linalg(missing).status(), absl::StatusCode::kNotFound, {"spec.a"}));

  // Nothing the failed calls made is left, the bystander is intact, and the daemon still works.
  ASSERT_OK_AND_ASSIGN(Mats got, Down<double>(bystander, 1, 8, 8));
  EXPECT_EQ(MaxDiff(got, by), 0);
  ASSERT_OK_AND_ASSIGN(Array x, Solve(G, b));
  EXPECT_EQ(x.shape(), (Shape{6}));
}

// svd and eigh are iterative: a NaN or an infinity could keep LAPACK's solver from returning (a
// host SVD of a matrix holding -inf spun without end), so both are refused before the solver
// runs, naming the matrix, and the daemon goes on serving.
TEST_P(LinalgTest, NonFiniteEntriesAreRefusedBeforeSvdAndEigh) {
  const auto kPrecondition = absl::StatusCode::kFailedPrecondition;
  std::mt19937_64 rng(91);
  const long double kInf = std::numeric_limits<long double>::infinity();
  const long double kNaN = std::numeric_limits<long double>::quiet_NaN();
  for (long double bad : {kNaN, kInf, -kInf}) {
    // One matrix, split over two devices; svd both ways and svdvals.
    Mats one = HermitianMats<double>(1, 6, /*positive=*/true, false, rng);
    one.at(0, 4, 1) = bad;
    ASSERT_OK_AND_ASSIGN(Array A, Up<double>(one, {6, 6}, Split(2, 0, 6, {dev(0), dev(1)})));
    for (bool full : {false, true}) {
      EXPECT_TRUE(StatusIs(Linalg(v1::LINALG_OP_SVD, A, nullptr, {.full_matrices = full}).status(),
                           kPrecondition, {"spec.a", "the matrix", "NaN or an infinity", "svd"}));
    }
    EXPECT_TRUE(StatusIs(Linalg(v1::LINALG_OP_SVD, A, nullptr, {.compute_uv = false}).status(),
                         kPrecondition, {"spec.a", "NaN or an infinity"}));
    EXPECT_TRUE(StatusIs(Linalg(v1::LINALG_OP_EIGH, A).status(), kPrecondition,
                         {"spec.a", "NaN or an infinity", "eigh"}));
    EXPECT_TRUE(StatusIs(Linalg(v1::LINALG_OP_EIGH, A, nullptr, {.compute_uv = false}).status(),
                         kPrecondition, {"spec.a", "NaN or an infinity"}));
    // In the third matrix of a complex stack: the message names it.
    Mats stack = RandomMats<std::complex<float>>(4, 5, 3, rng);
    RoundTo<std::complex<float>>(stack);
    stack.at(2, 1, 2) = {0, bad};
    ASSERT_OK_AND_ASSIGN(
        Array St, Up<std::complex<float>>(stack, {4, 5, 3}, Split(3, 0, 4, {dev(0), dev(2)})));
    EXPECT_TRUE(StatusIs(Linalg(v1::LINALG_OP_SVD, St).status(), kPrecondition,
                         {"spec.a", "matrix 2 of the stack", "NaN or an infinity"}));
  }
  // eigh reads the lower triangle only (NumPy's UPLO='L'): a NaN above the diagonal is never seen,
  // and the values are those of the matrix without it; svd reads it and refuses.
  {
    const Mats clean = HermitianMats<double>(1, 5, /*positive=*/true, false, rng);
    Mats upper_nan = clean;
    upper_nan.at(0, 1, 4) = kNaN;
    ASSERT_OK_AND_ASSIGN(Array C, Up<double>(clean, {5, 5}, OnDevice(2, dev(1))));
    ASSERT_OK_AND_ASSIGN(Array U, Up<double>(upper_nan, {5, 5}, Split(2, 1, 5, {dev(0), dev(2)})));
    ASSERT_OK_AND_ASSIGN(std::vector<Array> want,
                         Linalg(v1::LINALG_OP_EIGH, C, nullptr, {.compute_uv = false}));
    ASSERT_OK_AND_ASSIGN(std::vector<Array> got,
                         Linalg(v1::LINALG_OP_EIGH, U, nullptr, {.compute_uv = false}));
    ASSERT_OK_AND_ASSIGN(std::vector<double> w_want, want[0].Download<double>());
    ASSERT_OK_AND_ASSIGN(std::vector<double> w_got, got[0].Download<double>());
    EXPECT_EQ(w_got, w_want);
    EXPECT_TRUE(StatusIs(Linalg(v1::LINALG_OP_SVD, U).status(), kPrecondition,
                         {"spec.a", "NaN or an infinity"}));
  }
  // Finite matrices still factorize, including ones whose entries are near the float range's end.
  Mats huge = RandomMats<float>(1, 4, 4, rng);
  for (int64_t j = 0; j < 4; ++j) huge.at(0, 0, j) *= 1e37L;
  RoundTo<float>(huge);
  ASSERT_OK_AND_ASSIGN(Array H, Up<float>(huge, {4, 4}, OnDevice(2, dev(1))));
  ASSERT_OK_AND_ASSIGN(std::vector<Array> values,
                       Linalg(v1::LINALG_OP_SVD, H, nullptr, {.compute_uv = false}));
  ASSERT_OK_AND_ASSIGN(std::vector<float> s, values[0].Download<float>());
  ASSERT_EQ(s.size(), 4u);
  for (float v : s) EXPECT_TRUE(std::isfinite(v)) << v;
  EXPECT_GT(s[0], 1e36f);
}

DISTARRAY_INSTANTIATE_BACKENDS(LinalgTest);

}  // namespace
}  // namespace distarray::testing
