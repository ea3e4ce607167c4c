// What --help and --version print.
#ifndef DISTARRAY_SERVER_DAEMON_USAGE_H_
#define DISTARRAY_SERVER_DAEMON_USAGE_H_

#include <string>

namespace distarray::daemon {

// Sets the usage message, makes --help list the daemon's own flags (defined under server/, not
// only in the file of main(), which is all absl's --help lists by default) and --version print
// VersionString(). Call before parsing the command line.
void ConfigureUsage();

// "distarrayd <version>", then the build (git describe at configure time, build type) and the
// CUDA runtime and NCCL versions built against, one per line.
std::string VersionString();

}  // namespace distarray::daemon

#endif  // DISTARRAY_SERVER_DAEMON_USAGE_H_
