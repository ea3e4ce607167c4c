// cuBLAS, loaded with dlopen when the CUDA backend starts instead of linked: libcublasLt mapped
// at process start-up makes civetweb (the metrics exporter) fail to start ("null context when
// constructing CivetServer"), while the same library loaded at run time does not. Measured on
// Debian 12 with CUDA 13.0's cuBLAS and civetweb 1.15; docs/design.md has the note.
#ifndef DISTARRAY_SERVER_CUDA_CUBLAS_API_H_
#define DISTARRAY_SERVER_CUDA_CUBLAS_API_H_

#include <cublas_v2.h>

#include "absl/status/statusor.h"

namespace distarray::cuda {

struct CublasApi {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasDestroy_v2) destroy;
  decltype(&cublasSetStream_v2) set_stream;
  decltype(&cublasSetWorkspace_v2) set_workspace;
  decltype(&cublasGemmEx_64) gemm_ex;
  decltype(&cublasGemmStridedBatchedEx_64) gemm_strided_batched_ex;
  // Symmetric products (MatmulOpSpec.a_symmetric): one triangle of the matrix read.
  decltype(&cublasSsymv_v2_64) ssymv;
  decltype(&cublasDsymv_v2_64) dsymv;
  decltype(&cublasSsymm_v2_64) ssymm;
  decltype(&cublasDsymm_v2_64) dsymm;
  decltype(&cublasGetStatusName) status_name;
};

// The loaded API (once per process); UNAVAILABLE naming the library when it cannot be loaded.
absl::StatusOr<const CublasApi*> LoadCublas();

}  // namespace distarray::cuda

#endif  // DISTARRAY_SERVER_CUDA_CUBLAS_API_H_
