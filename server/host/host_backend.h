// The host backend: N simulated devices on the CPU. Each device has its own memory ledger and a
// worker thread as its stream; cross-device copies run on the destination's thread after waiting
// for the source's producer, as a peer copy would. CI and laptops run the same engine on it.
// It records graphs too (host_graph_recorder.h), so CI runs RunGraph's recording path; both sinks
// run the same work (host_work.h).
#ifndef DISTARRAY_SERVER_HOST_HOST_BACKEND_H_
#define DISTARRAY_SERVER_HOST_HOST_BACKEND_H_

#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/backend/backend.h"
#include "server/backend/memory_ledger.h"
#include "server/host/host_stream.h"
#include "server/host/host_work.h"

namespace distarray {

class HostBuffer;
class HostGraphRecorder;

class HostBackend final : public Backend {
 public:
  struct Options {
    int device_count = 4;
    int64_t memory_limit_bytes = int64_t{1} << 30;  // per device
  };
  // INVALID_ARGUMENT for a device count outside [1, 64] or a non-positive limit.
  static absl::StatusOr<std::unique_ptr<HostBackend>> Create(const Options& options);
  ~HostBackend() override;

  absl::string_view name() const override { return "host"; }
  int device_count() const override { return static_cast<int>(streams_.size()); }
  DeviceMemory memory(int device) const override;
  std::string device_uuid(int device) const override;

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
  absl::Status Factorize(DType dtype, const DenseFactorization& f) override;
  absl::Status Sort(DType dtype, const SortRuns& sort) override;
  absl::Status Scan(DType dtype, const ScanLines& scan) override;
  absl::Status Merge(DType dtype, const MergeRuns& merge) override;
  absl::Status SearchSorted(DType dtype, const SearchRuns& search) override;
  absl::Status CsrMatmul(DType dtype, const CsrProduct& product) override;
  absl::Status CsrToDense(DType dtype, const CsrProduct& block) override;
  absl::Status WriteFromHost(const BufferPtr& dst, int64_t offset, const void* src,
                             int64_t bytes) override;
  absl::StatusOr<std::unique_ptr<StagedRead>> ReadToStaging(const BufferPtr& src, int64_t offset,
                                                            int64_t bytes) override;
  absl::StatusOr<std::unique_ptr<PendingRead>> ReadToHost(const BufferPtr& src, int64_t offset,
                                                          int64_t bytes, void* dst) override;
  absl::Status Synchronize() override;

  GraphRecorder* graph_recorder() override;

  // Queues `work` on its device's thread once the hazards of the buffers it reads and writes are
  // clear, and records it as their newest reader/writer. Returns the event that fires when it is
  // done. (Recorded graphs replay through it: a replay is one more piece of work.)
  absl::StatusOr<HostEventPtr> Submit(HostWork work);

 private:
  explicit HostBackend(const Options& options);

  // Queues the copy of ReadToHost and ReadToStaging; the event fires when it is done.
  absl::StatusOr<HostEventPtr> StartRead(const BufferPtr& src, int64_t offset, int64_t bytes,
                                         void* dst);

  std::mutex order_mu_;  // guards every buffer's hazards; held while enqueueing
  std::vector<std::unique_ptr<MemoryLedger>> ledgers_;
  std::vector<std::unique_ptr<HostStream>> streams_;
  std::unique_ptr<HostGraphRecorder> recorder_;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_HOST_HOST_BACKEND_H_
