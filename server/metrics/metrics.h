// Prometheus metrics: requests by method and status code, request durations, and device memory.
// Names follow Prometheus conventions (_total counters, base units, no per-handle labels).
#ifndef DISTARRAY_SERVER_METRICS_METRICS_H_
#define DISTARRAY_SERVER_METRICS_METRICS_H_

#include <memory>
#include <string>
#include <string_view>

#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "server/backend/backend.h"

namespace distarray {

class Metrics {
 public:
  // Serves /metrics on `listen` (host:port); an empty address keeps the metrics unexposed.
  // UNAVAILABLE when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<Metrics>> Create(const std::string& listen,
                                                         int device_count);

  void RecordRequest(absl::string_view method, absl::StatusCode code, double seconds);
  void RecordTransferBytes(absl::string_view direction, int64_t bytes);
  // Refreshes the device memory gauges from the backend.
  void UpdateDevices(const Backend& backend);

 private:
  Metrics();

  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Histogram>& durations_;
  prometheus::Family<prometheus::Counter>& transfer_bytes_;
  prometheus::Family<prometheus::Gauge>& memory_used_;
  prometheus::Family<prometheus::Gauge>& memory_limit_;

  // Label lookups hash and allocate; RPCs are short, so each series is looked up once.
  struct MethodSeries {
    prometheus::Histogram* duration = nullptr;
    absl::flat_hash_map<int, prometheus::Counter*> by_code;
  };
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, MethodSeries> methods_ ABSL_GUARDED_BY(mu_);
  std::vector<prometheus::Gauge*> used_gauges_;
  std::vector<prometheus::Gauge*> limit_gauges_;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_METRICS_METRICS_H_
