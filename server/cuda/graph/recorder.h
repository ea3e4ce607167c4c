// The CUDA backend's GraphRecorder (server/backend/graph_recorder.h): which device sets it
// records over, how their conditions agree, and the NCCL cliques it makes for that.
#ifndef DISTARRAY_SERVER_CUDA_GRAPH_RECORDER_H_
#define DISTARRAY_SERVER_CUDA_GRAPH_RECORDER_H_

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/backend/backend.h"
#include "server/backend/graph_recorder.h"
#include "server/cuda/cuda_device.h"
#include "server/cuda/cuda_resources.h"
#include "server/cuda/fusion/rtc_compiler.h"
#include "server/cuda/graph/agreement_mode.h"

namespace distarray {

class CudaGraphRecorder final : public GraphRecorder {
 public:
  struct Options {
    GraphAgreement agreement = GraphAgreement::kAuto;
    // Copies of a fused loop's body per WHILE iteration; 0: loops are not fused.
    int loop_unroll = 8;
    // Fused loops on one device run persistent kernels (else loop_unroll copies).
    bool persistent_loops = true;
  };
  // `backend` owns `gpus` and `rtc`, and outlives the recorder and every recording.
  CudaGraphRecorder(Backend* backend, CudaDevices* gpus, cuda::RtcCompiler* rtc, Options options)
      : backend_(backend), gpus_(gpus), rtc_(rtc), options_(options) {}
  using GraphRecorder::Begin;
  absl::StatusOr<std::unique_ptr<GraphRecording>> Begin(absl::Span<const int> devices) override;
  // Up to cuda::kMaxGraphDevices distinct devices; over several, agreeing as `agreement` allows
  // (kPeer: peer access between every pair).
  bool CanRecord(absl::Span<const int> devices) const override;
  // Copies between devices are recorded as peer reads: devices without peer access between them
  // (which agree through NCCL) cannot hold them.
  std::optional<std::string> Unsupported(const RecordingNeeds& needs) const override;
  // A 2048^2 float32 reshard of 4096 pieces over 2 H200s: 68.7 ms launched piece by piece, 8.0 ms
  // replayed (docs/design.md, "Many-piece reshards replay a cached graph").
  bool ReplayBeatsLaunches() const override { return true; }

 private:
  // Whether every pair of `devices` has peer access.
  static bool PeerAccess(absl::Span<const int> devices);
  // Whether a recording over `devices` (several) agrees through NCCL.
  bool AgreesThroughNccl(absl::Span<const int> devices) const;
  // The clique recordings over `devices` agree through: made on first use (ncclCommInitAll over
  // them), made anew once revoked; a failure to make it is remembered.
  absl::StatusOr<std::shared_ptr<cuda::NcclClique>> CliqueFor(absl::Span<const int> devices);
  struct CliqueSlot {
    std::shared_ptr<cuda::NcclClique> clique;
    absl::Status failed;
  };

  Backend* const backend_;
  CudaDevices* const gpus_;
  cuda::RtcCompiler* const rtc_;
  const Options options_;
  std::mutex cliques_mu_;
  absl::flat_hash_map<std::vector<int>, CliqueSlot> cliques_;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_CUDA_GRAPH_RECORDER_H_
