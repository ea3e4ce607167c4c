// Writes a bound port to a file for scripts and tests (write then rename, so a reader never sees
// a partial file).
#ifndef DISTARRAY_SERVER_DAEMON_PORT_FILE_H_
#define DISTARRAY_SERVER_DAEMON_PORT_FILE_H_

#include <string>

#include "absl/status/status.h"

namespace distarray::daemon {

// Does nothing when `path` is empty. INTERNAL when the file cannot be written.
absl::Status WritePortFile(const std::string& path, int port);

}  // namespace distarray::daemon

#endif  // DISTARRAY_SERVER_DAEMON_PORT_FILE_H_
