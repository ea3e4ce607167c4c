// Libraries the backends load with dlopen when they first need them (cuBLAS, NVRTC, OpenBLAS): why
// each is not linked is in its *_api.h. Never dlclose'd: their handles live until the process ends.
#ifndef DISTARRAY_SERVER_BACKEND_RUNTIME_LIBRARY_H_
#define DISTARRAY_SERVER_BACKEND_RUNTIME_LIBRARY_H_

#include <dlfcn.h>

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace distarray {

// The first of `names` that loads; UNAVAILABLE naming `what` and the loader's error otherwise.
inline absl::StatusOr<void*> OpenLibrary(absl::string_view what,
                                         std::initializer_list<std::string> names) {
  std::string errors;
  for (const std::string& name : names) {
    if (void* library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) return library;
    absl::StrAppend(&errors, errors.empty() ? "" : "; ", dlerror());
  }
  return absl::UnavailableError(absl::StrCat(what, ": cannot load it: ", errors));
}

// Binds `out` to symbol `name` of `library`; false when it is missing.
template <typename F>
bool BindSymbol(void* library, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(library, name));
  return out != nullptr;
}

}  // namespace distarray

#endif  // DISTARRAY_SERVER_BACKEND_RUNTIME_LIBRARY_H_
