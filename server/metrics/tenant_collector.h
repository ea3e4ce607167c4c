// Per-tenant device memory, read from the engine at every scrape: the bytes each tenant's arrays
// hold on each device, and the tenant's quota there. Tenants come from the tokens file (the
// operator's list), so the label's values stay few.
#ifndef DISTARRAY_SERVER_METRICS_TENANT_COLLECTOR_H_
#define DISTARRAY_SERVER_METRICS_TENANT_COLLECTOR_H_

#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "server/engine/engine.h"

namespace distarray::metrics {

class TenantCollector final : public prometheus::Collectable {
 public:
  // `engine` must outlive the collector's registration (Metrics::ObserveEngine arranges it).
  explicit TenantCollector(Engine& engine) : engine_(engine) {}

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  Engine& engine_;
};

}  // namespace distarray::metrics

#endif  // DISTARRAY_SERVER_METRICS_TENANT_COLLECTOR_H_
