#include "server/daemon/server_credentials.h"

namespace distarray::daemon {

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ApiServerCredentials(
    const DaemonOptions& options) {
  return ApiServerCredentialsFromFiles(options.tls);
}

}  // namespace distarray::daemon
