// Engine::Download: reads a region slab by slab (runs of rows of its first axis), combining the
// copies of each element by the array's mode on the host, and overlaps the device reads of the
// next slab with emitting the current one.
#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/sizes.h"
#include "common/status_macros.h"
#include "server/engine/engine.h"
#include "server/engine/reshard_planner.h"
#include "server/kernels/host_kernels.h"

namespace distarray {
namespace {

constexpr int64_t kDefaultMessageBytes = 1_MiB;
constexpr int64_t kMaxMessageBytes = 64_MiB;
constexpr int64_t kSlabTargetBytes = 16_MiB;

// One piece of a slab being read from one chunk.
struct PieceRead {
  std::unique_ptr<PendingRead> read;
  BufferPtr staging;  // keeps a device staging buffer alive until the read is done
  // The piece's elements, dense (empty when read straight into the slab). A vector, not a
  // string: the pending read holds its data pointer, which must survive moves (no SSO).
  std::vector<char> dense;
  Box in_slab;
};

struct SlabRead {
  Box box;                   // global coordinates
  std::vector<char> values;  // the slab's logical values, dense (pointer-stable across moves)
  std::vector<PieceRead> pieces;
  Combine combine = Combine::kAssign;
};

// `recycled` is a previous slab's buffer: reusing it spares zeroing and page-faulting fresh
// memory for every slab, which cost more than the copies themselves.
absl::StatusOr<SlabRead> StartSlab(Backend& backend, const Array& array, const Box& slab,
                                   std::vector<char> recycled) {
  const int64_t element_size = DTypeSize(array.dtype);
  SlabRead read;
  read.box = slab;
  read.values = std::move(recycled);
  read.values.resize(NumElements(slab) * element_size);
  read.combine = CombineFor(array.mode);

  // REPLICA copies are equal, so each element is read once; op modes need every copy.
  std::vector<SourceSelection::Piece> pieces;
  bool covered = false;
  const IndexMap map = array.index_map();
  if (array.mode == Mode::kReplica) {
    SourceSelection selection = SelectSources(map, slab, /*preferred_device=*/-1);
    pieces = std::move(selection.pieces);
    covered = selection.covers_target;
  } else {
    for (size_t i = 0; i < map.size(); ++i) {
      if (auto piece = IntersectBoxes(map[i].box, slab)) {
        pieces.push_back({static_cast<int>(i), *piece});
      }
    }
    covered = pieces.size() == 1 && NumElements(pieces[0].global) == NumElements(slab);
  }
  if (!covered) {
    DispatchDType(array.dtype, [&](auto tag) {
      using T = decltype(tag);
      const Shape shape = BoxShape(slab);
      FillBoxOnHost(reinterpret_cast<T*>(read.values.data()), MakeStridedBox(shape, FullBox(shape)),
                    ModeIdentity<T>(array.mode));
    });
  }

  const Shape slab_shape = BoxShape(slab);
  for (const SourceSelection::Piece& piece : pieces) {
    const Chunk& chunk = array.chunks[piece.chunk];
    const Shape chunk_shape = BoxShape(chunk.spec.box);
    const Box in_chunk = ToLocal(chunk.spec.box, piece.global);
    const int64_t bytes = NumElements(piece.global) * element_size;
    PieceRead pr;
    pr.in_slab = ToLocal(slab, piece.global);
    // The one piece that is the whole slab lands in place; others land in a dense piece buffer.
    const bool in_place = covered && pieces.size() == 1;
    char* target = read.values.data();
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
    read.pieces.push_back(std::move(pr));
  }
  return read;
}

absl::Status FinishSlab(DType dtype, SlabRead& read) {
  const Shape slab_shape = BoxShape(read.box);
  for (PieceRead& piece : read.pieces) {
    RETURN_IF_ERROR(piece.read->Wait());
    if (piece.dense.empty()) continue;
    const Shape piece_shape = BoxShape(piece.in_slab);
    DispatchDType(dtype, [&](auto tag) {
      using T = decltype(tag);
      CopyBoxOnHost(reinterpret_cast<const T*>(piece.dense.data()),
                    MakeStridedBox(piece_shape, FullBox(piece_shape)),
                    reinterpret_cast<T*>(read.values.data()),
                    MakeStridedBox(slab_shape, piece.in_slab), read.combine);
    });
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Engine::Download(const v1::DownloadArrayRequest& request, const EmitFn& emit) {
  ASSIGN_OR_RETURN(ArrayPtr array, registry_.Find(request.handle(), "handle"));
  ASSIGN_OR_RETURN(Box region, NormalizeRegion(request.region(), array->shape, "region"));
  int64_t message_bytes = request.max_message_bytes();
  if (message_bytes < 0 || message_bytes > kMaxMessageBytes) {
    return absl::InvalidArgumentError(absl::StrCat("max_message_bytes: must be in [0, ",
                                                   kMaxMessageBytes, "], got ", message_bytes));
  }
  if (message_bytes == 0) message_bytes = kDefaultMessageBytes;

  const Shape region_shape = BoxShape(region);
  const int64_t element_size = DTypeSize(array->dtype);
  const int64_t total_rows = region.empty() ? 1 : region[0].count;
  const int64_t row_bytes = NumElements(region) * element_size / total_rows;
  const int64_t rows_per_slab = std::max<int64_t>(1, kSlabTargetBytes / row_bytes);
  auto slab_at = [&](int64_t row) {
    Box slab = region;
    if (!slab.empty()) {
      slab[0] = Range{region[0].start + row * region[0].step, region[0].step,
                      std::min(rows_per_slab, total_rows - row)};
    }
    return slab;
  };

  std::vector<char> spare;
  ASSIGN_OR_RETURN(SlabRead current, StartSlab(*backend_, *array, slab_at(0), {}));
  for (int64_t row = 0; row < total_rows;) {
    const int64_t next_row = row + rows_per_slab;
    std::optional<SlabRead> next;
    if (next_row < total_rows) {
      ASSIGN_OR_RETURN(next, StartSlab(*backend_, *array, slab_at(next_row), std::move(spare)));
    }
    RETURN_IF_ERROR(FinishSlab(array->dtype, current));
    absl::string_view values(current.values.data(), current.values.size());
    while (!values.empty()) {
      const size_t n = std::min<size_t>(message_bytes, values.size());
      if (!emit(region_shape, array->dtype, values.substr(0, n))) {
        return absl::CancelledError("the client stopped reading");
      }
      values.remove_prefix(n);
    }
    row = next_row;
    if (next) {
      spare = std::move(current.values);
      current = std::move(*next);
    }
  }
  return absl::OkStatus();
}

}  // namespace distarray
