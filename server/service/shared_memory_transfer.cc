#include "server/service/shared_memory_transfer.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/box.h"
#include "common/checked.h"
#include "common/dtype.h"
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

}  // namespace

SharedMemoryOptions MakeSharedMemoryOptions(bool enabled) {
  SharedMemoryOptions options;
  options.enabled = enabled;
  if (enabled) options.host_id = SharedMemoryHostId();
  return options;
}

absl::Status CheckSharedMemoryEnabled(const SharedMemoryOptions& options) {
  if (!options.enabled) {
    return absl::FailedPreconditionError(
        "shared-memory transfers are off on this daemon (--shared_memory=off); stream with "
        "UploadArray / DownloadArray");
  }
  if (options.host_id.empty()) {
    return absl::FailedPreconditionError(
        "shared-memory transfers are unavailable: the daemon cannot read /dev/shm or the boot "
        "id; stream with UploadArray / DownloadArray");
  }
  return absl::OkStatus();
}

absl::StatusOr<ArrayPtr> UploadFromSharedMemory(Engine& engine,
                                                const v1::UploadFromSharedMemoryRequest& request,
                                                const CallContext& call) {
  if (!request.has_header()) return absl::InvalidArgumentError("header: required");
  if (!request.has_source()) return absl::InvalidArgumentError("source: required");
  RETURN_IF_ERROR(CheckSharedMemoryRange(request.source(), "source"));
  ASSIGN_OR_RETURN(std::unique_ptr<UploadSession> session,
                   engine.BeginUpload(request.header(), call));
  if (session->expected_bytes() != request.source().bytes()) {
    return absl::InvalidArgumentError(
        absl::StrCat("source.bytes: ", request.source().bytes(), ", but the region holds ",
                     session->expected_bytes(), " bytes (its elements times the dtype's size)"));
  }
  RETURN_IF_ERROR(CheckAligned(request.source(), session->element_size(), "source"));
  ASSIGN_OR_RETURN(MappedSegment segment,
                   MappedSegment::Open(request.source(), SegmentAccess::kRead, "source"));
  absl::string_view bytes(segment.data(), static_cast<size_t>(segment.size()));
  while (!bytes.empty()) {
    RETURN_IF_ERROR(call.CheckAlive());
    const size_t n = std::min<size_t>(bytes.size(), kUploadPieceBytes);
    RETURN_IF_ERROR(session->Append(bytes.substr(0, n)));
    bytes.remove_prefix(n);
  }
  RETURN_IF_ERROR(call.CheckAlive());
  return session->Finish();
}

absl::StatusOr<v1::DownloadToSharedMemoryResponse> DownloadToSharedMemory(
    Engine& engine, const v1::DownloadToSharedMemoryRequest& request, const CallContext& call) {
  if (!request.has_destination()) return absl::InvalidArgumentError("destination: required");
  RETURN_IF_ERROR(CheckSharedMemoryRange(request.destination(), "destination"));
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
  ASSIGN_OR_RETURN(
      MappedSegment segment,
      MappedSegment::Open(request.destination(), SegmentAccess::kReadWrite, "destination"));
  v1::DownloadArrayRequest download;
  download.set_handle(request.handle());
  *download.mutable_region() = request.region();
  // Straight into the mapping: the device reads land in the segment, slab by slab.
  RETURN_IF_ERROR(engine.DownloadInto(download, segment.data(), segment.size(), call));
  RETURN_IF_ERROR(call.CheckAlive());
  const int64_t written = segment.size();
  v1::DownloadToSharedMemoryResponse response;
  *response.mutable_shape() = ToProto(shape);
  response.set_dtype(ToProto(array->dtype));
  response.set_bytes(written);
  return response;
}

}  // namespace distarray
