#include "server/service/shared_memory_transfer.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/box.h"
#include "common/checked.h"
#include "common/dtype.h"
#include "common/host_id.h"
#include "common/index_map.h"
#include "common/proto_convert.h"
#include "common/status_macros.h"
#include "server/engine/upload_session.h"
#include "server/service/shared_memory_segment.h"

namespace distarray {
namespace {

// Uploads hand the mapping to the session in pieces this large, checking between pieces that
// the call is still wanted (a 1 GiB copy should not outlive its cancelled call by seconds).
constexpr int64_t kUploadPieceBytes = int64_t{64} << 20;

// The slabs are read and written as arrays of the element type in place in the mapping, so a
// range must start on an element boundary (a mapping starts on a page, so the offset decides).
absl::Status CheckAligned(const v1::SharedMemoryRange& range, int64_t element_size,
                          absl::string_view field) {
  if (range.offset() % element_size == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, ".offset: ", range.offset(), " is not a multiple of the dtype's size (",
                   element_size, " bytes); a range starts on an element"));
}

// The segment `range` names, of the call's session. The size the client gives must be the
// segment's: it is the caller's own segment, so saying its size tells nothing new.
absl::StatusOr<SharedMemoryTable::SegmentPtr> FindSegment(const SharedMemoryTable& segments,
                                                          const v1::SharedMemoryRange& range,
                                                          const CallContext& call,
                                                          absl::string_view field) {
  ASSIGN_OR_RETURN(SharedMemoryTable::SegmentPtr segment,
                   segments.Find(call, range.name(), absl::StrCat(field, ".name")));
  if (range.segment_bytes() != segment->size()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".segment_bytes: ", range.segment_bytes(),
                                                   ", but the segment holds ", segment->size(),
                                                   " bytes"));
  }
  return segment;
}

}  // namespace

SharedMemoryOptions MakeSharedMemoryOptions(bool enabled, SharedMemoryLimits limits,
                                            std::string off_reason) {
  SharedMemoryOptions options;
  options.enabled = enabled;
  options.off_reason = std::move(off_reason);
  options.limits = limits;
  if (enabled) options.host_id = ThisHostId();
  return options;
}

absl::Status CheckSharedMemoryEnabled(const SharedMemoryOptions& options) {
  if (!options.enabled) {
    return absl::FailedPreconditionError(
        absl::StrCat("shared-memory transfers are off on this daemon (", options.off_reason,
                     "); stream with UploadArray / DownloadArray"));
  }
  if (options.host_id.empty()) {
    return absl::FailedPreconditionError(
        "shared-memory transfers are unavailable: the daemon cannot read /dev/shm or the boot "
        "id; stream with UploadArray / DownloadArray");
  }
  return absl::OkStatus();
}

absl::StatusOr<ArrayPtr> UploadFromSharedMemory(Engine& engine, const SharedMemoryTable& segments,
                                                const v1::UploadFromSharedMemoryRequest& request,
                                                const CallContext& call) {
  if (!request.has_header()) return absl::InvalidArgumentError("header: required");
  if (!request.has_source()) return absl::InvalidArgumentError("source: required");
  RETURN_IF_ERROR(CheckSharedMemoryRange(request.source(), "source"));
  ASSIGN_OR_RETURN(SharedMemoryTable::SegmentPtr segment,
                   FindSegment(segments, request.source(), call, "source"));
  ASSIGN_OR_RETURN(std::unique_ptr<UploadSession> session,
                   engine.BeginUpload(request.header(), call));
  if (session->expected_bytes() != request.source().bytes()) {
    return absl::InvalidArgumentError(
        absl::StrCat("source.bytes: ", request.source().bytes(), ", but the region holds ",
                     session->expected_bytes(), " bytes (its elements times the dtype's size)"));
  }
  RETURN_IF_ERROR(CheckAligned(request.source(), session->element_size(), "source"));
  absl::string_view bytes;
  if (request.source().bytes() > 0) {
    bytes = absl::string_view(segment->data() + request.source().offset(),
                              static_cast<size_t>(request.source().bytes()));
  }
  while (!bytes.empty()) {
    RETURN_IF_ERROR(call.CheckAlive());
    // Right before each piece's copy: a segment shrunk under the copy would be a SIGBUS.
    RETURN_IF_ERROR(segment->CheckIntact("source.name"));
    const size_t n = std::min<size_t>(bytes.size(), kUploadPieceBytes);
    RETURN_IF_ERROR(session->Append(bytes.substr(0, n)));
    bytes.remove_prefix(n);
  }
  RETURN_IF_ERROR(call.CheckAlive());
  return session->Finish();
}

absl::StatusOr<v1::DownloadToSharedMemoryResponse> DownloadToSharedMemory(
    Engine& engine, const SharedMemoryTable& segments,
    const v1::DownloadToSharedMemoryRequest& request, const CallContext& call) {
  if (!request.has_destination()) return absl::InvalidArgumentError("destination: required");
  RETURN_IF_ERROR(CheckSharedMemoryRange(request.destination(), "destination"));
  ASSIGN_OR_RETURN(SharedMemoryTable::SegmentPtr segment,
                   FindSegment(segments, request.destination(), call, "destination"));
  // The region's size is known before any device read, so a wrong length fails early.
  ASSIGN_OR_RETURN(ArrayPtr array, engine.Describe(request.handle(), call));
  ASSIGN_OR_RETURN(Box box, NormalizeRegion(request.region(), array->shape, "region"));
  const Shape shape = BoxShape(box);
  // A live array's bytes fit in int64, and a region holds no more than its array.
  const int64_t region_bytes = NumElements(shape) * DTypeSize(array->dtype);
  if (request.destination().bytes() != region_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "destination.bytes: ", request.destination().bytes(), ", but the region holds ",
        region_bytes, " bytes (its elements times the dtype's size)"));
  }
  RETURN_IF_ERROR(CheckAligned(request.destination(), DTypeSize(array->dtype), "destination"));
  v1::DownloadArrayRequest download;
  download.set_handle(request.handle());
  *download.mutable_region() = request.region();
  const int64_t written = request.destination().bytes();
  char* destination = written > 0 ? segment->data() + request.destination().offset() : nullptr;
  // Right before the copy: a segment shrunk under the copy would be a SIGBUS.
  RETURN_IF_ERROR(segment->CheckIntact("destination.name"));
  // Straight into the mapping: the device reads land in the segment, slab by slab.
  RETURN_IF_ERROR(engine.DownloadInto(download, destination, written, call));
  RETURN_IF_ERROR(call.CheckAlive());
  v1::DownloadToSharedMemoryResponse response;
  *response.mutable_shape() = ToProto(shape);
  response.set_dtype(ToProto(array->dtype));
  response.set_bytes(written);
  return response;
}

}  // namespace distarray
