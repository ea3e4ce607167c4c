#include "server/ops/layout.h"

#include <algorithm>
#include <optional>
#include <type_traits>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "common/mode.h"
#include "common/status_macros.h"
#include "server/ops/reshard_planner.h"

namespace distarray {
namespace {

BufferBox Whole(const Chunk& chunk) {
  const Shape shape = BoxShape(chunk.spec.box);
  return BufferBox{chunk.buffer, shape, FullBox(shape)};
}

BufferBox At(const Chunk& chunk, const Box& local) {
  return BufferBox{chunk.buffer, BoxShape(chunk.spec.box), local};
}

std::vector<BoxCopy> ToBoxCopies(const std::vector<PlannedCopy>& planned,
                                 const std::vector<Chunk>& from, const std::vector<Chunk>& to) {
  std::vector<BoxCopy> copies;
  copies.reserve(planned.size());
  for (const PlannedCopy& p : planned) {
    copies.push_back(BoxCopy{At(from[p.src], p.src_local), At(to[p.dst], p.dst_local), p.combine});
  }
  return copies;
}

// backend.Copy, counting the bytes written into each device for the reshard metrics.
absl::Status CopyAndCount(DeviceOps& ops, DType dtype, const std::vector<BoxCopy>& copies) {
  RETURN_IF_ERROR(ops.Copy(dtype, copies));
  for (const BoxCopy& copy : copies) {
    ops.CountReshardBytes(copy.dst.buffer->device(), NumElements(copy.dst.box) * DTypeSize(dtype));
  }
  return absl::OkStatus();
}

Scalar IdentityScalar(DType dtype, Mode mode) {
  return DispatchStorageDType(dtype, [&](auto tag) -> Scalar {
    using T = decltype(tag);
    const T identity = ModeIdentity<T>(mode);
    if constexpr (kIsComplex<T>)
      return Scalar::Float(identity.re);  // 0 or 1: identities are real
    else if constexpr (kIsFloatStorage<T>)
      return Scalar::Float(static_cast<double>(identity));
    else if constexpr (std::is_same_v<T, bool>)
      return Scalar::Bool(identity);
    else if constexpr (std::is_signed_v<T>)
      return Scalar::Int(identity);
    else
      return Scalar::UInt(identity);
  });
}

absl::StatusOr<std::vector<Chunk>> GatherToReplica(DeviceOps& ops, const Array& array,
                                                   const StopCheck& stop) {
  const IndexMap map = array.index_map();
  // Planned before allocating: a plan refused for its size leaves nothing allocated.
  ASSIGN_OR_RETURN(const std::vector<PlannedCopy> planned,
                   PlanGatherToReplica(map, array.mode, kDefaultPlanWorkLimit, stop));
  ASSIGN_OR_RETURN(std::vector<Chunk> out, AllocateChunks(ops, array.dtype, map));
  RETURN_IF_ERROR(CopyAndCount(ops, array.dtype, ToBoxCopies(planned, array.chunks, out)));
  return out;
}

// For each chunk of `map`, the index of a chunk of `from` on the same device whose buffer starts
// with the chunk's values (its box holds the chunk's box, which is contiguous at offset 0 of it),
// or -1. A buffer holding a prefix is enough because chunks address their buffers from the start.
absl::StatusOr<std::vector<int64_t>> LeadingPartSources(const std::vector<Chunk>& from,
                                                        const IndexMap& map,
                                                        const StopCheck& stop) {
  std::vector<int64_t> source(map.size(), -1);
  IndexMap from_map;
  for (const Chunk& c : from) from_map.push_back(c.spec);
  const ChunkIndex index(from_map);
  PlanBudget budget(kDefaultPlanWorkLimit, stop);
  for (size_t j = 0; j < map.size(); ++j) {
    const ChunkSpec& target = map[j];
    if (NumElements(target.box) == 0) continue;
    index.ForEachContaining(target.box, static_cast<int64_t>(from.size()), budget, [&](int64_t i) {
      const ChunkSpec& s = from_map[i];
      if (s.device != target.device || !BoxContains(s.box, target.box)) {
        return true;
      }
      const std::optional<int64_t> offset =
          ContiguousOffset(BoxShape(s.box), ToLocal(s.box, target.box));
      if (offset != 0) return true;
      source[j] = i;
      return false;
    });
    if (budget.exhausted()) return budget.ExhaustedError("sharing source buffers");
  }
  return source;
}

// `uncovered` is the logical value of elements no source chunk holds: zero for a REPLICA source,
// the identity of the source's mode for an op-mode source gathered to REPLICA. With `share`, a
// target chunk that is the leading part of a source chunk on its device takes that buffer and is
// left out of the plan.
absl::StatusOr<std::vector<Chunk>> ReshardReplica(DeviceOps& ops, DType dtype,
                                                  const std::vector<Chunk>& from,
                                                  const IndexMap& map, const Scalar& uncovered,
                                                  const StopCheck& stop, bool share) {
  std::vector<Chunk> out(map.size());
  IndexMap copied_map;            // the targets that get buffers of their own
  std::vector<size_t> copied_at;  // their positions in `map`
  if (share) {
    ASSIGN_OR_RETURN(const std::vector<int64_t> sources, LeadingPartSources(from, map, stop));
    for (size_t j = 0; j < map.size(); ++j) {
      if (sources[j] >= 0) {
        from[sources[j]].buffer->MarkShared();
        out[j] = Chunk{map[j], from[sources[j]].buffer};
      } else {
        copied_map.push_back(map[j]);
        copied_at.push_back(j);
      }
    }
    if (copied_map.empty()) return out;
  }
  const IndexMap& planned_map = share ? copied_map : map;
  IndexMap from_map;
  for (const Chunk& c : from) from_map.push_back(c.spec);
  ASSIGN_OR_RETURN(const ReplicaReshardPlan plan,
                   PlanReplicaReshard(from_map, planned_map, kDefaultPlanWorkLimit, stop));
  ASSIGN_OR_RETURN(std::vector<Chunk> fresh, AllocateChunks(ops, dtype, planned_map));
  for (size_t j = 0; j < fresh.size(); ++j) {
    if (plan.fill_uncovered[j])
      RETURN_IF_ERROR(ops.FillConstant(dtype, Whole(fresh[j]), uncovered));
  }
  RETURN_IF_ERROR(CopyAndCount(ops, dtype, ToBoxCopies(plan.copies, from, fresh)));
  if (!share) return fresh;
  for (size_t k = 0; k < fresh.size(); ++k) out[copied_at[k]] = std::move(fresh[k]);
  return out;
}

absl::StatusOr<std::vector<Chunk>> CopyChunks(DeviceOps& ops, DType dtype,
                                              const std::vector<Chunk>& from) {
  IndexMap map;
  for (const Chunk& c : from) map.push_back(c.spec);
  ASSIGN_OR_RETURN(std::vector<Chunk> out, AllocateChunks(ops, dtype, map));
  std::vector<BoxCopy> copies;
  for (size_t j = 0; j < out.size(); ++j) copies.push_back(BoxCopy{Whole(from[j]), Whole(out[j])});
  RETURN_IF_ERROR(CopyAndCount(ops, dtype, copies));
  return out;
}

}  // namespace

namespace {

// By backend: in-process tests run several engines, each on its own backend.
absl::Mutex reclaimers_mu(absl::kConstInit);
absl::flat_hash_map<const DeviceOps*, std::function<bool()>>& Reclaimers()
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(reclaimers_mu) {
  static auto* reclaimers = new absl::flat_hash_map<const DeviceOps*, std::function<bool()>>();
  return *reclaimers;
}

// Runs the reclaimer outside the lock: it frees memory, which may take a while.
bool ReclaimMemory(const DeviceOps& ops) {
  std::function<bool()> reclaimer;
  {
    absl::MutexLock lock(&reclaimers_mu);
    auto it = Reclaimers().find(&ops);
    if (it == Reclaimers().end()) return false;
    reclaimer = it->second;
  }
  return reclaimer();
}

}  // namespace

void SetMemoryReclaimer(const DeviceOps* ops, std::function<bool()> reclaimer) {
  absl::MutexLock lock(&reclaimers_mu);
  if (reclaimer == nullptr) {
    Reclaimers().erase(ops);
  } else {
    Reclaimers()[ops] = std::move(reclaimer);
  }
}

absl::Status FillChunks(DeviceOps& ops, DType dtype, const std::vector<Chunk>& chunks,
                        const Scalar& value) {
  for (const Chunk& chunk : chunks) RETURN_IF_ERROR(ops.FillConstant(dtype, Whole(chunk), value));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Chunk>> AllocateChunks(DeviceOps& ops, DType dtype,
                                                  const IndexMap& map) {
  std::vector<Chunk> chunks;
  chunks.reserve(map.size());
  bool reclaimed = false;
  for (const ChunkSpec& spec : map) {
    const int64_t bytes = NumElements(spec.box) * DTypeSize(dtype);
    absl::StatusOr<BufferPtr> buffer = ops.Allocate(spec.device, bytes);
    if (absl::IsResourceExhausted(buffer.status()) && !reclaimed) {
      // Cached graphs hold device memory nobody is using now: give it up before refusing. Once
      // per call, so a request too large for the device is not retried chunk by chunk.
      reclaimed = true;
      if (ReclaimMemory(ops)) buffer = ops.Allocate(spec.device, bytes);
    }
    RETURN_IF_ERROR(buffer.status());
    chunks.push_back(Chunk{spec, *std::move(buffer)});
  }
  return chunks;
}

absl::Status ApplyOwnershipMask(DeviceOps& ops, DType dtype, Mode mode,
                                const std::vector<Chunk>& chunks, const StopCheck& stop) {
  if (mode == Mode::kReplica) return absl::OkStatus();
  IndexMap map;
  for (const Chunk& c : chunks) map.push_back(c.spec);
  const Scalar identity = IdentityScalar(dtype, mode);
  ASSIGN_OR_RETURN(const std::vector<PlannedFill> fills,
                   PlanOwnershipMask(map, kDefaultPlanWorkLimit, stop));
  for (const PlannedFill& fill : fills) {
    RETURN_IF_ERROR(ops.FillConstant(dtype, At(chunks[fill.chunk], fill.local), identity));
  }
  return absl::OkStatus();
}

std::string UncoveredValueText(DType dtype, Mode mode) {
  return DispatchStorageDType(dtype, [&](auto tag) -> std::string {
    using T = decltype(tag);
    const T identity = ModeIdentity<T>(mode);
    if constexpr (kIsComplex<T>) {
      return absl::StrCat("(", static_cast<double>(identity.re), ", ",
                          static_cast<double>(identity.im), ")");
    } else if constexpr (kIsFloatStorage<T>) {
      return absl::StrCat(static_cast<double>(identity));
    } else if constexpr (std::is_same_v<T, bool>) {
      return identity ? "True" : "False";
    } else {
      return absl::StrCat(identity);
    }
  });
}

absl::Status CheckUncoveredValuesKept(const Shape& shape, DType dtype, const IndexMap& from,
                                      Mode from_mode, const IndexMap& to, Mode to_mode,
                                      absl::string_view field, const StopCheck& stop) {
  // The common case, a layout change in one mode, costs nothing here (programs run this per
  // statement).
  if (from_mode == to_mode) return absl::OkStatus();
  const std::string before = UncoveredValueText(dtype, from_mode);
  const std::string after = UncoveredValueText(dtype, to_mode);
  if (before == after) return absl::OkStatus();
  ASSIGN_OR_RETURN(const std::optional<std::vector<int64_t>> element,
                   FindElementCoveredByNeither(shape, from, to, kDefaultPlanWorkLimit, stop));
  if (!element) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      field, ": element [", absl::StrJoin(*element, ", "),
      "] is covered by no chunk of the array or of the result; it reads ", before, " in ",
      ModeName(from_mode), " mode and would read ", after, " in ", ModeName(to_mode),
      " mode. Give the result an index map that covers it (the gap is then filled with ", before,
      "), or keep the mode"));
}

absl::StatusOr<std::vector<Chunk>> Relayout(DeviceOps& ops, const Array& array, const IndexMap& map,
                                            Mode mode, const StopCheck& stop,
                                            SourceBuffers sources) {
  const bool share = sources == SourceBuffers::kShareLeadingParts;
  const bool same_map = array.index_map() == map;
  if (same_map && array.mode == mode) {
    if (share) {
      for (const Chunk& chunk : array.chunks) chunk.buffer->MarkShared();
      return array.chunks;
    }
    return CopyChunks(ops, array.dtype, array.chunks);
  }

  std::vector<Chunk> current = array.chunks;
  bool owned = false;  // whether `current` holds fresh buffers we may modify in place
  if (array.mode != Mode::kReplica) {
    ASSIGN_OR_RETURN(current, GatherToReplica(ops, array, stop));
    owned = true;
  }
  if (!same_map) {
    // Shared buffers are never written: only a REPLICA result of a REPLICA source shares.
    const bool share_here = share && array.mode == Mode::kReplica && mode == Mode::kReplica;
    ASSIGN_OR_RETURN(current,
                     ReshardReplica(ops, array.dtype, current, map,
                                    IdentityScalar(array.dtype, array.mode), stop, share_here));
    owned = true;
  }
  if (mode != Mode::kReplica) {
    if (!owned) {
      ASSIGN_OR_RETURN(current, CopyChunks(ops, array.dtype, current));
    }
    RETURN_IF_ERROR(ApplyOwnershipMask(ops, array.dtype, mode, current, stop));
  }
  return current;
}

absl::StatusOr<std::vector<Chunk>> ReadOnlyChunksIn(DeviceOps& ops, const Array& array,
                                                    const IndexMap& map, const StopCheck& stop) {
  std::vector<Chunk> out(map.size());
  IndexMap missing;
  std::vector<size_t> missing_at;
  for (size_t j = 0; j < map.size(); ++j) {
    // Compared at the same position only (layouts derived from one another keep chunk order),
    // so this stays linear in the chunk count.
    const bool shared =
        array.mode == Mode::kReplica && j < array.chunks.size() && array.chunks[j].spec == map[j];
    if (shared) out[j] = array.chunks[j];
    if (!shared) {
      missing.push_back(map[j]);
      missing_at.push_back(j);
    }
  }
  if (missing.empty()) return out;
  ASSIGN_OR_RETURN(std::vector<Chunk> moved,
                   Relayout(ops, array, missing, Mode::kReplica, stop, SourceBuffers::kCopy));
  for (size_t i = 0; i < moved.size(); ++i) out[missing_at[i]] = std::move(moved[i]);
  return out;
}

IndexMap SplitAlong(const Shape& shape, int axis, const std::vector<int>& devices) {
  const int64_t parts = std::min<int64_t>(static_cast<int64_t>(devices.size()), shape[axis]);
  IndexMap map;
  Box box = FullBox(shape);
  for (int64_t p = 0; p < parts; ++p) {
    const int64_t begin = shape[axis] * p / parts;
    const int64_t end = shape[axis] * (p + 1) / parts;
    box[axis] = Range{begin, 1, end - begin};
    map.push_back(ChunkSpec{devices[p], box});
  }
  return map;
}

// Odd-even merge-split (sort.cc) sorts k equal blocks in k rounds (Baudet and Stevenson); a
// shorter last block behaves as one padded with elements larger than all others, which never
// leave it, so the k rounds still suffice. Unequal blocks elsewhere would need more.
IndexMap EqualBlocksAlong(const Shape& shape, int axis, const std::vector<int>& devices) {
  const int64_t n = shape[axis];
  const int64_t parts = std::min<int64_t>(static_cast<int64_t>(devices.size()), n);
  const int64_t block = (n + parts - 1) / parts;
  IndexMap map;
  Box box = FullBox(shape);
  for (int64_t begin = 0, p = 0; begin < n; begin += block, ++p) {
    box[axis] = Range{begin, 1, std::min(block, n - begin)};
    map.push_back(ChunkSpec{devices[p], box});
  }
  return map;
}

std::vector<int> DevicesOf(const IndexMap& map) {
  std::vector<int> devices;
  for (const ChunkSpec& chunk : map) devices.push_back(chunk.device);
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  if (devices.empty()) devices.push_back(0);
  return devices;
}

}  // namespace distarray
