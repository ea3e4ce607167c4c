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
#include "server/cuda/cuda_device.h"
#include "server/cuda/cuda_resources.h"
#include "server/cuda/cuda_work.h"
#include "server/cuda/cusolver_api.h"
#include "server/cuda/fusion/rtc_compiler.h"
#include "server/cuda/graph/agreement_mode.h"

namespace distarray {

class CudaBuffer;
class CudaGraphRecorder;

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
    // Fused loops on one device run one persistent kernel per WHILE iteration instead of
    // loop_unroll copies (docs/graphs.md, "Persistent loops").
    bool persistent_loops = true;
    // How the devices of a program recorded over several agree on its conditions.
    GraphAgreement graph_agreement = GraphAgreement::kAuto;
  };
  // UNAVAILABLE when no GPU is usable; INTERNAL for a CUDA/NCCL failure during setup.
  static absl::StatusOr<std::unique_ptr<CudaBackend>> Create(const Options& options);
  ~CudaBackend() override;

  absl::string_view name() const override { return "cuda"; }
  int device_count() const override { return devices_.count(); }
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
  // cuSOLVER's getrf/getrs, potrf, geqrf/orgqr, syevd/heevd and gesvdj (cuda_linalg.cc).
  absl::Status Factorize(DType dtype, const DenseFactorization& f) override;
  absl::Status Sort(DType dtype, const SortRuns& sort) override;
  int64_t SortScratchBytes(DType dtype, const SortRuns& sort) const override;
  absl::Status Scan(DType dtype, const ScanLines& scan) override;
  int64_t ScanScratchBytes(DType dtype, const ScanLines& scan) const override;
  absl::Status Merge(DType dtype, const MergeRuns& merge) override;
  absl::Status SearchSorted(DType dtype, const SearchRuns& search) override;
  absl::Status CsrMatmul(DType dtype, const CsrProduct& product) override;
  absl::Status CsrToDense(DType dtype, const CsrProduct& block) override;
  int64_t MergeScratchBytes(DType dtype, const MergeRuns& merge) const override;
  absl::Status WriteFromHost(const BufferPtr& dst, int64_t offset, const void* src,
                             int64_t bytes) override;
  absl::StatusOr<std::unique_ptr<StagedRead>> ReadToStaging(const BufferPtr& src, int64_t offset,
                                                            int64_t bytes) override;
  absl::StatusOr<std::unique_ptr<PendingRead>> ReadToHost(const BufferPtr& src, int64_t offset,
                                                          int64_t bytes, void* dst) override;
  absl::Status Synchronize() override;
  GraphRecorder* graph_recorder() override;

 private:
  CudaBackend(Transfer transfer, int loop_unroll, bool persistent_loops,
              GraphAgreement graph_agreement);
  struct StagedBlock {
    cuda::PinnedPool::Block* block;
    cuda::CudaEventPtr copied;
  };
  struct CrossDeviceCopy;

  absl::StatusOr<StagedBlock> ReadIntoBlock(CudaBuffer* buffer, int64_t offset, int64_t bytes);
  cudaStream_t stream(int device) const { return devices_.stream(device); }
  cudaStream_t transfer_stream(int device) const { return devices_.transfer_stream(device); }
  // Enqueues `work` on its device's stream after the hazards of the buffers it reads and writes,
  // then records it as their newest reader/writer. Returns the event recorded after it.
  absl::StatusOr<cuda::CudaEventPtr> Submit(CudaWork work);
  absl::Status CopyAcrossDevices(DType dtype, absl::Span<const BoxCopy* const> copies);

  const Transfer transfer_;
  const int loop_unroll_;
  const bool persistent_loops_;
  const GraphAgreement graph_agreement_;
  cuda::RtcCompiler rtc_;  // fused loop bodies
  CudaDevices devices_;
  std::unique_ptr<cuda::NcclClique> nccl_;
  cuda::PinnedPool pinned_;
  std::unique_ptr<CudaGraphRecorder> recorder_;
  // Made on the first factorization (most daemons never load cuSOLVER); destroyed before the
  // devices' streams.
  std::mutex cusolver_mu_;
  std::unique_ptr<cuda::CusolverHandles> cusolver_;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_CUDA_CUDA_BACKEND_H_
