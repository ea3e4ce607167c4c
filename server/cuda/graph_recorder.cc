#include "server/cuda/graph_recorder.h"

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
#include "server/cuda/cuda_backend.h"
#include "server/cuda/cuda_buffer.h"
#include "server/cuda/cuda_status.h"
#include "server/cuda/kernels.h"

namespace distarray {
namespace {

// The recording the calling thread has open, on whichever backend: one at a time per thread
// (GraphRecorder::Begin refuses a second).
thread_local CudaGraphRecording* current_recording = nullptr;

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

CudaGraphRecording* CurrentRecording(const CudaBackend* backend) {
  return CudaGraphRecording::Current(backend);
}

absl::StatusOr<cudaStream_t> RouteToRecording(CudaGraphRecording& recording, absl::string_view call,
                                              int device, const std::vector<CudaBuffer*>& reads,
                                              const std::vector<CudaBuffer*>& writes) {
  return recording.Route(call, device, reads, writes);
}

// ---- CudaRecordedGraph ----

CudaRecordedGraph::CudaRecordedGraph(CudaBackend* backend, CudaGraphResources resources,
                                     std::vector<cuda::CudaGraphExec> execs)
    : backend_(backend),
      resources_(std::move(resources)),
      execs_(std::move(execs)),
      replays_(resources_.devices.size()) {
  for (const CudaDeviceGraph& d : resources_.devices) devices_.push_back(d.device);
}

CudaRecordedGraph::~CudaRecordedGraph() {
  {
    std::lock_guard lock(backend_->order_mu_);
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
      LogIfFailed(cudaStreamSynchronize(backend_->stream(device)),
                  "draining a recorded graph's unfinished replay");
    }
    return;
  }
  const auto deadline = std::chrono::steady_clock::now() + kDrainLimit;
  for (const int device : devices_) {
    ScopedDevice scope(device);
    cudaError_t query;
    while ((query = cudaStreamQuery(backend_->stream(device))) == cudaErrorNotReady) {
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
  if (CudaGraphRecording* recording = CudaGraphRecording::Current(backend_)) {
    return recording->Refuse("RecordedGraph::Launch", "replays are not recorded");
  }
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
  std::lock_guard lock(backend_->order_mu_);
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
    RETURN_IF_ERROR(backend_->WaitFor(device, deps));
    if (agree) {
      // Every replay's exchanges count from zero: a cancelled replay may have left the devices'
      // epochs apart. No device's graph starts before every device's block is reset (and every
      // device's earlier replay is over: each reset is ordered after its own device's).
      CUDA_RETURN_IF_ERROR(cudaMemsetAsync(resources_.devices[i].agreement->data(), 0,
                                           sizeof(cuda::AgreementBlock), backend_->stream(device)));
      ASSIGN_OR_RETURN(ready[i], cuda::CudaEvent::Record(backend_->stream(device)));
    }
  }
  for (size_t i = 0; i < devices_.size(); ++i) {
    const int device = devices_[i];
    const cudaStream_t stream = backend_->stream(device);
    ScopedDevice scope(device);
    if (agree) {
      std::vector<cuda::CudaEventPtr> others;
      for (size_t j = 0; j < devices_.size(); ++j) {
        if (j != i) others.push_back(ready[j]);
      }
      RETURN_IF_ERROR(backend_->WaitOn(stream, others));
    }
    ASSIGN_OR_RETURN(start[i], cuda::CudaEvent::RecordTimed(stream));
  }
  for (size_t i = 0; i < devices_.size(); ++i) {
    const int device = devices_[i];
    const cudaStream_t stream = backend_->stream(device);
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
    std::lock_guard lock(backend_->order_mu_);
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

// ---- CudaGraphRecording ----

CudaGraphRecording* CudaGraphRecording::Current(const CudaBackend* backend) {
  CudaGraphRecording* recording = current_recording;
  return recording != nullptr && recording->backend_ == backend ? recording : nullptr;
}

absl::StatusOr<std::unique_ptr<CudaGraphRecording>> CudaGraphRecording::Start(
    CudaBackend* backend, absl::Span<const int> devices, std::shared_ptr<cuda::NcclClique> clique) {
  if (current_recording != nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("GraphRecorder::Begin: this thread is already recording a graph on device(s) ",
                     current_recording->DeviceList()));
  }
  if (devices.empty() || devices.size() > static_cast<size_t>(cuda::kMaxGraphDevices)) {
    return absl::InvalidArgumentError(absl::StrCat("GraphRecorder::Begin: ", devices.size(),
                                                   " devices (1 to ", cuda::kMaxGraphDevices,
                                                   " may be recorded together)"));
  }
  bool peer_access = true;
  for (size_t i = 0; i < devices.size(); ++i) {
    if (devices[i] < 0 || devices[i] >= backend->device_count()) {
      return absl::InvalidArgumentError(absl::StrCat("GraphRecorder::Begin: no device ", devices[i],
                                                     " (the backend has ", backend->device_count(),
                                                     ")"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (devices[j] == devices[i]) {
        return absl::InvalidArgumentError(
            absl::StrCat("GraphRecorder::Begin: device ", devices[i], " is named twice"));
      }
      // The condition exchange stores into the other devices' memory.
      int can = 0;
      CUDA_RETURN_IF_ERROR(cudaDeviceCanAccessPeer(&can, devices[i], devices[j]));
      peer_access = peer_access && can != 0;
      if (!can && clique == nullptr) {
        return absl::FailedPreconditionError(absl::StrCat(
            "GraphRecorder::Begin: devices ", devices[j], " and ", devices[i],
            " have no peer access, which a graph over both needs to agree on its conditions"));
      }
    }
  }
  std::unique_ptr<CudaGraphRecording> recording(new CudaGraphRecording(backend));
  if (devices.size() > 1) recording->resources_.clique = std::move(clique);
  recording->peer_access_ = peer_access;
  for (const int device : devices) {
    ScopedDevice scope(device);
    Capture capture;
    capture.device = device;
    // Not the device's stream: other threads keep using that one while this one captures.
    ASSIGN_OR_RETURN(cuda::CudaStream stream, cuda::CudaStream::Create(device));
    capture.stream.emplace(std::move(stream));
    CudaDeviceGraph resources;
    resources.device = device;
    ASSIGN_OR_RETURN(cuda::DeviceBlock counters,
                     cuda::DeviceBlock::Allocate(device, sizeof(cuda::GraphCounters)));
    resources.counters.emplace(std::move(counters));
    ASSIGN_OR_RETURN(cuda::MappedHostBlock control,
                     cuda::MappedHostBlock::Allocate(sizeof(CudaGraphControl)));
    resources.control.emplace(std::move(control));
    if (recording->nccl_agreement()) {
      ASSIGN_OR_RETURN(cuda::DeviceBlock ballot,
                       cuda::DeviceBlock::AllocateZeroed(device, sizeof(cuda::NcclBallot)));
      resources.ballot.emplace(std::move(ballot));
    }
    if (devices.size() > 1 && peer_access) {
      ASSIGN_OR_RETURN(cuda::DeviceBlock agreement,
                       cuda::DeviceBlock::AllocateZeroed(device, sizeof(cuda::AgreementBlock)));
      resources.agreement.emplace(std::move(agreement));
    }
    recording->captures_.push_back(std::move(capture));
    recording->resources_.devices.push_back(std::move(resources));
  }
  recording->slot_ = &current_recording;
  current_recording = recording.get();
  recording->capturing_ = true;
  for (size_t i = 0; i < recording->captures_.size(); ++i) {
    Capture& capture = recording->captures_[i];
    ScopedDevice scope(capture.device);
    // Relaxed: the recording thread still makes calls that the other capture modes forbid while
    // a capture is open (cudaMalloc for the graph's slots), and other threads' calls are not
    // restricted by this capture at all. A fresh stream has no pending work, so the captured
    // work depends on nothing outside the graph; a replay's inputs are ordered by Launch.
    CUDA_RETURN_IF_ERROR(
        cudaStreamBeginCapture(capture.stream->get(), cudaStreamCaptureModeRelaxed));
    capture.capturing = true;
  }
  return recording;
}

absl::Status CudaGraphRecording::ResetCountersBeforeFirstBlock(size_t i) {
  Capture& capture = captures_[i];
  if (!capture.open.empty() || capture.counters_reset) return absl::OkStatus();
  capture.counters_reset = true;
  has_conditionals_ = true;
  return cuda::CudaStatus(
      cudaMemsetAsync(counters(i), 0, sizeof(cuda::GraphCounters), capture.current()),
      "resetting a graph's counters");
}

absl::Status CudaGraphRecording::ResetAllCountersBeforeFirstBlock() {
  for (size_t i = 0; i < captures_.size(); ++i) {
    ScopedDevice scope(captures_[i].device);
    RETURN_IF_ERROR(ResetCountersBeforeFirstBlock(i));
  }
  return absl::OkStatus();
}

CudaGraphRecording::~CudaGraphRecording() {
  // Abandoned (or finished, when this is a no-op): no capture may outlive the recording, and
  // what it allocated is freed only once nothing is capturing (resources_ goes after this).
  absl::Status status = EndAllCaptures();
  if (!status.ok()) spdlog::warn("abandoning a graph recording: {}", status.ToString());
}

int CudaGraphRecording::IndexOf(int device) const {
  for (size_t i = 0; i < captures_.size(); ++i) {
    if (captures_[i].device == device) return static_cast<int>(i);
  }
  return -1;
}

std::string CudaGraphRecording::DeviceList() const {
  std::string list;
  for (const Capture& c : captures_) absl::StrAppend(&list, list.empty() ? "" : ", ", c.device);
  return list;
}

const unsigned int* CudaGraphRecording::cancel_word(size_t i) const {
  return reinterpret_cast<const unsigned int*>(
      static_cast<const char*>(resources_.devices[i].control->device()) +
      offsetof(CudaGraphControl, cancel_word));
}

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

absl::Status CudaGraphRecording::Refuse(absl::string_view call, absl::string_view why) const {
  return absl::FailedPreconditionError(absl::StrCat(
      call, " while this thread records a graph on device(s) ", DeviceList(), ": ", why));
}

absl::Status CudaGraphRecording::CheckRecording(absl::string_view call) const {
  if (finished_) {
    return absl::FailedPreconditionError(absl::StrCat(call, ": the recording is finished"));
  }
  if (!broken_.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(call, ": the recording failed earlier: ", broken_.message()));
  }
  return absl::OkStatus();
}

absl::Status CudaGraphRecording::Broken(absl::Status status) {
  if (!status.ok() && broken_.ok()) broken_ = status;
  return status;
}

void CudaGraphRecording::Keep(BufferPtr buffer) {
  if (resources_.kept.insert(buffer.get()).second) resources_.buffers.push_back(std::move(buffer));
}

absl::StatusOr<cudaStream_t> CudaGraphRecording::Route(absl::string_view call, int device,
                                                       const std::vector<CudaBuffer*>& reads,
                                                       const std::vector<CudaBuffer*>& writes) {
  RETURN_IF_ERROR(CheckRecording(call));
  const int index = IndexOf(device);
  if (index < 0) return Refuse(call, absl::StrCat("it is work for device ", device));
  for (const std::vector<CudaBuffer*>* buffers : {&reads, &writes}) {
    for (const CudaBuffer* buffer : *buffers) {
      if (buffer->device() != device) {
        return Refuse(call, absl::StrCat("its work on device ", device,
                                         " touches a buffer of device ", buffer->device()));
      }
    }
  }
  // Every replay addresses these buffers: none may be freed while the graph lives, whoever else
  // lets go of them meanwhile.
  for (const std::vector<CudaBuffer*>* buffers : {&reads, &writes}) {
    for (CudaBuffer* buffer : *buffers) Keep(buffer->shared_from_this());
  }
  return captures_[index].current();
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
    return Refuse("Copy",
                  "copies between devices read peer memory, and some of the recording's devices "
                  "have no peer access to each other (they agree through NCCL)");
  }
  for (const BoxCopy* copy : copies) {
    if (!records(copy->src.buffer->device()) || !records(copy->dst.buffer->device())) {
      return Refuse("Copy", "it copies from or to a device the recording does not hold");
    }
  }
  std::lock_guard lock(backend_->order_mu_);
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
      return Refuse(call, absl::StrCat("its flag is a buffer of device ", flag->device()));
    }
    if (++per_device[index] > cuda::kMaxLocalFlags) {
      return Refuse(call, absl::StrCat("its condition has more than ", cuda::kMaxLocalFlags,
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

absl::StatusOr<cudaGraph_t> CudaGraphRecording::CapturingGraph(const Capture& capture) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = nullptr;
  CUDA_RETURN_IF_ERROR(cudaStreamGetCaptureInfo(capture.current(), &status, nullptr, &graph,
                                                nullptr, nullptr, nullptr));
  if (status != cudaStreamCaptureStatusActive) {
    return absl::InternalError(
        "graph capture is no longer active (an earlier call invalidated it)");
  }
  return graph;
}

absl::StatusOr<std::array<cudaGraph_t, 2>> CudaGraphRecording::AddConditional(
    const Capture& capture, cudaGraphConditionalNodeType type, cudaGraphConditionalHandle handle,
    unsigned int size) {
  const cudaStream_t stream = capture.current();
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = nullptr;
  const cudaGraphNode_t* dependencies = nullptr;
  const cudaGraphEdgeData* edges = nullptr;
  size_t count = 0;
  CUDA_RETURN_IF_ERROR(
      cudaStreamGetCaptureInfo(stream, &status, nullptr, &graph, &dependencies, &edges, &count));
  if (status != cudaStreamCaptureStatusActive) {
    return absl::InternalError(
        "graph capture is no longer active (an earlier call invalidated it)");
  }
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = handle;
  params.conditional.type = type;
  params.conditional.size = size;
  cudaGraphNode_t node = nullptr;
  // After the capture's last work (the condition kernel just launched on this stream).
  CUDA_RETURN_IF_ERROR(cudaGraphAddNode(&node, graph, dependencies, edges, count, &params));
  // The node was added beside the capture, not through it: make it the capture's last work, so
  // what the stream records next runs after the whole conditional.
  CUDA_RETURN_IF_ERROR(cudaStreamUpdateCaptureDependencies(stream, &node, nullptr, 1,
                                                           cudaStreamSetCaptureDependencies));
  std::array<cudaGraph_t, 2> bodies = {params.conditional.phGraph_out[0],
                                       size > 1 ? params.conditional.phGraph_out[1] : nullptr};
  return bodies;
}

absl::Status CudaGraphRecording::BeginBody(int device, Block& block) {
  if (!block.stream) {
    ASSIGN_OR_RETURN(cuda::CudaStream stream, cuda::CudaStream::Create(device));
    block.stream.emplace(std::move(stream));
  }
  // Relaxed for the reasons Start gives. Nothing before the body's first node: the conditional
  // node orders the body after what preceded it.
  CUDA_RETURN_IF_ERROR(cudaStreamBeginCaptureToGraph(block.stream->get(),
                                                     block.bodies[block.branch], nullptr, nullptr,
                                                     0, cudaStreamCaptureModeRelaxed));
  block.capturing = true;
  return absl::OkStatus();
}

absl::Status CudaGraphRecording::EndBody(Block& block) {
  block.capturing = false;
  cudaGraph_t body = nullptr;  // the conditional node's body graph, owned by the node
  return cuda::CudaStatus(cudaStreamEndCapture(block.stream->get(), &body),
                          "ending the capture of a conditional body");
}

absl::Status CudaGraphRecording::EndAllCaptures() {
  if (!capturing_) return absl::OkStatus();
  absl::Status status;
  for (size_t i = 0; i < captures_.size(); ++i) {
    Capture& capture = captures_[i];
    ScopedDevice scope(capture.device);
    for (auto it = capture.open.rbegin(); it != capture.open.rend(); ++it) {
      if (!it->capturing) continue;
      absl::Status ended = EndBody(*it);
      if (status.ok()) status = ended;
    }
    capture.open.clear();
    if (!capture.capturing) continue;
    cudaGraph_t graph = nullptr;
    absl::Status ended = cuda::CudaStatus(cudaStreamEndCapture(capture.stream->get(), &graph),
                                          "ending the graph capture");
    if (status.ok()) status = ended;
    // Null when the capture was invalidated; owned by the recording (then its graph) otherwise.
    resources(i).graph.emplace(graph);
    capture.capturing = false;
  }
  capturing_ = false;
  if (*slot_ == this) *slot_ = nullptr;
  return status;
}

absl::Status CudaGraphRecording::BeginWhile(const ConditionFlags& flag, int64_t max_iterations) {
  RETURN_IF_ERROR(AdmitFlags("BeginWhile", flag));
  if (max_iterations < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("BeginWhile: max_iterations must be at least 1, not ", max_iterations));
  }
  // A failure from here on may leave a half-built loop in the graph: the recording is broken.
  return Broken([&]() -> absl::Status {
    RETURN_IF_ERROR(ResetAllCountersBeforeFirstBlock());
    RETURN_IF_ERROR(CastBallots(flag, /*read_cancel=*/true));
    for (size_t i = 0; i < captures_.size(); ++i) {
      const int device = captures_[i].device;
      ScopedDevice scope(device);
      ASSIGN_OR_RETURN(cuda::DeviceBlock count,
                       cuda::DeviceBlock::Allocate(device, sizeof(int64_t)));
      int64_t* count_data = static_cast<int64_t*>(count.data());
      resources(i).loop_counts.push_back(std::move(count));
      RETURN_IF_ERROR(OpenWhile(i, LocalFlagsOn(i, flag), max_iterations, count_data,
                                /*running=*/nullptr));
    }
    return absl::OkStatus();
  }());
}

absl::Status CudaGraphRecording::OpenWhile(size_t i, const cuda::LocalFlags& flags,
                                           int64_t max_iterations, int64_t* count,
                                           unsigned int* running) {
  RETURN_IF_ERROR(ResetCountersBeforeFirstBlock(i));
  Capture& capture = captures_[i];
  Block block;
  block.kind = Block::Kind::kWhile;
  block.count = count;
  block.max_iterations = max_iterations;
  // The handle belongs to the graph that will hold the node (a body graph when nested).
  ASSIGN_OR_RETURN(cudaGraph_t graph, CapturingGraph(capture));
  CUDA_RETURN_IF_ERROR(cudaGraphConditionalHandleCreate(&block.handle, graph, 0, 0));
  // While semantics: the condition is evaluated before the WHILE node, so a false flag runs the
  // body zero times; this evaluation also restarts the loop's count.
  CUDA_RETURN_IF_ERROR(cuda::LaunchLoopCondition(flags, count, max_iterations, cancel_word(i),
                                                 counters(i), agreement(i), block.handle,
                                                 /*first=*/true, capture.current(), running));
  ASSIGN_OR_RETURN(block.bodies, AddConditional(capture, cudaGraphCondTypeWhile, block.handle, 1));
  capture.open.push_back(std::move(block));
  return BeginBody(capture.device, capture.open.back());
}

absl::Status CudaGraphRecording::EndWhile(const ConditionFlags& flag) {
  RETURN_IF_ERROR(CheckRecording("EndWhile"));
  // Every device has the same blocks open.
  const std::vector<Block>& open = captures_.front().open;
  if (open.empty() || open.back().kind != Block::Kind::kWhile) {
    return absl::FailedPreconditionError(
        open.empty() ? "EndWhile: no loop is open" : "EndWhile: the innermost open block is an IF");
  }
  RETURN_IF_ERROR(AdmitFlags("EndWhile", flag));
  return Broken([&]() -> absl::Status {
    RETURN_IF_ERROR(CastBallots(flag, /*read_cancel=*/true));
    for (size_t i = 0; i < captures_.size(); ++i) {
      Capture& capture = captures_[i];
      ScopedDevice scope(capture.device);
      Block& block = capture.open.back();
      // The body's last node decides whether the body runs again.
      CUDA_RETURN_IF_ERROR(cuda::LaunchLoopCondition(
          LocalFlagsOn(i, flag), block.count, block.max_iterations, cancel_word(i), counters(i),
          agreement(i), block.handle, /*first=*/false, block.stream->get()));
      RETURN_IF_ERROR(EndBody(block));
      capture.open.pop_back();
    }
    return absl::OkStatus();
  }());
}

absl::Status CudaGraphRecording::BeginIf(const ConditionFlags& flag) {
  RETURN_IF_ERROR(AdmitFlags("BeginIf", flag));
  return Broken([&]() -> absl::Status {
    RETURN_IF_ERROR(ResetAllCountersBeforeFirstBlock());
    RETURN_IF_ERROR(CastBallots(flag, /*read_cancel=*/false));
    for (size_t i = 0; i < captures_.size(); ++i) {
      Capture& capture = captures_[i];
      ScopedDevice scope(capture.device);
      Block block;
      block.kind = Block::Kind::kIf;
      ASSIGN_OR_RETURN(cudaGraph_t graph, CapturingGraph(capture));
      CUDA_RETURN_IF_ERROR(cudaGraphConditionalHandleCreate(&block.handle, graph, 0, 0));
      CUDA_RETURN_IF_ERROR(cuda::LaunchIfCondition(LocalFlagsOn(i, flag), cancel_word(i),
                                                   agreement(i), block.handle, capture.current()));
      // Always with an else body (empty unless Else is called): whether one comes is not known
      // yet.
      ASSIGN_OR_RETURN(block.bodies, AddConditional(capture, cudaGraphCondTypeIf, block.handle, 2));
      capture.open.push_back(std::move(block));
      RETURN_IF_ERROR(BeginBody(capture.device, capture.open.back()));
    }
    return absl::OkStatus();
  }());
}

absl::Status CudaGraphRecording::Else() {
  RETURN_IF_ERROR(CheckRecording("Else"));
  const std::vector<Block>& open = captures_.front().open;
  if (open.empty() || open.back().kind != Block::Kind::kIf) {
    return absl::FailedPreconditionError("Else: the innermost open block is not an IF");
  }
  if (open.back().branch == 1) {
    return absl::FailedPreconditionError("Else: the IF already has its else branch");
  }
  return Broken([&]() -> absl::Status {
    for (Capture& capture : captures_) {
      ScopedDevice scope(capture.device);
      Block& block = capture.open.back();
      RETURN_IF_ERROR(EndBody(block));
      block.branch = 1;
      RETURN_IF_ERROR(BeginBody(capture.device, block));
    }
    return absl::OkStatus();
  }());
}

absl::Status CudaGraphRecording::EndIf() {
  RETURN_IF_ERROR(CheckRecording("EndIf"));
  const std::vector<Block>& open = captures_.front().open;
  if (open.empty() || open.back().kind != Block::Kind::kIf) {
    return absl::FailedPreconditionError("EndIf: the innermost open block is not an IF");
  }
  return Broken([&]() -> absl::Status {
    for (Capture& capture : captures_) {
      ScopedDevice scope(capture.device);
      Block& block = capture.open.back();
      RETURN_IF_ERROR(EndBody(block));
      // A branch that recorded nothing gets an empty node, so no body graph is left without
      // nodes.
      for (cudaGraph_t body : block.bodies) {
        size_t nodes = 0;
        CUDA_RETURN_IF_ERROR(cudaGraphGetNodes(body, nullptr, &nodes));
        if (nodes == 0) {
          cudaGraphNode_t empty = nullptr;
          CUDA_RETURN_IF_ERROR(cudaGraphAddEmptyNode(&empty, body, nullptr, 0));
        }
      }
      capture.open.pop_back();
    }
    return absl::OkStatus();
  }());
}

absl::StatusOr<std::unique_ptr<RecordedGraph>> CudaGraphRecording::Finish() {
  RETURN_IF_ERROR(CheckRecording("Finish"));
  const std::vector<Block>& open = captures_.front().open;
  if (!open.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("Finish: ", open.size(), " loop or IF block(s) still open (innermost: ",
                     open.back().kind == Block::Kind::kWhile ? "a loop" : "an IF", ")"));
  }
  absl::Status status;
  for (size_t i = 0; i < captures_.size() && status.ok(); ++i) {
    ScopedDevice scope(captures_[i].device);
    // The graph's last node: the replay's counters to the host, where Wait reads them once the
    // replay's event has completed. Without a conditional block nothing counts: they stay zero.
    CudaGraphControl* control = static_cast<CudaGraphControl*>(resources(i).control->host());
    if (!has_conditionals_) {
      std::memset(&control->counters, 0, sizeof(control->counters));
      continue;
    }
    status = cuda::CudaStatus(
        cudaMemcpyAsync(&control->counters, counters(i), sizeof(cuda::GraphCounters),
                        cudaMemcpyDeviceToHost, captures_[i].stream->get()),
        "copying a graph's counters back");
  }
  absl::Status ended = EndAllCaptures();
  if (status.ok()) status = ended;
  finished_ = true;
  RETURN_IF_ERROR(status);
  std::vector<cuda::CudaGraphExec> execs;
  for (size_t i = 0; i < captures_.size(); ++i) {
    if (resources(i).graph->get() == nullptr) {
      return absl::InternalError("graph capture produced no graph");
    }
    ScopedDevice scope(captures_[i].device);
    ASSIGN_OR_RETURN(cuda::CudaGraphExec exec,
                     cuda::CudaGraphExec::Instantiate(resources(i).graph->get()));
    execs.push_back(std::move(exec));
  }
  return std::make_unique<CudaRecordedGraph>(backend_, std::move(resources_), std::move(execs));
}

// ---- CudaGraphRecorder ----

absl::StatusOr<std::unique_ptr<GraphRecording>> CudaGraphRecorder::Begin(
    absl::Span<const int> devices) {
  std::shared_ptr<cuda::NcclClique> clique;
  // Start checks the devices precisely; a clique is made only over devices it would take.
  if (devices.size() > 1 && CanRecord(devices) && AgreesThroughNccl(devices)) {
    ASSIGN_OR_RETURN(clique, CliqueFor(devices));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<CudaGraphRecording> recording,
                   CudaGraphRecording::Start(backend_, devices, std::move(clique)));
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
  if (devices.size() < 2 || agreement_ == GraphAgreement::kPeer) return false;
  return agreement_ == GraphAgreement::kNccl || !PeerAccess(devices);
}

bool CudaGraphRecorder::CanRecord(absl::Span<const int> devices) const {
  if (devices.empty() || devices.size() > static_cast<size_t>(cuda::kMaxGraphDevices)) {
    return false;
  }
  for (size_t i = 0; i < devices.size(); ++i) {
    if (devices[i] < 0 || devices[i] >= backend_->device_count()) return false;
    for (size_t j = 0; j < i; ++j) {
      if (devices[j] == devices[i]) return false;
    }
  }
  return devices.size() == 1 || agreement_ != GraphAgreement::kPeer || PeerAccess(devices);
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
      agreement_ == GraphAgreement::kNccl ? "--graph_agreement=nccl" : "no peer access",
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  return clique;
}

}  // namespace distarray
