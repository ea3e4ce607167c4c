// Cancels upload streams that go silent or trickle. The synchronous API's reader->Read() blocks
// until the client sends, so a client that opens an upload and stops would hold its reservation
// (and a handler thread) forever; one watchdog thread cancels such calls, which wakes their
// Read(). A client sending one byte just inside every idle timeout would hold them as long, so a
// watched upload must also deliver a minimum rate: at least min_bytes_per_second times the idle
// timeout in every window of that length, or it is cancelled like an idle one.
#ifndef DISTARRAY_SERVER_SERVICE_UPLOAD_WATCHDOG_H_
#define DISTARRAY_SERVER_SERVICE_UPLOAD_WATCHDOG_H_

#include <grpcpp/server_context.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <thread>

#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace distarray {

class UploadWatchdog {
 private:
  struct Entry {
    grpc::ServerContext* context;
    std::atomic<int64_t> last_ns;
    std::atomic<int64_t> bytes{0};  // data received (rate-checked streams)
    bool check_rate = false;
    // Guarded by the watchdog's mu_: the current rate window (0: none yet; it opens with the
    // first data, before which the idle rule alone applies), and why the call was cancelled.
    int64_t window_start_ns = 0;
    int64_t window_start_bytes = 0;
    bool fired = false;
    bool too_slow = false;
  };

 public:
  // One watched stream; unregisters when destroyed.
  class Watch {
   public:
    Watch(UploadWatchdog* dog, std::unique_ptr<Entry> entry)
        : dog_(dog), entry_(std::move(entry)) {}
    ~Watch() {
      if (dog_ != nullptr) dog_->Remove(entry_.get());
    }
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;
    // The stream showed life: a message arrived or was processed.
    void Touch() {
      if (dog_ != nullptr) entry_->last_ns.store(absl::GetCurrentTimeNanos());
    }
    // `n` bytes of data arrived (counted toward the minimum rate).
    void Received(int64_t n) {
      if (dog_ != nullptr) entry_->bytes.fetch_add(n, std::memory_order_relaxed);
    }
    // Whether the watchdog cancelled the call for being idle or too slow.
    bool timed_out() const { return dog_ != nullptr && dog_->Fired(entry_.get()); }
    // Whether it was cancelled for delivering less than the minimum rate.
    bool too_slow() const { return dog_ != nullptr && dog_->TooSlow(entry_.get()); }

   private:
    UploadWatchdog* dog_;  // null: not watched (the timeout is disabled)
    std::unique_ptr<Entry> entry_;
  };

  // `idle` <= 0 disables the watchdog (and the rate check, whose windows are `idle` long);
  // `min_bytes_per_second` <= 0 disables the rate check.
  explicit UploadWatchdog(absl::Duration idle, int64_t min_bytes_per_second = 0)
      : idle_(idle),
        min_bytes_per_second_(std::max<int64_t>(min_bytes_per_second, 0)),
        min_window_bytes_(MinWindowBytes(idle, min_bytes_per_second_)) {
    if (idle_ <= absl::ZeroDuration()) return;
    const absl::Duration period = std::clamp(idle_ / 4, absl::Milliseconds(10), absl::Seconds(1));
    thread_.emplace([this, period] {
      absl::MutexLock lock(&mu_);
      while (!mu_.AwaitWithTimeout(absl::Condition(&stop_), period)) CancelIdleLocked();
    });
  }
  ~UploadWatchdog() {
    {
      absl::MutexLock lock(&mu_);
      stop_ = true;
    }
    if (thread_) thread_->join();
  }

  absl::Duration idle() const { return idle_; }
  int64_t min_bytes_per_second() const { return min_bytes_per_second_; }

  // Watches `context` for silence and, with `check_rate`, for a rate under the minimum (the
  // stream reports its data through Watch::Received).
  Watch Start(grpc::ServerContext* context, bool check_rate = false) {
    if (!thread_) return Watch(nullptr, nullptr);
    auto entry = std::make_unique<Entry>();
    entry->context = context;
    const int64_t now = absl::GetCurrentTimeNanos();
    entry->last_ns.store(now);
    entry->check_rate = check_rate && min_window_bytes_ > 0;
    absl::MutexLock lock(&mu_);
    entries_.insert(entry.get());
    return Watch(this, std::move(entry));
  }

 private:
  void CancelIdleLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const int64_t now = absl::GetCurrentTimeNanos();
    const int64_t idle_ns = absl::ToInt64Nanoseconds(idle_);
    for (Entry* e : entries_) {
      if (e->fired) continue;
      if (now - e->last_ns.load() <= idle_ns) {
        if (!e->check_rate) continue;
        const int64_t bytes = e->bytes.load(std::memory_order_relaxed);
        if (e->window_start_ns == 0) {
          if (bytes > 0) e->window_start_ns = now;  // the first window counts its first bytes
          continue;
        }
        if (now - e->window_start_ns < idle_ns) continue;
        // A window of at least `idle` has passed: it must have brought min_window_bytes_.
        if (bytes - e->window_start_bytes >= min_window_bytes_) {
          e->window_start_ns = now;
          e->window_start_bytes = bytes;
          continue;
        }
        e->too_slow = true;
      }
      e->fired = true;
      // Under mu_, so the call (and its context) cannot finish meanwhile: the handler removes
      // its entry before returning.
      e->context->TryCancel();
    }
  }
  void Remove(Entry* e) {
    absl::MutexLock lock(&mu_);
    entries_.erase(e);
  }
  bool Fired(Entry* e) {
    absl::MutexLock lock(&mu_);
    return e->fired;
  }
  bool TooSlow(Entry* e) {
    absl::MutexLock lock(&mu_);
    return e->too_slow;
  }
  // The bytes a window of `idle` must bring at `rate` bytes per second, rounded up; 0: no check.
  static int64_t MinWindowBytes(absl::Duration idle, int64_t rate) {
    if (idle <= absl::ZeroDuration() || rate <= 0) return 0;
    const double bytes = std::ceil(absl::ToDoubleSeconds(idle) * static_cast<double>(rate));
    return bytes >= 9.2e18 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(bytes);
  }

  const absl::Duration idle_;
  const int64_t min_bytes_per_second_;
  const int64_t min_window_bytes_;
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_set<Entry*> entries_ ABSL_GUARDED_BY(mu_);
  std::optional<std::thread> thread_;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_SERVICE_UPLOAD_WATCHDOG_H_
