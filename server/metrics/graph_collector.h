// Engine-wide metrics read at every scrape: live arrays and sessions, and RunGraph's graph cache
// (hits, misses, entries), launches, loop iterations and cancels, from counters the engine keeps.
#ifndef DISTARRAY_SERVER_METRICS_GRAPH_COLLECTOR_H_
#define DISTARRAY_SERVER_METRICS_GRAPH_COLLECTOR_H_

#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "server/engine/engine.h"

namespace distarray::metrics {

class GraphCollector final : public prometheus::Collectable {
 public:
  // `engine` must outlive the collector's registration (Metrics::ObserveEngine arranges it).
  explicit GraphCollector(const Engine& engine) : engine_(engine) {}

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const Engine& engine_;
};

}  // namespace distarray::metrics

#endif  // DISTARRAY_SERVER_METRICS_GRAPH_COLLECTOR_H_
