#include "server/cuda/graph_recorder.h"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <thread>
#include <utility>

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/cuda/cuda_backend.h"
#include "server/cuda/cuda_buffer.h"
#include "server/cuda/cuda_status.h"

namespace distarray {
namespace {

// The recording the calling thread has open, on whichever backend: one at a time per thread
// (GraphRecorder::Begin refuses a second).
thread_local CudaGraphRecording* current_recording = nullptr;

// How often Wait looks at the replay, and how often it asks whether the caller still wants it.
constexpr auto kPollInterval = std::chrono::microseconds(50);
constexpr auto kAliveInterval = std::chrono::milliseconds(1);

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

CudaRecordedGraph::~CudaRecordedGraph() {
  ScopedDevice scope(device_);
  if (replay_unknown_) {
    // A replay may have been enqueued without its event: drain the whole stream instead.
    LogIfFailed(cudaStreamSynchronize(backend_->stream(device_)),
                "waiting for a recorded graph's last replay");
  } else if (last_replay_) {
    LogIfFailed(cudaEventSynchronize(last_replay_->get()),
                "waiting for a recorded graph's last replay");
  }
}

absl::Status CudaRecordedGraph::Launch(absl::Span<const BufferPtr> reads,
                                       absl::Span<const BufferPtr> writes) {
  if (CudaGraphRecording* recording = CudaGraphRecording::Current(backend_)) {
    return recording->Refuse("RecordedGraph::Launch", "replays are not recorded");
  }
  std::vector<CudaBuffer*> read_buffers, write_buffers;
  for (auto [from, to] : {std::pair(reads, &read_buffers), std::pair(writes, &write_buffers)}) {
    for (const BufferPtr& buffer : from) {
      if (buffer == nullptr || buffer->device() != device_) {
        return absl::InvalidArgumentError(absl::StrCat(
            "RecordedGraph::Launch: a buffer that is not on the graph's device ", device_));
      }
      to->push_back(AsCuda(buffer));
    }
  }
  // A new replay: its loops run until their flags or caps stop them, not a past cancel.
  SetCancelWord(*control(), 0);
  bool enqueued = false;
  auto replay = backend_->Launch(
      "RecordedGraph::Launch", device_, read_buffers, write_buffers, [&](cudaStream_t stream) {
        absl::StatusOr<cuda::CudaEventPtr> start = cuda::CudaEvent::RecordTimed(stream);
        if (!start.ok()) return start.status();
        absl::Status status =
            cuda::CudaStatus(cudaGraphLaunch(exec_.get(), stream), "cudaGraphLaunch");
        enqueued = status.ok();
        if (!status.ok()) return status;
        absl::StatusOr<cuda::CudaEventPtr> end = cuda::CudaEvent::RecordTimed(stream);
        if (!end.ok()) return end.status();
        replay_start_ = *std::move(start);
        replay_end_ = *std::move(end);
        return absl::OkStatus();
      });
  if (!replay.ok()) {
    if (enqueued) replay_unknown_ = true;
    return replay.status();
  }
  last_replay_ = *std::move(replay);
  return absl::OkStatus();
}

absl::StatusOr<GraphRunStats> CudaRecordedGraph::Wait(const std::function<absl::Status()>& alive) {
  if (!last_replay_) {
    return absl::FailedPreconditionError("RecordedGraph::Wait: no replay was launched");
  }
  absl::Status stop;
  auto next_check = std::chrono::steady_clock::now();
  for (;;) {
    const cudaError_t query = cudaEventQuery(last_replay_->get());
    if (query == cudaSuccess) break;
    if (query != cudaErrorNotReady) return cuda::CudaStatus(query, "graph replay");
    const auto now = std::chrono::steady_clock::now();
    if (stop.ok() && alive && now >= next_check) {
      stop = alive();
      next_check = now + kAliveInterval;
      // The loop conditions read the word (loop_control.h): a running loop ends at an
      // evaluation within ~50 µs of device time and the rest of the replay drains, so the
      // device is left in a consistent state.
      if (!stop.ok()) SetCancelWord(*control(), 1);
    }
    std::this_thread::sleep_for(kPollInterval);
  }
  if (!stop.ok()) return stop;
  // Complete: the graph's last node copied the counters before the replay's event.
  cuda::GraphCounters counters;
  std::memcpy(&counters, &control()->counters, sizeof(counters));
  GraphRunStats stats;
  stats.iterations = static_cast<int64_t>(counters.iterations);
  stats.hit_iteration_cap = counters.hit_iteration_cap != 0;
  stats.cancelled = counters.cancelled != 0;
  float device_ms = 0;
  if (replay_start_ && replay_end_ &&
      cudaEventElapsedTime(&device_ms, replay_start_->get(), replay_end_->get()) == cudaSuccess) {
    stats.device_seconds = device_ms * 1e-3;
  }
  return stats;
}

// ---- CudaGraphRecording ----

CudaGraphRecording* CudaGraphRecording::Current(const CudaBackend* backend) {
  CudaGraphRecording* recording = current_recording;
  return recording != nullptr && recording->backend_ == backend ? recording : nullptr;
}

absl::StatusOr<std::unique_ptr<CudaGraphRecording>> CudaGraphRecording::Start(CudaBackend* backend,
                                                                              int device) {
  if (current_recording != nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("GraphRecorder::Begin: this thread is already recording a graph on device ",
                     current_recording->device_));
  }
  if (device < 0 || device >= backend->device_count()) {
    return absl::InvalidArgumentError(absl::StrCat("GraphRecorder::Begin: no device ", device,
                                                   " (the backend has ", backend->device_count(),
                                                   ")"));
  }
  ScopedDevice scope(device);
  // Not the device's stream: other threads keep using that one while this one captures.
  ASSIGN_OR_RETURN(cuda::CudaStream stream, cuda::CudaStream::Create(device));
  std::unique_ptr<CudaGraphRecording> recording(
      new CudaGraphRecording(backend, device, std::move(stream)));
  CudaGraphResources& resources = recording->resources_;
  ASSIGN_OR_RETURN(cuda::DeviceBlock counters,
                   cuda::DeviceBlock::Allocate(device, sizeof(cuda::GraphCounters)));
  resources.counters.emplace(std::move(counters));
  ASSIGN_OR_RETURN(cuda::MappedHostBlock control,
                   cuda::MappedHostBlock::Allocate(sizeof(CudaGraphControl)));
  resources.control.emplace(std::move(control));

  // Relaxed: the recording thread still makes calls that the other capture modes forbid while a
  // capture is open (cudaMalloc for the graph's slots), and other threads' calls are not
  // restricted by this capture at all. A fresh stream has no pending work, so the captured work
  // depends on nothing outside the graph; a replay's inputs are ordered by Launch.
  CUDA_RETURN_IF_ERROR(
      cudaStreamBeginCapture(recording->stream_.get(), cudaStreamCaptureModeRelaxed));
  recording->capturing_ = true;
  recording->slot_ = &current_recording;
  current_recording = recording.get();
  // The graph's first node: every replay counts from zero. At the top level, so it runs once per
  // replay, before any loop.
  RETURN_IF_ERROR(
      cuda::CudaStatus(cudaMemsetAsync(resources.counters->data(), 0, sizeof(cuda::GraphCounters),
                                       recording->stream_.get()),
                       "resetting a graph's counters"));
  return recording;
}

CudaGraphRecording::~CudaGraphRecording() {
  // Abandoned (or finished, when this is a no-op): no capture may outlive the recording, and
  // what it allocated is freed only once nothing is capturing (resources_ goes after this).
  absl::Status status = EndAllCaptures();
  if (!status.ok()) spdlog::warn("abandoning a graph recording: {}", status.ToString());
}

cudaStream_t CudaGraphRecording::current() const {
  return open_.empty() ? stream_.get() : open_.back().stream->get();
}

absl::Status CudaGraphRecording::Refuse(absl::string_view call, absl::string_view why) const {
  return absl::FailedPreconditionError(
      absl::StrCat(call, " while this thread records a graph on device ", device_, ": ", why));
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
  if (device != device_) return Refuse(call, absl::StrCat("it is work for device ", device));
  for (const std::vector<CudaBuffer*>* buffers : {&reads, &writes}) {
    for (const CudaBuffer* buffer : *buffers) {
      if (buffer->device() != device_) {
        return Refuse(call, absl::StrCat("it touches a buffer of device ", buffer->device()));
      }
    }
  }
  // Every replay addresses these buffers: none may be freed while the graph lives, whoever else
  // lets go of them meanwhile.
  for (const std::vector<CudaBuffer*>* buffers : {&reads, &writes}) {
    for (CudaBuffer* buffer : *buffers) Keep(buffer->shared_from_this());
  }
  return current();
}

absl::Status CudaGraphRecording::AdmitFlag(absl::string_view call, const BufferPtr& flag) {
  RETURN_IF_ERROR(CheckRecording(call));
  if (flag == nullptr) return absl::InvalidArgumentError(absl::StrCat(call, ": no flag buffer"));
  if (flag->device() != device_) {
    return Refuse(call, absl::StrCat("its flag is a buffer of device ", flag->device()));
  }
  Keep(flag);
  return absl::OkStatus();
}

absl::StatusOr<cudaGraph_t> CudaGraphRecording::CapturingGraph() {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = nullptr;
  CUDA_RETURN_IF_ERROR(
      cudaStreamGetCaptureInfo(current(), &status, nullptr, &graph, nullptr, nullptr, nullptr));
  if (status != cudaStreamCaptureStatusActive) {
    return absl::InternalError(
        "graph capture is no longer active (an earlier call invalidated it)");
  }
  return graph;
}

absl::StatusOr<std::array<cudaGraph_t, 2>> CudaGraphRecording::AddConditional(
    cudaGraphConditionalNodeType type, cudaGraphConditionalHandle handle, unsigned int size) {
  const cudaStream_t stream = current();
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

absl::Status CudaGraphRecording::BeginBody(Block& block) {
  if (!block.stream) {
    ASSIGN_OR_RETURN(cuda::CudaStream stream, cuda::CudaStream::Create(device_));
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
  ScopedDevice scope(device_);
  absl::Status status;
  for (auto it = open_.rbegin(); it != open_.rend(); ++it) {
    if (!it->capturing) continue;
    absl::Status ended = EndBody(*it);
    if (status.ok()) status = ended;
  }
  open_.clear();
  cudaGraph_t graph = nullptr;
  absl::Status ended =
      cuda::CudaStatus(cudaStreamEndCapture(stream_.get(), &graph), "ending the graph capture");
  if (status.ok()) status = ended;
  // Null when the capture was invalidated; owned by the recording (then its graph) otherwise.
  resources_.graph.emplace(graph);
  capturing_ = false;
  if (*slot_ == this) *slot_ = nullptr;
  return status;
}

absl::Status CudaGraphRecording::BeginWhile(const BufferPtr& flag, int64_t max_iterations) {
  RETURN_IF_ERROR(AdmitFlag("BeginWhile", flag));
  if (max_iterations < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("BeginWhile: max_iterations must be at least 1, not ", max_iterations));
  }
  ScopedDevice scope(device_);
  // A failure from here on may leave a half-built loop in the graph: the recording is broken.
  return Broken([&]() -> absl::Status {
    ASSIGN_OR_RETURN(cuda::DeviceBlock count,
                     cuda::DeviceBlock::Allocate(device_, sizeof(int64_t)));
    int64_t* count_data = static_cast<int64_t*>(count.data());
    resources_.loop_counts.push_back(std::move(count));
    return OpenWhile(flag, max_iterations, count_data, /*running=*/nullptr);
  }());
}

absl::Status CudaGraphRecording::OpenWhile(const BufferPtr& flag, int64_t max_iterations,
                                           int64_t* count, unsigned int* running) {
  Block block;
  block.kind = Block::Kind::kWhile;
  block.count = count;
  block.max_iterations = max_iterations;
  // The handle belongs to the graph that will hold the node (a body graph when nested).
  ASSIGN_OR_RETURN(cudaGraph_t graph, CapturingGraph());
  CUDA_RETURN_IF_ERROR(cudaGraphConditionalHandleCreate(&block.handle, graph, 0, 0));
  // While semantics: the condition is evaluated before the WHILE node, so a false flag runs the
  // body zero times; this evaluation also restarts the loop's count.
  CUDA_RETURN_IF_ERROR(cuda::LaunchLoopCondition(AsCuda(flag)->data(), count, max_iterations,
                                                 cancel_word(), counters(), block.handle,
                                                 /*first=*/true, current(), running));
  ASSIGN_OR_RETURN(block.bodies, AddConditional(cudaGraphCondTypeWhile, block.handle, 1));
  open_.push_back(std::move(block));
  return BeginBody(open_.back());
}

absl::Status CudaGraphRecording::EndWhile(const BufferPtr& flag) {
  RETURN_IF_ERROR(CheckRecording("EndWhile"));
  if (open_.empty() || open_.back().kind != Block::Kind::kWhile) {
    return absl::FailedPreconditionError(open_.empty()
                                             ? "EndWhile: no loop is open"
                                             : "EndWhile: the innermost open block is an IF");
  }
  RETURN_IF_ERROR(AdmitFlag("EndWhile", flag));
  ScopedDevice scope(device_);
  return Broken([&]() -> absl::Status {
    Block& block = open_.back();
    // The body's last node decides whether the body runs again.
    CUDA_RETURN_IF_ERROR(cuda::LaunchLoopCondition(
        AsCuda(flag)->data(), block.count, block.max_iterations, cancel_word(), counters(),
        block.handle, /*first=*/false, block.stream->get()));
    RETURN_IF_ERROR(EndBody(block));
    open_.pop_back();
    return absl::OkStatus();
  }());
}

absl::Status CudaGraphRecording::BeginIf(const BufferPtr& flag) {
  RETURN_IF_ERROR(AdmitFlag("BeginIf", flag));
  ScopedDevice scope(device_);
  return Broken([&]() -> absl::Status {
    Block block;
    block.kind = Block::Kind::kIf;
    ASSIGN_OR_RETURN(cudaGraph_t graph, CapturingGraph());
    CUDA_RETURN_IF_ERROR(cudaGraphConditionalHandleCreate(&block.handle, graph, 0, 0));
    CUDA_RETURN_IF_ERROR(cuda::LaunchIfCondition(AsCuda(flag)->data(), block.handle, current()));
    // Always with an else body (empty unless Else is called): whether one comes is not known yet.
    ASSIGN_OR_RETURN(block.bodies, AddConditional(cudaGraphCondTypeIf, block.handle, 2));
    open_.push_back(std::move(block));
    return BeginBody(open_.back());
  }());
}

absl::Status CudaGraphRecording::Else() {
  RETURN_IF_ERROR(CheckRecording("Else"));
  if (open_.empty() || open_.back().kind != Block::Kind::kIf) {
    return absl::FailedPreconditionError("Else: the innermost open block is not an IF");
  }
  if (open_.back().branch == 1) {
    return absl::FailedPreconditionError("Else: the IF already has its else branch");
  }
  ScopedDevice scope(device_);
  return Broken([&]() -> absl::Status {
    Block& block = open_.back();
    RETURN_IF_ERROR(EndBody(block));
    block.branch = 1;
    return BeginBody(block);
  }());
}

absl::Status CudaGraphRecording::EndIf() {
  RETURN_IF_ERROR(CheckRecording("EndIf"));
  if (open_.empty() || open_.back().kind != Block::Kind::kIf) {
    return absl::FailedPreconditionError("EndIf: the innermost open block is not an IF");
  }
  ScopedDevice scope(device_);
  return Broken([&]() -> absl::Status {
    Block& block = open_.back();
    RETURN_IF_ERROR(EndBody(block));
    // A branch that recorded nothing gets an empty node, so no body graph is left without nodes.
    for (cudaGraph_t body : block.bodies) {
      size_t nodes = 0;
      CUDA_RETURN_IF_ERROR(cudaGraphGetNodes(body, nullptr, &nodes));
      if (nodes == 0) {
        cudaGraphNode_t empty = nullptr;
        CUDA_RETURN_IF_ERROR(cudaGraphAddEmptyNode(&empty, body, nullptr, 0));
      }
    }
    open_.pop_back();
    return absl::OkStatus();
  }());
}

absl::StatusOr<std::unique_ptr<RecordedGraph>> CudaGraphRecording::Finish() {
  RETURN_IF_ERROR(CheckRecording("Finish"));
  if (!open_.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("Finish: ", open_.size(), " loop or IF block(s) still open (innermost: ",
                     open_.back().kind == Block::Kind::kWhile ? "a loop" : "an IF", ")"));
  }
  ScopedDevice scope(device_);
  // The graph's last node: the replay's counters to the host, where Wait reads them once the
  // replay's event has completed.
  absl::Status status = cuda::CudaStatus(
      cudaMemcpyAsync(&control()->counters, resources_.counters->data(),
                      sizeof(cuda::GraphCounters), cudaMemcpyDeviceToHost, stream_.get()),
      "copying a graph's counters back");
  absl::Status ended = EndAllCaptures();
  if (status.ok()) status = ended;
  finished_ = true;
  RETURN_IF_ERROR(status);
  if (resources_.graph->get() == nullptr) {
    return absl::InternalError("graph capture produced no graph");
  }
  ASSIGN_OR_RETURN(cuda::CudaGraphExec exec,
                   cuda::CudaGraphExec::Instantiate(resources_.graph->get()));
  return std::make_unique<CudaRecordedGraph>(backend_, device_, std::move(resources_),
                                             std::move(exec));
}

// ---- CudaGraphRecorder ----

absl::StatusOr<std::unique_ptr<GraphRecording>> CudaGraphRecorder::Begin(int device) {
  ASSIGN_OR_RETURN(std::unique_ptr<CudaGraphRecording> recording,
                   CudaGraphRecording::Start(backend_, device));
  return recording;
}

}  // namespace distarray
