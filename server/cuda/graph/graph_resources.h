// What a CUDA recording creates on its devices (graphs, counters, the control block, exchange
// blocks, the fused loops' kernels), moved into the recorded graph at Finish.
#ifndef DISTARRAY_SERVER_CUDA_GRAPH_GRAPH_RESOURCES_H_
#define DISTARRAY_SERVER_CUDA_GRAPH_GRAPH_RESOURCES_H_

#include <memory>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "server/backend/device_ops.h"
#include "server/cuda/cuda_resources.h"
#include "server/cuda/fusion/rtc_compiler.h"
#include "server/cuda/loop_control.h"

namespace distarray {

// What a recording creates on one device and its replays use there.
struct CudaDeviceGraph {
  int device = 0;
  // The fused loops' kernels. Declared first, so destroyed last: the graph's kernel nodes point
  // into their libraries.
  std::vector<std::shared_ptr<const cuda::RtcKernel>> kernels;
  std::optional<cuda::CudaGraph> graph;
  // Per-replay statistics on the device, and the host block holding the cancel word the loop
  // conditions read and the statistics the graph's last node copies back.
  std::optional<cuda::DeviceBlock> counters;
  std::optional<cuda::MappedHostBlock> control;
  // The device's cuda::AgreementBlock, where the graph spans several devices; reset before every
  // replay (CudaRecordedGraph::Launch).
  std::optional<cuda::DeviceBlock> agreement;
  // The device's cuda::NcclBallot, where the devices agree through NCCL instead.
  std::optional<cuda::DeviceBlock> ballot;
  // Each loop's iteration count (an int64 each), restarted before its WHILE node runs, each
  // fused loop's state and each summing chain's scratch (fusion/fused_loop_device.cuh).
  std::vector<cuda::DeviceBlock> loop_counts;
};

// Everything a recording creates, moved into the recorded graph at Finish; freed with whichever
// owns it last, once no replay can be running.
struct CudaGraphResources {
  // Where the devices agree through NCCL: the clique whose communicators the graphs' captured
  // all-reduces use (it lives as long as any graph recorded over it). Null: peer memory. Declared
  // first, so destroyed last: destroying the communicators waits for every graph that captured
  // them to be gone.
  std::shared_ptr<cuda::NcclClique> clique;
  std::vector<CudaDeviceGraph> devices;  // in the recording's device order
  // Every buffer the recording allocated or touched: the graphs address them on every replay.
  std::vector<BufferPtr> buffers;
  absl::flat_hash_set<const DeviceBuffer*> kept;
};

// The host side of CudaDeviceGraph::control.
struct CudaGraphControl {
  unsigned int cancel_word;  // set by Wait to stop running loops; cleared by Launch
  unsigned int padding;
  cuda::GraphCounters counters;  // the last finished replay's statistics
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_CUDA_GRAPH_GRAPH_RESOURCES_H_
