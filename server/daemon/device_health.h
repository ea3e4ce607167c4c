// Watches the devices for sticky errors (a CUDA context that is unusable until the process
// restarts) and reports the first one to the health server: liveness and readiness turn
// NOT_SERVING, so the kubelet restarts the pod instead of routing calls that can only fail.
#ifndef DISTARRAY_SERVER_DAEMON_DEVICE_HEALTH_H_
#define DISTARRAY_SERVER_DAEMON_DEVICE_HEALTH_H_

#include "absl/time/time.h"
#include "server/backend/backend.h"
#include "server/daemon/health_server.h"
#include "server/engine/sessions.h"

namespace distarray::daemon {

class DeviceHealthMonitor {
 public:
  // Checks every device now and then every `period` until destroyed. `backend` and `health`
  // outlive the monitor.
  DeviceHealthMonitor(const Backend& backend, HealthServer& health, absl::Duration period);

 private:
  void Check();

  const Backend& backend_;
  HealthServer& health_;
  Ticker ticker_;  // last: starts once the members above exist
};

}  // namespace distarray::daemon

#endif  // DISTARRAY_SERVER_DAEMON_DEVICE_HEALTH_H_
