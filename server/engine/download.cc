// Engine::Download: reads a region slab by slab (bounded C-order blocks, in the client's order;
// see slab_plan.h), combining the copies of each element by the array's mode on the host, and
// overlaps the device reads of the next slab with emitting the current one.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/sizes.h"
#include "common/status_macros.h"
#include "server/engine/engine.h"
#include "server/kernels/host_kernels.h"
#include "server/ops/chunk_index.h"
#include "server/ops/reshard_planner.h"
#include "server/ops/slab_plan.h"

namespace distarray {
namespace {

constexpr int64_t kDefaultMessageBytes = 1_MiB;
constexpr int64_t kMaxMessageBytes = 64_MiB;

// One piece of a slab being read from one chunk. Member order matters: members are destroyed
// in reverse, so `read` (whose destructor waits for the copy in flight) goes before the
// buffers the copy reads from and writes into.
struct PieceRead {
  // The piece's elements, dense and ascending (empty when read straight into the slab). A
  // vector, not a string: the pending read holds its data pointer, which must survive moves (no
  // SSO).
  std::vector<char> dense;
  BufferPtr staging;  // keeps a device staging buffer alive until the read is done
  Box in_slab;
  std::unique_ptr<PendingRead> read;

  PieceRead() = default;
  PieceRead(PieceRead&&) = default;
  // A move assignment would free `dense` while the old read may still write into it.
  PieceRead& operator=(PieceRead&&) = delete;
};

// A slab being read. `pieces` is declared after `values` so that on every path out (an error
// part-way through StartSlab, a cancelled client) the pending reads wait before the slab's
// buffer is freed.
struct SlabRead {
  Box box;                     // global coordinates, ascending
  std::vector<bool> mirrored;  // axes along which `values` runs downwards (the client's order)
  std::vector<char> values;    // the slab's logical values, dense (pointer-stable across moves)
  char* external = nullptr;    // where the values land instead of `values` (DownloadInto)
  int64_t bytes = 0;
  std::vector<PieceRead> pieces;
  Combine combine = Combine::kAssign;
  // A slab that is one contiguous piece of one chunk is read into the backend's staging and sent
  // from there (page-locked memory on the GPU): no host copy between the device's and the
  // message's. `staged_bytes` is set once it has arrived (FinishSlab).
  std::unique_ptr<StagedRead> staged;
  absl::string_view staged_bytes;

  char* data() { return external != nullptr ? external : values.data(); }
  absl::string_view bytes_read() const {
    return staged ? staged_bytes
                  : absl::string_view(external != nullptr ? external : values.data(),
                                      static_cast<size_t>(bytes));
  }

  SlabRead() = default;
  SlabRead(SlabRead&&) = default;
  SlabRead& operator=(SlabRead&& other) {
    if (this != &other) {
      pieces.clear();  // waits for this slab's reads before `values` is replaced
      box = std::move(other.box);
      mirrored = std::move(other.mirrored);
      values = std::move(other.values);
      external = other.external;
      bytes = other.bytes;
      pieces = std::move(other.pieces);
      combine = other.combine;
      staged = std::move(other.staged);
      staged_bytes = other.staged_bytes;
    }
    return *this;
  }
  ~SlabRead() { pieces.clear(); }
};

// Starts the device reads of the walker's current slab, into `external` (the slab's bytes of the
// caller's destination) or, when that is null, into `recycled`: a previous slab's buffer, whose
// reuse spares zeroing and page-faulting fresh memory for every slab, which cost more than the
// copies themselves.
absl::StatusOr<SlabRead> StartSlab(Backend& backend, const Array& array, const IndexMap& map,
                                   const ChunkIndex& index, const SlabWalker& walker,
                                   std::vector<char> recycled, char* external) {
  const int64_t element_size = DTypeSize(array.dtype);
  const Box& slab = walker.box();
  SlabRead read;
  read.box = slab;
  read.mirrored = walker.mirrored();
  read.bytes = walker.bytes();  // at most max(slab target, one element)
  read.external = external;
  read.values = std::move(recycled);
  read.combine = CombineFor(array.mode);

  // REPLICA copies are equal, so each element is read once; op modes need every copy. The
  // chunks a slab meets are found through the index, so a slab costs what it touches, not a scan
  // of every chunk.
  std::vector<SourceSelection::Piece> pieces;
  bool covered = false;
  PlanBudget budget;
  if (array.mode == Mode::kReplica) {
    ASSIGN_OR_RETURN(SourceSelection selection,
                     SelectSources(map, index, slab, /*preferred_device=*/-1, budget, "region"));
    pieces = std::move(selection.pieces);
    covered = selection.covers_target;
  } else {
    ASSIGN_OR_RETURN(pieces, OverlappingPieces(map, index, slab, budget, "region"));
    covered = pieces.size() == 1 && NumElements(pieces[0].global) == NumElements(slab);
  }
  const Shape slab_shape = BoxShape(slab);
  if (external == nullptr && covered && pieces.size() == 1 && !walker.any_mirrored() &&
      read.bytes <= kMaxStagedReadBytes) {
    const Chunk& chunk = array.chunks[pieces[0].chunk];
    const Shape chunk_shape = BoxShape(chunk.spec.box);
    if (auto offset = ContiguousOffset(chunk_shape, ToLocal(chunk.spec.box, pieces[0].global))) {
      ASSIGN_OR_RETURN(read.staged,
                       backend.ReadToStaging(chunk.buffer, *offset * element_size, read.bytes));
      return read;
    }
  }
  if (external == nullptr) read.values.resize(read.bytes);
  if (!covered) {
    // The whole slab gets the identity, so the order its values are kept in does not matter.
    DispatchStorageDType(array.dtype, [&](auto tag) {
      using T = decltype(tag);
      FillBoxOnHost(reinterpret_cast<T*>(read.data()),
                    MakeStridedBox(slab_shape, FullBox(slab_shape)), ModeIdentity<T>(array.mode));
    });
  }

  read.pieces.reserve(pieces.size());
  for (const SourceSelection::Piece& piece : pieces) {
    const Chunk& chunk = array.chunks[piece.chunk];
    const Shape chunk_shape = BoxShape(chunk.spec.box);
    const Box in_chunk = ToLocal(chunk.spec.box, piece.global);
    const int64_t bytes = NumElements(piece.global) * element_size;  // within the slab's bytes
    // The one piece that is the whole slab, in ascending order, lands in place; others land in
    // a dense piece buffer and are placed (and reordered) on the host when they arrive.
    const bool in_place = covered && pieces.size() == 1 && !walker.any_mirrored();
    read.pieces.emplace_back();
    PieceRead& pr = read.pieces.back();
    pr.in_slab = ToLocal(slab, piece.global);
    char* target = read.data();
    if (!in_place) {
      pr.dense.resize(bytes);
      target = pr.dense.data();
    }
    if (auto offset = ContiguousOffset(chunk_shape, in_chunk)) {
      ASSIGN_OR_RETURN(pr.read,
                       backend.ReadToHost(chunk.buffer, *offset * element_size, bytes, target));
    } else {
      ASSIGN_OR_RETURN(pr.staging, backend.Allocate(chunk.spec.device, bytes));
      const Shape piece_shape = BoxShape(piece.global);
      RETURN_IF_ERROR(backend.Copy(
          array.dtype, {BoxCopy{BufferBox{chunk.buffer, chunk_shape, in_chunk},
                                BufferBox{pr.staging, piece_shape, FullBox(piece_shape)}}}));
      ASSIGN_OR_RETURN(pr.read, backend.ReadToHost(pr.staging, 0, bytes, target));
    }
  }
  return read;
}

absl::Status FinishSlab(DType dtype, SlabRead& read) {
  if (read.staged) {
    ASSIGN_OR_RETURN(read.staged_bytes, read.staged->Wait());
    return absl::OkStatus();
  }
  const Shape slab_shape = BoxShape(read.box);
  for (PieceRead& piece : read.pieces) {
    RETURN_IF_ERROR(piece.read->Wait());
    if (piece.dense.empty()) continue;
    const Shape piece_shape = BoxShape(piece.in_slab);
    DispatchStorageDType(dtype, [&](auto tag) {
      using T = decltype(tag);
      CopyBoxOnHost(reinterpret_cast<const T*>(piece.dense.data()),
                    MakeStridedBox(piece_shape, FullBox(piece_shape)),
                    reinterpret_cast<T*>(read.data()),
                    MakeMirroredStridedBox(slab_shape, piece.in_slab, read.mirrored), read.combine);
    });
  }
  return absl::OkStatus();
}

}  // namespace

// The region of `request`, slab by slab: each slab's values go to `emit` in messages of at most
// the request's size, or, with `destination` set, land in it directly (the region's bytes in the
// client's order, no more than `destination_bytes`).
absl::Status Engine::DownloadSlabs(const v1::DownloadArrayRequest& request, const EmitFn* emit,
                                   char* destination, int64_t destination_bytes,
                                   const CallContext& call) {
  ASSIGN_OR_RETURN(ArrayPtr array, registry_.Find(call.tenant, request.handle(), "handle"));
  return ReadSlabs(array, request, emit, destination, destination_bytes, call);
}

absl::Status Engine::ReadSlabs(const ArrayPtr& array, const v1::DownloadArrayRequest& request,
                               const EmitFn* emit, char* destination, int64_t destination_bytes,
                               const CallContext& call) const {
  ASSIGN_OR_RETURN(RegionSelection region,
                   NormalizeRegionSelection(request.region(), array->shape, "region"));
  int64_t message_bytes = request.max_message_bytes();
  if (message_bytes < 0 || message_bytes > kMaxMessageBytes) {
    return absl::InvalidArgumentError(absl::StrCat("max_message_bytes: must be in [0, ",
                                                   kMaxMessageBytes, "], got ", message_bytes));
  }
  if (message_bytes == 0) message_bytes = kDefaultMessageBytes;
  message_bytes = std::min(message_bytes, options_.max_download_piece_bytes);

  const Shape region_shape = BoxShape(region.box);
  if (NumElements(region.box) == 0) {
    // A zero-size region (a zero-size array, which has no chunks): no slab, no read, one message
    // with the shape and dtype and no bytes.
    if (emit == nullptr) {
      if (destination_bytes == 0) return absl::OkStatus();
      return absl::FailedPreconditionError(
          absl::StrCat("handle: the region holds 0 bytes, the destination ", destination_bytes,
                       " (was the array replaced under its handle during the call?); retry"));
    }
    if (!(*emit)(region_shape, array->dtype, absl::string_view())) {
      return absl::CancelledError("the client stopped reading");
    }
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(SlabWalker walker, SlabWalker::Create(std::move(region), DTypeSize(array->dtype),
                                                         DownloadSlabTargetBytes(), "region"));
  if (emit == nullptr && walker.total_bytes() != destination_bytes) {
    // The service sized the destination from the array it described, so this is an array
    // replaced under its handle since.
    return absl::FailedPreconditionError(absl::StrCat(
        "handle: the region holds ", walker.total_bytes(), " bytes, the destination ",
        destination_bytes, " (was the array replaced under its handle during the call?); retry"));
  }
  const IndexMap map = array->index_map();
  const ChunkIndex index(map);
  int64_t offset = 0;  // of the next slab to start, in `destination`
  auto slab_destination = [&]() -> char* {
    if (destination == nullptr) return nullptr;
    char* at = destination + offset;
    offset += walker.bytes();
    return at;
  };

  // Slabs are read in the client's order; the reads of the next slab overlap emitting this one.
  // Declared before the slabs, so it is freed after them.
  std::vector<char> spare;
  ASSIGN_OR_RETURN(SlabRead current,
                   StartSlab(*backend_, *array, map, index, walker, {}, slab_destination()));
  walker.Next();
  while (true) {
    std::optional<SlabRead> next;
    if (!walker.done()) {
      ASSIGN_OR_RETURN(next, StartSlab(*backend_, *array, map, index, walker, std::move(spare),
                                       slab_destination()));
      walker.Next();
    }
    RETURN_IF_ERROR(FinishSlab(array->dtype, current));
    if (emit != nullptr) {
      absl::string_view values = current.bytes_read();
      while (!values.empty()) {
        const size_t n = std::min<size_t>(message_bytes, values.size());
        if (!(*emit)(region_shape, array->dtype, values.substr(0, n))) {
          // `next` and `current` wait for their reads as they go out of scope.
          return absl::CancelledError("the client stopped reading");
        }
        values.remove_prefix(n);
      }
    } else {
      RETURN_IF_ERROR(call.CheckAlive());
    }
    if (!next) break;
    current.pieces.clear();  // all waited for in FinishSlab
    spare = std::move(current.values);
    current = std::move(*next);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int64_t>> Engine::ReadPositions(const ArrayPtr& array,
                                                           const std::string& field,
                                                           const CallContext& call) const {
  const int64_t n = NumElements(array->shape);
  std::vector<int64_t> positions(static_cast<size_t>(n));
  if (array->dtype == DType::kInt64) {  // read in place: no second copy of the indices
    RETURN_IF_ERROR(ReadSlabs(array, v1::DownloadArrayRequest(), nullptr,
                              reinterpret_cast<char*>(positions.data()), n * 8, call));
    return positions;
  }
  std::vector<char> bytes(static_cast<size_t>(n * DTypeSize(array->dtype)));
  RETURN_IF_ERROR(ReadSlabs(array, v1::DownloadArrayRequest(), nullptr, bytes.data(),
                            static_cast<int64_t>(bytes.size()), call));
  absl::Status status;
  DispatchStorageDType(array->dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const T* values = reinterpret_cast<const T*>(bytes.data());
      for (int64_t k = 0; k < n; ++k) {
        if constexpr (std::is_same_v<T, uint64_t>) {
          // Past int64's range is past every axis.
          if (values[k] > static_cast<uint64_t>(INT64_MAX)) {
            status = absl::OutOfRangeError(absl::StrCat(field, "[", k, "]: index ", values[k],
                                                        " is out of bounds for every axis"));
            return;
          }
        }
        positions[k] = static_cast<int64_t>(values[k]);
      }
    } else {  // the planner (NormalizeKey) refuses other dtypes before reading
      status =
          absl::InternalError(absl::StrCat(field, ": ReadPositions of ", DTypeName(array->dtype)));
    }
  });
  RETURN_IF_ERROR(status);
  return positions;
}

absl::Status Engine::Download(const v1::DownloadArrayRequest& request, const EmitFn& emit,
                              const CallContext& call) {
  return DownloadSlabs(request, &emit, nullptr, 0, call);
}

absl::Status Engine::DownloadInto(const v1::DownloadArrayRequest& request, char* destination,
                                  int64_t destination_bytes, const CallContext& call) {
  return DownloadSlabs(request, nullptr, destination, destination_bytes, call);
}

}  // namespace distarray
