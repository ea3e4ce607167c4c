// Runs the daemon's binaries as a user would, for tests of flags, exit codes and the probe.
#ifndef DISTARRAY_TESTS_SUPPORT_RUN_COMMAND_H_
#define DISTARRAY_TESTS_SUPPORT_RUN_COMMAND_H_

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"

#ifndef DISTARRAY_PROBE_PATH
#error "DISTARRAY_PROBE_PATH must name the distarray_probe binary"
#endif

namespace distarray::testing {

struct CommandResult {
  int exit_code = -1;  // -1: it did not exit normally
  std::string output;  // stdout and stderr together
};

// Runs `command` through /bin/sh.
inline CommandResult RunCommand(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen(absl::StrCat(command, " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof(buffer), pipe)) > 0;) result.output.append(buffer, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// The distarray_probe the tests run: $DISTARRAY_PROBE when set; else the one beside $DISTARRAYD
// when that is set (a bundle of binaries run on another machine); else the build tree's.
inline std::string ProbeBinary() {
  if (const char* probe = std::getenv("DISTARRAY_PROBE"); probe != nullptr) return probe;
  if (const char* daemon = std::getenv("DISTARRAYD"); daemon != nullptr) {
    const std::string path = std::string(daemon);
    const size_t slash = path.rfind('/');
    return (slash == std::string::npos ? std::string() : path.substr(0, slash + 1)) +
           "distarray_probe";
  }
  return DISTARRAY_PROBE_PATH;
}

// distarray_probe against `address` for `service`: exit 0 SERVING, 1 otherwise.
inline CommandResult Probe(const std::string& address, const std::string& service,
                           int timeout_ms = 2000) {
  return RunCommand(absl::StrCat("'", ProbeBinary(), "' --address=", address,
                                 " '--service=", service, "' --timeout_ms=", timeout_ms));
}

}  // namespace distarray::testing

#endif  // DISTARRAY_TESTS_SUPPORT_RUN_COMMAND_H_
