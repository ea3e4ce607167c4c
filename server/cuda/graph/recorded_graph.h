// A recorded CUDA graph (RecordedGraph, server/backend/graph_recorder.h): one instantiated graph
// per device, replayed on each device's own stream, so a replay is ordered with every other user
// of the device's fixed scratch memory (reduction partials, the cuBLAS workspace) that recorded
// kernels also use.
#ifndef DISTARRAY_SERVER_CUDA_GRAPH_RECORDED_GRAPH_H_
#define DISTARRAY_SERVER_CUDA_GRAPH_RECORDED_GRAPH_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/backend/graph_recorder.h"
#include "server/cuda/cuda_buffer.h"
#include "server/cuda/cuda_device.h"
#include "server/cuda/cuda_resources.h"
#include "server/cuda/graph/graph_resources.h"

namespace distarray {

class CudaRecordedGraph final : public RecordedGraph {
 public:
  CudaRecordedGraph(CudaDevices* gpus, CudaGraphResources resources,
                    std::vector<cuda::CudaGraphExec> execs);
  // Waits for the last replay: the graphs' memory and buffers are freed after it.
  ~CudaRecordedGraph() override;

  const std::vector<int>& devices() const override { return devices_; }
  absl::Status Launch(absl::Span<const BufferPtr> reads,
                      absl::Span<const BufferPtr> writes) override;
  absl::StatusOr<GraphRunStats> Wait(const std::function<absl::Status()>& alive) override;
  // Tests only: the next Launch fails on the index-th device of the graph as if cudaGraphLaunch
  // had, after the devices before it started theirs.
  void FailNextLaunchOnForTesting(size_t index) { fail_launch_on_ = index; }

 private:
  // One device's part of the last replay.
  struct Replay {
    cuda::CudaEventPtr done;
    // Around the replay's cudaGraphLaunch, timed: its time on the device.
    cuda::CudaEventPtr start, end;
  };

  CudaGraphControl* control(size_t i) const {
    return static_cast<CudaGraphControl*>(resources_.devices[i].control->host());
  }
  // Sets (or clears) every device's cancel word.
  void SetCancel(unsigned int value) const;
  // When a replay was enqueued and never waited for (its Launch failed part way), cancels it and
  // waits for the graph's devices. The caller holds the enqueue lock.
  void DrainUnwaited();
  // Enqueues the replay on every device; the caller holds the enqueue lock.
  absl::Status LaunchLocked(const std::vector<std::vector<CudaBuffer*>>& reads,
                            const std::vector<std::vector<CudaBuffer*>>& writes);
  // Agreeing through NCCL, a device whose replay never started, or failed, leaves the others
  // waiting in an all-reduce that the cancel word cannot end: revokes the clique, which ends them
  // (the cancel word, set by the caller, then stops their loops). Later replays of every graph
  // over that clique fail (UNAVAILABLE) and are recorded anew over a new one.
  void RevokeAgreement(const char* why);
  // Waits for every device's stream to drain; agreeing through NCCL, for at most kDrainLimit,
  // after which the graph is marked stuck (its memory is never freed: work may still use it).
  void DrainStreams();

  CudaDevices* const gpus_;
  std::vector<int> devices_;
  CudaGraphResources resources_;
  // Declared after resources_: destroyed before the graphs they came from.
  std::vector<cuda::CudaGraphExec> execs_;
  std::vector<Replay> replays_;
  // Some device's graph was enqueued and Wait has not seen the replay end. Guarded by the
  // enqueue lock.
  bool in_flight_ = false;
  // How many devices' graphs the last Launch enqueued. Guarded like in_flight_.
  size_t launched_ = 0;
  // A replay's devices did not drain in time after a failure (NCCL agreement): the destructor
  // leaves the graphs and their memory to the process rather than free them under running work.
  bool stuck_ = false;
  size_t fail_launch_on_ = SIZE_MAX;  // FailNextLaunchOnForTesting
  // How long the last complete replay ran on the device: Wait sleeps through most of a replay it
  // can predict and polls its end closely. Launch and Wait of one replay run on one thread, one
  // replay at a time (the program runner's per-graph lock), which guards this.
  std::chrono::nanoseconds last_device_time_{0};
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_CUDA_GRAPH_RECORDED_GRAPH_H_
