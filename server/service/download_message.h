// DownloadArray's messages, serialized by hand. Filling a DownloadArrayResponse copies the bytes
// into its string and gRPC's serialization copies them again; writing the wire form directly
// copies them once, from the engine's staging memory into the slice gRPC sends. The result is
// byte for byte what protobuf would write for the same message (download_wire_test.cc checks).
#ifndef DISTARRAY_SERVER_SERVICE_DOWNLOAD_MESSAGE_H_
#define DISTARRAY_SERVER_SERVICE_DOWNLOAD_MESSAGE_H_

#include <grpcpp/support/byte_buffer.h>

#include "absl/strings/string_view.h"
#include "distarray/v1/distarray.pb.h"

namespace distarray {

// `head` (whose data field is empty) serialized with `data` as its data field.
grpc::ByteBuffer SerializeDownloadMessage(const v1::DownloadArrayResponse& head,
                                          absl::string_view data);

}  // namespace distarray

#endif  // DISTARRAY_SERVER_SERVICE_DOWNLOAD_MESSAGE_H_
