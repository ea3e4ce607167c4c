// The daemon's command-line flags, read once into a validated DaemonOptions. Every other part of
// the daemon takes its settings from DaemonOptions, never from the flags themselves.
#ifndef DISTARRAY_SERVER_DAEMON_FLAGS_H_
#define DISTARRAY_SERVER_DAEMON_FLAGS_H_

#include <cstdint>
#include <string>

#include <spdlog/common.h>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/cluster/cluster_options.h"
#include "server/daemon/backend_factory.h"
#include "server/engine/engine.h"
#include "server/security/tls_credentials.h"
#include "server/service/shared_memory_table.h"

namespace distarray::daemon {

struct DaemonOptions {
  BackendOptions backend;
  cluster::ClusterOptions cluster;  // --cluster_*; size 1: a single daemon
  EngineOptions engine;
  std::string listen;            // the API's host:port
  std::string metrics_listen;    // empty: no /metrics
  std::string port_file;         // empty: the bound API port is not written anywhere
  std::string health_listen;     // grpc.health.v1 only; empty: no health port
  std::string health_port_file;  // empty: the bound health port is not written anywhere

  spdlog::level::level_enum log_level = spdlog::level::info;
  bool log_json = false;                            // --log_format=json
  absl::Duration log_progress = absl::Seconds(10);  // zero: long transfers log no progress

  // On SIGTERM: readiness NOT_SERVING for `drain_grace` with the listener still open, then
  // in-flight calls get `drain` to finish.
  absl::Duration drain_grace = absl::Seconds(5);
  absl::Duration drain = absl::Seconds(10);
  int max_concurrent_calls = 128;
  // Calls one tenant may have in flight (--max_concurrent_calls_per_tenant); without
  // --auth_tokens_file there is one tenant and this equals max_concurrent_calls.
  int max_concurrent_calls_per_tenant = 32;

  // Connection liveness: the server pings a connection idle for keepalive_time and closes it when
  // the ping is unanswered after keepalive_timeout, so a dead client's calls end.
  absl::Duration keepalive_time = absl::Seconds(30);
  absl::Duration keepalive_timeout = absl::Seconds(10);
  int max_message_bytes = 64 << 20;  // each way

  // The API port's TLS (none of the files: plaintext) and the bearer tokens file (empty: no
  // authentication, every call is the default tenant). docs/operations.md, "Security".
  TlsFiles tls;
  std::string auth_tokens_file;

  // Uploads and downloads through shared-memory segments the daemon makes for a client
  // (--shared_memory): auto is on without --auth_tokens_file and off with it.
  bool shared_memory = true;
  std::string shared_memory_off_reason;     // for the refusal's message, when off
  SharedMemoryLimits shared_memory_limits;  // per tenant

  // Tenant names as labels of the tenant metrics (--metrics_tenant_labels); off: aggregated.
  bool metrics_tenant_labels = false;
};

// Parses a --log_level value, in any case: trace, debug, info, warn (or warning), error,
// critical, off. INVALID_ARGUMENT naming --log_level otherwise.
absl::StatusOr<spdlog::level::level_enum> ParseLogLevel(const std::string& text);

// Reads the (already parsed) flags. INVALID_ARGUMENT naming the offending flag when a value is
// out of range or malformed.
absl::StatusOr<DaemonOptions> DaemonOptionsFromFlags();

// Parses "123", "64MiB", "1GiB", "512KiB" (positive). INVALID_ARGUMENT otherwise.
absl::StatusOr<int64_t> ParseByteCount(std::string text);

}  // namespace distarray::daemon

#endif  // DISTARRAY_SERVER_DAEMON_FLAGS_H_
