// CudaGraphRecording::RecordFusedWhile: a WHILE loop whose iteration is one runtime-compiled
// kernel (fusion/fused_loop_device.cuh), unrolled loop_unroll times per conditional iteration.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/cuda/cuda_backend.h"
#include "server/cuda/cuda_buffer.h"
#include "server/cuda/cuda_status.h"
#include "server/cuda/fusion/fused_loop_device.cuh"
#include "server/cuda/fusion/fused_loop_source.h"
#include "server/cuda/graph_recorder.h"
#include "spdlog/spdlog.h"

namespace distarray {

static_assert(FusedLoop::kMaxBuffers == cuda::kMaxFusedBuffers);

absl::Status CudaGraphRecording::RecordFusedWhile(const FusedLoop& loop) {
  RETURN_IF_ERROR(CheckRecording("RecordFusedWhile"));
  const int unroll = backend_->loop_unroll_;
  if (unroll < 1) return absl::UnimplementedError("loop fusion is off (--loop_unroll=0)");
  if (loop.max_iterations < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "RecordFusedWhile: max_iterations must be at least 1, not ", loop.max_iterations));
  }
  // Compiled before anything is recorded: a loop that cannot be compiled is recorded statement
  // by statement instead, from an untouched recording.
  const std::string source = cuda::FusedLoopSource(loop);
  absl::StatusOr<std::shared_ptr<const cuda::RtcKernel>> kernel =
      backend_->rtc_.Compile(source, cuda::kFusedLoopKernelName, device_);
  if (!kernel.ok()) {
    spdlog::warn("RunGraph: a fusable loop runs unfused: {}\n{}", kernel.status().ToString(),
                 source);
    return absl::UnimplementedError(kernel.status().message());
  }
  ScopedDevice scope(device_);
  int blocks_per_sm = 0;
  CUDA_RETURN_IF_ERROR(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &blocks_per_sm, (*kernel)->function(), cuda::kFusedBlockThreads, 0));
  // A grid-stride loop over at most 8 blocks per SM: enough to stream memory at full rate, few
  // enough that the last-block ticket at the end of every iteration stays cheap; and at least
  // kFusedElementsPerThread elements a thread, so small arrays take few blocks.
  const int64_t per_block = int64_t{cuda::kFusedBlockThreads} * cuda::kFusedElementsPerThread;
  const int64_t wanted = std::max<int64_t>(1, (loop.elements + per_block - 1) / per_block);
  const int blocks = static_cast<int>(std::min<int64_t>(
      wanted, int64_t{backend_->devices_[device_].sm_count} * std::clamp(blocks_per_sm, 1, 8)));

  cuda::FusedLoopArgs args{};
  std::vector<CudaBuffer*> reads = {AsCuda(loop.entry_flag)};
  std::vector<CudaBuffer*> writes = {AsCuda(loop.condition)};
  int slot = 0;
  for (const FusedLoop::Input& input : loop.inputs) {
    reads.push_back(AsCuda(input.buffer));
    args.buffers[slot++] = AsCuda(input.buffer)->data();
  }
  for (const FusedLoop::Store& store : loop.stores) {
    writes.push_back(AsCuda(store.buffer));
    args.buffers[slot++] = AsCuda(store.buffer)->data();
  }
  ASSIGN_OR_RETURN(const cudaStream_t stream, Route("RecordFusedWhile", device_, reads, writes));
  (void)stream;  // the entry condition goes on current(); the body on its own capture

  // A failure from here on may leave a half-built loop in the graph: the recording is broken.
  return Broken([&]() -> absl::Status {
    ASSIGN_OR_RETURN(cuda::DeviceBlock count,
                     cuda::DeviceBlock::Allocate(device_, sizeof(int64_t)));
    ASSIGN_OR_RETURN(cuda::DeviceBlock state,
                     cuda::DeviceBlock::AllocateZeroed(device_, sizeof(cuda::FusedLoopState)));
    args.elements = loop.elements;
    args.state = static_cast<cuda::FusedLoopState*>(state.data());
    args.condition = reinterpret_cast<unsigned char*>(AsCuda(loop.condition)->data());
    args.count = static_cast<int64_t*>(count.data());
    args.max_iterations = loop.max_iterations;
    args.cancel_word = cancel_word();
    args.counters = counters();
    resources_.loop_counts.push_back(std::move(count));
    resources_.loop_counts.push_back(std::move(state));
    resources_.kernels.push_back(*kernel);

    Block block;
    block.kind = Block::Kind::kWhile;
    ASSIGN_OR_RETURN(cudaGraph_t graph, CapturingGraph());
    CUDA_RETURN_IF_ERROR(cudaGraphConditionalHandleCreate(&block.handle, graph, 0, 0));
    args.handle = block.handle;
    // While semantics, as BeginWhile: the entry evaluation also tells the first copy to run.
    CUDA_RETURN_IF_ERROR(cuda::LaunchLoopCondition(
        AsCuda(loop.entry_flag)->data(), args.count, loop.max_iterations, cancel_word(), counters(),
        block.handle, /*first=*/true, current(), &args.state->running));
    ASSIGN_OR_RETURN(block.bodies, AddConditional(cudaGraphCondTypeWhile, block.handle, 1));
    open_.push_back(std::move(block));
    Block& open = open_.back();
    RETURN_IF_ERROR(BeginBody(open));
    void* params[] = {&args};
    for (int copy = 0; copy < unroll; ++copy) {
      CUDA_RETURN_IF_ERROR(cudaLaunchKernel((*kernel)->function(), dim3(blocks),
                                            dim3(cuda::kFusedBlockThreads), params, 0,
                                            open.stream->get()));
    }
    RETURN_IF_ERROR(EndBody(open));
    open_.pop_back();
    spdlog::debug("RunGraph: fused loop over {} elements, {} ops, {} blocks, {} copies per node",
                  loop.elements, loop.ops.size(), blocks, unroll);
    return absl::OkStatus();
  }());
}

}  // namespace distarray
