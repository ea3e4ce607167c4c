// The daemon's end. On SIGTERM (or SIGINT):
//   1. readiness turns NOT_SERVING and new calls are answered UNAVAILABLE (DrainGate) for
//      --drain_grace_seconds, with the API listener still open, so probes and load balancers see
//      the drain before connections are refused;
//   2. calls in flight get --drain_seconds more to finish;
//   3. calls still running then are cut off with UNAVAILABLE (never CANCELLED);
//   4. the API listener closes, the devices finish their queued work and the process exits 0.
// A handler stuck in CPU work that cannot notice the cut-off is not waited for: the process
// exits 1 s after the cut-off with kExitDrainTimedOut.
#ifndef DISTARRAY_SERVER_DAEMON_DRAIN_H_
#define DISTARRAY_SERVER_DAEMON_DRAIN_H_

#include <functional>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "server/daemon/flags.h"
#include "server/daemon/health_server.h"
#include "server/service/drain_gate.h"

namespace distarray::daemon {

struct DrainParts {
  HealthServer* health = nullptr;  // nullptr: no health port
  DrainGate* gate = nullptr;
  grpc::Server* api = nullptr;
  // Once every call has ended, before the devices: logs what is still pending (the transfer
  // log's lingering transfers), since the process then exits without running destructors.
  std::function<void()> after_calls;
  // Once every call has ended: finishes the devices' queued work and frees their memory. Its
  // error makes the exit code kExitDevicesFailed.
  std::function<absl::Status()> release_devices;
};

[[noreturn]] void DrainAndExit(const DaemonOptions& options, const DrainParts& parts);

}  // namespace distarray::daemon

#endif  // DISTARRAY_SERVER_DAEMON_DRAIN_H_
