#include "server/cuda/graph/recorder.h"

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
#include "server/cuda/graph/recording.h"
#include "server/cuda/kernels.h"

namespace distarray {

absl::StatusOr<std::unique_ptr<GraphRecording>> CudaGraphRecorder::Begin(
    absl::Span<const int> devices) {
  std::shared_ptr<cuda::NcclClique> clique;
  // Start checks the devices precisely; a clique is made only over devices it would take.
  if (devices.size() > 1 && CanRecord(devices) && AgreesThroughNccl(devices)) {
    ASSIGN_OR_RETURN(clique, CliqueFor(devices));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<CudaGraphRecording> recording,
                   CudaGraphRecording::Start(
                       CudaGraphRecording::Context{gpus_, backend_, rtc_, options_.loop_unroll,
                                                   options_.persistent_loops},
                       devices, std::move(clique)));
  return recording;
}

bool CudaGraphRecorder::PeerAccess(absl::Span<const int> devices) {
  for (size_t i = 0; i < devices.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      int can = 0;
      if (cudaDeviceCanAccessPeer(&can, devices[i], devices[j]) != cudaSuccess || !can) {
        cudaGetLastError();
        return false;
      }
    }
  }
  return true;
}

bool CudaGraphRecorder::AgreesThroughNccl(absl::Span<const int> devices) const {
  if (devices.size() < 2 || options_.agreement == GraphAgreement::kPeer) return false;
  return options_.agreement == GraphAgreement::kNccl || !PeerAccess(devices);
}

bool CudaGraphRecorder::CanRecord(absl::Span<const int> devices) const {
  if (devices.empty() || devices.size() > static_cast<size_t>(cuda::kMaxGraphDevices)) {
    return false;
  }
  for (size_t i = 0; i < devices.size(); ++i) {
    if (devices[i] < 0 || devices[i] >= gpus_->count()) return false;
    for (size_t j = 0; j < i; ++j) {
      if (devices[j] == devices[i]) return false;
    }
  }
  return devices.size() == 1 || options_.agreement != GraphAgreement::kPeer || PeerAccess(devices);
}

std::optional<std::string> CudaGraphRecorder::Unsupported(const RecordingNeeds& needs) const {
  if (!CanRecord(needs.devices)) {
    return absl::StrCat("the devices ", absl::StrJoin(needs.devices, ", "),
                        " cannot be recorded together");
  }
  if (needs.copies_between_devices && !PeerAccess(needs.devices)) {
    return absl::StrCat("it copies between devices ", absl::StrJoin(needs.devices, ", "),
                        ", which have no peer access to each other (a recorded copy reads peer "
                        "memory)");
  }
  if (needs.condition_flags_per_device > cuda::kMaxLocalFlags) {
    return absl::StrCat("a condition has ", needs.condition_flags_per_device,
                        " chunks on one device; a recorded condition reads at most ",
                        cuda::kMaxLocalFlags, " per device");
  }
  return std::nullopt;
}

absl::StatusOr<std::shared_ptr<cuda::NcclClique>> CudaGraphRecorder::CliqueFor(
    absl::Span<const int> devices) {
  const std::vector<int> key(devices.begin(), devices.end());
  std::lock_guard lock(cliques_mu_);
  CliqueSlot& slot = cliques_[key];
  if (!slot.failed.ok()) return slot.failed;
  std::shared_ptr<cuda::NcclClique>& clique = slot.clique;
  if (clique != nullptr && !clique->revoked()) return clique;
  const auto start = std::chrono::steady_clock::now();
  auto made = cuda::NcclClique::Create(key);
  if (!made.ok()) {
    // Remembered: programs over these devices run eagerly from now on, without trying again
    // (FAILED_PRECONDITION: the program runner remembers the program as unrecordable too).
    slot.failed = absl::FailedPreconditionError(
        absl::StrCat("making the NCCL communicators graphs over device(s) ",
                     absl::StrJoin(key, ", "), " agree through: ", made.status().message()));
    spdlog::warn("RunGraph: {}", std::string(slot.failed.message()));
    return slot.failed;
  }
  clique = *std::move(made);
  spdlog::info(
      "RunGraph: graphs over devices {} agree on their conditions through NCCL ({}; "
      "communicators made in {:.1f} ms)",
      absl::StrJoin(key, ", "),
      options_.agreement == GraphAgreement::kNccl ? "--graph_agreement=nccl" : "no peer access",
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  return clique;
}

}  // namespace distarray
