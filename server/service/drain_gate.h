// What the API answers while the daemon drains. SIGTERM opens the drain: calls that arrive from
// then on are refused, and once the drain time is spent, calls still running are cut off. Both
// answer UNAVAILABLE, the code clients retry on (another replica, or this node's next daemon),
// never CANCELLED, which would read as the client's own doing.
//
// The daemon owns the gate (its drain opens it, server/daemon/drain.h); the service consults it on
// every call. Header-only and free of gRPC.
#ifndef DISTARRAY_SERVER_SERVICE_DRAIN_GATE_H_
#define DISTARRAY_SERVER_SERVICE_DRAIN_GATE_H_

#include <atomic>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace distarray {

class DrainGate {
 public:
  static constexpr absl::string_view kRefusal = "distarrayd is draining (shutting down)";

  // New calls are refused from now on.
  void BeginDrain() { state_.store(kDraining, std::memory_order_release); }
  // Calls still running end at their next check.
  void CutOff() { state_.store(kCutOff, std::memory_order_release); }
  bool draining() const { return state_.load(std::memory_order_acquire) != kServing; }

  // At the start of a call: OK, or UNAVAILABLE while draining.
  absl::Status Admit() const {
    if (!draining()) return absl::OkStatus();
    return absl::UnavailableError(
        absl::StrCat(kRefusal, "; retry on another daemon or after it restarts"));
  }
  // Between the steps of a running call: OK, or UNAVAILABLE once the drain time is spent.
  absl::Status CheckRunning() const {
    if (state_.load(std::memory_order_acquire) != kCutOff) return absl::OkStatus();
    return absl::UnavailableError(absl::StrCat(
        kRefusal,
        " and its drain time ran out before this call finished; its result was discarded, retry "
        "on another daemon or after it restarts"));
  }
  // Whether `status` is one of the two answers above, not another UNAVAILABLE (a device's
  // sticky error, say).
  static bool IsRefusal(const absl::Status& status) {
    return status.code() == absl::StatusCode::kUnavailable &&
           absl::StartsWith(status.message(), kRefusal);
  }

  // Counts a call from its start to its end, so the drain knows when the last one is done.
  class CallScope {
   public:
    explicit CallScope(DrainGate* gate) : gate_(gate) {
      if (gate_ == nullptr) return;
      absl::MutexLock lock(&gate_->mu_);
      ++gate_->in_flight_;
    }
    ~CallScope() {
      if (gate_ == nullptr) return;
      absl::MutexLock lock(&gate_->mu_);
      --gate_->in_flight_;
    }
    CallScope(const CallScope&) = delete;
    CallScope& operator=(const CallScope&) = delete;

   private:
    DrainGate* gate_;
  };

  // Waits until no call is in flight, or until `deadline`. Returns how many still are.
  int WaitForCalls(absl::Time deadline) {
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithDeadline(absl::Condition(this, &DrainGate::Idle), deadline);
    return in_flight_;
  }

 private:
  enum State { kServing, kDraining, kCutOff };
  bool Idle() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return in_flight_ == 0; }
  std::atomic<int> state_{kServing};
  absl::Mutex mu_;
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
};

// Counts the calls the drain refuses, so that the log says how many in one line per interval
// instead of one line per call: a client polling through a 5 s drain made 97 lines.
class DrainRefusalLog {
 public:
  explicit DrainRefusalLog(absl::Duration interval = absl::Seconds(1)) : interval_(interval) {}

  // Counts one refusal at `now`. Returns the refusals to report now (this one included, and those
  // since the last report) when the interval has passed since the last report, else 0. The first
  // refusal is reported at once.
  int64_t Count(absl::Time now = absl::Now()) {
    absl::MutexLock lock(&mu_);
    ++unreported_;
    if (now - last_report_ < interval_) return 0;
    last_report_ = now;
    const int64_t refused = unreported_;
    unreported_ = 0;
    return refused;
  }

 private:
  const absl::Duration interval_;
  absl::Mutex mu_;
  absl::Time last_report_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  int64_t unreported_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_SERVICE_DRAIN_GATE_H_
