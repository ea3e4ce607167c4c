#include "server/ops/tenant_memory.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "common/checked.h"
#include "server/backend/memory_ledger.h"

namespace distarray {
namespace {

int64_t SaturatingAdd(int64_t a, int64_t b) {
  return AddOrNull(a, b).value_or(std::numeric_limits<int64_t>::max());
}

}  // namespace

DeviceCharges ChargesOf(const Array& array) {
  DeviceCharges charges;
  const int64_t item = DTypeSize(array.dtype);
  for (const Chunk& chunk : array.chunks) {
    const int64_t bytes =
        MulOrNull(NumElements(chunk.spec.box), item).value_or(std::numeric_limits<int64_t>::max());
    int64_t& total = charges[chunk.spec.device];
    total = SaturatingAdd(total, SaturatingAdd(bytes, kAllocationOverheadBytes));
  }
  return charges;
}

int64_t TenantMemory::QuotaOf(const std::string& tenant) const {
  auto it = options_.quota_bytes_by_tenant.find(tenant);
  return it != options_.quota_bytes_by_tenant.end() ? it->second : options_.default_quota_bytes;
}

absl::Status TenantMemory::CheckFitsLocked(const std::string& tenant,
                                           const DeviceCharges& charges) const {
  const int64_t quota = QuotaOf(tenant);
  if (quota <= 0) return absl::OkStatus();
  const auto used_it = used_.find(tenant);
  for (const auto& [device, bytes] : charges) {
    int64_t used = 0;
    if (used_it != used_.end()) {
      if (auto d = used_it->second.find(device); d != used_it->second.end()) used = d->second;
    }
    if (bytes > quota - used) {  // no sum that could wrap
      const bool overridden = options_.quota_bytes_by_tenant.contains(tenant);
      return absl::ResourceExhaustedError(absl::StrCat(
          "tenant '", tenant, "': device ", device, ": ", bytes,
          " more bytes would pass the tenant memory quota of ", quota, " bytes per device (",
          overridden ? "--tenant_memory_quota_overrides" : "--tenant_memory_quota", "; ", used,
          " in use; each chunk also counts ", kAllocationOverheadBytes, " bytes of bookkeeping)"));
    }
  }
  return absl::OkStatus();
}

absl::Status TenantMemory::CheckFits(const std::string& tenant,
                                     const DeviceCharges& charges) const {
  for (int attempt = 0;; ++attempt) {
    absl::Status fits;
    {
      absl::ReaderMutexLock lock(&mu_);
      fits = CheckFitsLocked(tenant, charges);
    }
    // The tenant's cached graphs go before its request is refused.
    if (fits.ok() || attempt > 0 || !Reclaim(tenant)) return fits;
  }
}

absl::Status TenantMemory::Reserve(const std::string& tenant, const DeviceCharges& charges) {
  for (int attempt = 0;; ++attempt) {
    absl::Status fits;
    {
      absl::MutexLock lock(&mu_);
      fits = CheckFitsLocked(tenant, charges);
      if (fits.ok()) {
        DeviceCharges& used = used_[tenant];
        for (const auto& [device, bytes] : charges) {
          used[device] = SaturatingAdd(used[device], bytes);
        }
        return absl::OkStatus();
      }
    }
    if (attempt > 0 || !Reclaim(tenant)) return fits;
  }
}

void TenantMemory::Release(const std::string& tenant, const DeviceCharges& charges) {
  absl::MutexLock lock(&mu_);
  DeviceCharges& used = used_[tenant];
  for (const auto& [device, bytes] : charges) used[device] -= bytes;
}

std::vector<TenantDeviceMemory> TenantMemory::Snapshot(int device_count) const {
  std::map<std::string, DeviceCharges> tenants;  // sorted, so scrapes list tenants in one order
  {
    absl::ReaderMutexLock lock(&mu_);
    for (const auto& [tenant, devices] : used_) tenants[tenant] = devices;
  }
  for (const auto& [tenant, quota] : options_.quota_bytes_by_tenant) tenants[tenant];
  std::vector<TenantDeviceMemory> out;
  for (const auto& [tenant, devices] : tenants) {
    for (int device = 0; device < device_count; ++device) {
      auto it = devices.find(device);
      out.push_back(TenantDeviceMemory{tenant, device, it == devices.end() ? 0 : it->second,
                                       QuotaOf(tenant)});
    }
  }
  return out;
}

}  // namespace distarray
