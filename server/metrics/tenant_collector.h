// Per-tenant device memory, read from the engine at every scrape: the bytes tenants' arrays hold on
// each device, and their quotas there.
//
// The metrics port is unauthenticated, and tenant names are the operator's customers: with a
// tenant label, every scrape would list every tenant that ever allocated and every tenant of the
// quota overrides. So tenant labels are opt-in (--metrics_tenant_labels). Without them the
// collector exports aggregates only: the bytes all tenants hold per device, and the highest
// used/quota ratio of any tenant per device (what a "some tenant is near its quota" alert needs).
// Aggregates rather than hashed names: a hash of a guessable name is confirmed by hashing the
// guess, and still counts the tenants and shows each one's usage. docs/operations.md.
#ifndef DISTARRAY_SERVER_METRICS_TENANT_COLLECTOR_H_
#define DISTARRAY_SERVER_METRICS_TENANT_COLLECTOR_H_

#include <functional>
#include <string>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "server/engine/engine.h"
#include "server/ops/tenant_memory.h"

namespace distarray::metrics {

// The tenant families of `usage` (TenantMemory::Snapshot) on devices 0..device_count-1, whose
// GPU UUIDs `uuid` gives: with `tenant_labels`, per tenant and device; without, aggregated per
// device (no tenant label, no per-tenant quota).
std::vector<prometheus::MetricFamily> TenantMemoryFamilies(
    const std::vector<TenantDeviceMemory>& usage, int device_count,
    const std::function<std::string(int)>& uuid, bool tenant_labels);

class TenantCollector final : public prometheus::Collectable {
 public:
  // `engine` must outlive the collector's registration (Metrics::ObserveEngine arranges it).
  TenantCollector(Engine& engine, bool tenant_labels)
      : engine_(engine), tenant_labels_(tenant_labels) {}

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  Engine& engine_;
  const bool tenant_labels_;
};

}  // namespace distarray::metrics

#endif  // DISTARRAY_SERVER_METRICS_TENANT_COLLECTOR_H_
