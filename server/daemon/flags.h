// The daemon's command-line flags, read once into a validated DaemonOptions. Every other part of
// the daemon takes its settings from DaemonOptions, never from the flags themselves.
#ifndef DISTARRAY_SERVER_DAEMON_FLAGS_H_
#define DISTARRAY_SERVER_DAEMON_FLAGS_H_

#include <cstdint>
#include <string>

#include <spdlog/common.h>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/backend/backend_factory.h"
#include "server/engine/engine.h"

namespace distarray::daemon {

struct DaemonOptions {
  BackendOptions backend;
  EngineOptions engine;
  std::string listen;          // the API's host:port
  std::string metrics_listen;  // empty: no /metrics
  std::string port_file;       // empty: the bound API port is not written anywhere
  spdlog::level::level_enum log_level = spdlog::level::info;
  absl::Duration drain = absl::Seconds(10);  // how long in-flight calls may finish on SIGTERM
  int max_concurrent_calls = 128;
};

// Reads the (already parsed) flags. INVALID_ARGUMENT naming the offending flag when a value is
// out of range or malformed.
absl::StatusOr<DaemonOptions> DaemonOptionsFromFlags();

// Parses "123", "64MiB", "1GiB", "512KiB" (positive). INVALID_ARGUMENT otherwise.
absl::StatusOr<int64_t> ParseByteCount(std::string text);

}  // namespace distarray::daemon

#endif  // DISTARRAY_SERVER_DAEMON_FLAGS_H_
