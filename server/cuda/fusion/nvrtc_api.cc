#include "server/cuda/fusion/nvrtc_api.h"

#include <cuda_runtime_api.h>

#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"
#include "server/backend/runtime_library.h"

namespace distarray::cuda {

absl::StatusOr<const NvrtcApi*> LoadNvrtc() {
  static NvrtcApi api;
  static absl::Status status;
  static std::once_flag once;
  std::call_once(once, [] {
    // The major version the daemon was built against (another one may name options or
    // architectures differently).
    absl::StatusOr<void*> library =
        OpenLibrary("NVRTC", {absl::StrCat("libnvrtc.so.", CUDART_VERSION / 1000)});
    if (!library.ok()) {
      status = library.status();
      return;
    }
    const bool bound = BindSymbol(*library, "nvrtcCreateProgram", api.create_program) &&
                       BindSymbol(*library, "nvrtcDestroyProgram", api.destroy_program) &&
                       BindSymbol(*library, "nvrtcCompileProgram", api.compile_program) &&
                       BindSymbol(*library, "nvrtcGetProgramLogSize", api.get_log_size) &&
                       BindSymbol(*library, "nvrtcGetProgramLog", api.get_log) &&
                       BindSymbol(*library, "nvrtcGetCUBINSize", api.get_cubin_size) &&
                       BindSymbol(*library, "nvrtcGetCUBIN", api.get_cubin) &&
                       BindSymbol(*library, "nvrtcGetErrorString", api.error_string);
    if (!bound) {
      status = absl::UnavailableError(absl::StrCat("NVRTC: a symbol is missing: ", dlerror()));
    }
  });
  if (!status.ok()) return status;
  return &api;
}

}  // namespace distarray::cuda
