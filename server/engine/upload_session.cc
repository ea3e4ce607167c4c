#include "server/engine/upload_session.h"
#include "absl/strings/string_view.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/sizes.h"
#include "common/status_macros.h"
#include "server/engine/engine.h"
#include "server/engine/layout.h"
#include "server/kernels/host_kernels.h"

namespace distarray {
namespace {

constexpr int64_t kSlabTargetBytes = 8_MiB;

int64_t RowBytes(const Box& region, int64_t element_size) {
  int64_t bytes = element_size;
  for (size_t d = 1; d < region.size(); ++d) bytes *= region[d].count;
  return bytes;
}

// Copies the `box` elements of a dense host array of `shape` into a dense host vector.
std::string GatherOnHost(DType dtype, const char* data, const Shape& shape, const Box& box) {
  std::string out(NumElements(box) * DTypeSize(dtype), '\0');
  const StridedBox src = MakeStridedBox(shape, box);
  const StridedBox dst = MakeStridedBox(BoxShape(box), FullBox(BoxShape(box)));
  DispatchDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    CopyBoxOnHost(reinterpret_cast<const T*>(data), src, reinterpret_cast<T*>(out.data()), dst,
                  Combine::kAssign);
  });
  return out;
}

}  // namespace

UploadSession::UploadSession(Engine& engine, Array array, bool is_new, Box region)
    : engine_(engine),
      array_(std::move(array)),
      is_new_(is_new),
      region_(std::move(region)),
      element_size_(DTypeSize(array_.dtype)),
      row_bytes_(RowBytes(region_, element_size_)),
      rows_per_slab_(std::max<int64_t>(1, kSlabTargetBytes / row_bytes_)),
      expected_bytes_(NumElements(region_) * element_size_) {}

absl::Status UploadSession::Append(absl::string_view bytes) {
  if (received_bytes_ + static_cast<int64_t>(bytes.size()) > expected_bytes_) {
    return absl::InvalidArgumentError(absl::StrCat("data: the stream carries more than the ",
                                                   expected_bytes_, " bytes the region holds"));
  }
  received_bytes_ += bytes.size();
  const int64_t total_rows = region_.empty() ? 1 : region_[0].count;
  while (!bytes.empty()) {
    const int64_t rows = std::min(rows_per_slab_, total_rows - next_row_);
    const int64_t want = rows * row_bytes_ - static_cast<int64_t>(slab_.size());
    const size_t take = std::min<size_t>(want, bytes.size());
    slab_.append(bytes.data(), take);
    bytes.remove_prefix(take);
    if (static_cast<int64_t>(slab_.size()) == rows * row_bytes_) RETURN_IF_ERROR(FlushSlab());
  }
  return absl::OkStatus();
}

absl::Status UploadSession::FlushSlab() {
  const int64_t rows = static_cast<int64_t>(slab_.size()) / row_bytes_;
  Box slab = region_;
  if (!slab.empty()) {
    slab[0] = Range{region_[0].start + next_row_ * region_[0].step, region_[0].step, rows};
  }
  const Shape slab_shape = BoxShape(slab);
  Backend& backend = engine_.backend();
  for (const Chunk& chunk : array_.chunks) {
    std::optional<Box> piece = IntersectBoxes(chunk.spec.box, slab);
    if (!piece) continue;
    const int64_t piece_bytes = NumElements(*piece) * element_size_;
    const Box in_slab = ToLocal(slab, *piece);
    const Shape chunk_shape = BoxShape(chunk.spec.box);
    const Box in_chunk = ToLocal(chunk.spec.box, *piece);

    std::string gathered;
    const char* source = nullptr;
    if (auto offset = ContiguousOffset(slab_shape, in_slab)) {
      source = slab_.data() + *offset * element_size_;
    } else {
      gathered = GatherOnHost(array_.dtype, slab_.data(), slab_shape, in_slab);
      source = gathered.data();
    }
    if (auto offset = ContiguousOffset(chunk_shape, in_chunk)) {
      RETURN_IF_ERROR(
          backend.WriteFromHost(chunk.buffer, *offset * element_size_, source, piece_bytes));
    } else {
      // Strided destination: stage densely on the device, then scatter with a copy kernel.
      ASSIGN_OR_RETURN(BufferPtr staging, backend.Allocate(chunk.spec.device, piece_bytes));
      RETURN_IF_ERROR(backend.WriteFromHost(staging, 0, source, piece_bytes));
      const Shape piece_shape = BoxShape(*piece);
      RETURN_IF_ERROR(
          backend.Copy(array_.dtype, {BoxCopy{BufferBox{staging, piece_shape, FullBox(piece_shape)},
                                              BufferBox{chunk.buffer, chunk_shape, in_chunk}}}));
    }
  }
  next_row_ += rows;
  slab_.clear();
  return absl::OkStatus();
}

absl::StatusOr<ArrayPtr> UploadSession::Finish() {
  if (received_bytes_ != expected_bytes_) {
    return absl::InvalidArgumentError(absl::StrCat("data: the stream carried ", received_bytes_,
                                                   " bytes; the region holds ", expected_bytes_));
  }
  if (!is_new_) return engine_.Describe(array_.handle);
  RETURN_IF_ERROR(ApplyOwnershipMask(engine_.backend(), array_.dtype, array_.mode, array_.chunks));
  return engine_.Register(std::move(array_), /*in_place=*/false);
}

}  // namespace distarray
