// Chooses the credentials of the API port (plaintext today; TLS and mutual TLS from the flags are
// decided here). The health and metrics ports are deliberately not covered: probes and scrapers
// reach them without credentials.
#ifndef DISTARRAY_SERVER_DAEMON_SERVER_CREDENTIALS_H_
#define DISTARRAY_SERVER_DAEMON_SERVER_CREDENTIALS_H_

#include <memory>

#include <grpcpp/security/server_credentials.h>

#include "absl/status/statusor.h"
#include "server/daemon/flags.h"

namespace distarray::daemon {

// INVALID_ARGUMENT naming the flag when a credentials file is unusable.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ApiServerCredentials(
    const DaemonOptions& options);

}  // namespace distarray::daemon

#endif  // DISTARRAY_SERVER_DAEMON_SERVER_CREDENTIALS_H_
