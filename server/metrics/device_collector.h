// Per-device metrics, read from the engine at every scrape (so they are right from start-up and
// never stale between RPCs): memory used and limit from the devices' ledgers, arrays holding a
// chunk on the device, bytes moved by reshards, allocation failures, sticky error state. Every
// series carries `device` (the index) and `gpu_uuid` (as dcgm-exporter labels its series, so
// dashboards can join the two).
#ifndef DISTARRAY_SERVER_METRICS_DEVICE_COLLECTOR_H_
#define DISTARRAY_SERVER_METRICS_DEVICE_COLLECTOR_H_

#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "server/engine/engine.h"

namespace distarray::metrics {

class DeviceCollector final : public prometheus::Collectable {
 public:
  // `engine` must outlive the collector's registration (Metrics::ObserveEngine arranges it).
  explicit DeviceCollector(Engine& engine) : engine_(engine) {}

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  Engine& engine_;
};

}  // namespace distarray::metrics

#endif  // DISTARRAY_SERVER_METRICS_DEVICE_COLLECTOR_H_
