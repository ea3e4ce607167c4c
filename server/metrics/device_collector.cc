#include "server/metrics/device_collector.h"

#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "server/metrics/collect_util.h"

namespace distarray::metrics {

std::vector<prometheus::MetricFamily> DeviceCollector::Collect() const {
  using prometheus::MetricType;
  Backend& backend = engine_.backend();
  const int devices = backend.device_count();

  // Arrays with at least one chunk on each device. One pass over the live arrays' chunks: a
  // scrape every few seconds costs far less than the RPCs that made them.
  std::vector<int64_t> arrays(devices, 0);
  absl::flat_hash_set<int> on;
  for (const ArrayPtr& array : engine_.List()) {
    on.clear();
    for (const Chunk& chunk : array->chunks) on.insert(chunk.spec.device);
    for (int d : on) {
      if (d >= 0 && d < devices) ++arrays[d];
    }
  }

  prometheus::MetricFamily used =
      NewFamily("distarray_device_memory_used_bytes",
                "Device memory counted against the limit: live arrays, graph slots and in-flight "
                "transfers, plus a fixed bookkeeping charge per allocation",
                MetricType::Gauge);
  prometheus::MetricFamily limit =
      NewFamily("distarray_device_memory_limit_bytes",
                "Device memory admission limit (--memory_limit or --memory_fraction of the card)",
                MetricType::Gauge);
  prometheus::MetricFamily total =
      NewFamily("distarray_device_memory_total_bytes",
                "Physical memory of the device (the limit on the host backend)", MetricType::Gauge);
  prometheus::MetricFamily array_count =
      NewFamily("distarray_device_arrays", "Live arrays with at least one chunk on the device",
                MetricType::Gauge);
  prometheus::MetricFamily reshard = NewFamily(
      "distarray_device_reshard_bytes_total",
      "Bytes written into the device by reshards and mode changes, including the implicit "
      "reshards of compute operands",
      MetricType::Counter);
  prometheus::MetricFamily failures =
      NewFamily("distarray_device_allocation_failures_total",
                "Allocations refused by the device's memory limit or failed in its allocator",
                MetricType::Counter);
  prometheus::MetricFamily sticky = NewFamily(
      "distarray_device_sticky_error",
      "1 while the device is in a sticky error state (unusable until the daemon restarts)",
      MetricType::Gauge);
  for (int d = 0; d < devices; ++d) {
    const DeviceMemory memory = backend.memory(d);
    const LabelPairs labels = {{"device", absl::StrCat(d)}, {"gpu_uuid", backend.device_uuid(d)}};
    AddSample(used, labels, static_cast<double>(memory.used_bytes));
    AddSample(limit, labels, static_cast<double>(memory.limit_bytes));
    AddSample(total, labels, static_cast<double>(memory.total_bytes));
    AddSample(array_count, labels, static_cast<double>(arrays[d]));
    AddSample(reshard, labels, static_cast<double>(backend.reshard_bytes(d)));
    AddSample(failures, labels, static_cast<double>(memory.allocation_failures));
    AddSample(sticky, labels, backend.DeviceStatus(d).ok() ? 0 : 1);
  }
  std::vector<prometheus::MetricFamily> out;
  for (prometheus::MetricFamily* family :
       {&used, &limit, &total, &array_count, &reshard, &failures, &sticky}) {
    out.push_back(std::move(*family));
  }
  return out;
}

}  // namespace distarray::metrics
