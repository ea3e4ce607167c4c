// The standard process_* metrics (as the Prometheus Go and Python clients export them), read from
// /proc/self at every scrape.
#ifndef DISTARRAY_SERVER_METRICS_PROCESS_COLLECTOR_H_
#define DISTARRAY_SERVER_METRICS_PROCESS_COLLECTOR_H_

#include <optional>
#include <string>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "absl/strings/string_view.h"

namespace distarray::metrics {

// The fields of /proc/<pid>/stat that the metrics use, in their native units.
struct ProcStat {
  double utime_ticks = 0;  // field 14
  double stime_ticks = 0;  // field 15
  double start_ticks = 0;  // field 22: start time, clock ticks after boot
  double vsize_bytes = 0;  // field 23
  double rss_pages = 0;    // field 24
};

// Parses the text of /proc/<pid>/stat; nullopt when it is malformed. The command name (field 2)
// may hold spaces and parentheses, so fields are counted from the last ')'.
std::optional<ProcStat> ParseProcStat(absl::string_view text);

// The "btime" line of /proc/stat: boot time in seconds since the epoch; nullopt when absent.
std::optional<double> ParseBootTime(absl::string_view proc_stat);

class ProcessCollector final : public prometheus::Collectable {
 public:
  // process_cpu_seconds_total, process_resident_memory_bytes, process_virtual_memory_bytes,
  // process_open_fds, process_max_fds, process_start_time_seconds. A value that cannot be read
  // is left out of the scrape rather than reported as 0.
  std::vector<prometheus::MetricFamily> Collect() const override;
};

}  // namespace distarray::metrics

#endif  // DISTARRAY_SERVER_METRICS_PROCESS_COLLECTOR_H_
