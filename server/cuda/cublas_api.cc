#include "server/cuda/cublas_api.h"

#include <dlfcn.h>

#include <mutex>

#include "absl/strings/str_cat.h"

namespace distarray::cuda {
namespace {

template <typename F>
bool Bind(void* library, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(library, name));
  return out != nullptr;
}

}  // namespace

absl::StatusOr<const CublasApi*> LoadCublas() {
  static CublasApi api;
  static absl::Status status;
  static std::once_flag once;
  std::call_once(once, [] {
    void* library = nullptr;
    for (const char* name : {"libcublas.so.13", "libcublas.so"}) {
      library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (library != nullptr) break;
    }
    if (library == nullptr) {
      status =
          absl::UnavailableError(absl::StrCat("cuBLAS: cannot load libcublas.so.13: ", dlerror()));
      return;
    }
    // Never dlclose'd: handles live until the process ends.
    const bool bound = Bind(library, "cublasCreate_v2", api.create) &&
                       Bind(library, "cublasDestroy_v2", api.destroy) &&
                       Bind(library, "cublasSetStream_v2", api.set_stream) &&
                       Bind(library, "cublasSetWorkspace_v2", api.set_workspace) &&
                       Bind(library, "cublasGemmEx_64", api.gemm_ex) &&
                       Bind(library, "cublasGetStatusName", api.status_name);
    if (!bound) {
      status = absl::UnavailableError(absl::StrCat("cuBLAS: a symbol is missing: ", dlerror()));
    }
  });
  if (!status.ok()) return status;
  return &api;
}

}  // namespace distarray::cuda
