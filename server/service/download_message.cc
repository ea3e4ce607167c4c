#include "server/service/download_message.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <grpc/slice.h>
#include <grpcpp/support/slice.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace distarray {

grpc::ByteBuffer SerializeDownloadMessage(const v1::DownloadArrayResponse& head,
                                          absl::string_view data) {
  using google::protobuf::internal::WireFormatLite;
  // Callers pass at most one message's worth (EngineOptions::max_download_piece_bytes, under
  // 1 GiB) and leave the head's data field empty; anything else is a bug here, not bad input.
  if (data.size() > std::numeric_limits<int32_t>::max() || !head.data().empty()) std::abort();
  using google::protobuf::io::CodedOutputStream;
  // Protobuf writes fields in field-number order, so the data field (the last) follows the rest
  // of `head`, and proto3 leaves an empty bytes field out.
  const size_t head_bytes = head.ByteSizeLong();
  const uint32_t tag = WireFormatLite::MakeTag(v1::DownloadArrayResponse::kDataFieldNumber,
                                               WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
  const size_t field_bytes =
      data.empty()
          ? 0
          : CodedOutputStream::VarintSize32(tag) +
                CodedOutputStream::VarintSize32(static_cast<uint32_t>(data.size())) + data.size();
  grpc_slice slice = grpc_slice_malloc(head_bytes + field_bytes);
  uint8_t* out = GRPC_SLICE_START_PTR(slice);
  out = head.SerializeWithCachedSizesToArray(out);
  if (!data.empty()) {
    out = CodedOutputStream::WriteVarint32ToArray(tag, out);
    out = CodedOutputStream::WriteVarint32ToArray(static_cast<uint32_t>(data.size()), out);
    std::memcpy(out, data.data(), data.size());
  }
  grpc::Slice owned(slice, grpc::Slice::STEAL_REF);
  return grpc::ByteBuffer(&owned, 1);
}

}  // namespace distarray
