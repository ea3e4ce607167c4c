// The host backend's LAPACK calls on buffers that end exactly at an unmapped page. Debian 12's
// OpenBLAS (0.3.21) reads nearly a column past the end of a matrix in its complex gemv kernels
// (reached through clarf from gebrd and geqrf), which killed the daemon in svdvals of a 19 x 12
// complex64 matrix whose buffer happened to end at a page boundary. The engine sizes its buffers
// exactly, so host::FactorizeInMemory must hand LAPACK padded copies: here every operand and
// result sits against a guard page, and each kind of factorization must run without a fault and
// give a checkable answer (sum of squared singular values and eigenvalues equal to the squared
// Frobenius norm, the solve's residual). It can fail only against a BLAS that reads past a buffer,
// as Debian 12's OpenBLAS does: there, handing LAPACK the caller's buffers crashed it.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "server/host/host_work.h"

namespace distarray {
namespace {

// `bytes` of writable memory whose last byte is followed by a PROT_NONE page.
class GuardedBlock {
 public:
  explicit GuardedBlock(size_t bytes) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t data_pages = (std::max<size_t>(bytes, 1) + page - 1) / page;
    length_ = (data_pages + 1) * page;
    void* base = mmap(nullptr, length_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) return;
    base_ = static_cast<std::byte*>(base);
    mprotect(base_ + data_pages * page, page, PROT_NONE);
    data_ = base_ + data_pages * page - bytes;
  }
  ~GuardedBlock() {
    if (base_ != nullptr) munmap(base_, length_);
  }
  GuardedBlock(const GuardedBlock&) = delete;
  GuardedBlock& operator=(const GuardedBlock&) = delete;
  template <typename T>
  T* as() const {
    return reinterpret_cast<T*>(data_);
  }
  bool ok() const { return data_ != nullptr; }

 private:
  std::byte* base_ = nullptr;
  std::byte* data_ = nullptr;
  size_t length_ = 0;
};

template <typename T>
struct Real {
  using type = T;
};
template <typename R>
struct Real<std::complex<R>> {
  using type = R;
};

template <typename T>
DType DTypeOf() {
  if constexpr (std::is_same_v<T, float>) return DType::kFloat32;
  if constexpr (std::is_same_v<T, double>) return DType::kFloat64;
  if constexpr (std::is_same_v<T, std::complex<float>>) return DType::kComplex64;
  return DType::kComplex128;
}

template <typename T>
void Fill(T* values, int64_t count, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> part(-1, 1);
  for (int64_t i = 0; i < count; ++i) {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      values[i] = static_cast<T>(part(rng));
    } else {
      using R = typename Real<T>::type;
      values[i] = T(static_cast<R>(part(rng)), static_cast<R>(part(rng)));
    }
  }
}

template <typename T>
T Conj(T x) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    return x;
  } else {
    return std::conj(x);
  }
}

template <typename T>
long double SquaredNorm(const T* values, int64_t count) {
  long double sum = 0;
  for (int64_t i = 0; i < count; ++i) sum += static_cast<long double>(std::norm(values[i]));
  return sum;
}

template <typename T>
constexpr double Tolerance() {
  return std::is_same_v<typename Real<T>::type, float> ? 1e-4 : 1e-12;
}

// svd and svdvals of an m x n matrix (column-major), vectors reduced and complete: sum(S^2)
// equals ||A||_F^2, and the values descend.
template <typename T>
void CheckSvd(int64_t m, int64_t n, std::mt19937_64& rng) {
  using R = typename Real<T>::type;
  const int64_t k = std::min(m, n);
  for (int mode = 0; mode < 3; ++mode) {  // svdvals, reduced, complete
    SCOPED_TRACE(::testing::Message()
                 << "svd " << m << "x" << n << " mode " << mode << " " << DTypeName(DTypeOf<T>()));
    const bool vectors = mode > 0, full = mode == 2;
    const int64_t ucols = full ? m : k, vrows = full ? n : k;
    GuardedBlock a(sizeof(T) * m * n), s(sizeof(R) * k), info(sizeof(int32_t));
    GuardedBlock u(sizeof(T) * (vectors ? m * ucols : 1)),
        vt(sizeof(T) * (vectors ? vrows * n : 1));
    ASSERT_TRUE(a.ok() && s.ok() && info.ok() && u.ok() && vt.ok());
    Fill(a.as<T>(), m * n, rng);
    const long double norm = SquaredNorm(a.as<T>(), m * n);
    DenseFactorization f;
    f.kind = Factorization::kSvd;
    f.m = m;
    f.n = n;
    f.compute_uv = vectors;
    f.full_matrices = full;
    host::FactorizationMemory memory;
    memory.a = a.as<void>();
    memory.out0 = s.as<void>();
    memory.out1 = vectors ? u.as<void>() : nullptr;
    memory.out2 = vectors ? vt.as<void>() : nullptr;
    memory.info = info.as<int32_t>();
    ASSERT_TRUE(host::FactorizeInMemory(DTypeOf<T>(), f, memory).ok());
    EXPECT_EQ(*info.as<int32_t>(), 0);
    const R* values = s.as<R>();
    EXPECT_NEAR(static_cast<double>(SquaredNorm(values, k) / norm), 1.0, Tolerance<T>());
    for (int64_t j = 1; j < k; ++j) EXPECT_LE(values[j], values[j - 1]);
  }
}

// eigh of a Hermitian n x n matrix: sum(w^2) equals ||A||_F^2.
template <typename T>
void CheckEigh(int64_t n, std::mt19937_64& rng) {
  using R = typename Real<T>::type;
  SCOPED_TRACE(::testing::Message() << "eigh " << n << " " << DTypeName(DTypeOf<T>()));
  GuardedBlock a(sizeof(T) * n * n), w(sizeof(R) * n), info(sizeof(int32_t));
  ASSERT_TRUE(a.ok() && w.ok() && info.ok());
  std::vector<T> r(n * n);
  Fill(r.data(), n * n, rng);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      T x = (r[i + j * n] + Conj(r[j + i * n])) / T(2);
      if (i == j) x = T(std::real(x));
      a.as<T>()[i + j * n] = x;
    }
  }
  const long double norm = SquaredNorm(a.as<T>(), n * n);
  DenseFactorization f;
  f.kind = Factorization::kEigh;
  f.m = f.n = n;
  f.compute_uv = true;
  host::FactorizationMemory memory;
  memory.a = a.as<void>();
  memory.out0 = w.as<void>();
  memory.info = info.as<int32_t>();
  ASSERT_TRUE(host::FactorizeInMemory(DTypeOf<T>(), f, memory).ok());
  EXPECT_EQ(*info.as<int32_t>(), 0);
  EXPECT_NEAR(static_cast<double>(SquaredNorm(w.as<R>(), n) / norm), 1.0, Tolerance<T>());
}

// qr (complete Q) of an m x n matrix: R's squared norm equals A's (Q is unitary), and Q's
// columns have unit norm.
template <typename T>
void CheckQr(int64_t m, int64_t n, std::mt19937_64& rng) {
  SCOPED_TRACE(::testing::Message() << "qr " << m << "x" << n << " " << DTypeName(DTypeOf<T>()));
  GuardedBlock a(sizeof(T) * m * n), q(sizeof(T) * m * m), info(sizeof(int32_t));
  ASSERT_TRUE(a.ok() && q.ok() && info.ok());
  Fill(a.as<T>(), m * n, rng);
  const long double norm = SquaredNorm(a.as<T>(), m * n);
  for (int64_t j = 0; j < m; ++j) {
    for (int64_t i = 0; i < m; ++i) q.as<T>()[i + j * m] = T(i == j ? 1 : 0);
  }
  DenseFactorization f;
  f.kind = Factorization::kQr;
  f.m = m;
  f.n = n;
  f.full_matrices = true;
  host::FactorizationMemory memory;
  memory.a = a.as<void>();
  memory.out0 = q.as<void>();
  memory.info = info.as<int32_t>();
  ASSERT_TRUE(host::FactorizeInMemory(DTypeOf<T>(), f, memory).ok());
  EXPECT_EQ(*info.as<int32_t>(), 0);
  long double r_norm = 0;  // R: the upper triangle of a
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i <= std::min(j, m - 1); ++i) {
      r_norm += static_cast<long double>(std::norm(a.as<T>()[i + j * m]));
    }
  }
  EXPECT_NEAR(static_cast<double>(r_norm / norm), 1.0, Tolerance<T>());
  for (int64_t j = 0; j < m; ++j) {
    EXPECT_NEAR(static_cast<double>(SquaredNorm(q.as<T>() + j * m, m)), 1.0, Tolerance<T>());
  }
}

// solve of a diagonally dominant n x n system with `nrhs` right-hand sides: small residual.
template <typename T>
void CheckSolve(int64_t n, int64_t nrhs, std::mt19937_64& rng) {
  SCOPED_TRACE(::testing::Message() << "solve " << n << " " << DTypeName(DTypeOf<T>()));
  GuardedBlock a(sizeof(T) * n * n), b(sizeof(T) * n * nrhs), info(sizeof(int32_t));
  ASSERT_TRUE(a.ok() && b.ok() && info.ok());
  Fill(a.as<T>(), n * n, rng);
  for (int64_t i = 0; i < n; ++i) a.as<T>()[i + i * n] += T(static_cast<double>(n));
  Fill(b.as<T>(), n * nrhs, rng);
  const std::vector<T> a0(a.as<T>(), a.as<T>() + n * n), b0(b.as<T>(), b.as<T>() + n * nrhs);
  DenseFactorization f;
  f.kind = Factorization::kSolve;
  f.m = f.n = n;
  f.nrhs = nrhs;
  host::FactorizationMemory memory;
  memory.a = a.as<void>();
  memory.b = b.as<void>();
  memory.info = info.as<int32_t>();
  ASSERT_TRUE(host::FactorizeInMemory(DTypeOf<T>(), f, memory).ok());
  EXPECT_EQ(*info.as<int32_t>(), 0);
  long double worst = 0;
  for (int64_t c = 0; c < nrhs; ++c) {
    for (int64_t i = 0; i < n; ++i) {
      std::complex<long double> sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        const std::complex<long double> aij(std::real(a0[i + j * n]), std::imag(a0[i + j * n]));
        const T x = b.as<T>()[j + c * n];
        sum += aij * std::complex<long double>(std::real(x), std::imag(x));
      }
      const T want = b0[i + c * n];
      worst = std::max(worst,
                       std::abs(sum - std::complex<long double>(std::real(want), std::imag(want))));
    }
  }
  EXPECT_LE(static_cast<double>(worst), Tolerance<T>() * n);
}

template <typename T>
void CheckEveryKind() {
  std::mt19937_64 rng(20261128);
  // The shape that crashed, its transpose, and sizes past the gemv kernels' column blocks.
  for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{
           {19, 12}, {12, 19}, {8, 15}, {33, 7}, {64, 40}, {130, 97}}) {
    CheckSvd<T>(m, n, rng);
    CheckQr<T>(m, n, rng);
  }
  for (int64_t n : {6, 19, 70}) {
    CheckEigh<T>(n, rng);
    CheckSolve<T>(n, 3, rng);
  }
}

TEST(HostLapackSlackTest, Float32AgainstAGuardPage) { CheckEveryKind<float>(); }
TEST(HostLapackSlackTest, Float64AgainstAGuardPage) { CheckEveryKind<double>(); }
TEST(HostLapackSlackTest, Complex64AgainstAGuardPage) { CheckEveryKind<std::complex<float>>(); }
TEST(HostLapackSlackTest, Complex128AgainstAGuardPage) { CheckEveryKind<std::complex<double>>(); }

}  // namespace
}  // namespace distarray
