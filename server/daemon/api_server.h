// Builds and starts the API server: distarray.v1.ArrayService (and server reflection) on
// --listen, with the credentials, interceptors, thread quota, keepalive and message-size limits
// of the daemon.
#ifndef DISTARRAY_SERVER_DAEMON_API_SERVER_H_
#define DISTARRAY_SERVER_DAEMON_API_SERVER_H_

#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/server_interceptor.h>

#include "absl/status/statusor.h"
#include "server/daemon/flags.h"

namespace distarray::daemon {

struct ApiServerConfig {
  std::shared_ptr<grpc::ServerCredentials> credentials;  // from ApiServerCredentials()
  std::vector<grpc::Service*> services;                  // not owned; outlive the server
  // Run on every call of every service, in order (e.g. authentication, then metrics).
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
};

struct ApiServer {
  std::unique_ptr<grpc::Server> server;
  int port = 0;  // the bound port (--listen may ask for port 0)
};

// INVALID_ARGUMENT naming --listen when the address cannot be bound.
absl::StatusOr<ApiServer> StartApiServer(const DaemonOptions& options, ApiServerConfig config);

}  // namespace distarray::daemon

#endif  // DISTARRAY_SERVER_DAEMON_API_SERVER_H_
