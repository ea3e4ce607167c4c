// OpenBLAS's GEMM for the host backend, loaded with dlopen on first use instead of linked:
// libopenblas mapped at process start-up breaks civetweb (the metrics exporter), whose first
// scrape answers and whose listener is gone by the second (connection reset, then refused),
// while the same library loaded at run time does not. Seen on Debian 12 with OpenBLAS 0.3.21 and
// civetweb 1.15, as with cuBLAS (server/cuda/cublas_api.h). Where it does not load, GEMM keeps
// the plain loop and says so once in the log.
#ifndef DISTARRAY_SERVER_HOST_OPENBLAS_API_H_
#define DISTARRAY_SERVER_HOST_OPENBLAS_API_H_

#include <cblas.h>

namespace distarray {

struct OpenBlasApi {
  decltype(&cblas_sgemm) sgemm;
  decltype(&cblas_dgemm) dgemm;
  decltype(&cblas_cgemm) cgemm;
  decltype(&cblas_zgemm) zgemm;
};

// The loaded API (once per process), or null where OpenBLAS cannot be loaded.
const OpenBlasApi* LoadOpenBlas();

}  // namespace distarray

#endif  // DISTARRAY_SERVER_HOST_OPENBLAS_API_H_
