#include "server/cuda/cusolver_api.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "server/backend/runtime_library.h"
#include "server/cuda/cuda_resources.h"
#include "spdlog/spdlog.h"

namespace distarray::cuda {
namespace {

// Binds one precision's routines, `p` its prefix ('S', 'D', 'C', 'Z').
template <typename T, typename R>
bool BindPrecision(void* library, char p, CusolverRoutines<T, R>& r, std::string& missing) {
  const bool complex = p == 'C' || p == 'Z';
  auto bind = [&](const char* name, auto& out) {
    const std::string symbol = absl::StrCat("cusolverDn", std::string(1, p), name);
    if (BindSymbol(library, symbol.c_str(), out)) return true;
    missing = symbol;
    return false;
  };
  return bind("getrf_bufferSize", r.getrf_buffer_size) && bind("getrf", r.getrf) &&
         bind("getrs", r.getrs) && bind("potrf_bufferSize", r.potrf_buffer_size) &&
         bind("potrf", r.potrf) && bind("geqrf_bufferSize", r.geqrf_buffer_size) &&
         bind("geqrf", r.geqrf) &&
         bind(complex ? "ungqr_bufferSize" : "orgqr_bufferSize", r.orgqr_buffer_size) &&
         bind(complex ? "ungqr" : "orgqr", r.orgqr) &&
         bind(complex ? "heevd_bufferSize" : "syevd_bufferSize", r.syevd_buffer_size) &&
         bind(complex ? "heevd" : "syevd", r.syevd) &&
         bind("gesvdj_bufferSize", r.gesvdj_buffer_size) && bind("gesvdj", r.gesvdj);
}

}  // namespace

absl::StatusOr<const CusolverApi*> LoadCusolver() {
  static CusolverApi api;
  static absl::Status status;
  static std::once_flag once;
  std::call_once(once, [] {
    absl::StatusOr<void*> library =
        OpenLibrary("cuSOLVER", {"libcusolver.so.12", "libcusolver.so.11", "libcusolver.so"});
    if (!library.ok()) {
      status = library.status();
      return;
    }
    std::string missing;
    const bool bound = BindSymbol(*library, "cusolverDnCreate", api.create) &&
                       BindSymbol(*library, "cusolverDnDestroy", api.destroy) &&
                       BindSymbol(*library, "cusolverDnSetStream", api.set_stream) &&
                       BindSymbol(*library, "cusolverDnCreateGesvdjInfo", api.create_gesvdj_info) &&
                       BindSymbol(*library, "cusolverDnDestroyGesvdjInfo", api.destroy_gesvdj_info);
    if (!bound) missing = "a handle routine";
    if (!bound || !BindPrecision(*library, 'S', api.s, missing) ||
        !BindPrecision(*library, 'D', api.d, missing) ||
        !BindPrecision(*library, 'C', api.c, missing) ||
        !BindPrecision(*library, 'Z', api.z, missing)) {
      status = absl::UnavailableError(absl::StrCat("cuSOLVER: the library lacks ", missing));
    }
  });
  if (!status.ok()) return status;
  return &api;
}

absl::StatusOr<CusolverHandles::Device> CusolverHandles::Get(int device) {
  std::lock_guard lock(mu_);
  if (handles_[device] == nullptr) {
    if (api_ == nullptr) {
      absl::StatusOr<const CusolverApi*> api = LoadCusolver();
      if (!api.ok()) return api.status();
      api_ = *api;
    }
    cusolverDnHandle_t handle = nullptr;
    if (cusolverStatus_t s = api_->create(&handle); s != CUSOLVER_STATUS_SUCCESS) {
      return absl::InternalError(absl::StrCat("cusolverDnCreate: status ", static_cast<int>(s)));
    }
    gesvdjInfo_t params = nullptr;
    if (cusolverStatus_t s = api_->create_gesvdj_info(&params); s != CUSOLVER_STATUS_SUCCESS) {
      api_->destroy(handle);
      return absl::InternalError(
          absl::StrCat("cusolverDnCreateGesvdjInfo: status ", static_cast<int>(s)));
    }
    handles_[device] = handle;
    params_[device] = params;
  }
  return Device{handles_[device], params_[device], api_};
}

CusolverHandles::~CusolverHandles() {
  for (size_t d = 0; d < handles_.size(); ++d) {
    if (handles_[d] == nullptr) continue;
    ScopedDevice scope(static_cast<int>(d));
    api_->destroy_gesvdj_info(params_[d]);
    if (cusolverStatus_t s = api_->destroy(handles_[d]); s != CUSOLVER_STATUS_SUCCESS) {
      spdlog::error("cusolverDnDestroy: status {}", static_cast<int>(s));
    }
  }
}

}  // namespace distarray::cuda
