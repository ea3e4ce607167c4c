// The daemon's Prometheus metrics: one registry served on /metrics (prometheus-cpp's exposer, on a
// port of its own), and what feeds it. docs/operations.md lists every metric.
//   grpc_server_metrics.h  gRPC calls, by a server interceptor (grpc-ecosystem names)
//   device_collector.h     per device, read from the engine at scrape time
//   graph_collector.h      arrays, sessions and RunGraph counters, read at scrape time
//   tenant_collector.h     tenants' memory and quotas per device (per tenant only when asked)
//   process_collector.h    process_* from /proc/self
//   build_info.h           distarray_build_info
// Names follow Prometheus conventions (_total counters, base units, no per-handle labels).
#ifndef DISTARRAY_SERVER_METRICS_METRICS_H_
#define DISTARRAY_SERVER_METRICS_METRICS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/engine/engine.h"
#include "server/metrics/grpc_server_metrics.h"

namespace distarray {

class Metrics {
 public:
  // Serves /metrics on `listen` (host:port; port 0 picks one); an empty address keeps the metrics
  // unexposed (they are still recorded). UNAVAILABLE when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<Metrics>> Create(const std::string& listen);
  ~Metrics();

  // The bound port of /metrics; 0 when unexposed.
  int port() const;

  // Array bytes streamed, by direction ("upload" or "download").
  void RecordTransferBytes(absl::string_view direction, int64_t bytes);

  // The gRPC server metrics; install NewInterceptorFactory() on every server of the daemon.
  metrics::GrpcServerMetrics& grpc() { return grpc_; }

  // While the returned object lives, scrapes read `engine`: per-device, per-tenant, graph and
  // build-info metrics. Destroy it before the engine (declare it after the engine).
  // `tenant_labels` (--metrics_tenant_labels): the tenant metrics name each tenant; otherwise
  // they are aggregated over tenants (tenant_collector.h says why).
  class EngineObservation {
   public:
    EngineObservation(EngineObservation&&) = default;
    ~EngineObservation();

   private:
    friend class Metrics;
    EngineObservation(Metrics* metrics, std::vector<std::shared_ptr<prometheus::Collectable>> c)
        : metrics_(metrics), collectables_(std::move(c)) {}
    Metrics* metrics_;
    std::vector<std::shared_ptr<prometheus::Collectable>> collectables_;
  };
  [[nodiscard]] EngineObservation ObserveEngine(Engine& engine, bool tenant_labels = false);

 private:
  Metrics();
  void Expose(const std::shared_ptr<prometheus::Collectable>& collectable);
  void Unexpose(const std::shared_ptr<prometheus::Collectable>& collectable);

  std::shared_ptr<prometheus::Registry> registry_;
  metrics::GrpcServerMetrics grpc_;
  prometheus::Family<prometheus::Counter>& transfer_bytes_;
  prometheus::Counter& upload_bytes_;
  prometheus::Counter& download_bytes_;
  std::shared_ptr<prometheus::Collectable> process_;
  // Last: stops serving scrapes before anything they read goes.
  std::unique_ptr<prometheus::Exposer> exposer_;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_METRICS_METRICS_H_
