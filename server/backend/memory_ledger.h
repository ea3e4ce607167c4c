// Admission control for one device's memory: a byte limit checked before any work is launched.
#ifndef DISTARRAY_SERVER_BACKEND_MEMORY_LEDGER_H_
#define DISTARRAY_SERVER_BACKEND_MEMORY_LEDGER_H_

#include <atomic>
#include <cstdint>
#include <map>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace distarray {

// What one allocation costs besides its data: the daemon's bookkeeping for a chunk (its spec and
// box, the buffer object and its shared ownership, the allocator's rounding of tiny buffers) and
// for the array it belongs to (the Array, the registry's and the tenant index's entries, its
// handle, its quota charge). Measured on the host backend with the allocator's own count
// (tests/server/allocation_cost_test.cc): a one-byte array of one chunk costs 1,131 bytes of host
// memory; a chunk of a larger map about 430 bytes plus the array's 700 once. One constant per
// allocation, the cost of a one-chunk array, so no array is undercounted (the issue: 100,000 tiny
// arrays held 1,127 bytes each, 513 counted); chunks of many-chunk maps are overcounted up to
// 2.7x, the safe side. Charging it keeps a map of millions of tiny chunks, or millions of tiny
// arrays, inside the memory limit (RESOURCE_EXHAUSTED) instead of exhausting the host's memory.
inline constexpr int64_t kAllocationOverheadBytes = 1152;

// Counts, per device, what the thread that made it reserves on any ledger while it lives. A graph
// recording is one thread's work, and everything that thread allocates meanwhile belongs to the
// recorded graph for its life (graph_recorder.h): this is what a cached graph holds.
class ScopedReservationTally {
 public:
  ScopedReservationTally() : outer_(current_) { current_ = this; }
  ~ScopedReservationTally() { current_ = outer_; }
  ScopedReservationTally(const ScopedReservationTally&) = delete;
  ScopedReservationTally& operator=(const ScopedReservationTally&) = delete;

  // Charges (as the ledgers count them) by device.
  const std::map<int, int64_t>& charges() const { return charges_; }

  static void Count(int device, int64_t charge) {
    if (current_ != nullptr) current_->charges_[device] += charge;
  }

 private:
  static inline thread_local ScopedReservationTally* current_ = nullptr;
  ScopedReservationTally* const outer_;
  std::map<int, int64_t> charges_;
};

class MemoryLedger {
 public:
  MemoryLedger(int device, int64_t limit_bytes) : device_(device), limit_(limit_bytes) {}

  // What an allocation of `bytes` counts against the limit.
  static int64_t Charge(int64_t bytes) { return bytes + kAllocationOverheadBytes; }

  // Reserves `bytes` (charged Charge(bytes)), or RESOURCE_EXHAUSTED naming the device, the request
  // and what is in use.
  absl::Status Reserve(int64_t bytes) {
    int64_t used = used_.load(std::memory_order_relaxed);
    do {
      // Written so that no sum can wrap: bytes may be as large as a client can ask for.
      if (bytes < 0 || bytes > limit_ - kAllocationOverheadBytes - used) {
        CountFailure();
        return absl::ResourceExhaustedError(absl::StrCat(
            "device ", device_, ": allocating ", bytes, " bytes would exceed the memory limit of ",
            limit_, " bytes (", used, " in use; each allocation also counts ",
            kAllocationOverheadBytes, " bytes of bookkeeping)"));
      }
    } while (!used_.compare_exchange_weak(used, used + Charge(bytes), std::memory_order_relaxed));
    ScopedReservationTally::Count(device_, Charge(bytes));
    return absl::OkStatus();
  }
  // Returns a reservation of `bytes` (the same number passed to Reserve).
  void Release(int64_t bytes) { used_.fetch_sub(Charge(bytes), std::memory_order_relaxed); }

  // What counts against the limit: every live allocation's bytes plus kAllocationOverheadBytes
  // each. GetServerInfo reports it as DeviceInfo.memory_used_bytes, so an empty device reads 0
  // and a device holding k chunks of b bytes each reads k * (b + kAllocationOverheadBytes).
  int64_t used() const { return used_.load(std::memory_order_relaxed); }
  int64_t limit() const { return limit_; }
  // Allocations that failed: refused by Reserve, or counted by the backend when its allocator
  // failed after admission. Reported as a metric.
  void CountFailure() { failures_.fetch_add(1, std::memory_order_relaxed); }
  int64_t failures() const { return failures_.load(std::memory_order_relaxed); }

 private:
  const int device_;
  const int64_t limit_;
  std::atomic<int64_t> used_{0};
  std::atomic<int64_t> failures_{0};
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_BACKEND_MEMORY_LEDGER_H_
