#include "server/daemon/gpu_sharing.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace distarray {
namespace {

std::vector<std::string> Entries(const std::string& list) {
  std::vector<std::string> out;
  for (absl::string_view entry : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    out.emplace_back(absl::StripAsciiWhitespace(entry));
  }
  return out;
}

std::string Quoted(const std::string& value) { return value.empty() ? "unset" : value; }

}  // namespace

absl::Status CheckGivenGpus(const GivenGpus& gpus) {
  std::vector<std::string> mig;
  for (const std::string* list : {&gpus.nvidia_visible_devices, &gpus.cuda_visible_devices}) {
    for (const std::string& entry : Entries(*list)) {
      if (absl::StartsWith(entry, "MIG-")) mig.push_back(entry);
    }
  }
  for (const std::string& uuid : gpus.device_uuids) {
    if (absl::StartsWith(uuid, "MIG-")) mig.push_back(uuid);
  }
  if (!mig.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "refusing to start on a MIG slice (", absl::StrJoin(mig, ", "),
        "): distarrayd needs whole GPUs (peer copies and NCCL between devices, its memory pool "
        "sized on the card). Run it on a node pool without MIG, or give it whole GPUs "
        "(GPU Operator: mig.strategy none, or nvidia.com/mig.config=all-disabled on its nodes); "
        "--backend=host runs without GPUs"));
  }
  // Time-slicing with several replicas of one GPU in one request lists its UUID more than once.
  absl::flat_hash_map<std::string, int> seen;
  std::vector<std::string> repeated;
  for (const std::string& entry : Entries(gpus.nvidia_visible_devices)) {
    if (absl::StartsWith(entry, "GPU-") && ++seen[entry] == 2) repeated.push_back(entry);
  }
  for (const std::string& uuid : gpus.device_uuids) {
    if (++seen[absl::StrCat("opened:", uuid)] == 2) repeated.push_back(uuid);
  }
  if (!repeated.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "refusing to start on time-sliced GPUs: ", absl::StrJoin(repeated, ", "),
        " given more than once (NVIDIA_VISIBLE_DEVICES=", gpus.nvidia_visible_devices,
        "); distarrayd needs each GPU once and to itself. Run it on a node pool without "
        "time-slicing (the device plugin's sharing.timeSlicing), or ask for whole GPUs"));
  }
  return absl::OkStatus();
}

std::string DescribeGivenGpus(const GivenGpus& gpus) {
  return absl::StrCat(
      "GPUs given: NVIDIA_VISIBLE_DEVICES=", Quoted(gpus.nvidia_visible_devices),
      " CUDA_VISIBLE_DEVICES=", Quoted(gpus.cuda_visible_devices),
      gpus.mig_capability_devices.empty()
          ? ""
          : absl::StrCat(" /dev/nvidia-caps: ", absl::StrJoin(gpus.mig_capability_devices, ",")),
      "; opened ", gpus.device_uuids.size(),
      " device(s): ", gpus.device_uuids.empty() ? "none" : absl::StrJoin(gpus.device_uuids, ", "));
}

GivenGpus ObserveGivenGpus() {
  GivenGpus gpus;
  if (const char* value = std::getenv("NVIDIA_VISIBLE_DEVICES")) {
    gpus.nvidia_visible_devices = value;
  }
  if (const char* value = std::getenv("CUDA_VISIBLE_DEVICES")) gpus.cuda_visible_devices = value;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/nvidia-caps", error)) {
    std::string name = entry.path().filename().string();
    if (absl::StartsWith(name, "nvidia-cap")) gpus.mig_capability_devices.push_back(name);
  }
  return gpus;
}

}  // namespace distarray
