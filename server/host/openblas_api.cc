#include "server/host/openblas_api.h"

#include <mutex>

#include "server/backend/runtime_library.h"
#include "spdlog/spdlog.h"

namespace distarray {

const OpenBlasApi* LoadOpenBlas() {
  static OpenBlasApi api;
  static bool loaded = false;
  static std::once_flag once;
  std::call_once(once, [] {
    absl::StatusOr<void*> library = OpenLibrary("OpenBLAS", {"libopenblas.so.0", "libopenblas.so"});
    if (!library.ok()) {
      spdlog::warn("host GEMM runs as a plain loop: {}", library.status().ToString());
      return;
    }
    loaded = BindSymbol(*library, "cblas_sgemm", api.sgemm) &&
             BindSymbol(*library, "cblas_dgemm", api.dgemm) &&
             BindSymbol(*library, "cblas_cgemm", api.cgemm) &&
             BindSymbol(*library, "cblas_zgemm", api.zgemm);
    if (!loaded) {
      spdlog::warn("host GEMM runs as a plain loop: OpenBLAS lacks cblas_[sdcz]gemm");
    }
  });
  return loaded ? &api : nullptr;
}

}  // namespace distarray
