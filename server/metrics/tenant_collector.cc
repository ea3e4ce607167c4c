#include "server/metrics/tenant_collector.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "server/metrics/collect_util.h"

namespace distarray::metrics {

std::vector<prometheus::MetricFamily> TenantCollector::Collect() const {
  using prometheus::MetricType;
  Backend& backend = engine_.backend();
  prometheus::MetricFamily used =
      NewFamily("distarray_tenant_memory_used_bytes",
                "Device memory held by the tenant's arrays, counted as the device limit counts it",
                MetricType::Gauge);
  prometheus::MetricFamily quota =
      NewFamily("distarray_tenant_memory_quota_bytes",
                "The tenant's device memory quota (only tenants that have one)", MetricType::Gauge);
  for (const TenantDeviceMemory& m : engine_.TenantMemoryUsage()) {
    if (m.device < 0 || m.device >= backend.device_count()) continue;
    const LabelPairs labels = {{"tenant", m.tenant},
                               {"device", absl::StrCat(m.device)},
                               {"gpu_uuid", backend.device_uuid(m.device)}};
    AddSample(used, labels, static_cast<double>(m.used_bytes));
    if (m.quota_bytes > 0) AddSample(quota, labels, static_cast<double>(m.quota_bytes));
  }
  std::vector<prometheus::MetricFamily> out;
  out.push_back(std::move(used));
  out.push_back(std::move(quota));
  return out;
}

}  // namespace distarray::metrics
