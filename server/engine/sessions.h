// Client sessions and their leases. A client names its session in call metadata; every call of
// the session renews its lease, and a session whose lease ran out is expired by a periodic sweep
// (the engine then deletes the session's unnamed arrays). Header-only: two small classes.
#ifndef DISTARRAY_SERVER_ENGINE_SESSIONS_H_
#define DISTARRAY_SERVER_ENGINE_SESSIONS_H_

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace distarray {

// Last-seen times by session id. Thread-safe, and bounded: every id a client sends costs an
// entry until its lease runs out, so a client minting ids per call could otherwise grow the table
// without limit.
class SessionTable {
 public:
  static constexpr size_t kMaxSessions = 65536;

  explicit SessionTable(absl::Duration lease) : lease_(lease) {}

  absl::Duration lease() const { return lease_; }

  // Records a call of `session` (non-empty) at `now`. RESOURCE_EXHAUSTED, naming the metadata key,
  // for a new session while kMaxSessions are live.
  absl::Status Touch(absl::string_view session, absl::Time now = absl::Now()) {
    absl::MutexLock lock(&mu_);
    auto it = last_seen_.find(session);
    if (it != last_seen_.end()) {
      it->second = now;
      return absl::OkStatus();
    }
    if (last_seen_.size() >= kMaxSessions) {
      return absl::ResourceExhaustedError(
          absl::StrCat("distarray-session: ", last_seen_.size(),
                       " sessions are live, the most the daemon holds; retry once some expire"));
    }
    last_seen_.emplace(session, now);
    return absl::OkStatus();
  }

  // Forgets `session` now (its client ended it); whether it was there.
  bool End(absl::string_view session) {
    absl::MutexLock lock(&mu_);
    return last_seen_.erase(session) > 0;
  }

  // Removes and returns the sessions not seen for longer than the lease.
  std::vector<std::string> TakeExpired(absl::Time now = absl::Now()) {
    std::vector<std::string> expired;
    absl::MutexLock lock(&mu_);
    for (auto it = last_seen_.begin(); it != last_seen_.end();) {
      if (now - it->second > lease_) {
        expired.push_back(it->first);
        last_seen_.erase(it++);
      } else {
        ++it;
      }
    }
    return expired;
  }

  // Sessions whose lease has not run out.
  int64_t Live(absl::Time now = absl::Now()) const {
    absl::ReaderMutexLock lock(&mu_);
    int64_t live = 0;
    for (const auto& [id, seen] : last_seen_) live += now - seen <= lease_ ? 1 : 0;
    return live;
  }

 private:
  const absl::Duration lease_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, absl::Time> last_seen_ ABSL_GUARDED_BY(mu_);
};

// Runs `tick` every `period` on a thread of its own until destroyed.
class Ticker {
 public:
  Ticker(absl::Duration period, std::function<void()> tick)
      : thread_([this, period, tick = std::move(tick)] {
          absl::MutexLock lock(&mu_);
          while (!mu_.AwaitWithTimeout(absl::Condition(&stop_), period)) {
            mu_.Unlock();
            tick();
            mu_.Lock();
          }
        }) {}
  ~Ticker() {
    {
      absl::MutexLock lock(&mu_);
      stop_ = true;
    }
    thread_.join();
  }
  Ticker(const Ticker&) = delete;
  Ticker& operator=(const Ticker&) = delete;

 private:
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_ENGINE_SESSIONS_H_
