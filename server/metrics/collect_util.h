// Building prometheus::MetricFamily values by hand, for the collectors that read their numbers at
// scrape time (prometheus::Collectable) instead of keeping metric objects up to date.
#ifndef DISTARRAY_SERVER_METRICS_COLLECT_UTIL_H_
#define DISTARRAY_SERVER_METRICS_COLLECT_UTIL_H_

#include <string>
#include <utility>
#include <vector>

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>
#include <prometheus/metric_type.h>

namespace distarray::metrics {

using LabelPairs = std::vector<std::pair<std::string, std::string>>;

inline prometheus::MetricFamily NewFamily(std::string name, std::string help,
                                          prometheus::MetricType type) {
  prometheus::MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = type;
  return family;
}

// Appends one sample; `value` goes to the field `family.type` reads (counter or gauge).
inline void AddSample(prometheus::MetricFamily& family, const LabelPairs& labels, double value) {
  prometheus::ClientMetric metric;
  for (const auto& [name, label_value] : labels) metric.label.push_back({name, label_value});
  if (family.type == prometheus::MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  family.metric.push_back(std::move(metric));
}

}  // namespace distarray::metrics

#endif  // DISTARRAY_SERVER_METRICS_COLLECT_UTIL_H_
