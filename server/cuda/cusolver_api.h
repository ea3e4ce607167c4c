// cuSOLVER's dense routines (DeviceOps::Factorize on the GPUs), loaded with dlopen on first use
// instead of linked, for the reason cuBLAS is (cublas_api.h): the CUDA math libraries mapped at
// process start-up break the metrics exporter, and cuSOLVER pulls cuBLAS and cuBLASLt in with
// it. Only the headers are needed to build.
#ifndef DISTARRAY_SERVER_CUDA_CUSOLVER_API_H_
#define DISTARRAY_SERVER_CUDA_CUSOLVER_API_H_

#include <cusolverDn.h>

#include <mutex>
#include <vector>

#include "absl/status/statusor.h"

namespace distarray::cuda {

// One precision's routines: `T` the element (float, double, cuComplex, cuDoubleComplex), `R` its
// real part. Real precisions bind orgqr/syevd, complex ones ungqr/heevd, to the same members.
template <typename T, typename R>
struct CusolverRoutines {
  cusolverStatus_t (*getrf_buffer_size)(cusolverDnHandle_t, int m, int n, T* a, int lda,
                                        int* lwork);
  cusolverStatus_t (*getrf)(cusolverDnHandle_t, int m, int n, T* a, int lda, T* work, int* ipiv,
                            int* info);
  cusolverStatus_t (*getrs)(cusolverDnHandle_t, cublasOperation_t trans, int n, int nrhs,
                            const T* a, int lda, const int* ipiv, T* b, int ldb, int* info);
  cusolverStatus_t (*potrf_buffer_size)(cusolverDnHandle_t, cublasFillMode_t uplo, int n, T* a,
                                        int lda, int* lwork);
  cusolverStatus_t (*potrf)(cusolverDnHandle_t, cublasFillMode_t uplo, int n, T* a, int lda,
                            T* work, int lwork, int* info);
  cusolverStatus_t (*geqrf_buffer_size)(cusolverDnHandle_t, int m, int n, T* a, int lda,
                                        int* lwork);
  cusolverStatus_t (*geqrf)(cusolverDnHandle_t, int m, int n, T* a, int lda, T* tau, T* work,
                            int lwork, int* info);
  cusolverStatus_t (*orgqr_buffer_size)(cusolverDnHandle_t, int m, int n, int k, const T* a,
                                        int lda, const T* tau, int* lwork);
  cusolverStatus_t (*orgqr)(cusolverDnHandle_t, int m, int n, int k, T* a, int lda, const T* tau,
                            T* work, int lwork, int* info);
  cusolverStatus_t (*syevd_buffer_size)(cusolverDnHandle_t, cusolverEigMode_t jobz,
                                        cublasFillMode_t uplo, int n, const T* a, int lda,
                                        const R* w, int* lwork);
  cusolverStatus_t (*syevd)(cusolverDnHandle_t, cusolverEigMode_t jobz, cublasFillMode_t uplo,
                            int n, T* a, int lda, R* w, T* work, int lwork, int* info);
  cusolverStatus_t (*gesvdj_buffer_size)(cusolverDnHandle_t, cusolverEigMode_t jobz, int econ,
                                         int m, int n, const T* a, int lda, const R* s, const T* u,
                                         int ldu, const T* v, int ldv, int* lwork,
                                         gesvdjInfo_t params);
  cusolverStatus_t (*gesvdj)(cusolverDnHandle_t, cusolverEigMode_t jobz, int econ, int m, int n,
                             T* a, int lda, R* s, T* u, int ldu, T* v, int ldv, T* work, int lwork,
                             int* info, gesvdjInfo_t params);
};

struct CusolverApi {
  decltype(&cusolverDnCreate) create;
  decltype(&cusolverDnDestroy) destroy;
  decltype(&cusolverDnSetStream) set_stream;
  decltype(&cusolverDnCreateGesvdjInfo) create_gesvdj_info;
  decltype(&cusolverDnDestroyGesvdjInfo) destroy_gesvdj_info;
  CusolverRoutines<float, float> s;
  CusolverRoutines<double, double> d;
  CusolverRoutines<cuComplex, float> c;
  CusolverRoutines<cuDoubleComplex, double> z;
};

// The loaded API (once per process); UNAVAILABLE naming the library when it cannot be loaded or
// lacks a routine.
absl::StatusOr<const CusolverApi*> LoadCusolver();

// One cuSOLVER handle (and gesvdj parameter set, kept with it because a running gesvdj may still
// write into it) per device, made on first use; destroyed with the backend.
class CusolverHandles {
 public:
  explicit CusolverHandles(int devices) : handles_(devices), params_(devices) {}
  ~CusolverHandles();
  CusolverHandles(const CusolverHandles&) = delete;
  CusolverHandles& operator=(const CusolverHandles&) = delete;

  struct Device {
    cusolverDnHandle_t handle;
    gesvdjInfo_t gesvdj;
    const CusolverApi* api;
  };
  // `device`'s handle, made now if it has none (the device must be current). Thread-safe.
  absl::StatusOr<Device> Get(int device);

 private:
  std::mutex mu_;
  const CusolverApi* api_ = nullptr;
  std::vector<cusolverDnHandle_t> handles_;
  std::vector<gesvdjInfo_t> params_;
};

}  // namespace distarray::cuda

#endif  // DISTARRAY_SERVER_CUDA_CUSOLVER_API_H_
