// DownloadArray read as raw messages. A parsed DownloadArrayResponse copies its bytes out of
// gRPC's receive buffers into a string, which the SDK then copies to where the caller wants them;
// reading the messages unparsed lets the bytes go from gRPC's buffers to their destination in one
// copy, as many as a client that only parses and drops them pays (docs/performance.md).
#ifndef DISTARRAY_CLIENT_RAW_DOWNLOAD_H_
#define DISTARRAY_CLIENT_RAW_DOWNLOAD_H_

#include <grpcpp/grpcpp.h>

#include <memory>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "distarray/v1/distarray.pb.h"

namespace distarray::internal {

// The DownloadArray method of one channel, its responses left serialized.
class RawDownloadStub {
 public:
  explicit RawDownloadStub(std::shared_ptr<grpc::ChannelInterface> channel);

  std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> DownloadArray(
      grpc::ClientContext* context, const v1::DownloadArrayRequest& request) const;

 private:
  std::shared_ptr<grpc::ChannelInterface> channel_;
  // How the generated stub names the call; ClientReaderFactory is what generated code uses to
  // open a server stream, here with grpc::ByteBuffer as the message type.
  grpc::internal::RpcMethod method_;
};

// Hands the bytes of the `data` field of one serialized DownloadArrayResponse to `sink`, in order,
// as views into `message`'s slices (several when the field spans slices); other fields are
// skipped. DATA_LOSS when the message is not a well-formed DownloadArrayResponse; the first error
// `sink` returns stops the walk and is returned.
absl::Status ForEachDataPiece(grpc::ByteBuffer& message,
                              absl::FunctionRef<absl::Status(absl::string_view)> sink);

}  // namespace distarray::internal

#endif  // DISTARRAY_CLIENT_RAW_DOWNLOAD_H_
