// CudaGraphRecording::RecordFusedWhile: a WHILE loop whose iteration is one runtime-compiled
// kernel (fusion/fused_loop_device.cuh), unrolled loop_unroll times per conditional iteration.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
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
namespace {

static_assert(FusedLoop::kMaxBuffers == cuda::kMaxFusedBuffers);

// Why a loop runs unfused, logged so that an operator sees it without drowning in it: a missing
// NVRTC once, a kernel that does not compile (a bug in its generator) with its source.
void LogUnfused(const absl::Status& status, const std::string& source) {
  if (absl::IsUnavailable(status)) {
    static std::atomic<bool> logged{false};
    if (!logged.exchange(true)) {
      spdlog::warn("RunGraph: loops run unfused (op by op): {}", status.ToString());
    }
    return;
  }
  spdlog::warn("RunGraph: a fusable loop runs unfused: {}\n{}", status.ToString(), source);
}

}  // namespace

absl::Status CudaGraphRecording::RecordFusedWhile(const FusedLoop& loop) {
  RETURN_IF_ERROR(CheckRecording("RecordFusedWhile"));
  const int unroll = backend_->loop_unroll_;
  if (unroll < 1) return absl::UnimplementedError("loop fusion is off (--loop_unroll=0)");
  // The interface promises UNIMPLEMENTED with nothing recorded for a loop this cannot take.
  if (loop.inputs.size() + loop.stores.size() > cuda::kMaxFusedBuffers ||
      loop.entry_flag == nullptr || loop.condition == nullptr || loop.max_iterations < 1) {
    return absl::UnimplementedError("RecordFusedWhile: not a loop this recorder fuses");
  }
  RETURN_IF_ERROR(AdmitFlag("RecordFusedWhile", loop.entry_flag));
  // Compiled before anything is recorded: a loop that cannot be compiled is recorded statement
  // by statement instead, from an untouched recording.
  bool aligned = true;
  for (const FusedLoop::Input& input : loop.inputs) {
    aligned = aligned && reinterpret_cast<uintptr_t>(AsCuda(input.buffer)->data()) % 16 == 0;
  }
  for (const FusedLoop::Store& store : loop.stores) {
    aligned = aligned && reinterpret_cast<uintptr_t>(AsCuda(store.buffer)->data()) % 16 == 0;
  }
  const std::string source = cuda::FusedLoopSource(loop, aligned);
  absl::StatusOr<std::shared_ptr<const cuda::RtcKernel>> kernel =
      backend_->rtc_.Compile(source, cuda::kFusedLoopKernelName, device_);
  if (!kernel.ok()) {
    LogUnfused(kernel.status(), source);
    return absl::UnimplementedError(kernel.status().message());
  }
  ScopedDevice scope(device_);
  int blocks_per_sm = 0;
  if (const cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
          &blocks_per_sm, (*kernel)->function(), cuda::kFusedBlockThreads, 0);
      e != cudaSuccess) {
    return absl::UnimplementedError(cuda::CudaStatus(e, "occupancy of a fused loop").message());
  }
  // A grid-stride loop over at most 8 blocks per SM: enough to stream memory at full rate, few
  // enough that the last-block ticket at the end of every iteration stays cheap; and, where the
  // array is small, blocks whose every thread has its kFusedPacksPerThread packs to load.
  const int64_t per_block = int64_t{cuda::kFusedBlockThreads} * cuda::kFusedPacksPerThread *
                            cuda::FusedLoopPackWidth(loop, aligned);
  const int64_t wanted = std::max<int64_t>(1, (loop.elements + per_block - 1) / per_block);
  const int blocks = static_cast<int>(std::min<int64_t>(
      wanted, int64_t{backend_->devices_[device_].sm_count} * std::clamp(blocks_per_sm, 1, 8)));

  cuda::FusedLoopArgs args{};
  std::vector<CudaBuffer*> reads, writes = {AsCuda(loop.condition)};
  int slot = 0;
  for (const FusedLoop::Input& input : loop.inputs) {
    reads.push_back(AsCuda(input.buffer));
    args.buffers[slot++] = AsCuda(input.buffer)->data();
  }
  for (const FusedLoop::Store& store : loop.stores) {
    writes.push_back(AsCuda(store.buffer));
    args.buffers[slot++] = AsCuda(store.buffer)->data();
  }
  // Keeps the buffers alive with the graph; the work goes on the open captures below.
  RETURN_IF_ERROR(Route("RecordFusedWhile", device_, reads, writes).status());

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
    // The device address of the state's `running` word (no host access to device memory).
    auto* running = reinterpret_cast<unsigned int*>(static_cast<char*>(state.data()) +
                                                    offsetof(cuda::FusedLoopState, running));
    resources_.loop_counts.push_back(std::move(count));
    resources_.loop_counts.push_back(std::move(state));
    resources_.kernels.push_back(*kernel);

    RETURN_IF_ERROR(OpenWhile(loop.entry_flag, loop.max_iterations, args.count, running));
    Block& open = open_.back();
    args.handle = open.handle;
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
