#include "server/daemon/device_health.h"

namespace distarray::daemon {

DeviceHealthMonitor::DeviceHealthMonitor(const Backend& backend, HealthServer& health,
                                         absl::Duration period)
    : backend_(backend), health_(health), ticker_(period, [this] { Check(); }) {
  Check();
}

void DeviceHealthMonitor::Check() {
  for (int device = 0; device < backend_.device_count(); ++device) {
    // A cluster member's devices are that member's health (its own probes restart it); a lost
    // member must not restart the leader, whose arrays on live nodes keep working.
    if (backend_.device_node(device) != 0) continue;
    // Only a sticky error (UNAVAILABLE) is a health problem; DeviceStatus reports nothing else.
    if (absl::Status status = backend_.DeviceStatus(device); !status.ok()) {
      health_.SetDeviceError(status);
      return;
    }
  }
}

}  // namespace distarray::daemon
