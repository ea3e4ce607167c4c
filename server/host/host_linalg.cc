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
void FactorizeOnHost(const LapackApi& api, const DenseFactorization& f, HostBuffer* a,
                     HostBuffer* b, HostBuffer* out0, HostBuffer* out1, HostBuffer* out2,
                     HostBuffer* info_buffer) {
  using L = typename LapackTypes<T>::L;
  using R = typename LapackTypes<T>::R;
  const LapackRoutines<L, R>& lp = LapackTypes<T>::Of(api);
  const int64_t m = f.m, n = f.n, k = std::min(m, n);
  const LapackInt im = static_cast<LapackInt>(m), in = static_cast<LapackInt>(n);
  const LapackInt ik = static_cast<LapackInt>(k);
  const LapackInt lda = Lead(m);
  int32_t* infos = info_buffer->as<int32_t>();
  std::vector<LapackInt> pivots(std::max<int64_t>(1, std::min(m, n)));
  std::vector<L> work(1), tau(std::max<int64_t>(1, k));
  std::vector<R> rwork;
  std::vector<LapackInt> iwork(1);
  const int64_t q = f.full_matrices ? m : k;  // QR's Q columns; SVD's U columns
  const int64_t vrows = f.full_matrices ? n : k;
  for (int64_t i = 0; i < f.batch; ++i) {
    L* ai = a->as<L>() + i * m * n;
    LapackInt info = 0;
    switch (f.kind) {
      case Factorization::kSolve: {
        lp.getrf(&im, &in, ai, &lda, pivots.data(), &info);
        if (info == 0) {
          const LapackInt nrhs = static_cast<LapackInt>(f.nrhs);
          LapackInt solve_info = 0;
          lp.getrs("N", &in, &nrhs, ai, &lda, pivots.data(), b->as<L>() + i * n * f.nrhs, &lda,
                   &solve_info, 1);
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
        work.resize(lwork);
        lp.geqrf(&im, &in, ai, &lda, tau.data(), work.data(), &lwork, &info);
        // Q's first min(n, q) columns start as the reflectors; the rest are the identity's.
        L* qi = out0->as<L>() + i * m * q;
        std::memcpy(qi, ai, sizeof(L) * m * std::min(n, q));
        const LapackInt iq = static_cast<LapackInt>(q);
        lwork = -1;
        lp.orgqr(&im, &iq, &ik, qi, &lda, tau.data(), work.data(), &lwork, &info);
        lwork = QueriedSize(work[0]);
        work.resize(lwork);
        lp.orgqr(&im, &iq, &ik, qi, &lda, tau.data(), work.data(), &lwork, &info);
        break;
      }
      case Factorization::kEigh: {
        const char* jobz = f.compute_uv ? "V" : "N";
        R* w = out0->as<R>() + i * n;
        LapackInt lwork = -1, liwork = -1, lrwork = -1;
        if constexpr (kComplex<T>) {
          rwork.resize(1);
          lp.heevd(jobz, "L", &in, ai, &lda, w, work.data(), &lwork, rwork.data(), &lrwork,
                   iwork.data(), &liwork, &info, 1, 1);
          lwork = QueriedSize(work[0]);
          lrwork = std::max<LapackInt>(1, static_cast<LapackInt>(std::ceil(rwork[0])));
          liwork = std::max<LapackInt>(1, iwork[0]);
          work.resize(lwork);
          rwork.resize(lrwork);
          iwork.resize(liwork);
          lp.heevd(jobz, "L", &in, ai, &lda, w, work.data(), &lwork, rwork.data(), &lrwork,
                   iwork.data(), &liwork, &info, 1, 1);
        } else {
          lp.syevd(jobz, "L", &in, ai, &lda, w, work.data(), &lwork, iwork.data(), &liwork, &info,
                   1, 1);
          lwork = QueriedSize(work[0]);
          liwork = std::max<LapackInt>(1, iwork[0]);
          work.resize(lwork);
          iwork.resize(liwork);
          lp.syevd(jobz, "L", &in, ai, &lda, w, work.data(), &lwork, iwork.data(), &liwork, &info,
                   1, 1);
        }
        break;
      }
      case Factorization::kSvd: {
        const char* jobz = !f.compute_uv ? "N" : f.full_matrices ? "A" : "S";
        R* s = out0->as<R>() + i * k;
        L dummy[1];
        L* u = f.compute_uv ? out1->as<L>() + i * m * q : dummy;
        L* vt = f.compute_uv ? out2->as<L>() + i * vrows * n : dummy;
        const LapackInt ldu = f.compute_uv ? lda : 1;
        const LapackInt ldvt = f.compute_uv ? Lead(vrows) : 1;
        iwork.resize(std::max<int64_t>(1, 8 * k));
        LapackInt lwork = -1;
        if constexpr (kComplex<T>) {
          const int64_t big = std::max(m, n);
          rwork.resize(
              std::max<int64_t>({1, 7 * k, 5 * k * k + 5 * k, 2 * big * k + 2 * k * k + k}));
          lp.zgesdd(jobz, &im, &in, ai, &lda, s, u, &ldu, vt, &ldvt, work.data(), &lwork,
                    rwork.data(), iwork.data(), &info, 1);
          lwork = QueriedSize(work[0]);
          work.resize(lwork);
          lp.zgesdd(jobz, &im, &in, ai, &lda, s, u, &ldu, vt, &ldvt, work.data(), &lwork,
                    rwork.data(), iwork.data(), &info, 1);
        } else {
          lp.gesdd(jobz, &im, &in, ai, &lda, s, u, &ldu, vt, &ldvt, work.data(), &lwork,
                   iwork.data(), &info, 1);
          lwork = QueriedSize(work[0]);
          work.resize(lwork);
          lp.gesdd(jobz, &im, &in, ai, &lda, s, u, &ldu, vt, &ldvt, work.data(), &lwork,
                   iwork.data(), &info, 1);
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
            out0->as<T>()[i] = T(sign.re * e, sign.im * e);
          } else {
            out0->as<T>()[i] = sign * std::exp(logabsdet);
          }
        } else {
          out0->as<T>()[i] = sign;
          out1->as<R>()[i] = logabsdet;
        }
        info = 0;  // a singular matrix is a value here (sign 0), not an error
        break;
      }
    }
    infos[i] = static_cast<int32_t>(info);
  }
}

}  // namespace

namespace host {

absl::StatusOr<HostWork> FactorizeWork(DType dtype, const DenseFactorization& f) {
  if (dtype != DType::kFloat32 && dtype != DType::kFloat64 && dtype != DType::kComplex64 &&
      dtype != DType::kComplex128) {
    return absl::InternalError(absl::StrCat("factorize: no LAPACK path for ", DTypeName(dtype)));
  }
  if (!DenseFactorizationFits(dtype, f)) {
    return absl::InternalError("factorize: the matrices do not fit their buffers");
  }
  // LAPACK's integers are 32-bit: every extent and leading dimension must fit (the engine bounds
  // them far below).
  if (std::max(f.m, std::max(f.n, f.nrhs)) > std::numeric_limits<LapackInt>::max() / 8) {
    return absl::InternalError("factorize: a matrix too large for LAPACK's 32-bit integers");
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
    auto run = [&](auto tag) {
      using T = decltype(tag);
      FactorizeOnHost<T>(*api, plan, ha.get(), hb.get(), h0.get(), h1.get(), h2.get(), hinfo.get());
    };
    switch (dtype) {
      case DType::kFloat32:
        run(float{});
        break;
      case DType::kFloat64:
        run(double{});
        break;
      case DType::kComplex64:
        run(Complex64{});
        break;
      default:
        run(Complex128{});
        break;
    }
  };
  return HostWork{ha->device(), {}, std::move(writes), std::move(work)};
}

}  // namespace host
}  // namespace distarray
