// Calls in flight per tenant. --max_concurrent_calls bounds the handler threads of the whole
// server, and gRPC refuses a call that finds them all taken; without a bound per tenant, one tenant
// holding them (trickled uploads, long loops, stalled downloads) would leave every other tenant
// refused. The service takes a slot for each call right after authenticating it and refuses one
// beyond the tenant's bound at once, so a refused call holds its thread only for that moment.
// Header-only and free of gRPC.
#ifndef DISTARRAY_SERVER_SERVICE_CALL_SLOTS_H_
#define DISTARRAY_SERVER_SERVICE_CALL_SLOTS_H_

#include <cstdint>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace distarray {

class TenantCallSlots {
 public:
  // `max_per_tenant` <= 0: no bound (only gRPC's global one).
  explicit TenantCallSlots(int max_per_tenant = 0) : max_per_tenant_(max_per_tenant) {}
  TenantCallSlots(const TenantCallSlots&) = delete;
  TenantCallSlots& operator=(const TenantCallSlots&) = delete;

  int max_per_tenant() const { return max_per_tenant_; }

  // A call's slot, returned when destroyed.
  class Slot {
   public:
    Slot() = default;
    Slot(Slot&& other) noexcept : slots_(other.slots_), tenant_(std::move(other.tenant_)) {
      other.slots_ = nullptr;
    }
    Slot& operator=(Slot&& other) noexcept {
      std::swap(slots_, other.slots_);
      std::swap(tenant_, other.tenant_);
      return *this;
    }
    ~Slot() {
      if (slots_ != nullptr) slots_->Release(tenant_);
    }

   private:
    friend class TenantCallSlots;
    Slot(TenantCallSlots* slots, std::string tenant) : slots_(slots), tenant_(std::move(tenant)) {}
    TenantCallSlots* slots_ = nullptr;  // null: nothing to return
    std::string tenant_;
  };

  // A slot for a call of `tenant`; RESOURCE_EXHAUSTED naming the flag while the tenant already has
  // max_per_tenant calls in flight.
  absl::StatusOr<Slot> Acquire(absl::string_view tenant) {
    if (max_per_tenant_ <= 0) return Slot();
    absl::MutexLock lock(&mu_);
    int& held = in_flight_[tenant];
    if (held >= max_per_tenant_) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "tenant '", tenant, "' has ", held,
          " calls in flight, the most --max_concurrent_calls_per_tenant allows; retry once some "
          "finish"));
    }
    ++held;
    return Slot(this, std::string(tenant));
  }

  // Calls of `tenant` in flight now (tests and metrics).
  int InFlight(absl::string_view tenant) const {
    absl::MutexLock lock(&mu_);
    auto it = in_flight_.find(tenant);
    return it == in_flight_.end() ? 0 : it->second;
  }

 private:
  void Release(const std::string& tenant) {
    absl::MutexLock lock(&mu_);
    auto it = in_flight_.find(tenant);
    if (it != in_flight_.end() && --it->second <= 0) in_flight_.erase(it);
  }

  const int max_per_tenant_;
  mutable absl::Mutex mu_;
  // Tenants with calls in flight; one without is absent, so the map holds at most the calls.
  absl::flat_hash_map<std::string, int> in_flight_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_SERVICE_CALL_SLOTS_H_
