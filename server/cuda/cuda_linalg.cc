// Dense factorizations on a GPU (DeviceOps::Factorize): cuSOLVER's dense routines, one matrix of
// the stack at a time on the device's stream, in the column-major layout the engine prepared.
// The workspace (cuSOLVER's, the Householder scalars, the pivots, gesvdj's V) is one buffer
// allocated through the backend, so it counts against the device's memory limit; each
// matrix's status goes to the engine's info buffer (devInfo).
#include <algorithm>
#include <climits>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/cuda/cuda_backend.h"
#include "server/cuda/cuda_status.h"
#include "server/cuda/linalg_kernels.h"

namespace distarray {
namespace {

absl::Status SolverStatus(cusolverStatus_t status, absl::string_view what) {
  if (status == CUSOLVER_STATUS_SUCCESS) return absl::OkStatus();
  if (status == CUSOLVER_STATUS_ALLOC_FAILED) {
    return absl::ResourceExhaustedError(absl::StrCat(what, ": cuSOLVER status ALLOC_FAILED"));
  }
  return absl::InternalError(absl::StrCat(what, ": cuSOLVER status ", static_cast<int>(status)));
}

// Byte offsets of the parts of the scratch buffer, each 256-aligned.
struct ScratchLayout {
  int64_t work = 0, tau = 0, pivots = 0, v = 0, u = 0, spare_info = 0, bytes = 0;
};

// gesvdj always computes the vectors (econ where the caller wants none): its values-only mode
// gave wrong singular values for wide matrices on an H200 (CUDA 13.0), whose vectors and
// values-with-vectors were right. svdvals pays for vectors it drops, into scratch.
bool SvdEconomy(const DenseFactorization& f) { return !(f.full_matrices && f.compute_uv); }

int64_t Align(int64_t bytes) { return (bytes + 255) / 256 * 256; }

template <typename T, typename R>
absl::StatusOr<int> WorkspaceElements(const cuda::CusolverRoutines<T, R>& r,
                                      const cuda::CusolverHandles::Device& dev,
                                      const DenseFactorization& f, T* a) {
  const int m = static_cast<int>(f.m), n = static_cast<int>(f.n);
  const int k = std::min(m, n), lda = std::max(1, m);
  int lwork = 0, other = 0;
  switch (f.kind) {
    case Factorization::kSolve:
    case Factorization::kSlogdet:
      RETURN_IF_ERROR(
          SolverStatus(r.getrf_buffer_size(dev.handle, m, n, a, lda, &lwork), "getrf_bufferSize"));
      break;
    case Factorization::kCholesky:
      RETURN_IF_ERROR(SolverStatus(
          r.potrf_buffer_size(dev.handle, f.upper ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER,
                              n, a, lda, &lwork),
          "potrf_bufferSize"));
      break;
    case Factorization::kQr: {
      const int q = f.full_matrices ? m : k;
      RETURN_IF_ERROR(
          SolverStatus(r.geqrf_buffer_size(dev.handle, m, n, a, lda, &lwork), "geqrf_bufferSize"));
      // The queries read no data, only sizes: a's address stands for tau, w, S, U and V.
      RETURN_IF_ERROR(SolverStatus(r.orgqr_buffer_size(dev.handle, m, q, k, a, lda, a, &other),
                                   "orgqr_bufferSize"));
      lwork = std::max(lwork, other);
      break;
    }
    case Factorization::kEigh:
      RETURN_IF_ERROR(SolverStatus(
          r.syevd_buffer_size(
              dev.handle, f.compute_uv ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR,
              CUBLAS_FILL_MODE_LOWER, n, a, lda, reinterpret_cast<const R*>(a), &lwork),
          "syevd_bufferSize"));
      break;
    case Factorization::kSvd: {
      RETURN_IF_ERROR(SolverStatus(
          r.gesvdj_buffer_size(dev.handle, CUSOLVER_EIG_MODE_VECTOR, SvdEconomy(f) ? 1 : 0, m, n, a,
                               lda, reinterpret_cast<const R*>(a), a, lda, a, std::max(1, n),
                               &lwork, dev.gesvdj),
          "gesvdj_bufferSize"));
      break;
    }
  }
  return std::max(1, lwork);
}

// Enqueues the factorization of every matrix of `f` on `stream`.
template <typename T, typename R>
absl::Status EnqueueFactorization(const cuda::CusolverRoutines<T, R>& r,
                                  const cuda::CusolverHandles::Device& dev, DType dtype,
                                  const DenseFactorization& f, char* scratch,
                                  const ScratchLayout& layout, int lwork, cudaStream_t stream) {
  RETURN_IF_ERROR(SolverStatus(dev.api->set_stream(dev.handle, stream), "cusolverDnSetStream"));
  const int64_t m = f.m, n = f.n, k = std::min(m, n);
  const int im = static_cast<int>(m), in = static_cast<int>(n), ik = static_cast<int>(k);
  const int lda = std::max(1, im);
  const int64_t q = f.full_matrices ? m : k;  // QR's Q columns; SVD's U columns
  const int64_t vcols = f.full_matrices ? n : k;
  T* a = reinterpret_cast<T*>(static_cast<CudaBuffer*>(f.a.get())->data());
  int* info = reinterpret_cast<int*>(static_cast<CudaBuffer*>(f.info.get())->data());
  auto data = [](const BufferPtr& buffer) {
    return buffer ? static_cast<CudaBuffer*>(buffer.get())->data() : nullptr;
  };
  T* work = reinterpret_cast<T*>(scratch + layout.work);
  T* tau = reinterpret_cast<T*>(scratch + layout.tau);
  int* pivots = reinterpret_cast<int*>(scratch + layout.pivots);
  T* v = reinterpret_cast<T*>(scratch + layout.v);
  T* u_scratch = reinterpret_cast<T*>(scratch + layout.u);
  int* spare_info = reinterpret_cast<int*>(scratch + layout.spare_info);
  if (f.kind == Factorization::kSlogdet) {
    CUDA_RETURN_IF_ERROR(cudaMemsetAsync(info, 0, f.batch * sizeof(int), stream));
  }
  for (int64_t i = 0; i < f.batch; ++i) {
    T* ai = a + i * m * n;
    switch (f.kind) {
      case Factorization::kSolve: {
        T* bi = reinterpret_cast<T*>(data(f.b)) + i * n * f.nrhs;
        RETURN_IF_ERROR(
            SolverStatus(r.getrf(dev.handle, im, in, ai, lda, work, pivots, info + i), "getrf"));
        // getrs' own info only reports bad arguments: it must not overwrite getrf's.
        RETURN_IF_ERROR(SolverStatus(r.getrs(dev.handle, CUBLAS_OP_N, in, static_cast<int>(f.nrhs),
                                             ai, lda, pivots, bi, lda, spare_info),
                                     "getrs"));
        break;
      }
      case Factorization::kCholesky:
        RETURN_IF_ERROR(SolverStatus(
            r.potrf(dev.handle, f.upper ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER, in, ai,
                    lda, work, lwork, info + i),
            "potrf"));
        break;
      case Factorization::kQr: {
        T* qi = reinterpret_cast<T*>(data(f.out0)) + i * m * q;
        RETURN_IF_ERROR(SolverStatus(
            r.geqrf(dev.handle, im, in, ai, lda, tau, work, lwork, info + i), "geqrf"));
        // Q's first min(n, q) columns start as the reflectors; the rest hold the identity's.
        CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(qi, ai, sizeof(T) * m * std::min(n, q),
                                             cudaMemcpyDeviceToDevice, stream));
        RETURN_IF_ERROR(SolverStatus(
            r.orgqr(dev.handle, im, static_cast<int>(q), ik, qi, lda, tau, work, lwork, spare_info),
            "orgqr"));
        break;
      }
      case Factorization::kEigh: {
        R* w = reinterpret_cast<R*>(data(f.out0)) + i * n;
        RETURN_IF_ERROR(SolverStatus(
            r.syevd(dev.handle,
                    f.compute_uv ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR,
                    CUBLAS_FILL_MODE_LOWER, in, ai, lda, w, work, lwork, info + i),
            "syevd"));
        break;
      }
      case Factorization::kSvd: {
        R* s = reinterpret_cast<R*>(data(f.out0)) + i * k;
        T* u = f.compute_uv ? reinterpret_cast<T*>(data(f.out1)) + i * m * q : u_scratch;
        const int ldv = std::max(1, in);
        RETURN_IF_ERROR(SolverStatus(
            r.gesvdj(dev.handle, CUSOLVER_EIG_MODE_VECTOR, SvdEconomy(f) ? 1 : 0, im, in, ai, lda,
                     s, u, lda, v, ldv, work, lwork, info + i, dev.gesvdj),
            "gesvdj"));
        if (f.compute_uv) {
          // gesvdj gives V (n x vcols); the contract is V^H (vcols x n).
          void* vh = data(f.out2) + i * vcols * n * DTypeSize(dtype);
          CUDA_RETURN_IF_ERROR(cuda::LaunchConjugateTranspose(dtype, v, n, vcols, vh, stream));
        }
        break;
      }
      case Factorization::kSlogdet:
        RETURN_IF_ERROR(SolverStatus(
            r.getrf(dev.handle, im, in, ai, lda, work, pivots + i * n, spare_info), "getrf"));
        break;
    }
  }
  if (f.kind == Factorization::kSlogdet) {
    CUDA_RETURN_IF_ERROR(cuda::LaunchSlogdetFromLu(dtype, a, pivots, f.batch, n, f.det,
                                                   data(f.out0), data(f.out1), stream));
  }
  return absl::OkStatus();
}

template <typename T, typename R>
T* ElementPointer(const cuda::CusolverRoutines<T, R>&, void* pointer) {
  return static_cast<T*>(pointer);
}

// Calls `fn(routines)` with the routines of `dtype`'s precision.
template <typename Fn>
absl::Status ForPrecision(const cuda::CusolverApi& api, DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32:
      return fn(api.s);
    case DType::kFloat64:
      return fn(api.d);
    case DType::kComplex64:
      return fn(api.c);
    case DType::kComplex128:
      return fn(api.z);
    default:
      return absl::InternalError(
          absl::StrCat("factorize: no cuSOLVER path for ", DTypeName(dtype)));
  }
}

}  // namespace

absl::Status CudaBackend::Factorize(DType dtype, const DenseFactorization& f) {
  if (dtype != DType::kFloat32 && dtype != DType::kFloat64 && dtype != DType::kComplex64 &&
      dtype != DType::kComplex128) {
    return absl::InternalError(absl::StrCat("factorize: no cuSOLVER path for ", DTypeName(dtype)));
  }
  if (!DenseFactorizationFits(dtype, f)) {
    return absl::InternalError("factorize: the matrices do not fit their buffers");
  }
  if (std::max(f.m, std::max(f.n, f.nrhs)) > INT_MAX / 8 || f.batch == 0 || f.m == 0 || f.n == 0) {
    return absl::InternalError("factorize: extents cuSOLVER's 32-bit API cannot take");
  }
  const int device = f.a->device();
  {
    std::lock_guard lock(cusolver_mu_);
    if (!cusolver_) cusolver_ = std::make_unique<cuda::CusolverHandles>(devices_.count());
  }
  // The handle and the workspace size, with the device current (cuSOLVER's queries run on the
  // host); the enqueue lock keeps the handle's use serialized as cuBLAS's is.
  cuda::CusolverHandles::Device dev{};
  int lwork = 0;
  int64_t element = 0;
  {
    std::lock_guard lock(devices_.enqueue_mu);
    ScopedDevice scope(device);
    ASSIGN_OR_RETURN(dev, cusolver_->Get(device));
    void* a = static_cast<CudaBuffer*>(f.a.get())->data();
    RETURN_IF_ERROR(ForPrecision(*dev.api, dtype, [&](const auto& routines) -> absl::Status {
      auto* typed = ElementPointer(routines, a);
      element = sizeof(*typed);
      ASSIGN_OR_RETURN(lwork, WorkspaceElements(routines, dev, f, typed));
      return absl::OkStatus();
    }));
  }
  const int64_t k = std::min(f.m, f.n);
  ScratchLayout layout;
  layout.work = 0;
  layout.tau = Align(layout.work + lwork * element);
  layout.pivots = Align(layout.tau + (f.kind == Factorization::kQr ? k * element : 0));
  const bool pivoted = f.kind == Factorization::kSolve || f.kind == Factorization::kSlogdet;
  layout.v = Align(layout.pivots + (pivoted ? f.batch * f.n * 4 : 0));
  const bool svd = f.kind == Factorization::kSvd;
  const int64_t vcols = SvdEconomy(f) ? k : f.n;
  layout.u = Align(layout.v + (svd ? f.n * vcols * element : 0));
  layout.spare_info = Align(layout.u + (svd && !f.compute_uv ? f.m * k * element : 0));
  layout.bytes = layout.spare_info + 4;
  ASSIGN_OR_RETURN(BufferPtr scratch, Allocate(device, layout.bytes));

  CudaWork work;
  work.device = device;
  for (const BufferPtr& buffer : {f.a, f.b, f.out0, f.out1, f.out2, f.info, scratch}) {
    if (buffer) work.writes.push_back(static_cast<CudaBuffer*>(buffer.get()));
  }
  work.enqueue = [dev, dtype, f, scratch, layout, lwork](cudaStream_t stream) {
    char* base = static_cast<CudaBuffer*>(scratch.get())->data();
    return ForPrecision(*dev.api, dtype, [&](const auto& routines) -> absl::Status {
      return EnqueueFactorization(routines, dev, dtype, f, base, layout, lwork, stream);
    });
  };
  return Submit(std::move(work)).status();
}

}  // namespace distarray
