#include "server/metrics/metrics.h"

#include <spdlog/spdlog.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/metrics/build_info.h"
#include "server/metrics/device_collector.h"
#include "server/metrics/graph_collector.h"
#include "server/metrics/process_collector.h"
#include "server/metrics/tenant_collector.h"

namespace distarray {

Metrics::Metrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      grpc_(*registry_),
      transfer_bytes_(prometheus::BuildCounter()
                          .Name("distarray_transfer_bytes_total")
                          .Help("Array bytes streamed, by direction (upload, download)")
                          .Register(*registry_)),
      upload_bytes_(transfer_bytes_.Add({{"direction", "upload"}})),
      download_bytes_(transfer_bytes_.Add({{"direction", "download"}})),
      process_(std::make_shared<metrics::ProcessCollector>()) {}

Metrics::~Metrics() = default;

absl::StatusOr<std::unique_ptr<Metrics>> Metrics::Create(const std::string& listen) {
  std::unique_ptr<Metrics> metrics(new Metrics());
  if (absl::Status s = metrics->grpc_.PreRegisterService("distarray.v1.ArrayService"); !s.ok()) {
    return absl::InternalError(std::string(s.message()));  // the daemon links the service: a bug
  }
  if (!listen.empty()) {
    try {  // prometheus-cpp reports a bind failure by throwing; keep it inside this boundary
      metrics->exposer_ = std::make_unique<prometheus::Exposer>(listen);
    } catch (const std::exception& e) {
      return absl::UnavailableError(absl::StrCat("metrics_listen ", listen, ": ", e.what()));
    }
    metrics->exposer_->RegisterCollectable(metrics->registry_);
    metrics->exposer_->RegisterCollectable(metrics->process_);
  }
  return metrics;
}

int Metrics::port() const {
  if (exposer_ == nullptr) return 0;
  const std::vector<int> ports = exposer_->GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

void Metrics::RecordTransferBytes(absl::string_view direction, int64_t bytes) {
  if (direction == "upload") {
    upload_bytes_.Increment(static_cast<double>(bytes));
  } else if (direction == "download") {
    download_bytes_.Increment(static_cast<double>(bytes));
  } else {
    spdlog::error("metrics: unknown transfer direction {}", std::string(direction));
  }
}

Metrics::EngineObservation Metrics::ObserveEngine(Engine& engine, bool tenant_labels) {
  metrics::RegisterBuildInfo(*registry_, metrics::CurrentBuildInfo(engine.backend().name()));
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables = {
      std::make_shared<metrics::DeviceCollector>(engine),
      std::make_shared<metrics::GraphCollector>(engine),
      std::make_shared<metrics::TenantCollector>(engine, tenant_labels)};
  for (const auto& collectable : collectables) Expose(collectable);
  return EngineObservation(this, std::move(collectables));
}

Metrics::EngineObservation::~EngineObservation() {
  if (metrics_ == nullptr) return;
  for (const auto& collectable : collectables_) metrics_->Unexpose(collectable);
}

void Metrics::Expose(const std::shared_ptr<prometheus::Collectable>& collectable) {
  if (exposer_ != nullptr) exposer_->RegisterCollectable(collectable);
}

void Metrics::Unexpose(const std::shared_ptr<prometheus::Collectable>& collectable) {
  if (exposer_ != nullptr) exposer_->RemoveCollectable(collectable);
}

}  // namespace distarray
