// Dense factorizations on a simulated device (DeviceOps::Factorize): LAPACK's routines, one
// matrix of the stack at a time, on the device's thread. The matrices are column-major already
// (the engine transposed them), so they go to LAPACK as they are.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/complex.h"
#include "common/status_macros.h"
#include "server/host/host_buffer.h"
#include "server/host/host_work.h"
#include "server/host/lapack_api.h"

namespace distarray {
namespace {

template <typename T>
struct LapackTypes;
template <>
struct LapackTypes<float> {
  using L = float;
  using R = float;
  static const LapackRoutines<L, R>& Of(const LapackApi& api) { return api.s; }
};
template <>
struct LapackTypes<double> {
  using L = double;
  using R = double;
  static const LapackRoutines<L, R>& Of(const LapackApi& api) { return api.d; }
};
template <>
struct LapackTypes<Complex64> {
  using L = LapackComplex64;
  using R = float;
  static const LapackRoutines<L, R>& Of(const LapackApi& api) { return api.c; }
};
template <>
struct LapackTypes<Complex128> {
  using L = LapackComplex128;
  using R = double;
  static const LapackRoutines<L, R>& Of(const LapackApi& api) { return api.z; }
};

template <typename T>
constexpr bool kComplex = std::is_same_v<T, Complex64> || std::is_same_v<T, Complex128>;

// A workspace size LAPACK reported (lwork = -1) in a work array's first element.
template <typename L>
LapackInt QueriedSize(const L& value) {
  double size;
  if constexpr (std::is_floating_point_v<L>) {
    size = static_cast<double>(value);
  } else {
    size = static_cast<double>(value.re);
  }
  return std::max<LapackInt>(1, static_cast<LapackInt>(std::ceil(size)));
}

LapackInt Lead(int64_t rows) { return static_cast<LapackInt>(std::max<int64_t>(1, rows)); }

// OpenBLAS 0.3.21 (Debian 12's) reads past the end of a matrix in its complex gemv kernels
// (cgemv_n/zgemv_n, reached through clarf from gebrd and geqrf): nearly a column beyond the last
// one. The engine's buffers are sized exactly, so when one ended at an unmapped page the daemon
// died (svdvals of a 19 x 12 complex64 matrix; reproduced with guard pages, and one column of
// slack was enough at every size tried up to 130 x 97). LAPACK therefore never sees those
// buffers: it works on copies that end in kSlackColumns columns of slack, as do the work arrays.
constexpr int64_t kSlackColumns = 4;

// A copy of `count` elements, with `slack` more after them that LAPACK may read but never uses.
template <typename X>
class Padded {
 public:
  Padded(int64_t count, int64_t slack) : count_(count), storage_(count + slack) {}
  X* data() { return storage_.data(); }
  void Load(const X* from) { std::memcpy(storage_.data(), from, sizeof(X) * count_); }
  void Store(X* to) const { std::memcpy(to, storage_.data(), sizeof(X) * count_); }

 private:
  int64_t count_;
  std::vector<X> storage_;
};

// sign and log|det| of one LU-factored n x n matrix (getrf's output), in T's precision, as
// NumPy's slogdet computes them.
template <typename T, typename R>
void SlogdetFromLu(const T* lu, const LapackInt* pivots, int64_t n, LapackInt info, T& sign,
                   R& logabsdet) {
  if (info > 0) {  // an exact zero on U's diagonal
    sign = T(0);
    logabsdet = -std::numeric_limits<R>::infinity();
    return;
  }
  bool odd = false;
  for (int64_t i = 0; i < n; ++i) odd ^= pivots[i] != i + 1;
  R log_sum = 0;
  if constexpr (kComplex<T>) {
    std::complex<R> s(odd ? -1 : 1, 0);
    for (int64_t i = 0; i < n; ++i) {
      const std::complex<R> d(lu[i + i * n].re, lu[i + i * n].im);
      const R magnitude = std::abs(d);
      s *= d / magnitude;
      log_sum += std::log(magnitude);
    }
    sign = T(s.real(), s.imag());
  } else {
    R s = odd ? -1 : 1;
    for (int64_t i = 0; i < n; ++i) {
      const R d = lu[i + i * n];
      if (d < 0) s = -s;
      log_sum += std::log(std::abs(d));
    }
    sign = s;
  }
  logabsdet = log_sum;
}

template <typename T>
void FactorizeOnHost(const LapackApi& api, const DenseFactorization& f,
                     const host::FactorizationMemory& memory) {
  using L = typename LapackTypes<T>::L;
  using R = typename LapackTypes<T>::R;
  const LapackRoutines<L, R>& lp = LapackTypes<T>::Of(api);
  const int64_t m = f.m, n = f.n, k = std::min(m, n);
  const LapackInt im = static_cast<LapackInt>(m), in = static_cast<LapackInt>(n);
  const LapackInt ik = static_cast<LapackInt>(k);
  const LapackInt lda = Lead(m);
  int32_t* infos = memory.info;
  const int64_t q = f.full_matrices ? m : k;  // QR's Q columns; SVD's U columns
  const int64_t vrows = f.full_matrices ? n : k;
  const int64_t slack = kSlackColumns * std::max({m, n, f.nrhs, int64_t{1}}) + 64;
  // Work arrays are resized to a routine's query plus `slack`.
  auto sized = [slack](auto& vector, int64_t count) { vector.resize(count + slack); };
  std::vector<LapackInt> pivots(std::max<int64_t>(1, std::min(m, n)) + slack);
  std::vector<L> work, tau;
  std::vector<R> rwork;
  std::vector<LapackInt> iwork;
  sized(work, 1);
  sized(tau, std::max<int64_t>(1, k));
  sized(iwork, 1);
  // One matrix's operand and results, copied in and out around the LAPACK calls.
  Padded<L> a_copy(m * n, slack);
  Padded<L> b_copy(memory.b != nullptr ? n * f.nrhs : 0, slack);
  const bool svd_vectors = f.kind == Factorization::kSvd && f.compute_uv;
  Padded<L> q_copy(f.kind == Factorization::kQr ? m * q : 0, slack);
  Padded<L> u_copy(svd_vectors ? m * q : 0, slack);
  Padded<L> vt_copy(svd_vectors ? vrows * n : 0, slack);
  Padded<R> values_copy(f.kind == Factorization::kEigh ? n : k, slack);
  for (int64_t i = 0; i < f.batch; ++i) {
    a_copy.Load(static_cast<L*>(memory.a) + i * m * n);
    L* ai = a_copy.data();
    LapackInt info = 0;
    switch (f.kind) {
      case Factorization::kSolve: {
        lp.getrf(&im, &in, ai, &lda, pivots.data(), &info);
        if (info == 0) {
          const LapackInt nrhs = static_cast<LapackInt>(f.nrhs);
          LapackInt solve_info = 0;
          L* bi = static_cast<L*>(memory.b) + i * n * f.nrhs;
          b_copy.Load(bi);
          lp.getrs("N", &in, &nrhs, ai, &lda, pivots.data(), b_copy.data(), &lda, &solve_info, 1);
          b_copy.Store(bi);
        }
        break;
      }
      case Factorization::kCholesky:
        lp.potrf(f.upper ? "U" : "L", &in, ai, &lda, &info, 1);
        break;
      case Factorization::kQr: {
        LapackInt lwork = -1;
        lp.geqrf(&im, &in, ai, &lda, tau.data(), work.data(), &lwork, &info);
        lwork = QueriedSize(work[0]);
        sized(work, lwork);
        lp.geqrf(&im, &in, ai, &lda, tau.data(), work.data(), &lwork, &info);
        // Q's first min(n, q) columns start as the reflectors; the rest are the identity's.
        L* q_out = static_cast<L*>(memory.out0) + i * m * q;
        q_copy.Load(q_out);
        L* qi = q_copy.data();
        std::memcpy(qi, ai, sizeof(L) * m * std::min(n, q));
        const LapackInt iq = static_cast<LapackInt>(q);
        lwork = -1;
        lp.orgqr(&im, &iq, &ik, qi, &lda, tau.data(), work.data(), &lwork, &info);
        lwork = QueriedSize(work[0]);
        sized(work, lwork);
        lp.orgqr(&im, &iq, &ik, qi, &lda, tau.data(), work.data(), &lwork, &info);
        q_copy.Store(q_out);
        break;
      }
      case Factorization::kEigh: {
        const char* jobz = f.compute_uv ? "V" : "N";
        R* w = values_copy.data();
        LapackInt lwork = -1, liwork = -1, lrwork = -1;
        if constexpr (kComplex<T>) {
          sized(rwork, 1);
          lp.heevd(jobz, "L", &in, ai, &lda, w, work.data(), &lwork, rwork.data(), &lrwork,
                   iwork.data(), &liwork, &info, 1, 1);
          lwork = QueriedSize(work[0]);
          lrwork = std::max<LapackInt>(1, static_cast<LapackInt>(std::ceil(rwork[0])));
          liwork = std::max<LapackInt>(1, iwork[0]);
          sized(work, lwork);
          sized(rwork, lrwork);
          sized(iwork, liwork);
          lp.heevd(jobz, "L", &in, ai, &lda, w, work.data(), &lwork, rwork.data(), &lrwork,
                   iwork.data(), &liwork, &info, 1, 1);
        } else {
          lp.syevd(jobz, "L", &in, ai, &lda, w, work.data(), &lwork, iwork.data(), &liwork, &info,
                   1, 1);
          lwork = QueriedSize(work[0]);
          liwork = std::max<LapackInt>(1, iwork[0]);
          sized(work, lwork);
          sized(iwork, liwork);
          lp.syevd(jobz, "L", &in, ai, &lda, w, work.data(), &lwork, iwork.data(), &liwork, &info,
                   1, 1);
        }
        values_copy.Store(static_cast<R*>(memory.out0) + i * n);
        break;
      }
      case Factorization::kSvd: {
        const char* jobz = !f.compute_uv ? "N" : f.full_matrices ? "A" : "S";
        R* s = values_copy.data();
        // Without vectors U and Vh are not referenced; the padded copies are then 0 + slack long.
        L* u = u_copy.data();
        L* vt = vt_copy.data();
        const LapackInt ldu = f.compute_uv ? lda : 1;
        const LapackInt ldvt = f.compute_uv ? Lead(vrows) : 1;
        sized(iwork, std::max<int64_t>(1, 8 * k));
        LapackInt lwork = -1;
        if constexpr (kComplex<T>) {
          const int64_t big = std::max(m, n);
          sized(rwork,
                std::max<int64_t>({1, 7 * k, 5 * k * k + 5 * k, 2 * big * k + 2 * k * k + k}));
          lp.zgesdd(jobz, &im, &in, ai, &lda, s, u, &ldu, vt, &ldvt, work.data(), &lwork,
                    rwork.data(), iwork.data(), &info, 1);
          lwork = QueriedSize(work[0]);
          sized(work, lwork);
          lp.zgesdd(jobz, &im, &in, ai, &lda, s, u, &ldu, vt, &ldvt, work.data(), &lwork,
                    rwork.data(), iwork.data(), &info, 1);
        } else {
          lp.gesdd(jobz, &im, &in, ai, &lda, s, u, &ldu, vt, &ldvt, work.data(), &lwork,
                   iwork.data(), &info, 1);
          lwork = QueriedSize(work[0]);
          sized(work, lwork);
          lp.gesdd(jobz, &im, &in, ai, &lda, s, u, &ldu, vt, &ldvt, work.data(), &lwork,
                   iwork.data(), &info, 1);
        }
        values_copy.Store(static_cast<R*>(memory.out0) + i * k);
        if (f.compute_uv) {
          u_copy.Store(static_cast<L*>(memory.out1) + i * m * q);
          vt_copy.Store(static_cast<L*>(memory.out2) + i * vrows * n);
        }
        break;
      }
      case Factorization::kSlogdet: {
        lp.getrf(&im, &in, ai, &lda, pivots.data(), &info);
        T sign;
        R logabsdet;
        SlogdetFromLu<T, R>(reinterpret_cast<const T*>(ai), pivots.data(), n, info, sign,
                            logabsdet);
        if (f.det) {
          // NumPy's det: sign * exp(logabsdet), so it overflows where the product would.
          if constexpr (kComplex<T>) {
            const R e = std::exp(logabsdet);
            static_cast<T*>(memory.out0)[i] = T(sign.re * e, sign.im * e);
          } else {
            static_cast<T*>(memory.out0)[i] = sign * std::exp(logabsdet);
          }
        } else {
          static_cast<T*>(memory.out0)[i] = sign;
          static_cast<R*>(memory.out1)[i] = logabsdet;
        }
        info = 0;  // a singular matrix is a value here (sign 0), not an error
        break;
      }
    }
    // The factors (LU, Cholesky's triangle, QR's R and reflectors, eigenvectors) stay in a.
    a_copy.Store(static_cast<L*>(memory.a) + i * m * n);
    infos[i] = static_cast<int32_t>(info);
  }
}

}  // namespace

namespace host {

namespace {

// The dtype's instantiation of FactorizeOnHost.
void FactorizeWith(const LapackApi& api, DType dtype, const DenseFactorization& f,
                   const FactorizationMemory& memory) {
  switch (dtype) {
    case DType::kFloat32:
      return FactorizeOnHost<float>(api, f, memory);
    case DType::kFloat64:
      return FactorizeOnHost<double>(api, f, memory);
    case DType::kComplex64:
      return FactorizeOnHost<Complex64>(api, f, memory);
    default:
      return FactorizeOnHost<Complex128>(api, f, memory);
  }
}

absl::Status CheckFactorizable(DType dtype, const DenseFactorization& f) {
  if (dtype != DType::kFloat32 && dtype != DType::kFloat64 && dtype != DType::kComplex64 &&
      dtype != DType::kComplex128) {
    return absl::InternalError(absl::StrCat("factorize: no LAPACK path for ", DTypeName(dtype)));
  }
  // LAPACK's integers are 32-bit: every extent and leading dimension must fit (the engine bounds
  // them far below).
  if (std::max(f.m, std::max(f.n, f.nrhs)) > std::numeric_limits<LapackInt>::max() / 8) {
    return absl::InternalError("factorize: a matrix too large for LAPACK's 32-bit integers");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status FactorizeInMemory(DType dtype, const DenseFactorization& f,
                               const FactorizationMemory& memory) {
  RETURN_IF_ERROR(CheckFactorizable(dtype, f));
  ASSIGN_OR_RETURN(const LapackApi* api, LoadLapack());
  FactorizeWith(*api, dtype, f, memory);
  return absl::OkStatus();
}

absl::StatusOr<HostWork> FactorizeWork(DType dtype, const DenseFactorization& f) {
  RETURN_IF_ERROR(CheckFactorizable(dtype, f));
  if (!DenseFactorizationFits(dtype, f)) {
    return absl::InternalError("factorize: the matrices do not fit their buffers");
  }
  ASSIGN_OR_RETURN(const LapackApi* api, LoadLapack());
  auto ha = AsHost(f.a);
  auto hb = f.b ? AsHost(f.b) : nullptr;
  auto h0 = f.out0 ? AsHost(f.out0) : nullptr;
  auto h1 = f.out1 ? AsHost(f.out1) : nullptr;
  auto h2 = f.out2 ? AsHost(f.out2) : nullptr;
  auto hinfo = AsHost(f.info);
  std::vector<HostBuffer*> writes = {ha.get(), hinfo.get()};
  for (const auto& buffer : {hb, h0, h1, h2}) {
    if (buffer) writes.push_back(buffer.get());
  }
  // The work holds the buffers; `f`'s own pointers are dropped so nothing else is kept alive.
  DenseFactorization plan = f;
  plan.a = plan.b = plan.out0 = plan.out1 = plan.out2 = plan.info = nullptr;
  auto work = [=] {
    const FactorizationMemory memory{ha->data(),
                                     hb ? hb->data() : nullptr,
                                     h0 ? h0->data() : nullptr,
                                     h1 ? h1->data() : nullptr,
                                     h2 ? h2->data() : nullptr,
                                     hinfo->as<int32_t>()};
    FactorizeWith(*api, dtype, plan, memory);
  };
  return HostWork{ha->device(), {}, std::move(writes), std::move(work)};
}

}  // namespace host
}  // namespace distarray
