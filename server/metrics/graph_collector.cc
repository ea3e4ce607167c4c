#include "server/metrics/graph_collector.h"

#include "server/metrics/collect_util.h"

namespace distarray::metrics {
namespace {

void Add(std::vector<prometheus::MetricFamily>& out, const char* name, const char* help,
         prometheus::MetricType type, int64_t value) {
  prometheus::MetricFamily family = NewFamily(name, help, type);
  AddSample(family, {}, static_cast<double>(value));
  out.push_back(std::move(family));
}

}  // namespace

std::vector<prometheus::MetricFamily> GraphCollector::Collect() const {
  using prometheus::MetricType;
  // The numbers GetServerInfo reports, so the two never disagree.
  const v1::GetServerInfoResponse info = engine_.ServerInfo();
  const GraphRunCounters runs = engine_.graph_run_counters();
  std::vector<prometheus::MetricFamily> out;
  Add(out, "distarray_arrays", "Live arrays", MetricType::Gauge, info.array_count());
  Add(out, "distarray_sessions", "Live client sessions", MetricType::Gauge, info.live_sessions());
  Add(out, "distarray_graph_cache_hits_total",
      "RunGraph calls that replayed a cached recorded graph", MetricType::Counter,
      info.graph_cache().hits());
  Add(out, "distarray_graph_cache_misses_total",
      "RunGraph calls that recorded a graph (not in the cache)", MetricType::Counter,
      info.graph_cache().misses());
  Add(out, "distarray_graph_cache_entries", "Recorded graphs kept in the cache", MetricType::Gauge,
      info.graph_cache().entries());
  Add(out, "distarray_registered_programs", "Programs kept by RegisterProgram", MetricType::Gauge,
      info.graph_cache().registered_programs());
  Add(out, "distarray_graph_launches_total",
      "RunGraph calls and many-piece reshards that ran as one recorded device graph and finished",
      MetricType::Counter, runs.launches);
  Add(out, "distarray_graph_iterations_total",
      "Loop bodies run by finished RunGraph calls, summed over every loop", MetricType::Counter,
      runs.iterations);
  Add(out, "distarray_graph_cancels_total",
      "RunGraph calls ended by the client's cancel or deadline", MetricType::Counter, runs.cancels);
  return out;
}

}  // namespace distarray::metrics
