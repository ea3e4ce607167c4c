#include "server/cuda/fusion/nvrtc_api.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"

namespace distarray::cuda {
namespace {

template <typename F>
bool Bind(void* library, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(library, name));
  return out != nullptr;
}

}  // namespace

absl::StatusOr<const NvrtcApi*> LoadNvrtc() {
  static NvrtcApi api;
  static absl::Status status;
  static std::once_flag once;
  std::call_once(once, [] {
    // The major version the daemon was built against (another one may name options or
    // architectures differently).
    const std::string name = absl::StrCat("libnvrtc.so.", CUDART_VERSION / 1000);
    void* library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      status = absl::UnavailableError(absl::StrCat("NVRTC: cannot load ", name, ": ", dlerror()));
      return;
    }
    // Never dlclose'd: compiled modules need nothing from it, but it is cheap to keep.
    const bool bound = Bind(library, "nvrtcCreateProgram", api.create_program) &&
                       Bind(library, "nvrtcDestroyProgram", api.destroy_program) &&
                       Bind(library, "nvrtcCompileProgram", api.compile_program) &&
                       Bind(library, "nvrtcGetProgramLogSize", api.get_log_size) &&
                       Bind(library, "nvrtcGetProgramLog", api.get_log) &&
                       Bind(library, "nvrtcGetCUBINSize", api.get_cubin_size) &&
                       Bind(library, "nvrtcGetCUBIN", api.get_cubin) &&
                       Bind(library, "nvrtcGetErrorString", api.error_string);
    if (!bound)
      status = absl::UnavailableError(absl::StrCat("NVRTC: a symbol is missing: ", dlerror()));
  });
  if (!status.ok()) return status;
  return &api;
}

}  // namespace distarray::cuda
