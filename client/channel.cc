#include "client/channel.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"

namespace distarray::internal {

// Idempotent calls only: reads, downloads (retried only before their first message arrives),
// Synchronize, and the session's KeepAlive and EndSession. At most 5 attempts (gRPC's cap),
// 0.1 s to 1 s apart with jitter: about 1.5 s in all.
const char kServiceConfigJson[] = R"json({
  "methodConfig": [{
    "name": [
      {"service": "distarray.v1.ArrayService", "method": "GetServerInfo"},
      {"service": "distarray.v1.ArrayService", "method": "DescribeArray"},
      {"service": "distarray.v1.ArrayService", "method": "ListArrays"},
      {"service": "distarray.v1.ArrayService", "method": "DownloadArray"},
      {"service": "distarray.v1.ArrayService", "method": "DownloadToSharedMemory"},
      {"service": "distarray.v1.ArrayService", "method": "Synchronize"},
      {"service": "distarray.v1.ArrayService", "method": "KeepAlive"},
      {"service": "distarray.v1.ArrayService", "method": "EndSession"}
    ],
    "retryPolicy": {
      "maxAttempts": 5,
      "initialBackoff": "0.1s",
      "maxBackoff": "1s",
      "backoffMultiplier": 2,
      "retryableStatusCodes": ["UNAVAILABLE"]
    }
  }]
})json";

grpc::ChannelArguments SdkChannelArguments() {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  args.SetMaxSendMessageSize(64 << 20);
  args.SetServiceConfigJSON(kServiceConfigJson);
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 1);
  // Not GRPC_ARG_MIN_RECONNECT_BACKOFF_MS: despite its name gRPC takes it as each attempt's
  // connect timeout (20 s by default).
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  return args;
}

absl::Status WaitForChannel(grpc::Channel& channel, const std::string& address,
                            std::chrono::system_clock::time_point deadline, int timeout_ms) {
  using Clock = std::chrono::system_clock;
  std::optional<Clock::time_point> failed_at;  // when an attempt first failed
  grpc_connectivity_state state = channel.GetState(/*try_to_connect=*/true);
  while (state != GRPC_CHANNEL_READY) {
    if (state == GRPC_CHANNEL_SHUTDOWN) {
      return absl::UnavailableError(absl::StrCat("the channel to ", address, " was shut down"));
    }
    if (state == GRPC_CHANNEL_TRANSIENT_FAILURE && !failed_at) failed_at = Clock::now();
    // Once an attempt failed, the channel's next ones (100 ms apart) get kFailedRetryWindow.
    // Depending on gRPC's version the channel stays in TRANSIENT_FAILURE meanwhile or passes
    // through CONNECTING, so the window is timed rather than the attempts counted.
    const Clock::time_point wait_until =
        failed_at ? std::min(deadline, *failed_at + kFailedRetryWindow) : deadline;
    if (!channel.WaitForStateChange(state, wait_until)) {
      if (failed_at && Clock::now() < deadline) {
        return absl::UnavailableError(absl::StrCat(
            "cannot connect to ", address,
            ": the connection failed (refused: is distarrayd running and listening there? or "
            "unreachable, or its TLS handshake failed) and failed again when retried"));
      }
      return absl::UnavailableError(absl::StrCat(
          "no distarrayd answered at ", address, " within ", timeout_ms, " ms",
          failed_at ? " (connection attempts failed)"
                    : " (the connection was still being attempted: a host or port that drops "
                      "packets?)"));
    }
    state = channel.GetState(/*try_to_connect=*/true);
  }
  return absl::OkStatus();
}

}  // namespace distarray::internal
