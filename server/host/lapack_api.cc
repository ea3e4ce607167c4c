#include "server/host/lapack_api.h"

#include <mutex>

#include "absl/strings/str_cat.h"
#include "server/backend/runtime_library.h"

namespace distarray {
namespace {

// Binds one precision's routines, `p` its Fortran prefix ('s', 'd', 'c', 'z').
template <typename T, typename R>
bool BindPrecision(void* library, char p, LapackRoutines<T, R>& r, std::string& missing) {
  const bool complex = p == 'c' || p == 'z';
  auto bind = [&](const char* name, auto& out) {
    const std::string symbol = absl::StrCat(std::string(1, p), name, "_");
    if (BindSymbol(library, symbol.c_str(), out)) return true;
    missing = symbol;
    return false;
  };
  r.syevd = nullptr;
  r.heevd = nullptr;
  r.gesdd = nullptr;
  r.zgesdd = nullptr;
  return bind("getrf", r.getrf) && bind("getrs", r.getrs) && bind("potrf", r.potrf) &&
         bind("geqrf", r.geqrf) && bind(complex ? "ungqr" : "orgqr", r.orgqr) &&
         (complex ? bind("heevd", r.heevd) : bind("syevd", r.syevd)) &&
         (complex ? bind("gesdd", r.zgesdd) : bind("gesdd", r.gesdd));
}

}  // namespace

absl::StatusOr<const LapackApi*> LoadLapack() {
  static LapackApi api;
  static absl::Status status;
  static std::once_flag once;
  std::call_once(once, [] {
    absl::StatusOr<void*> library =
        OpenLibrary("LAPACK", {"libopenblas.so.0", "libopenblas.so", "liblapack.so.3"});
    if (!library.ok()) {
      status = library.status();
      return;
    }
    std::string missing;
    if (!BindPrecision(*library, 's', api.s, missing) ||
        !BindPrecision(*library, 'd', api.d, missing) ||
        !BindPrecision(*library, 'c', api.c, missing) ||
        !BindPrecision(*library, 'z', api.z, missing)) {
      status = absl::UnavailableError(absl::StrCat("LAPACK: the library lacks ", missing));
    }
  });
  if (!status.ok()) return status;
  return &api;
}

}  // namespace distarray
