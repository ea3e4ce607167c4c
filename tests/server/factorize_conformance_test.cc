// DeviceOps::Factorize on every backend (host: LAPACK; cuda: cuSOLVER, skipped without a GPU
// unless DISTARRAY_REQUIRE_BACKENDS names cuda), in its own column-major terms, below the engine:
// each kind on float32, float64, complex64 and complex128 stacks at sizes past the libraries'
// block sizes, checked in long double (residuals and reconstructions within a multiple of
// n * epsilon of the operand's scale), the info a singular or indefinite matrix gives, and the
// buffer-fit refusal.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "server/backend/backend.h"
#include "server/daemon/backend_factory.h"
#include "tests/support/in_process_backend.h"
#include "tests/support/shared_backend_test.h"

namespace distarray {
namespace {

using testing::ReadFrom;
using testing::UploadTo;
using CL = std::complex<long double>;

template <typename T>
struct Traits {
  using Real = T;
  static constexpr bool kComplex = false;
};
template <typename R>
struct Traits<std::complex<R>> {
  using Real = R;
  static constexpr bool kComplex = true;
};

template <typename T>
DType DTypeOf() {
  if constexpr (std::is_same_v<T, float>) return DType::kFloat32;
  if constexpr (std::is_same_v<T, double>) return DType::kFloat64;
  if constexpr (std::is_same_v<T, std::complex<float>>) return DType::kComplex64;
  return DType::kComplex128;
}

template <typename T>
long double Eps() {
  return std::numeric_limits<typename Traits<T>::Real>::epsilon();
}

template <typename T>
CL Wide(const T& x) {
  if constexpr (Traits<T>::kComplex) {
    return CL(x.real(), x.imag());
  } else {
    return CL(x, 0);
  }
}

// Column-major matrices: element (i, j) of matrix b at b * rows * cols + i + j * rows.
template <typename T>
std::vector<T> RandomColumnMajor(int64_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> part(-1, 1);
  std::vector<T> out(count);
  for (T& x : out) {
    if constexpr (Traits<T>::kComplex) {
      x = T(part(rng), part(rng));
    } else {
      x = static_cast<T>(part(rng));
    }
  }
  return out;
}

template <typename T>
CL At(const std::vector<T>& v, int64_t b, int64_t rows, int64_t cols, int64_t i, int64_t j) {
  return Wide(v[b * rows * cols + i + j * rows]);
}

class FactorizeConformanceTest : public testing::SharedBackendTest {
 protected:
  BackendOptions OptionsFor(const std::string& kind) const override {
    BackendOptions options;
    options.kind = kind;
    options.host_devices = 1;
    return options;
  }

  absl::StatusOr<BufferPtr> Zeros(int64_t bytes) {
    std::vector<char> zeros(std::max<int64_t>(1, bytes));
    return UploadTo(backend(), zeros);
  }

  template <typename T>
  void CheckSolveAndSlogdet();
  template <typename T>
  void CheckCholesky(bool upper);
  template <typename T>
  void CheckQr(int64_t m, int64_t n, bool complete);
  template <typename T>
  void CheckEigh();
  template <typename T>
  void CheckSvd(int64_t m, int64_t n, bool full);
};

template <typename T>
void FactorizeConformanceTest::CheckSolveAndSlogdet() {
  constexpr int64_t kBatch = 3, kN = 70, kRhs = 3;
  std::vector<T> a = RandomColumnMajor<T>(kBatch * kN * kN, 11);
  for (int64_t b = 0; b < kBatch; ++b)
    for (int64_t i = 0; i < kN; ++i) a[b * kN * kN + i + i * kN] += T(2);
  const std::vector<T> rhs = RandomColumnMajor<T>(kBatch * kN * kRhs, 12);
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr da, UploadTo(backend(), a));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr db, UploadTo(backend(), rhs));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr info, Zeros(kBatch * 4));
  DenseFactorization f{
      .kind = Factorization::kSolve, .batch = kBatch, .m = kN, .n = kN, .nrhs = kRhs};
  f.a = da;
  f.b = db;
  f.info = info;
  DA_ASSERT_OK(backend().Factorize(DTypeOf<T>(), f));
  DA_ASSERT_OK_AND_ASSIGN(auto x, ReadFrom<T>(backend(), db, kBatch * kN * kRhs));
  DA_ASSERT_OK_AND_ASSIGN(auto infos, ReadFrom<int32_t>(backend(), info, kBatch));
  for (int64_t b = 0; b < kBatch; ++b) {
    EXPECT_EQ(infos[b], 0);
    long double worst = 0, scale = 0;
    for (int64_t i = 0; i < kN; ++i) {
      for (int64_t r = 0; r < kRhs; ++r) {
        CL sum = 0;
        long double magnitude = 0;
        for (int64_t k = 0; k < kN; ++k) {
          sum += At(a, b, kN, kN, i, k) * At(x, b, kN, kRhs, k, r);
          magnitude += std::abs(At(a, b, kN, kN, i, k) * At(x, b, kN, kRhs, k, r));
        }
        worst = std::max(worst, std::abs(sum - At(rhs, b, kN, kRhs, i, r)));
        scale = std::max(scale, magnitude);
      }
    }
    EXPECT_LE(worst, 30 * kN * Eps<T>() * scale) << "solve, matrix " << b;
  }

  // slogdet and det of the same matrices against a long double LU.
  DA_ASSERT_OK_AND_ASSIGN(da, UploadTo(backend(), a));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr sign, Zeros(kBatch * sizeof(T)));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr logabs, Zeros(kBatch * sizeof(typename Traits<T>::Real)));
  DenseFactorization s{.kind = Factorization::kSlogdet, .batch = kBatch, .m = kN, .n = kN};
  s.a = da;
  s.out0 = sign;
  s.out1 = logabs;
  s.info = info;
  DA_ASSERT_OK(backend().Factorize(DTypeOf<T>(), s));
  DA_ASSERT_OK_AND_ASSIGN(auto got_sign, ReadFrom<T>(backend(), sign, kBatch));
  DA_ASSERT_OK_AND_ASSIGN(auto got_log,
                          ReadFrom<typename Traits<T>::Real>(backend(), logabs, kBatch));
  for (int64_t b = 0; b < kBatch; ++b) {
    std::vector<CL> m(kN * kN);
    for (int64_t i = 0; i < kN; ++i)
      for (int64_t j = 0; j < kN; ++j) m[i * kN + j] = At(a, b, kN, kN, i, j);
    CL det = 1;
    for (int64_t k = 0; k < kN; ++k) {
      int64_t p = k;
      for (int64_t i = k + 1; i < kN; ++i)
        if (std::abs(m[i * kN + k]) > std::abs(m[p * kN + k])) p = i;
      if (p != k) {
        for (int64_t j = 0; j < kN; ++j) std::swap(m[k * kN + j], m[p * kN + j]);
        det = -det;
      }
      det *= m[k * kN + k] / std::abs(m[k * kN + k]);
      for (int64_t i = k + 1; i < kN; ++i) {
        const CL f = m[i * kN + k] / m[k * kN + k];
        for (int64_t j = k; j < kN; ++j) m[i * kN + j] -= f * m[k * kN + j];
      }
    }
    long double log_sum = 0;
    for (int64_t k = 0; k < kN; ++k) log_sum += std::log(std::abs(m[k * kN + k]));
    EXPECT_LE(std::abs(Wide(got_sign[b]) - det), 100 * kN * Eps<T>()) << "sign " << b;
    EXPECT_NEAR(got_log[b], log_sum, 100 * kN * Eps<T>() * std::max(1.0L, std::fabs(log_sum)))
        << "logabsdet " << b;
  }
}

template <typename T>
void FactorizeConformanceTest::CheckCholesky(bool upper) {
  constexpr int64_t kBatch = 2, kN = 80;
  const std::vector<T> r = RandomColumnMajor<T>(kBatch * kN * kN, 21);
  std::vector<T> a(r.size());
  for (int64_t b = 0; b < kBatch; ++b) {
    for (int64_t i = 0; i < kN; ++i) {
      for (int64_t j = 0; j < kN; ++j) {
        const CL h = (At(r, b, kN, kN, i, j) + std::conj(At(r, b, kN, kN, j, i))) / 2.0L +
                     (i == j ? CL(kN, 0) : CL(0));
        if constexpr (Traits<T>::kComplex) {
          a[b * kN * kN + i + j * kN] = T(h.real(), i == j ? 0 : h.imag());
        } else {
          a[b * kN * kN + i + j * kN] = static_cast<T>(h.real());
        }
      }
    }
  }
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr da, UploadTo(backend(), a));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr info, Zeros(kBatch * 4));
  DenseFactorization f{
      .kind = Factorization::kCholesky, .batch = kBatch, .m = kN, .n = kN, .upper = upper};
  f.a = da;
  f.info = info;
  DA_ASSERT_OK(backend().Factorize(DTypeOf<T>(), f));
  DA_ASSERT_OK_AND_ASSIGN(auto got, ReadFrom<T>(backend(), da, kBatch * kN * kN));
  DA_ASSERT_OK_AND_ASSIGN(auto infos, ReadFrom<int32_t>(backend(), info, kBatch));
  for (int64_t b = 0; b < kBatch; ++b) {
    EXPECT_EQ(infos[b], 0);
    // The factor's triangle only: the other holds what a held.
    auto factor = [&](int64_t i, int64_t j) {
      return (upper ? i <= j : i >= j) ? At(got, b, kN, kN, i, j) : CL(0);
    };
    long double worst = 0;
    for (int64_t i = 0; i < kN; ++i) {
      for (int64_t j = 0; j < kN; ++j) {
        CL sum = 0;
        for (int64_t k = 0; k < kN; ++k) {
          sum += upper ? std::conj(factor(k, i)) * factor(k, j)
                       : factor(i, k) * std::conj(factor(j, k));
        }
        worst = std::max(worst, std::abs(sum - At(a, b, kN, kN, i, j)));
      }
    }
    EXPECT_LE(worst, 30 * kN * Eps<T>() * 2 * kN) << "cholesky, matrix " << b;
  }
  // Not positive definite: info names the failing minor.
  std::vector<T> indefinite = a;
  indefinite[5 + 5 * kN] = T(-1);
  DA_ASSERT_OK_AND_ASSIGN(da, UploadTo(backend(), indefinite));
  f.a = da;
  DA_ASSERT_OK(backend().Factorize(DTypeOf<T>(), f));
  DA_ASSERT_OK_AND_ASSIGN(infos, ReadFrom<int32_t>(backend(), info, kBatch));
  EXPECT_GT(infos[0], 0);
  EXPECT_EQ(infos[1], 0);
}

template <typename T>
void FactorizeConformanceTest::CheckQr(int64_t m, int64_t n, bool complete) {
  constexpr int64_t kBatch = 2;
  const int64_t k = std::min(m, n), q = complete ? m : k;
  const std::vector<T> a = RandomColumnMajor<T>(kBatch * m * n, 31);
  // Q starts as the identity's columns (the caller's part of the contract).
  std::vector<T> eye(kBatch * m * q, T(0));
  for (int64_t b = 0; b < kBatch; ++b)
    for (int64_t i = 0; i < std::min(m, q); ++i) eye[b * m * q + i + i * m] = T(1);
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr da, UploadTo(backend(), a));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr dq, UploadTo(backend(), eye));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr info, Zeros(kBatch * 4));
  DenseFactorization f{
      .kind = Factorization::kQr, .batch = kBatch, .m = m, .n = n, .full_matrices = complete};
  f.a = da;
  f.out0 = dq;
  f.info = info;
  DA_ASSERT_OK(backend().Factorize(DTypeOf<T>(), f));
  DA_ASSERT_OK_AND_ASSIGN(auto r, ReadFrom<T>(backend(), da, kBatch * m * n));
  DA_ASSERT_OK_AND_ASSIGN(auto qs, ReadFrom<T>(backend(), dq, kBatch * m * q));
  for (int64_t b = 0; b < kBatch; ++b) {
    long double orthogonality = 0, reconstruction = 0;
    for (int64_t i = 0; i < q; ++i) {
      for (int64_t j = 0; j < q; ++j) {
        CL sum = 0;
        for (int64_t p = 0; p < m; ++p)
          sum += std::conj(At(qs, b, m, q, p, i)) * At(qs, b, m, q, p, j);
        orthogonality = std::max(orthogonality, std::abs(sum - CL(i == j ? 1 : 0)));
      }
    }
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        CL sum = 0;
        for (int64_t p = 0; p < std::min(q, j + 1); ++p)
          sum += At(qs, b, m, q, i, p) * At(r, b, m, n, p, j);
        reconstruction = std::max(reconstruction, std::abs(sum - At(a, b, m, n, i, j)));
      }
    }
    EXPECT_LE(orthogonality, 30 * m * Eps<T>()) << "Q^H Q, matrix " << b;
    EXPECT_LE(reconstruction, 30 * m * Eps<T>() * std::sqrt(m)) << "Q R, matrix " << b;
  }
}

template <typename T>
void FactorizeConformanceTest::CheckEigh() {
  constexpr int64_t kBatch = 2, kN = 75;
  using R = typename Traits<T>::Real;
  const std::vector<T> r = RandomColumnMajor<T>(kBatch * kN * kN, 41);
  std::vector<T> a(r.size());
  for (int64_t b = 0; b < kBatch; ++b) {
    for (int64_t i = 0; i < kN; ++i) {
      for (int64_t j = 0; j < kN; ++j) {
        // Lower triangle Hermitian data; the upper one junk (only the lower is read).
        const CL h = (At(r, b, kN, kN, i, j) + std::conj(At(r, b, kN, kN, j, i))) / 2.0L;
        T value;
        if constexpr (Traits<T>::kComplex) {
          value = T(h.real(), i == j ? 0 : h.imag());
        } else {
          value = static_cast<T>(h.real());
        }
        a[b * kN * kN + i + j * kN] = i >= j ? value : T(9);
      }
    }
  }
  auto sym = [&](int64_t b, int64_t i, int64_t j) {
    return i >= j ? At(a, b, kN, kN, i, j) : std::conj(At(a, b, kN, kN, j, i));
  };
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr da, UploadTo(backend(), a));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr dw, Zeros(kBatch * kN * sizeof(R)));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr info, Zeros(kBatch * 4));
  DenseFactorization f{
      .kind = Factorization::kEigh, .batch = kBatch, .m = kN, .n = kN, .compute_uv = true};
  f.a = da;
  f.out0 = dw;
  f.info = info;
  DA_ASSERT_OK(backend().Factorize(DTypeOf<T>(), f));
  DA_ASSERT_OK_AND_ASSIGN(auto v, ReadFrom<T>(backend(), da, kBatch * kN * kN));
  DA_ASSERT_OK_AND_ASSIGN(auto w, ReadFrom<R>(backend(), dw, kBatch * kN));
  for (int64_t b = 0; b < kBatch; ++b) {
    long double worst = 0;
    for (int64_t j = 0; j < kN; ++j) {
      if (j > 0) EXPECT_LE(w[b * kN + j - 1], w[b * kN + j]);
      for (int64_t i = 0; i < kN; ++i) {
        CL sum = 0;
        for (int64_t p = 0; p < kN; ++p) sum += sym(b, i, p) * At(v, b, kN, kN, p, j);
        worst =
            std::max(worst, std::abs(sum - At(v, b, kN, kN, i, j) * (long double)w[b * kN + j]));
      }
    }
    EXPECT_LE(worst, 30 * kN * Eps<T>() * kN) << "A V - V w, matrix " << b;
  }
}

template <typename T>
void FactorizeConformanceTest::CheckSvd(int64_t m, int64_t n, bool full) {
  constexpr int64_t kBatch = 2;
  using R = typename Traits<T>::Real;
  const int64_t k = std::min(m, n), ucols = full ? m : k, vrows = full ? n : k;
  const std::vector<T> a = RandomColumnMajor<T>(kBatch * m * n, 51);
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr da, UploadTo(backend(), a));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr ds, Zeros(kBatch * k * sizeof(R)));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr du, Zeros(kBatch * m * ucols * sizeof(T)));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr dvh, Zeros(kBatch * vrows * n * sizeof(T)));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr info, Zeros(kBatch * 4));
  DenseFactorization f{.kind = Factorization::kSvd,
                       .batch = kBatch,
                       .m = m,
                       .n = n,
                       .full_matrices = full,
                       .compute_uv = true};
  f.a = da;
  f.out0 = ds;
  f.out1 = du;
  f.out2 = dvh;
  f.info = info;
  DA_ASSERT_OK(backend().Factorize(DTypeOf<T>(), f));
  DA_ASSERT_OK_AND_ASSIGN(auto s, ReadFrom<R>(backend(), ds, kBatch * k));
  DA_ASSERT_OK_AND_ASSIGN(auto u, ReadFrom<T>(backend(), du, kBatch * m * ucols));
  DA_ASSERT_OK_AND_ASSIGN(auto vh, ReadFrom<T>(backend(), dvh, kBatch * vrows * n));
  DA_ASSERT_OK_AND_ASSIGN(auto infos, ReadFrom<int32_t>(backend(), info, kBatch));
  for (int64_t b = 0; b < kBatch; ++b) {
    EXPECT_EQ(infos[b], 0);
    long double worst = 0, orthogonality = 0;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        CL sum = 0;
        for (int64_t p = 0; p < k; ++p) {
          sum += At(u, b, m, ucols, i, p) * (long double)s[b * k + p] * At(vh, b, vrows, n, p, j);
        }
        worst = std::max(worst, std::abs(sum - At(a, b, m, n, i, j)));
      }
    }
    for (int64_t i = 0; i < vrows; ++i) {
      for (int64_t j = 0; j < vrows; ++j) {
        CL sum = 0;
        for (int64_t p = 0; p < n; ++p)
          sum += At(vh, b, vrows, n, i, p) * std::conj(At(vh, b, vrows, n, j, p));
        orthogonality = std::max(orthogonality, std::abs(sum - CL(i == j ? 1 : 0)));
      }
    }
    for (int64_t p = 1; p < k; ++p) EXPECT_LE(s[b * k + p], s[b * k + p - 1]);
    const int64_t big = std::max(m, n);
    EXPECT_LE(worst, 30 * big * Eps<T>() * std::sqrt(big)) << "U S Vh, matrix " << b;
    EXPECT_LE(orthogonality, 30 * big * Eps<T>()) << "Vh Vh^H, matrix " << b;
  }
}

TEST_P(FactorizeConformanceTest, SolveAndSlogdet) {
  CheckSolveAndSlogdet<float>();
  CheckSolveAndSlogdet<double>();
  CheckSolveAndSlogdet<std::complex<float>>();
  CheckSolveAndSlogdet<std::complex<double>>();
}

TEST_P(FactorizeConformanceTest, CholeskyLowerAndUpper) {
  CheckCholesky<double>(false);
  CheckCholesky<float>(true);
  CheckCholesky<std::complex<double>>(true);
  CheckCholesky<std::complex<float>>(false);
}

TEST_P(FactorizeConformanceTest, QrReducedAndComplete) {
  CheckQr<double>(90, 40, /*complete=*/true);
  CheckQr<float>(40, 90, /*complete=*/false);
  CheckQr<std::complex<double>>(70, 70, /*complete=*/false);
  CheckQr<std::complex<float>>(80, 30, /*complete=*/true);
}

TEST_P(FactorizeConformanceTest, EighReadsTheLowerTriangle) {
  CheckEigh<double>();
  CheckEigh<std::complex<float>>();
}

TEST_P(FactorizeConformanceTest, SvdOfTallAndWideMatrices) {
  CheckSvd<double>(60, 35, /*full=*/true);
  CheckSvd<float>(35, 60, /*full=*/false);
  CheckSvd<std::complex<double>>(30, 50, /*full=*/true);
  CheckSvd<std::complex<float>>(50, 30, /*full=*/false);
}

TEST_P(FactorizeConformanceTest, SingularMatrixSetsInfoAndBuffersAreChecked) {
  constexpr int64_t kN = 8;
  std::vector<double> a = RandomColumnMajor<double>(kN * kN, 61);
  for (int64_t i = 0; i < kN; ++i) a[i + 3 * kN] = 0;  // column 3 zero: pivot 4 is exactly zero
  const std::vector<double> rhs = RandomColumnMajor<double>(kN, 62);
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr da, UploadTo(backend(), a));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr db, UploadTo(backend(), rhs));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr info, Zeros(4));
  DenseFactorization f{.kind = Factorization::kSolve, .batch = 1, .m = kN, .n = kN, .nrhs = 1};
  f.a = da;
  f.b = db;
  f.info = info;
  DA_ASSERT_OK(backend().Factorize(DType::kFloat64, f));
  DA_ASSERT_OK_AND_ASSIGN(auto infos, ReadFrom<int32_t>(backend(), info, 1));
  EXPECT_EQ(infos[0], 4);
  // A stack that reaches past a's buffer is refused before any library sees a pointer.
  DenseFactorization past = f;
  past.batch = 2;
  EXPECT_EQ(backend().Factorize(DType::kFloat64, past).code(), absl::StatusCode::kInternal);
  // Dtypes without a factorization.
  EXPECT_EQ(backend().Factorize(DType::kInt32, f).code(), absl::StatusCode::kInternal);
}

INSTANTIATE_TEST_SUITE_P(Backends, FactorizeConformanceTest, ::testing::Values("host", "cuda"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace distarray
