#include "server/cuda/cublas_api.h"

#include <mutex>

#include "absl/strings/str_cat.h"
#include "server/backend/runtime_library.h"

namespace distarray::cuda {

absl::StatusOr<const CublasApi*> LoadCublas() {
  static CublasApi api;
  static absl::Status status;
  static std::once_flag once;
  std::call_once(once, [] {
    absl::StatusOr<void*> library = OpenLibrary("cuBLAS", {"libcublas.so.13", "libcublas.so"});
    if (!library.ok()) {
      status = library.status();
      return;
    }
    const bool bound =
        BindSymbol(*library, "cublasCreate_v2", api.create) &&
        BindSymbol(*library, "cublasDestroy_v2", api.destroy) &&
        BindSymbol(*library, "cublasSetStream_v2", api.set_stream) &&
        BindSymbol(*library, "cublasSetWorkspace_v2", api.set_workspace) &&
        BindSymbol(*library, "cublasGemmEx_64", api.gemm_ex) &&
        BindSymbol(*library, "cublasGemmStridedBatchedEx_64", api.gemm_strided_batched_ex) &&
        BindSymbol(*library, "cublasSsymv_v2_64", api.ssymv) &&
        BindSymbol(*library, "cublasDsymv_v2_64", api.dsymv) &&
        BindSymbol(*library, "cublasSsymm_v2_64", api.ssymm) &&
        BindSymbol(*library, "cublasDsymm_v2_64", api.dsymm) &&
        BindSymbol(*library, "cublasGetStatusName", api.status_name);
    if (!bound) {
      status = absl::UnavailableError(absl::StrCat("cuBLAS: a symbol is missing: ", dlerror()));
    }
  });
  if (!status.ok()) return status;
  return &api;
}

}  // namespace distarray::cuda
