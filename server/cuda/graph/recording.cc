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
#include "server/cuda/graph/recorded_graph.h"
#include "server/cuda/kernels.h"

namespace distarray {

absl::StatusOr<std::unique_ptr<CudaGraphRecording>> CudaGraphRecording::Start(
    const Context& context, absl::Span<const int> devices,
    std::shared_ptr<cuda::NcclClique> clique) {
  if (devices.empty() || devices.size() > static_cast<size_t>(cuda::kMaxGraphDevices)) {
    return absl::InvalidArgumentError(absl::StrCat("GraphRecorder::Begin: ", devices.size(),
                                                   " devices (1 to ", cuda::kMaxGraphDevices,
                                                   " may be recorded together)"));
  }
  bool peer_access = true;
  for (size_t i = 0; i < devices.size(); ++i) {
    if (devices[i] < 0 || devices[i] >= context.gpus->count()) {
      return absl::InvalidArgumentError(absl::StrCat("GraphRecorder::Begin: no device ", devices[i],
                                                     " (the backend has ", context.gpus->count(),
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
  std::unique_ptr<CudaGraphRecording> recording(new CudaGraphRecording(context));
  if (devices.size() > 1) recording->resources_.clique = std::move(clique);
  recording->peer_access_ = peer_access;
  for (const int device : devices) {
    ScopedDevice scope(device);
    Capture capture;
    capture.device = device;
    // Not the device's stream: eager work keeps using that one while this one captures.
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
  recording->capturing_ = true;
  for (size_t i = 0; i < recording->captures_.size(); ++i) {
    Capture& capture = recording->captures_[i];
    ScopedDevice scope(capture.device);
    // Relaxed: the recording still makes calls that the other capture modes forbid while a
    // capture is open (cudaMalloc for the graph's slots), and eager work on other threads is not
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

absl::Status CudaGraphRecording::NotHeld(absl::string_view call, absl::string_view why) const {
  return absl::InternalError(absl::StrCat(call, " in a recording on device(s) ", DeviceList(), ": ",
                                          why, " (the recorder should have said so before)"));
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

absl::Status CudaGraphRecording::Admit(absl::string_view call, int device,
                                       const std::vector<CudaBuffer*>& reads,
                                       const std::vector<CudaBuffer*>& writes) {
  RETURN_IF_ERROR(CheckRecording(call));
  if (!records(device)) return NotHeld(call, absl::StrCat("it is work for device ", device));
  for (const std::vector<CudaBuffer*>* buffers : {&reads, &writes}) {
    for (const CudaBuffer* buffer : *buffers) {
      if (buffer->device() != device) {
        return NotHeld(call, absl::StrCat("its work on device ", device,
                                          " touches a buffer of device ", buffer->device()));
      }
    }
  }
  // Every replay addresses these buffers: none may be freed while the graph lives, whoever else
  // lets go of them meanwhile.
  for (const std::vector<CudaBuffer*>* buffers : {&reads, &writes}) {
    for (CudaBuffer* buffer : *buffers) Keep(buffer->shared_from_this());
  }
  return absl::OkStatus();
}

absl::Status CudaGraphRecording::Submit(absl::string_view call, CudaWork work) {
  RETURN_IF_ERROR(Admit(call, work.device, work.reads, work.writes));
  // The lock orders the enqueue against eager use of the device's shared cuBLAS handle and
  // scratch; no hazards: the replay as a whole waits for and marks its inputs and outputs
  // (RecordedGraph::Launch).
  std::lock_guard lock(context_.gpus->enqueue_mu);
  ScopedDevice scope(work.device);
  return work.enqueue(captures_[IndexOf(work.device)].current());
}

absl::StatusOr<BufferPtr> CudaGraphRecording::Allocate(int device, int64_t bytes) {
  bytes = std::max<int64_t>(bytes, 1);
  RETURN_IF_ERROR(CheckRecording("Allocate"));
  if (!records(device)) return NotHeld("Allocate", absl::StrCat("it is for device ", device));
  CudaDevice& state = (*context_.gpus)[device];
  RETURN_IF_ERROR(state.ledger->Reserve(bytes));
  ScopedDevice scope(device);
  void* data = nullptr;
  cudaError_t e = cudaMalloc(&data, bytes);
  if (e == cudaErrorMemoryAllocation) {
    // The stream-ordered pool keeps freed memory up to the device's limit, which the ledger
    // already counts as free: hand it back to the driver and try once more.
    cudaGetLastError();
    cudaMemPool_t pool;
    if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess) cudaMemPoolTrimTo(pool, 0);
    e = cudaMalloc(&data, bytes);
  }
  if (e != cudaSuccess) {
    state.ledger->Release(bytes);
    state.ledger->CountFailure();
    cudaGetLastError();
    return cuda::CudaStatus(
        e, absl::StrCat("device ", device, ": allocating ", bytes, " bytes for a graph"));
  }
  // A null stream marks plain memory (cudaFree on release); the recording (then its graph)
  // holds it for the graph's whole life.
  auto buffer = std::make_shared<CudaBuffer>(device, bytes, data, nullptr, state.ledger.get());
  Keep(buffer);
  return buffer;
}

absl::Status CudaGraphRecording::FillConstant(DType dtype, const BufferBox& dst,
                                              const Scalar& value) {
  return Submit("FillConstant", cuda::FillConstantWork(dtype, dst, value));
}

absl::Status CudaGraphRecording::FillGenerated(DType dtype, const BufferPtr& dst,
                                               const Shape& global_shape, const Box& chunk_box,
                                               const Generator& generator) {
  return Submit("FillGenerated",
                cuda::FillGeneratedWork(dtype, dst, global_shape, chunk_box, generator));
}

absl::Status CudaGraphRecording::Copy(DType dtype, absl::Span<const BoxCopy> copies) {
  // Checked as a batch before any of it is recorded.
  for (const BoxCopy& copy : copies) {
    const int from = copy.src.buffer->device(), to = copy.dst.buffer->device();
    if (from != to && (!records(from) || !records(to))) {
      return NotHeld("Copy", absl::StrCat("it copies across devices (device ", from, " to ", to,
                                          ") and the recording does not hold both"));
    }
  }
  // Same-device copies first, then the cross-device ones (the contract in device_ops.h).
  std::vector<const BoxCopy*> cross;
  for (const BoxCopy& copy : copies) {
    if (copy.src.buffer->device() == copy.dst.buffer->device()) {
      RETURN_IF_ERROR(Submit("Copy", cuda::SameDeviceCopyWork(dtype, copy)));
    } else {
      cross.push_back(&copy);
    }
  }
  if (cross.empty()) return absl::OkStatus();
  return RecordPeerCopies(dtype, cross);
}

absl::Status CudaGraphRecording::Elementwise(ElementwiseOpId op, DType compute, DType storage,
                                             const BufferPtr& out, int64_t n,
                                             absl::Span<const ElementwiseArg> args) {
  return Submit("Elementwise",
                cuda::ElementwiseWork(*context_.gpus, op, compute, storage, out, n, args));
}

absl::Status CudaGraphRecording::Cast(DType from, DType to, const BufferPtr& src,
                                      const BufferPtr& dst, int64_t n) {
  return Submit("Cast", cuda::CastWork(*context_.gpus, from, to, src, dst, n));
}

absl::Status CudaGraphRecording::Reduce(ReduceKind kind, DType in, DType storage,
                                        const BufferPtr& src, const ReduceGeometry& geometry,
                                        const BufferPtr& dst, double scale,
                                        const BufferPtr& extreme) {
  return Submit("Reduce", cuda::ReduceWork(*context_.gpus, kind, in, storage, src, geometry, dst,
                                           scale, extreme));
}

absl::Status CudaGraphRecording::Sort(DType dtype, const SortRuns& sort) {
  ASSIGN_OR_RETURN(CudaWork work, cuda::SortWork(dtype, sort));
  return Submit("Sort", std::move(work));
}

int64_t CudaGraphRecording::SortScratchBytes(DType dtype, const SortRuns& sort) const {
  return cuda::SortScratchBytes(dtype, sort);
}

absl::Status CudaGraphRecording::Scan(DType dtype, const ScanLines& scan) {
  ASSIGN_OR_RETURN(CudaWork work, cuda::ScanWork(dtype, scan));
  return Submit("Scan", std::move(work));
}

int64_t CudaGraphRecording::ScanScratchBytes(DType dtype, const ScanLines& scan) const {
  return cuda::ScanScratchBytes(dtype, scan);
}

absl::Status CudaGraphRecording::SearchSorted(DType dtype, const SearchRuns& search) {
  ASSIGN_OR_RETURN(CudaWork work, cuda::SearchSortedWork(dtype, search));
  return Submit("SearchSorted", std::move(work));
}

absl::Status CudaGraphRecording::CsrMatmul(DType dtype, const CsrProduct& product) {
  ASSIGN_OR_RETURN(CudaWork work, cuda::CsrMatmulWork(dtype, product));
  return Submit("CsrMatmul", std::move(work));
}

absl::Status CudaGraphRecording::CsrToDense(DType dtype, const CsrProduct& block) {
  ASSIGN_OR_RETURN(CudaWork work, cuda::CsrToDenseWork(dtype, block));
  return Submit("CsrToDense", std::move(work));
}

absl::Status CudaGraphRecording::Merge(DType dtype, const MergeRuns& merge) {
  ASSIGN_OR_RETURN(CudaWork work, cuda::MergeWork(dtype, merge));
  return Submit("Merge", std::move(work));
}

int64_t CudaGraphRecording::MergeScratchBytes(DType dtype, const MergeRuns& merge) const {
  return cuda::MergeScratchBytes(dtype, merge);
}

absl::Status CudaGraphRecording::Gemm(DType dtype, const BufferPtr& a, const BufferPtr& b,
                                      const BufferPtr& c, const GemmShape& shape, bool allow_tf32) {
  ASSIGN_OR_RETURN(CudaWork work,
                   cuda::GemmWork(*context_.gpus, dtype, a, b, c, shape, allow_tf32));
  return Submit("Gemm", std::move(work));
}

void CudaGraphRecording::CountReshardBytes(int device, int64_t bytes) {
  context_.backend->CountReshardBytes(device, bytes);
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
  return std::make_unique<CudaRecordedGraph>(context_.gpus, std::move(resources_),
                                             std::move(execs));
}

}  // namespace distarray
