#include "server/cuda/graph/recorded_graph.h"

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
namespace {

// How often Wait looks at the replay, and how often it asks whether the caller still wants it.
// A sleep this short lasts about twice as long (the kernel's default timer slack is 50 µs), so a
// replay's end was seen ~50 µs late on average.
constexpr auto kPollInterval = std::chrono::microseconds(50);
constexpr auto kAliveInterval = std::chrono::milliseconds(1);
// Around the end a replay of known length T should have (the last replay's device time, counted
// from when Wait first sees the replay's start event done: work queued ahead of it, such as the
// copy of the inputs into the slots, is not in T), Wait yields instead of sleeping, from
// max(0.9 T, T - 0.5 ms) to min(1.25 T, T + 1 ms) + 200 µs; before and after that window, or with
// no earlier replay, it sleeps kPollInterval. The window is at most ~1.7 ms whatever T is, so a
// replay that runs longer than predicted (other inputs, a longer loop) costs little.
constexpr double kSpinFrom = 0.9, kSpinUntil = 1.25;
constexpr auto kSpinLead = std::chrono::microseconds(500);
constexpr auto kSpinLag = std::chrono::milliseconds(1);
constexpr auto kSpinSlack = std::chrono::microseconds(200);
// How long the devices of a failed replay agreeing through NCCL may take to drain once their
// communicators are revoked.
constexpr auto kDrainLimit = std::chrono::seconds(10);

void LogIfFailed(cudaError_t error, const char* what) {
  if (error != cudaSuccess && error != cudaErrorCudartUnloading) {
    spdlog::error("{}: {}", what, cudaGetErrorName(error));
  }
}

// The host writes the cancel word while the device reads it, and clears it between replays.
void SetCancelWord(CudaGraphControl& control, unsigned int value) {
  std::atomic_ref<unsigned int>(control.cancel_word).store(value, std::memory_order_seq_cst);
}

}  // namespace

CudaRecordedGraph::CudaRecordedGraph(CudaDevices* gpus, CudaGraphResources resources,
                                     std::vector<cuda::CudaGraphExec> execs)
    : gpus_(gpus),
      resources_(std::move(resources)),
      execs_(std::move(execs)),
      replays_(resources_.devices.size()) {
  for (const CudaDeviceGraph& d : resources_.devices) devices_.push_back(d.device);
}

CudaRecordedGraph::~CudaRecordedGraph() {
  {
    std::lock_guard lock(gpus_->enqueue_mu);
    DrainUnwaited();
  }
  if (stuck_) {
    // Work that may never end still addresses the graphs and their memory: leave both to the
    // process (a leak, logged) rather than free them under it.
    spdlog::critical(
        "RunGraph: a failed replay's devices did not drain; its graph and memory are left "
        "allocated");
    new CudaGraphResources(std::move(resources_));
    new std::vector<cuda::CudaGraphExec>(std::move(execs_));
    return;
  }
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (!replays_[i].done) continue;
    ScopedDevice scope(devices_[i]);
    LogIfFailed(cudaEventSynchronize(replays_[i].done->get()),
                "waiting for a recorded graph's last replay");
  }
}

void CudaRecordedGraph::SetCancel(unsigned int value) const {
  for (size_t i = 0; i < devices_.size(); ++i) SetCancelWord(*control(i), value);
}

void CudaRecordedGraph::DrainUnwaited() {
  if (!in_flight_) return;
  // Graphs still running, at an exchange or on their way to one, stop at their next evaluation
  // once the word is set (a waiting device reads it every 50 µs).
  SetCancel(1);
  if (resources_.clique != nullptr && launched_ < devices_.size()) {
    RevokeAgreement("a replay started on some of its devices only");
  }
  DrainStreams();
  in_flight_ = false;
}

void CudaRecordedGraph::DrainStreams() {
  if (resources_.clique == nullptr) {
    // Through peer memory a waiting device gives up on the cancel word: the streams drain.
    for (const int device : devices_) {
      ScopedDevice scope(device);
      LogIfFailed(cudaStreamSynchronize(gpus_->stream(device)),
                  "draining a recorded graph's unfinished replay");
    }
    return;
  }
  const auto deadline = std::chrono::steady_clock::now() + kDrainLimit;
  for (const int device : devices_) {
    ScopedDevice scope(device);
    cudaError_t query;
    while ((query = cudaStreamQuery(gpus_->stream(device))) == cudaErrorNotReady) {
      if (std::chrono::steady_clock::now() >= deadline) {
        stuck_ = true;
        spdlog::critical("RunGraph: device {} did not drain a failed replay within {} s", device,
                         std::chrono::duration_cast<std::chrono::seconds>(kDrainLimit).count());
        return;
      }
      std::this_thread::sleep_for(kPollInterval);
    }
    LogIfFailed(query, "draining a recorded graph's unfinished replay");
  }
}

void CudaRecordedGraph::RevokeAgreement(const char* why) {
  spdlog::error(
      "RunGraph: {}; revoking the NCCL communicators its devices agree through (graphs recorded "
      "over them will be recorded again)",
      why);
  std::lock_guard lock(resources_.clique->calls_mu());
  resources_.clique->Revoke();
}

absl::Status CudaRecordedGraph::Launch(absl::Span<const BufferPtr> reads,
                                       absl::Span<const BufferPtr> writes) {
  // Per device of the graph, the buffers it reads and writes there.
  std::vector<std::vector<CudaBuffer*>> read_buffers(devices_.size()),
      write_buffers(devices_.size());
  for (auto [from, to] : {std::pair(reads, &read_buffers), std::pair(writes, &write_buffers)}) {
    for (const BufferPtr& buffer : from) {
      const auto it = buffer == nullptr
                          ? devices_.end()
                          : std::find(devices_.begin(), devices_.end(), buffer->device());
      if (it == devices_.end()) {
        return absl::InvalidArgumentError(
            "RecordedGraph::Launch: a buffer that is not on one of the graph's devices");
      }
      (*to)[it - devices_.begin()].push_back(AsCuda(buffer));
    }
  }
  // One lock over every device's enqueue: the devices' graphs wait for each other at every
  // condition, so no other work may come between them on one device and not on another (a
  // transfer queued behind one device's graph and ahead of another's would wait for itself).
  std::lock_guard lock(gpus_->enqueue_mu);
  // A replay nobody waited for (its Launch failed part way) is drained, cancelled, before the
  // cancel word is cleared: cleared under it, a graph at an exchange would wait forever.
  DrainUnwaited();
  if (stuck_ || (resources_.clique != nullptr && resources_.clique->revoked())) {
    return absl::UnavailableError(
        "RecordedGraph::Launch: the NCCL communicators this graph's devices agree through were "
        "revoked after a replay failed; run the program again to record it anew");
  }
  // A new replay: its loops run until their flags or caps stop them, not a past cancel.
  SetCancel(0);
  absl::Status status = LaunchLocked(read_buffers, write_buffers);
  // Devices whose graphs started would wait for the others at their first exchange: stop them
  // and wait for them, so the call that fails leaves nothing running.
  if (!status.ok()) DrainUnwaited();
  return status;
}

absl::Status CudaRecordedGraph::LaunchLocked(const std::vector<std::vector<CudaBuffer*>>& reads,
                                             const std::vector<std::vector<CudaBuffer*>>& writes) {
  // Every device's exchange block (conditions agreeing through peer memory, or barriers around
  // copies) is reset before any graph starts. NCCL's all-reduces overwrite the tallies.
  const bool agree = devices_.size() > 1 && resources_.devices.front().agreement.has_value();
  launched_ = 0;
  // Everything that can fail comes before the first graph is enqueued; after it, only the graph
  // launches and their end events.
  std::vector<cuda::CudaEventPtr> ready(devices_.size()), start(devices_.size());
  for (size_t i = 0; i < devices_.size(); ++i) {
    const int device = devices_[i];
    ScopedDevice scope(device);
    std::vector<cuda::CudaEventPtr> deps;
    for (CudaBuffer* b : reads[i]) b->hazards().CollectForRead(deps);
    for (CudaBuffer* b : writes[i]) b->hazards().CollectForWrite(deps);
    RETURN_IF_ERROR(WaitForEvents(gpus_->stream(device), deps));
    if (agree) {
      // Every replay's exchanges count from zero: a cancelled replay may have left the devices'
      // epochs apart. No device's graph starts before every device's block is reset (and every
      // device's earlier replay is over: each reset is ordered after its own device's).
      CUDA_RETURN_IF_ERROR(cudaMemsetAsync(resources_.devices[i].agreement->data(), 0,
                                           sizeof(cuda::AgreementBlock), gpus_->stream(device)));
      ASSIGN_OR_RETURN(ready[i], cuda::CudaEvent::Record(gpus_->stream(device)));
    }
  }
  for (size_t i = 0; i < devices_.size(); ++i) {
    const int device = devices_[i];
    const cudaStream_t stream = gpus_->stream(device);
    ScopedDevice scope(device);
    if (agree) {
      std::vector<cuda::CudaEventPtr> others;
      for (size_t j = 0; j < devices_.size(); ++j) {
        if (j != i) others.push_back(ready[j]);
      }
      RETURN_IF_ERROR(WaitForEvents(stream, others));
    }
    ASSIGN_OR_RETURN(start[i], cuda::CudaEvent::RecordTimed(stream));
  }
  for (size_t i = 0; i < devices_.size(); ++i) {
    const int device = devices_[i];
    const cudaStream_t stream = gpus_->stream(device);
    ScopedDevice scope(device);
    const cudaError_t launched =
        i == fail_launch_on_ ? cudaErrorLaunchFailure : cudaGraphLaunch(execs_[i].get(), stream);
    if (i == fail_launch_on_) fail_launch_on_ = SIZE_MAX;
    in_flight_ = in_flight_ || launched == cudaSuccess;
    RETURN_IF_ERROR(cuda::CudaStatus(launched, "cudaGraphLaunch"));
    ++launched_;
    ASSIGN_OR_RETURN(cuda::CudaEventPtr end, cuda::CudaEvent::RecordTimed(stream));
    Replay& replay = replays_[i];
    replay.start = std::move(start[i]);
    replay.end = end;
    replay.done = std::move(end);
    for (CudaBuffer* b : reads[i]) b->hazards().RecordRead(replay.done, IsDone);
    for (CudaBuffer* b : writes[i]) b->hazards().RecordWrite(replay.done);
  }
  return absl::OkStatus();
}

absl::StatusOr<GraphRunStats> CudaRecordedGraph::Wait(const std::function<absl::Status()>& alive) {
  for (const Replay& replay : replays_) {
    if (!replay.done) {
      return absl::FailedPreconditionError("RecordedGraph::Wait: no replay was launched");
    }
  }
  absl::Status stop, failed;
  std::optional<std::chrono::steady_clock::time_point> failed_at;
  auto next_check = std::chrono::steady_clock::now();
  // The spin window, placed once the replay is seen to have started on the device.
  using std::chrono::nanoseconds;
  const nanoseconds predicted = last_device_time_;
  const nanoseconds spin_from_start = std::max(
      std::chrono::duration_cast<nanoseconds>(predicted * kSpinFrom), predicted - kSpinLead);
  const nanoseconds spin_until_start =
      std::min(std::chrono::duration_cast<nanoseconds>(predicted * kSpinUntil),
               predicted + kSpinLag) +
      kSpinSlack;
  std::optional<std::chrono::steady_clock::time_point> started;
  for (;;) {
    bool all_done = true;
    for (size_t i = 0; i < replays_.size(); ++i) {
      const cudaError_t query = cudaEventQuery(replays_[i].done->get());
      if (query == cudaSuccess) continue;
      if (query == cudaErrorNotReady) {
        all_done = false;
        continue;
      }
      if (failed.ok()) {
        failed = cuda::CudaStatus(query, absl::StrCat("graph replay on device ", devices_[i]));
        // The other devices would wait for this one at their next exchange.
        SetCancel(1);
        if (resources_.clique != nullptr && devices_.size() > 1) {
          RevokeAgreement("a replay failed on one of its devices");
          failed_at = std::chrono::steady_clock::now();
        }
      }
    }
    if (all_done || (!failed.ok() && devices_.size() == 1)) break;
    if (!failed.ok()) {
      // Let the others drain (they stop at their next exchange within ~50 µs), but never hang on
      // a device that reported an error of its own.
      bool others_done = true;
      for (size_t i = 0; i < replays_.size(); ++i) {
        const cudaError_t q = cudaEventQuery(replays_[i].done->get());
        others_done = others_done && q != cudaErrorNotReady;
      }
      if (others_done) break;
      if (failed_at && std::chrono::steady_clock::now() >= *failed_at + kDrainLimit) {
        stuck_ = true;
        spdlog::critical("RunGraph: a failed replay's devices did not drain within {} s",
                         std::chrono::duration_cast<std::chrono::seconds>(kDrainLimit).count());
        break;
      }
    }
    const auto now = std::chrono::steady_clock::now();
    if (stop.ok() && alive && now >= next_check) {
      stop = alive();
      next_check = now + kAliveInterval;
      // The loop conditions read the word (loop_control.h): a running loop ends at an
      // evaluation within ~50 µs of device time and the rest of the replay drains, so the
      // device is left in a consistent state.
      if (!stop.ok()) SetCancel(1);
    }
    if (predicted.count() > 0 && !started && replays_[0].start &&
        cudaEventQuery(replays_[0].start->get()) == cudaSuccess) {
      started = now;
    }
    if (started && now >= *started + spin_from_start && now < *started + spin_until_start) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(kPollInterval);
    }
  }
  {
    // Every device's replay is over (or its device failed): nothing left to drain.
    std::lock_guard lock(gpus_->enqueue_mu);
    in_flight_ = false;
  }
  RETURN_IF_ERROR(failed);
  if (!stop.ok()) return stop;
  if (resources_.clique != nullptr && resources_.clique->revoked()) {
    // Its all-reduces may have returned without summing: the results are not trusted.
    return absl::UnavailableError(
        "RunGraph: the NCCL communicators this graph's devices agree through were revoked during "
        "the replay (another replay over them failed); run the program again");
  }
  // Complete: each graph's last node copied its counters before the replay's event. Every device
  // ran every loop, so the iteration counts agree; take the first device's.
  GraphRunStats stats;
  for (size_t i = 0; i < replays_.size(); ++i) {
    cuda::GraphCounters counters;
    std::memcpy(&counters, &control(i)->counters, sizeof(counters));
    if (i == 0) stats.iterations = static_cast<int64_t>(counters.iterations);
    stats.hit_iteration_cap = stats.hit_iteration_cap || counters.hit_iteration_cap != 0;
    stats.cancelled = stats.cancelled || counters.cancelled != 0;
    float device_ms = 0;
    if (replays_[i].start && replays_[i].end &&
        cudaEventElapsedTime(&device_ms, replays_[i].start->get(), replays_[i].end->get()) ==
            cudaSuccess) {
      stats.device_seconds = std::max(stats.device_seconds, device_ms * 1e-3);
    }
  }
  last_device_time_ = std::chrono::nanoseconds(static_cast<int64_t>(stats.device_seconds * 1e9));
  return stats;
}

}  // namespace distarray
