#include "server/metrics/tenant_collector.h"

#include <algorithm>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "server/metrics/collect_util.h"

namespace distarray::metrics {

std::vector<prometheus::MetricFamily> TenantMemoryFamilies(
    const std::vector<TenantDeviceMemory>& usage, int device_count,
    const std::function<std::string(int)>& uuid, bool tenant_labels) {
  using prometheus::MetricType;
  prometheus::MetricFamily used = NewFamily(
      "distarray_tenant_memory_used_bytes",
      tenant_labels ? "Device memory held by the tenant's arrays, counted as the device limit "
                      "counts it"
                    : "Device memory held by all tenants' arrays, counted as the device limit "
                      "counts it (per tenant with --metrics_tenant_labels=on)",
      MetricType::Gauge);
  prometheus::MetricFamily quota =
      NewFamily("distarray_tenant_memory_quota_bytes",
                "The tenant's device memory quota (only tenants that have one)", MetricType::Gauge);
  prometheus::MetricFamily ratio = NewFamily(
      "distarray_tenant_memory_quota_used_ratio_max",
      "The highest used/quota ratio of any tenant with a quota on the device", MetricType::Gauge);
  const auto device_labels = [&](int device) -> LabelPairs {
    return {{"device", absl::StrCat(device)}, {"gpu_uuid", uuid(device)}};
  };
  std::map<int, double> used_by_device;   // without tenant labels
  std::map<int, double> ratio_by_device;  // devices where some tenant has a quota
  for (const TenantDeviceMemory& m : usage) {
    if (m.device < 0 || m.device >= device_count) continue;
    if (m.quota_bytes > 0) {
      double& worst = ratio_by_device[m.device];
      worst = std::max(worst, static_cast<double>(m.used_bytes) / m.quota_bytes);
    }
    if (!tenant_labels) {
      used_by_device[m.device] += static_cast<double>(m.used_bytes);
      continue;
    }
    LabelPairs labels = device_labels(m.device);
    labels.insert(labels.begin(), {"tenant", m.tenant});
    AddSample(used, labels, static_cast<double>(m.used_bytes));
    if (m.quota_bytes > 0) AddSample(quota, labels, static_cast<double>(m.quota_bytes));
  }
  if (!tenant_labels) {
    // Every device, so the series exist (at 0) before any tenant allocates.
    for (int device = 0; device < device_count; ++device) {
      AddSample(used, device_labels(device), used_by_device[device]);
    }
  }
  for (const auto& [device, worst] : ratio_by_device) {
    AddSample(ratio, device_labels(device), worst);
  }
  std::vector<prometheus::MetricFamily> out;
  out.push_back(std::move(used));
  if (tenant_labels) out.push_back(std::move(quota));
  out.push_back(std::move(ratio));
  return out;
}

std::vector<prometheus::MetricFamily> TenantCollector::Collect() const {
  Backend& backend = engine_.backend();
  return TenantMemoryFamilies(
      engine_.TenantMemoryUsage(), backend.device_count(),
      [&backend](int device) { return backend.device_uuid(device); }, tenant_labels_);
}

}  // namespace distarray::metrics
