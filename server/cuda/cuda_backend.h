// The CUDA backend: the daemon owning real GPUs. Per device: a stream-ordered memory pool with an
// admission limit, one stream, and events for per-buffer dependencies. Across devices: one NCCL
// communicator clique (ncclCommInitAll) and peer access where the topology allows. Host
// transfers stage through pinned blocks so copies overlap the network.
#ifndef DISTARRAY_SERVER_CUDA_CUDA_BACKEND_H_
#define DISTARRAY_SERVER_CUDA_CUDA_BACKEND_H_

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "server/backend/backend.h"
#include "server/backend/memory_ledger.h"
#include "server/cuda/cuda_resources.h"
#include "server/cuda/fusion/rtc_compiler.h"
#include "server/cuda/graph_recorder.h"

namespace distarray {

class CudaBuffer;
class CudaGraphRecorder;
class CudaGraphRecording;

class CudaBackend final : public Backend {
 public:
  enum class Transfer { kNccl, kPeer };
  struct Options {
    int64_t memory_limit_bytes = 0;  // per device; 0: memory_fraction of each card
    double memory_fraction = 0.9;
    // How cross-device copies move; peer copies measured faster on NVLink (docs/performance.md).
    Transfer transfer = Transfer::kPeer;
    // Copies of a fused loop's body per WHILE iteration (graph_recorder.h); 0: loops are not
    // fused. docs/design.md has the measurements behind the default.
    int loop_unroll = 8;
    // How the devices of a program recorded over several agree on its conditions.
    GraphAgreement graph_agreement = GraphAgreement::kAuto;
  };
  // UNAVAILABLE when no GPU is usable; INTERNAL for a CUDA/NCCL failure during setup.
  static absl::StatusOr<std::unique_ptr<CudaBackend>> Create(const Options& options);
  ~CudaBackend() override;

  absl::string_view name() const override { return "cuda"; }
  int device_count() const override { return static_cast<int>(devices_.size()); }
  DeviceMemory memory(int device) const override;
  std::string device_uuid(int device) const override { return devices_[device].uuid; }
  // UNAVAILABLE when the device's stream reports a sticky error (cudaStreamQuery, no waiting).
  absl::Status DeviceStatus(int device) const override;

  absl::StatusOr<BufferPtr> Allocate(int device, int64_t bytes) override;
  absl::Status FillConstant(DType dtype, const BufferBox& dst, const Scalar& value) override;
  absl::Status FillGenerated(DType dtype, const BufferPtr& dst, const Shape& global_shape,
                             const Box& chunk_box, const Generator& generator) override;
  absl::Status Copy(DType dtype, absl::Span<const BoxCopy> copies) override;
  using Backend::Elementwise;
  absl::Status Elementwise(ElementwiseOpId op, DType compute, DType storage, const BufferPtr& out,
                           int64_t n, absl::Span<const ElementwiseArg> args) override;
  absl::Status Cast(DType from, DType to, const BufferPtr& src, const BufferPtr& dst,
                    int64_t n) override;
  using Backend::Reduce;
  absl::Status Reduce(ReduceKind kind, DType in, DType storage, const BufferPtr& src,
                      const ReduceGeometry& geometry, const BufferPtr& dst, double scale,
                      const BufferPtr& extreme) override;
  using Backend::Gemm;
  absl::Status Gemm(DType dtype, const BufferPtr& a, const BufferPtr& b, const BufferPtr& c,
                    const GemmShape& shape, bool allow_tf32) override;
  absl::Status WriteFromHost(const BufferPtr& dst, int64_t offset, const void* src,
                             int64_t bytes) override;
  absl::StatusOr<std::unique_ptr<StagedRead>> ReadToStaging(const BufferPtr& src, int64_t offset,
                                                            int64_t bytes) override;
  absl::StatusOr<std::unique_ptr<PendingRead>> ReadToHost(const BufferPtr& src, int64_t offset,
                                                          int64_t bytes, void* dst) override;
  absl::Status Synchronize() override;
  GraphRecorder* graph_recorder() override;

 private:
  // The recorder reaches the device streams, scratch memory and the launch helper.
  friend class CudaGraphRecording;
  friend class CudaRecordedGraph;

  struct DeviceState {
    std::string name;
    std::string uuid;  // GPU-..., as nvidia-smi prints it
    int64_t total_bytes = 0;
    std::unique_ptr<MemoryLedger> ledger;
    std::optional<cuda::CudaStream> stream;           // kernels, local copies, host copies
    std::optional<cuda::CudaStream> transfer_stream;  // cross-device transfers, so they overlap
    int sm_count = 0;
    // Fixed per-device memory used only by work on `stream` (stream-ordered, so never by two
    // kernels at once): reduction partials and the cuBLAS workspace.
    std::optional<cuda::DeviceBlock> reduce_scratch;
    std::optional<cuda::DeviceBlock> cublas_workspace;
    std::optional<cuda::CublasHandle> cublas;
  };
  static constexpr size_t kReduceScratchBytes = size_t{4} << 20;
  static constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;
  struct CrossDeviceCopy;

  CudaBackend(Transfer transfer, int loop_unroll, GraphAgreement graph_agreement);
  struct StagedBlock {
    cuda::PinnedPool::Block* block;
    cuda::CudaEventPtr copied;
  };
  absl::StatusOr<StagedBlock> ReadIntoBlock(CudaBuffer* buffer, int64_t offset, int64_t bytes);
  cudaStream_t stream(int device) const { return devices_[device].stream->get(); }
  cudaStream_t transfer_stream(int device) const { return devices_[device].transfer_stream->get(); }
  // Makes `stream` of the current device wait for `deps`.
  absl::Status WaitOn(cudaStream_t stream, const std::vector<cuda::CudaEventPtr>& deps);
  // Makes `device`'s stream wait for `deps`. Caller holds order_mu_ and has `device` current.
  absl::Status WaitFor(int device, const std::vector<cuda::CudaEventPtr>& deps);
  // Enqueues `enqueue(stream)` on `device` after the hazards of `reads` and `writes`, then records
  // it as their newest reader/writer. While the calling thread records (graph_recorder.h), the
  // work is captured into the recording instead, with no events (the result is null);
  // FAILED_PRECONDITION naming `call` for work the recording cannot hold.
  template <typename Enqueue>
  absl::StatusOr<cuda::CudaEventPtr> Launch(absl::string_view call, int device,
                                            const std::vector<CudaBuffer*>& reads,
                                            const std::vector<CudaBuffer*>& writes,
                                            Enqueue&& enqueue);
  // FAILED_PRECONDITION naming `call` when the calling thread is recording on this backend: for
  // the calls a graph cannot hold (host transfers, cross-device copies, synchronizing).
  absl::Status RefuseWhileRecording(absl::string_view call, absl::string_view why) const;
  // Allocate while the calling thread records on `device`: plain cudaMalloc, owned by the
  // recording.
  absl::StatusOr<BufferPtr> AllocateForRecording(CudaGraphRecording& recording, int device,
                                                 int64_t bytes);
  absl::Status CopySameDevice(DType dtype, const BoxCopy& copy);
  absl::Status CopyAcrossDevices(DType dtype, absl::Span<const BoxCopy* const> copies);

  const Transfer transfer_;
  const int loop_unroll_;
  cuda::RtcCompiler rtc_;  // fused loop bodies
  std::mutex order_mu_;    // guards buffer hazards; held while enqueueing, so order is consistent
  std::vector<DeviceState> devices_;
  std::unique_ptr<cuda::NcclClique> nccl_;
  cuda::PinnedPool pinned_;
  std::unique_ptr<CudaGraphRecorder> recorder_;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_CUDA_CUDA_BACKEND_H_
