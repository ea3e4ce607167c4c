// A GraphRecording that records nothing. Before a program is recorded, the program runner walks
// it through a probe exactly as it will walk it through the real recording, on buffers without
// memory, to learn what the recording would ask of the recorder (RecordingNeeds: copies between
// devices, condition flags per device). The recorder answers before anything is recorded
// (GraphRecorder::Unsupported), so a recording never meets work it cannot hold.
#ifndef DISTARRAY_SERVER_GRAPH_RECORDING_PROBE_H_
#define DISTARRAY_SERVER_GRAPH_RECORDING_PROBE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/backend/graph_recorder.h"

namespace distarray {

class RecordingProbe final : public GraphRecording {
 public:
  explicit RecordingProbe(std::vector<int> devices);

  const RecordingNeeds& needs() const { return needs_; }

  // DeviceOps: buffers of the right device and size with no memory; work is dropped, copies
  // between devices are noted.
  absl::StatusOr<BufferPtr> Allocate(int device, int64_t bytes) override;
  absl::Status FillConstant(DType, const BufferBox&, const Scalar&) override {
    return absl::OkStatus();
  }
  absl::Status FillGenerated(DType, const BufferPtr&, const Shape&, const Box&,
                             const Generator&) override {
    return absl::OkStatus();
  }
  absl::Status Copy(DType dtype, absl::Span<const BoxCopy> copies) override;
  using GraphRecording::Elementwise;
  absl::Status Elementwise(ElementwiseOpId, DType, DType, const BufferPtr&, int64_t,
                           absl::Span<const ElementwiseArg>) override {
    return absl::OkStatus();
  }
  absl::Status Cast(DType, DType, const BufferPtr&, const BufferPtr&, int64_t) override {
    return absl::OkStatus();
  }
  using GraphRecording::Reduce;
  absl::Status Reduce(ReduceKind, DType, DType, const BufferPtr&, const ReduceGeometry&,
                      const BufferPtr&, double, const BufferPtr&) override {
    return absl::OkStatus();
  }
  using GraphRecording::Gemm;
  absl::Status Gemm(DType, const BufferPtr&, const BufferPtr&, const BufferPtr&, const GemmShape&,
                    bool) override {
    return absl::OkStatus();
  }
  absl::Status Sort(DType, const SortRuns&) override { return absl::OkStatus(); }
  absl::Status Scan(DType, const ScanLines&) override { return absl::OkStatus(); }
  absl::Status Merge(DType, const MergeRuns&) override { return absl::OkStatus(); }
  absl::Status SearchSorted(DType, const SearchRuns&) override { return absl::OkStatus(); }
  absl::Status CsrMatmul(DType, const CsrProduct&) override { return absl::OkStatus(); }
  absl::Status CsrToDense(DType, const CsrProduct&) override { return absl::OkStatus(); }
  void CountReshardBytes(int, int64_t) override {}

  // Control flow: each condition's flags are counted per device. A fused loop is walked statement
  // by statement (UNIMPLEMENTED): what that needs covers what the fused kernel would.
  absl::Status BeginWhile(const ConditionFlags& flag, int64_t max_iterations) override;
  absl::Status EndWhile(const ConditionFlags& flag) override;
  absl::Status BeginIf(const ConditionFlags& flag) override;
  absl::Status Else() override { return absl::OkStatus(); }
  absl::Status EndIf() override { return absl::OkStatus(); }
  // UNIMPLEMENTED: a probe makes no graph.
  absl::StatusOr<std::unique_ptr<RecordedGraph>> Finish() override;

 private:
  void CountFlags(const ConditionFlags& flags);

  RecordingNeeds needs_;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_GRAPH_RECORDING_PROBE_H_
