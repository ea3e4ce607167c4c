// How the SDK's channels connect and retry.
//
// Retries: the daemon answers UNAVAILABLE while it drains (and a restarting daemon refuses
// connections), which docs/api.md calls retryable. gRPC retries a call by its service config; the
// SDK's lists only the calls that change nothing on the daemon, so running one twice is harmless
// (a call that was cut off part-way may have done its work once already).
//
// Connecting: a connection that is refused (nothing listens there) fails at once instead of
// waiting out the whole connect timeout, and the error says which of the two happened.
#ifndef DISTARRAY_CLIENT_CHANNEL_H_
#define DISTARRAY_CLIENT_CHANNEL_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <string>

#include "absl/status/status.h"

namespace distarray::internal {

// The gRPC service config of the SDK's channels: the retry policy above. The Python SDK
// (distarray/_retry.py) carries the same one.
extern const char kServiceConfigJson[];

// Channel arguments every SDK channel starts from: message sizes, the service config, and a short
// first reconnect backoff (100 ms instead of gRPC's 1 s), so a refused first attempt is tried again
// soon and a restarted daemon is found while retries still wait for it.
grpc::ChannelArguments SdkChannelArguments();

// Waits until `channel` is connected, or fails with UNAVAILABLE: once an attempt has failed
// (refused: nothing listens at `address`; or a TLS handshake failed) and the channel's retries
// have not connected within kFailedRetryWindow, or at `deadline` while an attempt is still under
// way (a host that does not answer), each with its own message. The window rides out the odd
// failed attempt a loaded machine has been seen to make.
inline constexpr std::chrono::milliseconds kFailedRetryWindow{500};
absl::Status WaitForChannel(grpc::Channel& channel, const std::string& address,
                            std::chrono::system_clock::time_point deadline, int timeout_ms);

}  // namespace distarray::internal

#endif  // DISTARRAY_CLIENT_CHANNEL_H_
