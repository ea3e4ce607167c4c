// Admission control for one device's memory: a byte limit checked before any work is launched.
#ifndef DISTARRAY_SERVER_BACKEND_MEMORY_LEDGER_H_
#define DISTARRAY_SERVER_BACKEND_MEMORY_LEDGER_H_

#include <atomic>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace distarray {

class MemoryLedger {
 public:
  MemoryLedger(int device, int64_t limit_bytes) : device_(device), limit_(limit_bytes) {}

  // Reserves `bytes`, or RESOURCE_EXHAUSTED naming the device, the request and what is free.
  absl::Status Reserve(int64_t bytes) {
    int64_t used = used_.load(std::memory_order_relaxed);
    do {
      if (used + bytes > limit_) {
        return absl::ResourceExhaustedError(absl::StrCat("device ", device_, ": allocating ", bytes,
                                                         " bytes would exceed the memory limit of ",
                                                         limit_, " bytes (", used, " in use)"));
      }
    } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
    return absl::OkStatus();
  }
  void Release(int64_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }

  int64_t used() const { return used_.load(std::memory_order_relaxed); }
  int64_t limit() const { return limit_; }

 private:
  const int device_;
  const int64_t limit_;
  std::atomic<int64_t> used_{0};
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_BACKEND_MEMORY_LEDGER_H_
