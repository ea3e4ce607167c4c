#include "server/metrics/process_collector.h"

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "server/metrics/collect_util.h"

namespace distarray::metrics {
namespace {

std::string ReadFile(const char* path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void AddGauge(std::vector<prometheus::MetricFamily>& out, const char* name, const char* help,
              double value) {
  prometheus::MetricFamily family = NewFamily(name, help, prometheus::MetricType::Gauge);
  AddSample(family, {}, value);
  out.push_back(std::move(family));
}

}  // namespace

std::optional<ProcStat> ParseProcStat(absl::string_view text) {
  const size_t paren = text.rfind(')');
  if (paren == absl::string_view::npos) return std::nullopt;
  // After ") " come fields 3 (state) onwards.
  const std::vector<absl::string_view> fields =
      absl::StrSplit(text.substr(paren + 1), ' ', absl::SkipEmpty());
  // Field n (1-based, as in proc(5)) is fields[n - 3].
  const auto field = [&](int n, double* value) {
    const size_t i = static_cast<size_t>(n - 3);
    return i < fields.size() && absl::SimpleAtod(fields[i], value);
  };
  ProcStat stat;
  if (!field(14, &stat.utime_ticks) || !field(15, &stat.stime_ticks) ||
      !field(22, &stat.start_ticks) || !field(23, &stat.vsize_bytes) ||
      !field(24, &stat.rss_pages)) {
    return std::nullopt;
  }
  return stat;
}

std::optional<double> ParseBootTime(absl::string_view proc_stat) {
  for (absl::string_view line : absl::StrSplit(proc_stat, '\n')) {
    if (!absl::ConsumePrefix(&line, "btime ")) continue;
    double seconds = 0;
    if (absl::SimpleAtod(line, &seconds)) return seconds;
  }
  return std::nullopt;
}

std::vector<prometheus::MetricFamily> ProcessCollector::Collect() const {
  std::vector<prometheus::MetricFamily> out;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  if (const std::optional<ProcStat> stat = ParseProcStat(ReadFile("/proc/self/stat"));
      stat && ticks > 0) {
    prometheus::MetricFamily cpu =
        NewFamily("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
                  prometheus::MetricType::Counter);
    AddSample(cpu, {}, (stat->utime_ticks + stat->stime_ticks) / ticks);
    out.push_back(std::move(cpu));
    AddGauge(out, "process_resident_memory_bytes", "Resident memory size in bytes.",
             stat->rss_pages * page);
    AddGauge(out, "process_virtual_memory_bytes", "Virtual memory size in bytes.",
             stat->vsize_bytes);
    if (const std::optional<double> boot = ParseBootTime(ReadFile("/proc/stat"))) {
      AddGauge(out, "process_start_time_seconds",
               "Start time of the process since unix epoch in seconds.",
               *boot + stat->start_ticks / ticks);
    }
  }
  std::error_code error;
  double open_fds = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", error), end; !error && it != end;
       it.increment(error)) {
    ++open_fds;
  }
  // The iterator's own descriptor is one of the entries; it is closed again by now.
  if (!error) AddGauge(out, "process_open_fds", "Number of open file descriptors.", open_fds - 1);
  if (rlimit limit{}; getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    AddGauge(out, "process_max_fds", "Maximum number of open file descriptors.",
             static_cast<double>(limit.rlim_cur));
  }
  return out;
}

}  // namespace distarray::metrics
