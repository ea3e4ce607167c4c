// The daemon's end: after SIGTERM, drain the API server and leave.
#ifndef DISTARRAY_SERVER_DAEMON_DRAIN_H_
#define DISTARRAY_SERVER_DAEMON_DRAIN_H_

#include <grpcpp/grpcpp.h>

#include "server/daemon/flags.h"
#include "server/engine/engine.h"

namespace distarray::daemon {

// Reports NOT_SERVING, lets in-flight calls finish for up to options.drain, waits for the
// devices' queued work and ends the process (exit code 0, or kExitDevicesFailed /
// kExitDrainTimedOut). Never returns.
[[noreturn]] void DrainAndExit(const DaemonOptions& options, grpc::Server& api, Engine& engine);

}  // namespace distarray::daemon

#endif  // DISTARRAY_SERVER_DAEMON_DRAIN_H_
