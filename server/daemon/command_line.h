// Reads the daemon's settings from, lowest precedence first: the flags' defaults, environment
// variables DISTARRAY_<FLAG NAME IN CAPITALS> (e.g. DISTARRAY_LISTEN), a flag file named by
// DISTARRAY_FLAGFILE, and the command line (where --flagfile=FILE reads FILE in place). Unlike
// absl's own parser, which exits 1 on a bad flag, every mistake comes back as a status naming the
// flag or variable, so the daemon exits with its bad-flags code (2).
#ifndef DISTARRAY_SERVER_DAEMON_COMMAND_LINE_H_
#define DISTARRAY_SERVER_DAEMON_COMMAND_LINE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace distarray::daemon {

inline constexpr char kEnvPrefix[] = "DISTARRAY_";

// Whether a flag defined in `file` is one of the daemon's own (listed by --help, settable from
// the environment); absl's and gRPC's own flags are not.
bool IsDaemonFlagFile(const std::string& file);

// Where settings came from, for messages.
struct CommandLineSources {
  // DISTARRAY_* variables that name no flag (logged once logging is set up: a typo should be
  // visible, but other tools share the prefix).
  std::vector<std::string> ignored_env;
  // Flag name -> the variable that set it, for flags the command line did not override.
  std::map<std::string, std::string> from_env;

  // `error` (from DaemonOptionsFromFlags, "--flag: ...") with the variable that set the flag
  // named, when the environment set it.
  std::string Explain(absl::string_view error) const;
};

// Applies the environment and the command line to the flags. INVALID_ARGUMENT naming the flag
// (or variable) for an unknown flag, a malformed value, a missing value, an unreadable flag file
// or a positional argument. --help, --helpfull and --version print and exit 0.
absl::Status ParseDaemonCommandLine(int argc, char** argv, CommandLineSources* sources);

}  // namespace distarray::daemon

#endif  // DISTARRAY_SERVER_DAEMON_COMMAND_LINE_H_
