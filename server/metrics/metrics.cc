#include "server/metrics/metrics.h"
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace distarray {

Metrics::Metrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      requests_(prometheus::BuildCounter()
                    .Name("distarray_requests_total")
                    .Help("RPCs finished, by method and gRPC status code")
                    .Register(*registry_)),
      durations_(prometheus::BuildHistogram()
                     .Name("distarray_request_duration_seconds")
                     .Help("Time from receipt to the RPC's status, by method")
                     .Register(*registry_)),
      transfer_bytes_(prometheus::BuildCounter()
                          .Name("distarray_transfer_bytes_total")
                          .Help("Array bytes streamed, by direction (upload, download)")
                          .Register(*registry_)),
      memory_used_(prometheus::BuildGauge()
                       .Name("distarray_device_memory_used_bytes")
                       .Help("Device memory held by arrays and in-flight work")
                       .Register(*registry_)),
      memory_limit_(prometheus::BuildGauge()
                        .Name("distarray_device_memory_limit_bytes")
                        .Help("Device memory admission limit")
                        .Register(*registry_)) {}

absl::StatusOr<std::unique_ptr<Metrics>> Metrics::Create(const std::string& listen,
                                                         int device_count) {
  std::unique_ptr<Metrics> metrics(new Metrics());
  for (int d = 0; d < device_count; ++d) {
    const std::string device = absl::StrCat(d);
    metrics->used_gauges_.push_back(&metrics->memory_used_.Add({{"device", device}}));
    metrics->limit_gauges_.push_back(&metrics->memory_limit_.Add({{"device", device}}));
  }
  if (!listen.empty()) {
    try {  // prometheus-cpp reports a bind failure by throwing; keep it inside this boundary
      metrics->exposer_ = std::make_unique<prometheus::Exposer>(listen);
    } catch (const std::exception& e) {
      return absl::UnavailableError(absl::StrCat("metrics_listen ", listen, ": ", e.what()));
    }
    metrics->exposer_->RegisterCollectable(metrics->registry_);
  }
  return metrics;
}

void Metrics::RecordRequest(absl::string_view method, absl::StatusCode code, double seconds) {
  static const prometheus::Histogram::BucketBoundaries kBuckets = {
      1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 0.1, 0.5, 2, 10, 60};
  prometheus::Counter* counter;
  prometheus::Histogram* duration;
  {
    absl::MutexLock lock(&mu_);
    MethodSeries& series = methods_[method];
    if (series.duration == nullptr) {
      series.duration = &durations_.Add({{"method", std::string(method)}}, kBuckets);
    }
    prometheus::Counter*& by_code = series.by_code[static_cast<int>(code)];
    if (by_code == nullptr) {
      by_code = &requests_.Add(
          {{"method", std::string(method)}, {"code", absl::StatusCodeToString(code)}});
    }
    counter = by_code;
    duration = series.duration;
  }
  counter->Increment();
  duration->Observe(seconds);
}

void Metrics::RecordTransferBytes(absl::string_view direction, int64_t bytes) {
  transfer_bytes_.Add({{"direction", std::string(direction)}})
      .Increment(static_cast<double>(bytes));
}

void Metrics::UpdateDevices(const Backend& backend) {
  for (int d = 0; d < backend.device_count() && d < static_cast<int>(used_gauges_.size()); ++d) {
    const DeviceMemory m = backend.memory(d);
    used_gauges_[d]->Set(static_cast<double>(m.used_bytes));
    limit_gauges_[d]->Set(static_cast<double>(m.limit_bytes));
  }
}

}  // namespace distarray
