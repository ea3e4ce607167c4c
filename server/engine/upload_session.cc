#include "server/engine/upload_session.h"

#include <algorithm>

#include "absl/strings/string_view.h"

#include "absl/strings/str_cat.h"
#include "common/sizes.h"
#include "common/status_macros.h"
#include "server/engine/engine.h"
#include "server/kernels/host_kernels.h"
#include "server/ops/layout.h"
#include "server/ops/reshard_planner.h"

namespace distarray {
namespace {

RegionSelection Ascending(Box box) {
  RegionSelection selection;
  selection.descending.assign(box.size(), false);
  selection.box = std::move(box);
  return selection;
}

// The `box` elements of a dense host array of `shape` held mirrored along the axes `mirrored`
// (the client's order), gathered into a dense ascending host buffer.
std::string GatherOnHost(DType dtype, const char* data, const Shape& shape, const Box& box,
                         const std::vector<bool>& mirrored) {
  std::string out(NumElements(box) * DTypeSize(dtype), '\0');
  const StridedBox src = MakeMirroredStridedBox(shape, box, mirrored);
  const StridedBox dst = MakeStridedBox(BoxShape(box), FullBox(BoxShape(box)));
  DispatchStorageDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    CopyBoxOnHost(reinterpret_cast<const T*>(data), src, reinterpret_cast<T*>(out.data()), dst,
                  Combine::kAssign);
  });
  return out;
}

}  // namespace

UploadSession::UploadSession(Engine& engine, Array array, Target target, RegionSelection region)
    : engine_(engine),
      array_(std::move(array)),
      target_(target),
      element_size_(DTypeSize(array_.dtype)),
      map_(array_.index_map()),
      index_(map_) {
  auto walker = SlabWalker::Create(std::move(region), element_size_, UploadSlabTargetBytes(),
                                   "header.region");
  if (!walker.ok()) {
    plan_status_ = walker.status();
    return;
  }
  walker_.emplace(*std::move(walker));
  expected_bytes_ = walker_->total_bytes();
}

UploadSession::UploadSession(Engine& engine, Array array, Target target, Box region)
    : UploadSession(engine, std::move(array), target, Ascending(std::move(region))) {}

absl::Status UploadSession::Append(absl::string_view bytes) {
  RETURN_IF_ERROR(plan_status_);
  // received_bytes_ <= expected_bytes_ <= INT64_MAX / 2 and a message is far below that.
  if (static_cast<int64_t>(bytes.size()) > expected_bytes_ - received_bytes_) {
    return absl::InvalidArgumentError(absl::StrCat("data: the stream carries more than the ",
                                                   expected_bytes_, " bytes the region holds"));
  }
  if (array_.dtype == DType::kBool) {
    // A bool element is one byte holding 0 or 1; any other byte is not a bool, and reading one
    // as bool is undefined behaviour in every kernel after it (found by the request fuzzer).
    for (size_t i = 0; i < bytes.size(); ++i) {
      if (static_cast<unsigned char>(bytes[i]) > 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "data: byte ", received_bytes_ + static_cast<int64_t>(i), " is ",
            static_cast<int>(static_cast<unsigned char>(bytes[i])), "; a bool element is 0 or 1"));
      }
    }
  }
  received_bytes_ += bytes.size();
  while (!bytes.empty()) {
    const int64_t slab_bytes = walker_->bytes();
    if (slab_.empty() && static_cast<int64_t>(bytes.size()) >= slab_bytes) {
      // A whole slab is here already (a shared-memory segment, a large message): written from
      // where it lies, without a copy into slab_ first.
      RETURN_IF_ERROR(FlushSlab(bytes.data()));
      bytes.remove_prefix(slab_bytes);
      continue;
    }
    const int64_t want = slab_bytes - static_cast<int64_t>(slab_.size());
    const size_t take = std::min<size_t>(want, bytes.size());
    if (slab_.empty()) slab_.reserve(slab_bytes);
    slab_.append(bytes.data(), take);
    bytes.remove_prefix(take);
    if (static_cast<int64_t>(slab_.size()) == slab_bytes) {
      RETURN_IF_ERROR(FlushSlab(slab_.data()));
      slab_.clear();
    }
  }
  return absl::OkStatus();
}

absl::Status UploadSession::FlushSlab(const char* slab_data) {
  const Box& slab = walker_->box();
  const std::vector<bool>& mirrored = walker_->mirrored();
  const Shape slab_shape = BoxShape(slab);
  Backend& backend = engine_.backend();
  PlanBudget budget;
  ASSIGN_OR_RETURN(std::vector<SourceSelection::Piece> pieces,
                   OverlappingPieces(map_, index_, slab, budget, "header.region"));
  for (const SourceSelection::Piece& overlap : pieces) {
    const Chunk& chunk = array_.chunks[overlap.chunk];
    const Box& piece = overlap.global;
    const int64_t piece_bytes = NumElements(piece) * element_size_;  // within the slab's bytes
    const Box in_slab = ToLocal(slab, piece);
    const Shape chunk_shape = BoxShape(chunk.spec.box);
    const Box in_chunk = ToLocal(chunk.spec.box, piece);

    // WriteFromHost stages the bytes before it returns, so `gathered` may go at scope end.
    std::string gathered;
    const char* source = nullptr;
    std::optional<int64_t> contiguous;
    if (!walker_->any_mirrored()) contiguous = ContiguousOffset(slab_shape, in_slab);
    if (contiguous) {
      source = slab_data + *contiguous * element_size_;
    } else {
      gathered = GatherOnHost(array_.dtype, slab_data, slab_shape, in_slab, mirrored);
      source = gathered.data();
    }
    if (auto offset = ContiguousOffset(chunk_shape, in_chunk)) {
      RETURN_IF_ERROR(
          backend.WriteFromHost(chunk.buffer, *offset * element_size_, source, piece_bytes));
    } else {
      // Strided destination: stage densely on the device, then scatter with a copy kernel.
      ASSIGN_OR_RETURN(BufferPtr staging, backend.Allocate(chunk.spec.device, piece_bytes));
      RETURN_IF_ERROR(backend.WriteFromHost(staging, 0, source, piece_bytes));
      const Shape piece_shape = BoxShape(piece);
      RETURN_IF_ERROR(
          backend.Copy(array_.dtype, {BoxCopy{BufferBox{staging, piece_shape, FullBox(piece_shape)},
                                              BufferBox{chunk.buffer, chunk_shape, in_chunk}}}));
    }
  }
  walker_->Next();
  return absl::OkStatus();
}

absl::StatusOr<ArrayPtr> UploadSession::Finish() {
  RETURN_IF_ERROR(plan_status_);
  if (received_bytes_ != expected_bytes_) {
    return absl::InvalidArgumentError(absl::StrCat("data: the stream carried ", received_bytes_,
                                                   " bytes; the region holds ", expected_bytes_));
  }
  switch (target_) {
    case Target::kInPlace:
      return engine_.registry().Find(array_.tenant, array_.handle, "handle");
    case Target::kCopyOnWrite:
      return engine_.Register(std::move(array_), /*in_place=*/true);
    case Target::kNewArray:
      break;
  }
  RETURN_IF_ERROR(ApplyOwnershipMask(engine_.backend(), array_.dtype, array_.mode, array_.chunks));
  return engine_.Register(std::move(array_), /*in_place=*/false);
}

}  // namespace distarray
