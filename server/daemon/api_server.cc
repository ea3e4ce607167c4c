#include "server/daemon/api_server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>

#include "absl/strings/str_cat.h"

namespace distarray::daemon {

absl::StatusOr<ApiServer> StartApiServer(const DaemonOptions& options, ApiServerConfig config) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  ApiServer api;
  builder.AddListeningPort(options.listen, std::move(config.credentials), &api.port);
  for (grpc::Service* service : config.services) builder.RegisterService(service);
  if (!config.interceptors.empty()) {
    builder.experimental().SetInterceptorCreators(std::move(config.interceptors));
  }
  // The synchronous server runs each call on a thread of its own and would otherwise start one per
  // concurrent call without bound, each able to hold transfer slabs: a thread quota bounds the
  // host memory and threads that concurrent clients can take. gRPC answers a call that finds
  // the quota spent with RESOURCE_EXHAUSTED; its polling thread counts against the quota too.
  constexpr int kPollerThreads = 1;
  grpc::ResourceQuota quota("distarrayd");
  quota.SetMaxThreads(options.max_concurrent_calls + kPollerThreads);
  builder.SetResourceQuota(quota);
  // Bulk data is streamed in pieces, so messages stay small; 64 MiB leaves room for large maps.
  builder.SetMaxReceiveMessageSize(64 << 20);
  builder.SetMaxSendMessageSize(64 << 20);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 30000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  api.server = builder.BuildAndStart();
  if (!api.server || api.port == 0) {
    return absl::InvalidArgumentError(absl::StrCat("--listen: cannot bind ", options.listen));
  }
  return api;
}

}  // namespace distarray::daemon
