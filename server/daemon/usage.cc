#include "server/daemon/usage.h"

#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/str_cat.h"
#include "server/daemon/command_line.h"

#ifndef DISTARRAY_VERSION
#define DISTARRAY_VERSION "unknown"
#endif
#ifndef DISTARRAY_GIT_DESCRIBE
#define DISTARRAY_GIT_DESCRIBE "unknown"
#endif
#ifndef DISTARRAY_BUILD_TYPE
#define DISTARRAY_BUILD_TYPE "unknown"
#endif

#ifdef DISTARRAY_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <nccl.h>
#endif

namespace distarray::daemon {

void ConfigureUsage() {
  absl::SetProgramUsageMessage(
      "serves distributed arrays on this node's GPUs over gRPC.\n"
      "  distarrayd --backend=host --host_devices=4 --listen=127.0.0.1:50051");
  absl::FlagsUsageConfig config;
  config.contains_help_flags = [](absl::string_view file) {
    return IsDaemonFlagFile(std::string(file));
  };
  config.contains_helpshort_flags = config.contains_help_flags;
  config.version_string = [] { return VersionString() + "\n"; };
  absl::SetFlagsUsageConfig(config);
}

std::string VersionString() {
  std::string version =
      absl::StrCat("distarrayd ", DISTARRAY_VERSION, "\nbuild: ", DISTARRAY_GIT_DESCRIBE, ", ",
                   DISTARRAY_BUILD_TYPE);
#ifdef DISTARRAY_HAVE_CUDA
  // The versions built against.
  absl::StrAppend(&version, "\nCUDA runtime: ", CUDART_VERSION / 1000, ".",
                  (CUDART_VERSION % 1000) / 10, "\nNCCL: ", NCCL_MAJOR, ".", NCCL_MINOR, ".",
                  NCCL_PATCH);
#else
  absl::StrAppend(&version, "\nCUDA: not built (host backend only)");
#endif
  return version;
}

}  // namespace distarray::daemon
