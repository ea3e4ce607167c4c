#include "server/daemon/usage.h"

#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

#ifndef DISTARRAY_VERSION
#define DISTARRAY_VERSION "unknown"
#endif
#ifndef DISTARRAY_GIT_DESCRIBE
#define DISTARRAY_GIT_DESCRIBE "unknown"
#endif
#ifndef DISTARRAY_BUILD_TYPE
#define DISTARRAY_BUILD_TYPE "unknown"
#endif

namespace distarray::daemon {

void ConfigureUsage() {
  absl::SetProgramUsageMessage(
      "serves distributed arrays on this node's GPUs over gRPC.\n"
      "  distarrayd --backend=host --host_devices=4 --listen=127.0.0.1:50051");
  absl::FlagsUsageConfig config;
  config.contains_help_flags = [](absl::string_view file) {
    return absl::StrContains(file, "server/daemon/") || absl::StrContains(file, "distarrayd_main");
  };
  config.contains_helpshort_flags = config.contains_help_flags;
  config.version_string = [] { return VersionString() + "\n"; };
  absl::SetFlagsUsageConfig(config);
}

std::string VersionString() {
  return absl::StrCat("distarrayd ", DISTARRAY_VERSION, " (", DISTARRAY_GIT_DESCRIBE, ", ",
                      DISTARRAY_BUILD_TYPE, " build)");
}

}  // namespace distarray::daemon
