// CudaGraphRecording::RecordFusedWhile: a WHILE loop whose iteration is one runtime-compiled
// kernel (fusion/fused_loop_device.cuh), unrolled loop_unroll times per conditional iteration; or
// (--persistent_loops) one persistent cooperative kernel per conditional iteration running up to
// PersistentIterationsPerLaunch iterations.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/cuda/cuda_buffer.h"
#include "server/cuda/cuda_status.h"
#include "server/cuda/fusion/fused_loop_device.cuh"
#include "server/cuda/fusion/fused_loop_source.h"
#include "server/cuda/graph/recording.h"
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

// Whether a fused loop runs as a persistent kernel: on one device, and over several whose
// conditions agree through peer memory (block 0 of each device's kernel makes the exchange,
// AgreedIterationFlag). The caller has ruled out NCCL agreement.
bool PersistentFits(absl::Span<const FusedLoop> loops) {
  // The condition variable is written once per launch, not per iteration: a body that reads it
  // must see every iteration's flag, as the unrolled kernels store it.
  for (const FusedLoop& loop : loops) {
    const void* condition = AsCuda(loop.condition)->data();
    for (const FusedLoop::Input& input : loop.inputs) {
      if (AsCuda(input.buffer)->data() == condition) return false;
    }
  }
  return true;
}

// The iterations a persistent launch runs at most: the same on every device of the loop, which
// must end their launches at the same iteration (each launch ends with an exchange), so it follows
// the largest chunk.
int IterationsPerLaunch(absl::Span<const FusedLoop> loops) {
  int64_t elements = 0;
  for (const FusedLoop& loop : loops) elements = std::max(elements, loop.elements);
  return cuda::PersistentIterationsPerLaunch(elements);
}

}  // namespace

absl::Status CudaGraphRecording::RecordFusedWhile(absl::Span<const FusedLoop> loops) {
  RETURN_IF_ERROR(CheckRecording("RecordFusedWhile"));
  const int unroll = context_.loop_unroll;
  if (unroll < 1) return absl::UnimplementedError("loop fusion is off (--loop_unroll=0)");
  if (nccl_agreement()) {
    // A fused body's copies agree inside the kernel, through peer memory; an all-reduce between
    // them would cost more than the fusion saves.
    return absl::UnimplementedError(
        "RecordFusedWhile: the devices agree through NCCL; the loop is recorded statement by "
        "statement");
  }
  // The interface promises UNIMPLEMENTED with nothing recorded for a loop this cannot take.
  if (loops.size() != captures_.size()) {
    return absl::UnimplementedError(
        "RecordFusedWhile: the loop is not given once per device of the recording");
  }
  bool aligned = true;
  for (size_t i = 0; i < loops.size(); ++i) {
    const FusedLoop& loop = loops[i];
    if (loop.inputs.size() + loop.stores.size() > cuda::kMaxFusedBuffers ||
        loop.entry_flag == nullptr || loop.condition == nullptr || loop.max_iterations < 1 ||
        loop.max_iterations != loops[0].max_iterations || loop.all != loops[0].all) {
      return absl::UnimplementedError("RecordFusedWhile: not a loop this recorder fuses");
    }
    std::vector<const BufferPtr*> buffers = {&loop.entry_flag, &loop.condition};
    for (const FusedLoop::Input& input : loop.inputs) buffers.push_back(&input.buffer);
    for (const FusedLoop::Store& store : loop.stores) buffers.push_back(&store.buffer);
    for (const BufferPtr* buffer : buffers) {
      if (*buffer == nullptr || (*buffer)->device() != captures_[i].device) {
        return absl::UnimplementedError(absl::StrCat("RecordFusedWhile: the loop for device ",
                                                     captures_[i].device,
                                                     " addresses a buffer of another device"));
      }
    }
    // One source for every device: packs only where every device's buffers allow them.
    for (const FusedLoop::Input& input : loop.inputs) {
      aligned = aligned && reinterpret_cast<uintptr_t>(AsCuda(input.buffer)->data()) % 16 == 0;
    }
    for (const FusedLoop::Store& store : loop.stores) {
      aligned = aligned && reinterpret_cast<uintptr_t>(AsCuda(store.buffer)->data()) % 16 == 0;
    }
  }
  const bool persistent = context_.persistent_loops && PersistentFits(loops);
  // Compiled before anything is recorded: a loop that cannot be compiled is recorded statement
  // by statement instead, from an untouched recording.
  const std::string source = cuda::FusedLoopSource(loops[0], aligned, persistent);
  struct Launch {
    std::shared_ptr<const cuda::RtcKernel> kernel;
    int blocks = 0;
    cuda::FusedLoopArgs args{};
  };
  std::vector<Launch> launches(loops.size());
  for (size_t i = 0; i < loops.size(); ++i) {
    const FusedLoop& loop = loops[i];
    const int device = captures_[i].device;
    absl::StatusOr<std::shared_ptr<const cuda::RtcKernel>> kernel =
        context_.rtc->Compile(source, cuda::kFusedLoopKernelName, device);
    if (!kernel.ok()) {
      LogUnfused(kernel.status(), source);
      return absl::UnimplementedError(kernel.status().message());
    }
    ScopedDevice scope(device);
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
    // Rounds of the grid-stride loop balanced: a grid that needs 1.2 rounds of the largest one
    // takes two, so it takes two half-size ones (the second round of 1.2 left most threads idle
    // while its stragglers ran: 5e6 elements on one H200 took 10.1 us per iteration).
    const int64_t wanted = std::max<int64_t>(1, (loop.elements + per_block - 1) / per_block);
    const int64_t most =
        int64_t{(*context_.gpus)[device].sm_count} * std::clamp(blocks_per_sm, 1, 8);
    const int64_t rounds = (wanted + most - 1) / most;
    launches[i].blocks = static_cast<int>((wanted + rounds - 1) / rounds);
    launches[i].kernel = *std::move(kernel);

    cuda::FusedLoopArgs& args = launches[i].args;
    std::vector<CudaBuffer*> reads = {AsCuda(loop.entry_flag)}, writes = {AsCuda(loop.condition)};
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
    RETURN_IF_ERROR(Admit("RecordFusedWhile", device, reads, writes));
  }

  // A failure from here on may leave a half-built loop in the graph: the recording is broken.
  return Broken([&]() -> absl::Status {
    for (size_t i = 0; i < loops.size(); ++i) {
      const FusedLoop& loop = loops[i];
      const int device = captures_[i].device;
      ScopedDevice scope(device);
      cuda::FusedLoopArgs& args = launches[i].args;
      ASSIGN_OR_RETURN(cuda::DeviceBlock count,
                       cuda::DeviceBlock::Allocate(device, sizeof(int64_t)));
      ASSIGN_OR_RETURN(cuda::DeviceBlock state,
                       cuda::DeviceBlock::AllocateZeroed(device, sizeof(cuda::FusedLoopState)));
      args.elements = loop.elements;
      args.state = static_cast<cuda::FusedLoopState*>(state.data());
      args.condition = reinterpret_cast<unsigned char*>(AsCuda(loop.condition)->data());
      args.count = static_cast<int64_t*>(count.data());
      args.max_iterations = loop.max_iterations;
      args.cancel_word = cancel_word(i);
      args.counters = counters(i);
      args.agreement = agreement(i);
      if (persistent) {
        ASSIGN_OR_RETURN(cuda::DeviceBlock barrier, cuda::DeviceBlock::AllocateZeroed(
                                                        device, sizeof(cuda::PersistentLoopState)));
        args.persistent = static_cast<cuda::PersistentLoopState*>(barrier.data());
        args.iterations_per_launch = IterationsPerLaunch(loops);
        resources(i).loop_counts.push_back(std::move(barrier));
      }
      // The device address of the state's `running` word (no host access to device memory).
      auto* running = reinterpret_cast<unsigned int*>(static_cast<char*>(state.data()) +
                                                      offsetof(cuda::FusedLoopState, running));
      resources(i).loop_counts.push_back(std::move(count));
      resources(i).loop_counts.push_back(std::move(state));
      resources(i).kernels.push_back(launches[i].kernel);

      // The entry condition: this device's partial, agreed with the others.
      cuda::LocalFlags entry{};
      entry.flags[0] = reinterpret_cast<const unsigned char*>(AsCuda(loop.entry_flag)->data());
      entry.count = 1;
      entry.any = !loop.all;
      RETURN_IF_ERROR(OpenWhile(i, entry, loop.max_iterations, args.count, running));
      Block& open = captures_[i].open.back();
      args.handle = open.handle;
      void* params[] = {&args};
      // One launch of the loop's kernel on the body's stream, with `attribute` where given.
      auto launch = [&](const cudaLaunchAttribute* attribute) {
        cudaLaunchConfig_t config{};
        config.gridDim = dim3(launches[i].blocks);
        config.blockDim = dim3(cuda::kFusedBlockThreads);
        config.stream = open.stream->get();
        config.attrs = const_cast<cudaLaunchAttribute*>(attribute);
        config.numAttrs = attribute != nullptr ? 1 : 0;
        return cudaLaunchKernelExC(&config, launches[i].kernel->function(), params);
      };
      if (persistent) {
        // Cooperative: the launch fails rather than starts a grid whose blocks cannot all be
        // resident at once, which the grid barrier needs (the grid is sized within occupancy).
        cudaLaunchAttribute cooperative{};
        cooperative.id = cudaLaunchAttributeCooperative;
        cooperative.val.cooperative = 1;
        CUDA_RETURN_IF_ERROR(launch(&cooperative));
      }
      for (int copy = 0; copy < (persistent ? 0 : unroll); ++copy) {
        // Copies after the first are programmatic dependents of the one before (PDL): each is
        // launched while the previous one drains and waits for it in Running(). 0.2 us less per
        // iteration on H200 at every size (3.47 -> 3.28 us at 1e5; docs/design.md).
        cudaLaunchAttribute dependent{};
        dependent.id = cudaLaunchAttributeProgrammaticStreamSerialization;
        dependent.val.programmaticStreamSerializationAllowed = 1;
        CUDA_RETURN_IF_ERROR(launch(copy > 0 ? &dependent : nullptr));
      }
      RETURN_IF_ERROR(EndBody(open));
      captures_[i].open.pop_back();
      if (persistent) {
        spdlog::debug(
            "RunGraph: persistent fused loop over {} elements on device {}, {} ops, {} blocks, "
            "up to {} iterations per node",
            loop.elements, device, loop.ops.size(), launches[i].blocks, args.iterations_per_launch);
      } else {
        spdlog::debug(
            "RunGraph: fused loop over {} elements on device {}, {} ops, {} blocks, {} copies "
            "per node",
            loop.elements, device, loop.ops.size(), launches[i].blocks, unroll);
      }
    }
    return absl::OkStatus();
  }());
}

}  // namespace distarray
