// Cancels upload streams that go silent. The synchronous API's reader->Read() blocks until the
// client sends, so a client that opens an upload and stops would hold its reservation (and a
// handler thread) forever; one watchdog thread cancels such calls, which wakes their Read().
#ifndef DISTARRAY_SERVER_SERVICE_UPLOAD_WATCHDOG_H_
#define DISTARRAY_SERVER_SERVICE_UPLOAD_WATCHDOG_H_

#include <grpcpp/server_context.h>

#include <algorithm>
#include <atomic>
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
    bool fired = false;  // guarded by the watchdog's mu_
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
    // Whether the watchdog cancelled the call for being idle.
    bool timed_out() const { return dog_ != nullptr && dog_->Fired(entry_.get()); }

   private:
    UploadWatchdog* dog_;  // null: not watched (the timeout is disabled)
    std::unique_ptr<Entry> entry_;
  };

  // `idle` <= 0 disables the watchdog.
  explicit UploadWatchdog(absl::Duration idle) : idle_(idle) {
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

  Watch Start(grpc::ServerContext* context) {
    if (!thread_) return Watch(nullptr, nullptr);
    auto entry = std::make_unique<Entry>();
    entry->context = context;
    entry->last_ns.store(absl::GetCurrentTimeNanos());
    absl::MutexLock lock(&mu_);
    entries_.insert(entry.get());
    return Watch(this, std::move(entry));
  }

 private:
  void CancelIdleLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const int64_t now = absl::GetCurrentTimeNanos();
    for (Entry* e : entries_) {
      if (e->fired || now - e->last_ns.load() <= absl::ToInt64Nanoseconds(idle_)) continue;
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

  const absl::Duration idle_;
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_set<Entry*> entries_ ABSL_GUARDED_BY(mu_);
  std::optional<std::thread> thread_;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_SERVICE_UPLOAD_WATCHDOG_H_
