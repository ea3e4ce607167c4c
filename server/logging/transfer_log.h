// Logs bulk transfers as the client sees them. A large upload or download is split by the SDK
// into parallel streams over several connections, one region each; logging each stream's rate
// would report a quarter of the real throughput four times. Streams of the same array, direction
// and tenant that overlap in time are one transfer here: its line gives the total bytes, the
// stream count and the aggregate rate (bytes over the time from the first stream's start to the
// last one's end). A transfer running longer than the progress interval logs its progress.
//
// The SDKs move a shared-memory transfer in calls of about 32 MiB per stream, with a copy between
// one call and the next, so its streams do not always overlap: logged at once when the running
// count reached zero, one 1 GiB transfer made 6 to 8 lines of 128 or 256 MiB. With a `linger`,
// a transfer whose streams have all ended waits that long for another stream of the same array
// before FlushLingering (the daemon calls it from a ticker) or the destructor logs it.
//
// Nor do a transfer's parallel streams always overlap: a fresh client (the command line's
// `put`) starts its last stream tens of milliseconds after its first, which on fast devices is
// after the others ended, and a 128 MiB upload was logged as 96 MiB (its last stream as a line
// of its own, at debug). So a stream can say how large the whole array is (set_whole_bytes):
// such a transfer is logged as soon as its streams have moved the whole array, and until then,
// once its streams have all ended, it waits for more of them up to `partial_linger`.
#ifndef DISTARRAY_SERVER_LOGGING_TRANSFER_LOG_H_
#define DISTARRAY_SERVER_LOGGING_TRANSFER_LOG_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace distarray {

class TransferLog {
 public:
  // Transfers of at least `info_bytes` log at info, smaller ones at debug. `progress`: how often
  // a running transfer logs its progress (zero: never). `linger`: see above (zero: a transfer is
  // logged when its last stream ends).
  // `partial_linger`: see above (at least `linger`).
  explicit TransferLog(absl::Duration progress = absl::Seconds(10),
                       int64_t info_bytes = int64_t{64} << 20,
                       absl::Duration linger = absl::ZeroDuration(),
                       absl::Duration partial_linger = absl::ZeroDuration())
      : progress_(progress),
        info_bytes_(info_bytes),
        linger_(linger),
        partial_linger_(std::max(linger, partial_linger)) {}
  // Logs the transfers still lingering.
  ~TransferLog();
  TransferLog(const TransferLog&) = delete;
  TransferLog& operator=(const TransferLog&) = delete;

  class Stream;
  // One stream of the transfer `direction` ("upload", "download", ...) of `array` (a handle or a
  // name; empty: a stream of its own, e.g. an upload that creates its array). Count its bytes
  // with Add; the transfer is logged when its last stream is destroyed.
  Stream Begin(std::string direction, std::string tenant, std::string array);

  // Logs the transfers whose streams all ended at least `linger` ago.
  void FlushLingering();
  // Logs every transfer whose streams have all ended, lingering or not.
  void FlushAll();

  class Stream {
   public:
    Stream(Stream&& other) noexcept
        : log_(other.log_), key_(std::move(other.key_)), failed_(other.failed_) {
      other.log_ = nullptr;
    }
    Stream& operator=(Stream&&) = delete;
    ~Stream();
    void Add(int64_t bytes);
    // Names the array once known (an upload that created it): used in the log line.
    void set_array(std::string array);
    // The bytes of the whole array this stream moves part of (or all of): the transfer is over
    // once its streams have moved that many.
    void set_whole_bytes(int64_t bytes);
    // The stream delivered everything. A stream destroyed without it failed (an error, a
    // cancellation, the drain): its bytes still count, and the transfer's line says so.
    void Succeed() { failed_ = false; }

   private:
    friend class TransferLog;
    Stream(TransferLog* log, std::string key) : log_(log), key_(std::move(key)) {}
    TransferLog* log_;
    std::string key_;
    bool failed_ = true;
  };

 private:
  using Clock = std::chrono::steady_clock;
  struct Transfer {
    std::string direction;
    std::string array;
    int streams_running = 0;
    int streams = 0;
    int failed = 0;
    int64_t bytes = 0;
    int64_t whole_bytes = 0;  // 0: unknown
    Clock::time_point start;
    Clock::time_point last_progress;
    Clock::time_point end;  // when streams_running last fell to zero
  };
  void Add(const std::string& key, int64_t bytes);
  void End(const std::string& key, bool failed);
  // Writes the line of a transfer whose streams have all ended.
  void Log(const Transfer& done) const;
  // Whether `t`, whose streams have all ended, has moved all of its array.
  static bool Whole(const Transfer& t) { return t.whole_bytes > 0 && t.bytes >= t.whole_bytes; }
  // How long `t`, whose streams have all ended, waits for another stream.
  Clock::duration LingerOf(const Transfer& t) const;
  // Logs (and forgets) the transfers whose streams all ended and whose linger has passed at
  // `now` (every ended one when `all`).
  void FlushEnded(Clock::time_point now, bool all) ABSL_LOCKS_EXCLUDED(mu_);

  const absl::Duration progress_;
  const int64_t info_bytes_;
  const absl::Duration linger_;
  const absl::Duration partial_linger_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Transfer> running_ ABSL_GUARDED_BY(mu_);
  int64_t next_anonymous_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_LOGGING_TRANSFER_LOG_H_
