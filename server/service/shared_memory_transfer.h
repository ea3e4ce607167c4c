// UploadFromSharedMemory and DownloadToSharedMemory: the streaming transfers' engine entry points
// (BeginUpload, Describe and Download, with the call's context, so tenant and session rules are
// the same), fed from or into a client's mapped shared-memory segment instead of gRPC messages.
#ifndef DISTARRAY_SERVER_SERVICE_SHARED_MEMORY_TRANSFER_H_
#define DISTARRAY_SERVER_SERVICE_SHARED_MEMORY_TRANSFER_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "distarray/v1/distarray.pb.h"
#include "server/engine/engine.h"

namespace distarray {

// The daemon's --shared_memory setting and what GetServerInfo reports for it.
struct SharedMemoryOptions {
  bool enabled = true;
  // SharedMemoryHostId() when enabled and /dev/shm is readable; empty otherwise (the RPCs then
  // answer FAILED_PRECONDITION and clients stream).
  std::string host_id;
};

// Options for `enabled`, with the host id read once.
SharedMemoryOptions MakeSharedMemoryOptions(bool enabled);

// FAILED_PRECONDITION, naming the flag, when shared-memory transfers are off.
absl::Status CheckSharedMemoryEnabled(const SharedMemoryOptions& options);

// Creates or overwrites an array from `request.source`: exactly the bytes the header's region
// holds (INVALID_ARGUMENT naming source.bytes otherwise), laid out as UploadArray's stream.
absl::StatusOr<ArrayPtr> UploadFromSharedMemory(Engine& engine,
                                                const v1::UploadFromSharedMemoryRequest& request,
                                                const CallContext& call);

// Writes the region's logical values to `request.destination`, whose length must be exactly the
// region's bytes (INVALID_ARGUMENT naming destination.bytes otherwise).
absl::StatusOr<v1::DownloadToSharedMemoryResponse> DownloadToSharedMemory(
    Engine& engine, const v1::DownloadToSharedMemoryRequest& request, const CallContext& call);

}  // namespace distarray

#endif  // DISTARRAY_SERVER_SERVICE_SHARED_MEMORY_TRANSFER_H_
