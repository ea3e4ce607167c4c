#include "server/daemon/health_server.h"

#include <grpcpp/ext/health_check_service_server_builder_option.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/impl/server_builder_option.h>
#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"

namespace distarray::daemon {
namespace {

// Drops every ServerBuilder plugin from the health server. Linking gRPC's reflection library
// registers its plugin with every ServerBuilder of the process; the health port is meant to serve
// grpc.health.v1 and nothing else.
class NoPluginsOption final : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments* /*args*/) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    plugins->clear();
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<HealthServer>> HealthServer::Start(const std::string& listen) {
  std::unique_ptr<HealthServer> health(new HealthServer());
  // gRPC's default health service answers Check and Watch for the names given to
  // SetServingStatus and NOT_FOUND for others. It is enabled process-wide but only for servers
  // built while the switch is on; the API server turns it off for itself
  // (HealthCheckServiceServerBuilderOption(nullptr)).
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  builder.SetOption(std::make_unique<NoPluginsOption>());
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &health->port_);
  // gRPC sets SO_REUSEPORT by default: a second daemon on the same port would then start and
  // share the connections. Binding fails instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Probes are tiny and few: a small thread pool is plenty and leaves the API's quota alone.
  grpc::ResourceQuota quota("distarrayd-health");
  quota.SetMaxThreads(8);
  builder.SetResourceQuota(quota);
  builder.SetMaxReceiveMessageSize(4 << 10);
  // gRPC 1.51's default health service uses the callback API and is added only once the server
  // starts, so a builder with no other service finds nothing to poll and refuses to build. One
  // completion queue, polled by a thread of its own (nothing is ever queued on it), satisfies it.
  health->queue_ = builder.AddCompletionQueue(/*is_frequently_polled=*/true);
  health->server_ = builder.BuildAndStart();
  if (!health->server_ || health->port_ == 0) {
    health->queue_->Shutdown();
    health->DrainQueue();
    health->queue_.reset();
    return absl::InvalidArgumentError(absl::StrCat("--health_listen: cannot bind ", listen));
  }
  health->queue_poller_ = std::thread([queue = health->queue_.get()] {
    void* tag = nullptr;
    bool ok = false;
    while (queue->Next(&tag, &ok)) {
    }
  });
  {
    absl::MutexLock lock(&health->mu_);
    health->Publish();
  }
  return health;
}

HealthServer::~HealthServer() {
  if (server_) server_->Shutdown();
  if (queue_) queue_->Shutdown();
  if (queue_poller_.joinable()) queue_poller_.join();
}

void HealthServer::DrainQueue() {
  void* tag = nullptr;
  bool ok = false;
  while (queue_->Next(&tag, &ok)) {
  }
}

void HealthServer::SetStarted() {
  absl::MutexLock lock(&mu_);
  started_ = true;
  Publish();
}

void HealthServer::SetDraining() {
  absl::MutexLock lock(&mu_);
  draining_ = true;
  Publish();
}

void HealthServer::SetDeviceError(const absl::Status& error) {
  absl::MutexLock lock(&mu_);
  if (error.ok() || !device_error_.ok()) return;
  device_error_ = error;
  spdlog::error("liveness and readiness NOT_SERVING: {}", error.ToString());
  Publish();
}

bool HealthServer::live() const {
  absl::MutexLock lock(&mu_);
  return device_error_.ok();
}

bool HealthServer::ready() const {
  absl::MutexLock lock(&mu_);
  return started_ && !draining_ && device_error_.ok();
}

void HealthServer::Publish() {
  const bool live = device_error_.ok();
  const bool ready = started_ && !draining_ && live;
  grpc::HealthCheckServiceInterface* service = server_->GetHealthCheckService();
  service->SetServingStatus(kLivenessService, live);
  service->SetServingStatus(kReadinessService, ready);
  service->SetServingStatus("", live && ready);
}

}  // namespace distarray::daemon
