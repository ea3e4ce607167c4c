// The parts of a recording over several devices where they meet: agreeing on conditions
// (peer-memory exchanges or NCCL ballots), barriers, and copies between the devices.
#include "server/cuda/graph/recording.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <thread>
#include <utility>

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/box.h"
#include "common/status_macros.h"
#include "server/cuda/cuda_status.h"
#include "server/cuda/kernels.h"

namespace distarray {

cuda::Agreement CudaGraphRecording::agreement(size_t i) const {
  cuda::Agreement agreement = barrier_agreement(i);
  if (nccl_agreement()) {
    agreement.nccl = static_cast<const cuda::NcclBallot*>(resources_.devices[i].ballot->data());
  }
  return agreement;
}

cuda::Agreement CudaGraphRecording::barrier_agreement(size_t i) const {
  cuda::Agreement agreement{};
  agreement.rank = static_cast<int>(i);
  agreement.devices = static_cast<int>(captures_.size());
  if (peer_access_ && captures_.size() > 1) {
    for (size_t d = 0; d < captures_.size(); ++d) {
      // Peer addresses (unified addressing): each device stores into the others' blocks.
      agreement.blocks[d] =
          static_cast<cuda::AgreementBlock*>(resources_.devices[d].agreement->data());
    }
  }
  return agreement;
}

absl::Status CudaGraphRecording::RecordBarrier() {
  for (size_t i = 0; i < captures_.size(); ++i) {
    ScopedDevice scope(captures_[i].device);
    CUDA_RETURN_IF_ERROR(
        cuda::LaunchBarrier(cancel_word(i), barrier_agreement(i), captures_[i].current()));
  }
  return absl::OkStatus();
}

absl::Status CudaGraphRecording::CastBallots(const ConditionFlags& flags, bool read_cancel) {
  if (!nccl_agreement()) return absl::OkStatus();
  for (size_t i = 0; i < captures_.size(); ++i) {
    ScopedDevice scope(captures_[i].device);
    CUDA_RETURN_IF_ERROR(cuda::LaunchCastBallot(
        LocalFlagsOn(i, flags), read_cancel, cancel_word(i), counters(i),
        static_cast<cuda::NcclBallot*>(resources(i).ballot->data()), captures_[i].current()));
  }
  cuda::NcclClique& clique = *resources_.clique;
  std::lock_guard lock(clique.calls_mu());
  if (clique.revoked()) {
    // The program runs eagerly this time; the next recording gets new communicators.
    return absl::InternalError("the NCCL communicators of this recording were revoked");
  }
  // One group over every device's capture stream: each capture records its own rank's part.
  NCCL_RETURN_IF_ERROR(ncclGroupStart());
  absl::Status status;
  for (size_t i = 0; i < captures_.size() && status.ok(); ++i) {
    auto* ballot = static_cast<cuda::NcclBallot*>(resources(i).ballot->data());
    status = cuda::NcclStatus(
        ncclAllReduce(ballot->ballot, ballot->tally, cuda::kBallotFields, ncclInt32, ncclSum,
                      clique.comm(static_cast<int>(i)), captures_[i].current()),
        "ncclAllReduce of the condition's ballots");
  }
  const absl::Status ended = cuda::NcclStatus(ncclGroupEnd(), "ncclGroupEnd");
  return status.ok() ? ended : status;
}

absl::Status CudaGraphRecording::RecordPeerCopies(DType dtype,
                                                  absl::Span<const BoxCopy* const> copies) {
  RETURN_IF_ERROR(CheckRecording("Copy"));
  if (!peer_access_) {
    return NotHeld("Copy",
                   "copies between devices read peer memory, and some of the recording's devices "
                   "have no peer access to each other (they agree through NCCL)");
  }
  for (const BoxCopy* copy : copies) {
    if (!records(copy->src.buffer->device()) || !records(copy->dst.buffer->device())) {
      return NotHeld("Copy", "it copies from or to a device the recording does not hold");
    }
  }
  std::lock_guard lock(context_.gpus->enqueue_mu);
  // A failure from here on may leave a barrier on some devices and not others: broken.
  return Broken([&]() -> absl::Status {
    RETURN_IF_ERROR(RecordBarrier());
    for (const BoxCopy* copy : copies) {
      const int device = copy->dst.buffer->device();
      Keep(copy->src.buffer);
      Keep(copy->dst.buffer);
      ScopedDevice scope(device);
      CUDA_RETURN_IF_ERROR(cuda::LaunchCopyBox(
          dtype, AsCuda(copy->src.buffer)->data(), MakeStridedBox(copy->src.shape, copy->src.box),
          AsCuda(copy->dst.buffer)->data(), MakeStridedBox(copy->dst.shape, copy->dst.box),
          copy->combine, captures_[IndexOf(device)].current()));
    }
    return RecordBarrier();
  }());
}

absl::Status CudaGraphRecording::AdmitFlags(absl::string_view call, const ConditionFlags& flags) {
  RETURN_IF_ERROR(CheckRecording(call));
  if (flags.buffers.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(call, ": no flag buffer"));
  }
  std::vector<int> per_device(captures_.size(), 0);
  for (const BufferPtr& flag : flags.buffers) {
    if (flag == nullptr) return absl::InvalidArgumentError(absl::StrCat(call, ": no flag buffer"));
    const int index = IndexOf(flag->device());
    if (index < 0) {
      return NotHeld(call, absl::StrCat("its flag is a buffer of device ", flag->device()));
    }
    if (++per_device[index] > cuda::kMaxLocalFlags) {
      return NotHeld(call, absl::StrCat("its condition has more than ", cuda::kMaxLocalFlags,
                                        " chunks on device ", flag->device()));
    }
  }
  for (const BufferPtr& flag : flags.buffers) Keep(flag);
  return absl::OkStatus();
}

cuda::LocalFlags CudaGraphRecording::LocalFlagsOn(size_t i, const ConditionFlags& flags) const {
  cuda::LocalFlags local{};
  local.any = flags.any;
  for (const BufferPtr& flag : flags.buffers) {
    if (flag->device() == captures_[i].device) {
      local.flags[local.count++] = reinterpret_cast<const unsigned char*>(AsCuda(flag)->data());
    }
  }
  return local;
}

}  // namespace distarray
