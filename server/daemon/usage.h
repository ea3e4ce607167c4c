// What --help and --version print.
#ifndef DISTARRAY_SERVER_DAEMON_USAGE_H_
#define DISTARRAY_SERVER_DAEMON_USAGE_H_

#include <string>

namespace distarray::daemon {

// Sets the usage message, makes --help list the daemon's own flags (they are defined under
// server/daemon/, not in the file of main(), which is all absl's --help lists by default) and
// --version print VersionString(). Call before parsing the command line.
void ConfigureUsage();

// "distarrayd <version>" and the build: type, compiler, and the CUDA and NCCL versions when
// built with them.
std::string VersionString();

}  // namespace distarray::daemon

#endif  // DISTARRAY_SERVER_DAEMON_USAGE_H_
