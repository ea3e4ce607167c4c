// Per-tenant device memory: the bytes each tenant's registered arrays and cached graphs (the
// device memory a program recorded by the tenant keeps while its graph is cached) hold on each
// device, against a per-device quota (--tenant_memory_quota, with per-tenant overrides). It sits
// above the devices' own limits (server/backend/memory_ledger.h) and counts the same way: a
// chunk's bytes plus kAllocationOverheadBytes. Thread-safe.
#ifndef DISTARRAY_SERVER_OPS_TENANT_MEMORY_H_
#define DISTARRAY_SERVER_OPS_TENANT_MEMORY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "server/ops/array.h"

namespace distarray {

struct TenantQuotaOptions {
  int64_t default_quota_bytes = 0;  // per device; 0: no quota
  // Per tenant, replacing the default (0: no quota for that tenant).
  absl::flat_hash_map<std::string, int64_t> quota_bytes_by_tenant;
};

// Bytes charged per device, as the device ledgers charge them.
using DeviceCharges = std::map<int, int64_t>;

// What `array`'s chunks charge on each device (saturating at INT64_MAX: the sum of a map of many
// overlapping chunks can pass it, and a charge that large fails any quota anyway).
DeviceCharges ChargesOf(const Array& array);

struct TenantDeviceMemory {
  std::string tenant;
  int device = 0;
  int64_t used_bytes = 0;
  int64_t quota_bytes = 0;  // 0: none
};

class TenantMemory {
 public:
  explicit TenantMemory(TenantQuotaOptions options) : options_(std::move(options)) {}

  // The tenant's per-device quota; 0 when it has none.
  int64_t QuotaOf(const std::string& tenant) const;

  // What CheckFits and Reserve call, outside their lock, when `charges` would pass a tenant's
  // quota: gives up what the tenant holds that can be given up (its cached graphs) and returns
  // whether anything was, so the check is made once more. Set once, before any call.
  void set_reclaimer(std::function<bool(const std::string& tenant)> reclaimer) {
    reclaimer_ = std::move(reclaimer);
  }

  // RESOURCE_EXHAUSTED naming the tenant, the device and the quota (and the flag that set it) when
  // adding `charges` would pass the tenant's quota on some device. Reserves nothing: a quick
  // refusal before allocating; Reserve decides.
  absl::Status CheckFits(const std::string& tenant, const DeviceCharges& charges) const;
  // All or nothing: charges every device, or none and the error CheckFits gives.
  absl::Status Reserve(const std::string& tenant, const DeviceCharges& charges);
  // Returns what Reserve charged.
  void Release(const std::string& tenant, const DeviceCharges& charges);

  // Devices 0..device_count-1 of every tenant that has held memory since start (at 0 once it
  // holds none) and of every tenant with a quota override, even before it allocates. For metrics.
  std::vector<TenantDeviceMemory> Snapshot(int device_count) const;

 private:
  absl::Status CheckFitsLocked(const std::string& tenant, const DeviceCharges& charges) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);

  bool Reclaim(const std::string& tenant) const { return reclaimer_ && reclaimer_(tenant); }

  const TenantQuotaOptions options_;
  std::function<bool(const std::string&)> reclaimer_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, DeviceCharges> used_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_OPS_TENANT_MEMORY_H_
