#include "server/daemon/device_health.h"

namespace distarray::daemon {

DeviceHealthMonitor::DeviceHealthMonitor(const Backend& backend, HealthServer& health,
                                         absl::Duration period)
    : backend_(backend), health_(health), ticker_(period, [this] { Check(); }) {
  Check();
}

void DeviceHealthMonitor::Check() {
  for (int device = 0; device < backend_.device_count(); ++device) {
    // Only a sticky error (UNAVAILABLE) is a health problem; DeviceStatus reports nothing else.
    if (absl::Status status = backend_.DeviceStatus(device); !status.ok()) {
      health_.SetDeviceError(status);
      return;
    }
  }
}

}  // namespace distarray::daemon
