#include "server/graph/recording_probe.h"

#include <algorithm>
#include <map>
#include <utility>

namespace distarray {
namespace {

// A buffer's identity without its memory: device and size are all the ops read of it.
class ProbeBuffer final : public DeviceBuffer {
 public:
  ProbeBuffer(int device, int64_t bytes) : device_(device), bytes_(bytes) {}
  int device() const override { return device_; }
  int64_t bytes() const override { return bytes_; }

 private:
  const int device_;
  const int64_t bytes_;
};

}  // namespace

RecordingProbe::RecordingProbe(std::vector<int> devices) { needs_.devices = std::move(devices); }

absl::StatusOr<BufferPtr> RecordingProbe::Allocate(int device, int64_t bytes) {
  return std::make_shared<ProbeBuffer>(device, bytes);
}

absl::Status RecordingProbe::Copy(DType /*dtype*/, absl::Span<const BoxCopy> copies) {
  for (const BoxCopy& copy : copies) {
    if (copy.src.buffer->device() != copy.dst.buffer->device()) {
      needs_.copies_between_devices = true;
    }
  }
  return absl::OkStatus();
}

void RecordingProbe::CountFlags(const ConditionFlags& flags) {
  std::map<int, int> per_device;
  for (const BufferPtr& flag : flags.buffers) {
    if (flag == nullptr) continue;
    needs_.condition_flags_per_device =
        std::max(needs_.condition_flags_per_device, ++per_device[flag->device()]);
  }
}

absl::Status RecordingProbe::BeginWhile(const ConditionFlags& flag, int64_t /*max_iterations*/) {
  CountFlags(flag);
  return absl::OkStatus();
}

absl::Status RecordingProbe::EndWhile(const ConditionFlags& flag) {
  CountFlags(flag);
  return absl::OkStatus();
}

absl::Status RecordingProbe::BeginIf(const ConditionFlags& flag) {
  CountFlags(flag);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<RecordedGraph>> RecordingProbe::Finish() {
  return absl::UnimplementedError("a recording probe makes no graph");
}

}  // namespace distarray
