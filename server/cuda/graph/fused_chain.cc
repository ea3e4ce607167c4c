// CudaGraphRecording::RecordFusedChain: a straight-line run of elementwise ops (the dozens of 0-d
// operations of a solver's recurrence) recorded as one runtime-compiled kernel per device instead
// of a kernel per op.
#include <algorithm>
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

static_assert(FusedLoop::kMaxChainBuffers == cuda::kMaxChainBuffers);

absl::Status CudaGraphRecording::RecordFusedChain(absl::Span<const FusedLoop> chains) {
  RETURN_IF_ERROR(CheckRecording("RecordFusedChain"));
  if (context_.loop_unroll < 1) {
    return absl::UnimplementedError("fusion is off (--loop_unroll=0)");
  }
  if (chains.empty()) return absl::UnimplementedError("RecordFusedChain: no chain");
  const std::string source = cuda::FusedChainSource(chains[0]);
  std::vector<CudaWork> works;
  for (const FusedLoop& chain : chains) {
    if (chain.inputs.size() + chain.stores.size() > cuda::kMaxChainBuffers || chain.elements < 1) {
      return absl::UnimplementedError("RecordFusedChain: not a chain this recorder fuses");
    }
    int device = -1;
    std::vector<CudaBuffer*> reads, writes;
    cuda::FusedChainArgs args{};
    int slot = 0;
    for (const FusedLoop::Input& input : chain.inputs) {
      if (input.buffer == nullptr) return absl::UnimplementedError("RecordFusedChain: no buffer");
      device = input.buffer->device();
      reads.push_back(AsCuda(input.buffer));
      args.buffers[slot++] = AsCuda(input.buffer)->data();
    }
    for (const FusedLoop::Store& store : chain.stores) {
      if (store.buffer == nullptr) return absl::UnimplementedError("RecordFusedChain: no buffer");
      device = store.buffer->device();
      writes.push_back(AsCuda(store.buffer));
      args.buffers[slot++] = AsCuda(store.buffer)->data();
    }
    if (chain.sum.has_value()) {
      if (chain.sum_buffer == nullptr) return absl::UnimplementedError("RecordFusedChain: no sum");
      writes.push_back(AsCuda(chain.sum_buffer));
      args.sum = AsCuda(chain.sum_buffer)->data();
    }
    for (CudaBuffer* b : writes) {
      if (b->device() != device) {
        return absl::UnimplementedError("RecordFusedChain: a chain spans devices");
      }
    }
    for (CudaBuffer* b : reads) {
      if (b->device() != device) {
        return absl::UnimplementedError("RecordFusedChain: a chain spans devices");
      }
    }
    if (device < 0 || !records(device)) {
      return absl::UnimplementedError("RecordFusedChain: a chain for a device not recorded");
    }
    // Compiled before anything is recorded (cached by source): a chain that does not compile
    // is recorded op by op instead, from an untouched recording.
    absl::StatusOr<std::shared_ptr<const cuda::RtcKernel>> kernel =
        context_.rtc->Compile(source, cuda::kFusedChainKernelName, device);
    if (!kernel.ok()) {
      if (!absl::IsUnavailable(kernel.status())) {
        spdlog::warn("RunGraph: a chain runs op by op: {}\n{}", kernel.status().ToString(), source);
      }
      return absl::UnimplementedError(kernel.status().message());
    }
    resources(IndexOf(device)).kernels.push_back(*kernel);
    args.elements = chain.elements;
    if (chain.sum.has_value()) {
      // The partials and the last block's ticket, kept with the graph (zeroed once; each launch's
      // last block leaves the ticket zero).
      ASSIGN_OR_RETURN(cuda::DeviceBlock scratch,
                       cuda::DeviceBlock::AllocateZeroed(device, sizeof(cuda::ChainSumScratch)));
      args.scratch = static_cast<cuda::ChainSumScratch*>(scratch.data());
      resources(IndexOf(device)).loop_counts.push_back(std::move(scratch));
    }
    const void* function = (*kernel)->function();
    const int blocks = static_cast<int>(std::min<int64_t>(
        (chain.elements + cuda::kFusedBlockThreads - 1) / cuda::kFusedBlockThreads,
        cuda::kMaxChainBlocks));
    // A sum reduces whole warps (BlockSum): its threads past the elements add nothing.
    const int threads =
        chain.sum.has_value()
            ? cuda::kFusedBlockThreads
            : static_cast<int>(std::min<int64_t>(chain.elements, cuda::kFusedBlockThreads));
    works.push_back(
        CudaWork{device, std::move(reads), std::move(writes),
                 [function, args, blocks, threads](cudaStream_t stream) mutable {
                   void* params[] = {&args};
                   return cuda::CudaStatus(
                       cudaLaunchKernel(function, dim3(blocks), dim3(threads), params, 0, stream),
                       "fused chain kernel");
                 }});
  }
  for (CudaWork& work : works) RETURN_IF_ERROR(Submit("RecordFusedChain", std::move(work)));
  spdlog::debug("RunGraph: fused chain of {} ops on {} device(s)", chains[0].ops.size(),
                chains.size());
  return absl::OkStatus();
}

}  // namespace distarray
