// Client sessions and their leases. A client names its session in call metadata; every call of
// the session renews its lease, and a session whose lease ran out is expired by a periodic sweep
// (the engine then deletes the session's unnamed arrays). Sessions are counted per tenant as well
// as in all, so one tenant cannot take the table from the others. Header-only: two small classes.
#ifndef DISTARRAY_SERVER_ENGINE_SESSIONS_H_
#define DISTARRAY_SERVER_ENGINE_SESSIONS_H_

#include <cstdint>
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

// The session table's bounds: every id a client sends costs an entry until its lease runs out, so
// a client minting ids per call could otherwise grow the table without limit, and one tenant
// could fill it for all (every new client of every tenant refused while it renews them).
struct SessionLimits {
  static constexpr int64_t kDefaultMaxSessions = 65536;
  static constexpr int64_t kDefaultMaxPerTenant = 4096;  // --max_sessions_per_tenant
  int64_t max_sessions = kDefaultMaxSessions;            // the whole daemon
  int64_t max_per_tenant = kDefaultMaxPerTenant;
};

// Last-seen times by session key ("tenant/session"). Thread-safe, and bounded per tenant and in
// all (SessionLimits).
class SessionTable {
 public:
  explicit SessionTable(absl::Duration lease, SessionLimits limits = {})
      : lease_(lease), limits_(limits) {}

  absl::Duration lease() const { return lease_; }
  const SessionLimits& limits() const { return limits_; }

  // Records a call of `session` (non-empty; the engine's key, which `tenant` is counted by) at
  // `now`. RESOURCE_EXHAUSTED, naming the metadata key and the bound, for a new session while its
  // tenant holds max_per_tenant sessions or the daemon max_sessions. A known session always
  // renews.
  absl::Status Touch(absl::string_view tenant, absl::string_view session,
                     absl::Time now = absl::Now()) {
    absl::MutexLock lock(&mu_);
    auto it = sessions_.find(session);
    if (it != sessions_.end()) {
      it->second.last_seen = now;
      return absl::OkStatus();
    }
    // The tenant's own bound first: a tenant at its quota learns about its quota, not the
    // daemon's.
    auto count = per_tenant_.find(tenant);
    const int64_t held = count == per_tenant_.end() ? 0 : count->second;
    if (held >= limits_.max_per_tenant) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "distarray-session: tenant '", tenant, "' has ", held,
          " live sessions, the most --max_sessions_per_tenant allows; reuse a session or retry "
          "once some expire"));
    }
    if (static_cast<int64_t>(sessions_.size()) >= limits_.max_sessions) {
      return absl::ResourceExhaustedError(
          absl::StrCat("distarray-session: ", sessions_.size(),
                       " sessions are live, the most the daemon holds; retry once some expire"));
    }
    sessions_.emplace(session, Entry{std::string(tenant), now});
    ++per_tenant_[tenant];
    return absl::OkStatus();
  }

  // Forgets `session` now (its client ended it); whether it was there.
  bool End(absl::string_view session) {
    absl::MutexLock lock(&mu_);
    auto it = sessions_.find(session);
    if (it == sessions_.end()) return false;
    auto count = per_tenant_.find(it->second.tenant);
    if (--count->second == 0) per_tenant_.erase(count);
    sessions_.erase(it);
    return true;
  }

  // Removes and returns the sessions not seen for longer than the lease.
  std::vector<std::string> TakeExpired(absl::Time now = absl::Now()) {
    std::vector<std::string> expired;
    absl::MutexLock lock(&mu_);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      if (now - it->second.last_seen > lease_) {
        expired.push_back(it->first);
        auto count = per_tenant_.find(it->second.tenant);
        if (--count->second == 0) per_tenant_.erase(count);
        sessions_.erase(it++);
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
    for (const auto& [id, entry] : sessions_) live += now - entry.last_seen <= lease_ ? 1 : 0;
    return live;
  }

 private:
  struct Entry {
    std::string tenant;
    absl::Time last_seen;
  };
  const absl::Duration lease_;
  const SessionLimits limits_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> sessions_ ABSL_GUARDED_BY(mu_);
  // Entries of sessions_ by tenant; tenants with none are absent.
  absl::flat_hash_map<std::string, int64_t> per_tenant_ ABSL_GUARDED_BY(mu_);
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
