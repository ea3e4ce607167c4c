#include "client/raw_download.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/support/proto_buffer_reader.h>
#include <grpcpp/support/sync_stream.h>

#include <algorithm>
#include <cstdint>

namespace distarray::internal {
namespace {

using google::protobuf::internal::WireFormatLite;

constexpr char kDownloadArrayMethod[] = "/distarray.v1.ArrayService/DownloadArray";

}  // namespace

RawDownloadStub::RawDownloadStub(std::shared_ptr<grpc::ChannelInterface> channel)
    : channel_(std::move(channel)),
      method_(kDownloadArrayMethod, grpc::internal::RpcMethod::SERVER_STREAMING, channel_) {}

std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> RawDownloadStub::DownloadArray(
    grpc::ClientContext* context, const v1::DownloadArrayRequest& request) const {
  return std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>>(
      grpc::internal::ClientReaderFactory<grpc::ByteBuffer>::Create(channel_.get(), method_,
                                                                    context, request));
}

absl::Status ForEachDataPiece(grpc::ByteBuffer& message,
                              absl::FunctionRef<absl::Status(absl::string_view)> sink) {
  grpc::ProtoBufferReader reader(&message);
  if (!reader.status().ok()) {
    return absl::DataLossError("download message: " + reader.status().error_message());
  }
  google::protobuf::io::CodedInputStream input(&reader);
  const absl::Status malformed =
      absl::DataLossError("download message: not a well-formed DownloadArrayResponse");
  bool seen_data = false;
  while (const uint32_t tag = input.ReadTag()) {
    constexpr int kDataField = v1::DownloadArrayResponse::kDataFieldNumber;
    if (tag != WireFormatLite::MakeTag(kDataField, WireFormatLite::WIRETYPE_LENGTH_DELIMITED)) {
      if (!WireFormatLite::SkipField(&input, tag)) return malformed;
      continue;
    }
    // Protobuf would keep only the last of two data fields; the daemon never sends two, and
    // handing both on would make a short download look whole.
    if (seen_data) return malformed;
    seen_data = true;
    int length = 0;
    if (!input.ReadVarintSizeAsInt(&length)) return malformed;  // refuses lengths over INT_MAX
    while (length > 0) {
      const void* data = nullptr;
      int size = 0;
      if (!input.GetDirectBufferPointer(&data, &size) || size <= 0) return malformed;
      const int piece = std::min(length, size);
      if (absl::Status s = sink(absl::string_view(static_cast<const char*>(data), piece));
          !s.ok()) {
        return s;
      }
      input.Skip(piece);
      length -= piece;
    }
  }
  // ReadTag returns 0 both at the end and on a malformed tag; only the end consumed everything.
  if (!input.ConsumedEntireMessage()) return malformed;
  return absl::OkStatus();
}

}  // namespace distarray::internal
