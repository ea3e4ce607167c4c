#include "server/logging/transfer_log.h"

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"

namespace distarray {
namespace {

double GBPerSecond(int64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0.0;
}

}  // namespace

TransferLog::Stream TransferLog::Begin(std::string direction, std::string tenant,
                                       std::string array) {
  absl::MutexLock lock(&mu_);
  // Tenants may use the same names; the key keeps their transfers apart.
  std::string key = array.empty() ? absl::StrCat("#", next_anonymous_++)
                                  : absl::StrCat(direction, "\x1f", tenant, "\x1f", array);
  Transfer& t = running_[key];
  if (t.streams_running == 0 && t.streams > 0 && Clock::now() - t.end > LingerOf(t)) {
    Log(t);  // lingered too long to be this transfer's: it is over (under mu_, rare)
    t = Transfer{};
  }
  if (t.streams == 0) {  // a new transfer (else a lingering one goes on)
    t = Transfer{};
    t.direction = std::move(direction);
    t.array = array.empty() ? "(new array)" : std::move(array);
    t.start = t.last_progress = Clock::now();
  }
  ++t.streams_running;
  ++t.streams;
  return Stream(this, std::move(key));
}

TransferLog::Stream::~Stream() {
  if (log_ != nullptr) log_->End(key_, failed_);
}

void TransferLog::Stream::Add(int64_t bytes) {
  if (log_ != nullptr) log_->Add(key_, bytes);
}

void TransferLog::Stream::set_array(std::string array) {
  if (log_ == nullptr) return;  // moved from
  absl::MutexLock lock(&log_->mu_);
  if (auto it = log_->running_.find(key_); it != log_->running_.end()) {
    it->second.array = std::move(array);
  }
}

void TransferLog::Stream::set_whole_bytes(int64_t bytes) {
  if (log_ == nullptr) return;  // moved from
  absl::MutexLock lock(&log_->mu_);
  if (auto it = log_->running_.find(key_); it != log_->running_.end()) {
    it->second.whole_bytes = bytes;
  }
}

TransferLog::Clock::duration TransferLog::LingerOf(const Transfer& t) const {
  // A transfer that has not yet moved its whole array expects more streams.
  return absl::ToChronoNanoseconds(t.whole_bytes > 0 && !Whole(t) ? partial_linger_ : linger_);
}

void TransferLog::Add(const std::string& key, int64_t bytes) {
  absl::MutexLock lock(&mu_);
  auto it = running_.find(key);
  if (it == running_.end()) return;
  Transfer& t = it->second;
  t.bytes += bytes;
  if (progress_ <= absl::ZeroDuration()) return;
  const Clock::time_point now = Clock::now();
  if (now - t.last_progress < absl::ToChronoNanoseconds(progress_)) return;
  t.last_progress = now;
  const double seconds = std::chrono::duration<double>(now - t.start).count();
  spdlog::info("{} {}: {} MiB so far in {:.1f} s ({:.2f} GB/s, {} streams running)", t.direction,
               t.array, t.bytes >> 20, seconds, GBPerSecond(t.bytes, seconds), t.streams_running);
}

void TransferLog::End(const std::string& key, bool failed) {
  Transfer done;
  {
    absl::MutexLock lock(&mu_);
    auto it = running_.find(key);
    if (it == running_.end()) return;
    Transfer& t = it->second;
    if (failed) ++t.failed;
    if (--t.streams_running > 0) return;
    t.end = Clock::now();
    // An anonymous transfer (an upload creating its array) has no later stream to wait for, nor
    // has one that moved its whole array.
    if (LingerOf(t) > Clock::duration::zero() && key[0] != '#' && !Whole(t)) {
      return;  // FlushLingering logs it
    }
    done = std::move(t);
    running_.erase(it);
  }
  Log(done);
}

void TransferLog::FlushEnded(Clock::time_point now, bool all) {
  std::vector<Transfer> ended;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = running_.begin(); it != running_.end();) {
      const Transfer& t = it->second;
      if (t.streams_running == 0 && (all || now - t.end >= LingerOf(t))) {
        ended.push_back(std::move(it->second));
        running_.erase(it++);
      } else {
        ++it;
      }
    }
  }
  for (const Transfer& t : ended) Log(t);  // outside the lock
}

void TransferLog::FlushLingering() { FlushEnded(Clock::now(), /*all=*/false); }

void TransferLog::FlushAll() { FlushEnded(Clock::now(), /*all=*/true); }

TransferLog::~TransferLog() { FlushAll(); }

void TransferLog::Log(const Transfer& done) const {
  const double seconds = std::chrono::duration<double>(done.end - done.start).count();
  const auto level =
      done.bytes >= info_bytes_ || done.failed > 0 ? spdlog::level::info : spdlog::level::debug;
  spdlog::log(level, "{} {}: {} MiB in {:.3f} s ({:.2f} GB/s) over {} stream{}{}", done.direction,
              done.array, done.bytes >> 20, seconds, GBPerSecond(done.bytes, seconds), done.streams,
              done.streams == 1 ? "" : "s",
              done.failed > 0 ? absl::StrCat(", ", done.failed, " failed") : "");
}

}  // namespace distarray
