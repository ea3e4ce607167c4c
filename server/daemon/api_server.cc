#include "server/daemon/api_server.h"

#include <grpcpp/ext/health_check_service_server_builder_option.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>

#include "absl/strings/str_cat.h"

namespace distarray::daemon {

absl::StatusOr<ApiServer> StartApiServer(const DaemonOptions& options, ApiServerConfig config) {
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  // Health lives on its own port (health_server.h), which probes reach without the API's
  // credentials; serving it here too would give two answers that can disagree.
  builder.SetOption(std::make_unique<grpc::HealthCheckServiceServerBuilderOption>(nullptr));
  ApiServer api;
  builder.AddListeningPort(options.listen, std::move(config.credentials), &api.port);
  // gRPC sets SO_REUSEPORT by default: a second daemon on the same port would then start and
  // share the connections. Binding fails instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
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
  // Bulk data is streamed in pieces, so messages stay small; the limit bounds metadata (index maps,
  // programs) and is explicit rather than gRPC's 4 MiB receive default.
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  // Keepalive finds dead clients: a connection idle for keepalive_time is pinged, and one whose
  // ping goes unanswered for keepalive_timeout is closed, which cancels its calls (an upload
  // blocked on a vanished client ends and frees its memory). Pings continue on connections that
  // carry no data (a client waiting on a long call), and with no call at all.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS,
                             static_cast<int>(absl::ToInt64Milliseconds(options.keepalive_time)));
  builder.AddChannelArgument(
      GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
      static_cast<int>(absl::ToInt64Milliseconds(options.keepalive_timeout)));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // Clients may ping every 10 s without data (their own keepalive); more often is abuse, and
  // gRPC closes such a connection after a few strikes.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10000);
  api.server = builder.BuildAndStart();
  if (!api.server || api.port == 0) {
    return absl::InvalidArgumentError(absl::StrCat("--listen: cannot bind ", options.listen));
  }
  return api;
}

}  // namespace distarray::daemon
