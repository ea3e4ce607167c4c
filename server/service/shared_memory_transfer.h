// UploadFromSharedMemory and DownloadToSharedMemory: the streaming transfers' engine entry points
// (BeginUpload, Describe and Download, with the call's context, so tenant and session rules are
// the same), fed from or into a segment the daemon made for the calling session
// (shared_memory_table.h) instead of gRPC messages.
#ifndef DISTARRAY_SERVER_SERVICE_SHARED_MEMORY_TRANSFER_H_
#define DISTARRAY_SERVER_SERVICE_SHARED_MEMORY_TRANSFER_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "distarray/v1/distarray.pb.h"
#include "server/engine/engine.h"
#include "server/service/shared_memory_table.h"

namespace distarray {

// The daemon's --shared_memory setting and what GetServerInfo reports for it.
struct SharedMemoryOptions {
  bool enabled = true;
  // Why shared memory is off, for the refusal's message (the flag's setting).
  std::string off_reason = "--shared_memory=off";
  // ThisHostId() (common/host_id.h) when enabled and /dev/shm is readable; empty otherwise (the
  // RPCs then answer FAILED_PRECONDITION and clients stream).
  std::string host_id;
  SharedMemoryLimits limits;
};

// Options for `enabled`, with the host id read once.
SharedMemoryOptions MakeSharedMemoryOptions(bool enabled, SharedMemoryLimits limits = {},
                                            std::string off_reason = "--shared_memory=off");

// FAILED_PRECONDITION, naming the flag, when shared-memory transfers are off.
absl::Status CheckSharedMemoryEnabled(const SharedMemoryOptions& options);

// Creates or overwrites an array from `request.source`, a segment of the call's session in
// `segments`: exactly the bytes the header's region holds (INVALID_ARGUMENT naming source.bytes
// otherwise), laid out as UploadArray's stream.
absl::StatusOr<ArrayPtr> UploadFromSharedMemory(Engine& engine, const SharedMemoryTable& segments,
                                                const v1::UploadFromSharedMemoryRequest& request,
                                                const CallContext& call);

// Writes the region's logical values to `request.destination`, a segment of the call's session
// in `segments`, whose length must be exactly the region's bytes (INVALID_ARGUMENT naming
// destination.bytes otherwise).
absl::StatusOr<v1::DownloadToSharedMemoryResponse> DownloadToSharedMemory(
    Engine& engine, const SharedMemoryTable& segments,
    const v1::DownloadToSharedMemoryRequest& request, const CallContext& call);

}  // namespace distarray

#endif  // DISTARRAY_SERVER_SERVICE_SHARED_MEMORY_TRANSFER_H_
