// A CUDA recording (GraphRecording, server/backend/graph_recorder.h): stream capture into CUDA
// graphs, one per device of the recording, with loops and branches as CUDA 13 conditional WHILE
// and IF nodes whose bodies are captured on streams of their own (cudaStreamBeginCaptureToGraph).
//
// It is a DeviceOps sink of its own: the ops hand it the same CudaWork the eager backend runs
// (cuda_work.h), and it enqueues the work on the capture stream of the innermost open body of the
// work's device, without per-buffer events (each device's capture is one stream, in program
// order); every buffer the work touches is kept alive by the recording and then by the recorded
// graph. Allocations are plain cudaMalloc made at once (a stream-ordered allocation would be
// captured as a memory node, which a conditional body may not hold). The capture streams are the
// recording's own: the device streams, which other work uses meanwhile, never capture.
//
// Over several devices, every device's graph holds every loop and branch, and each evaluation of
// a condition is an exchange of votes between the devices through peer memory
// (loop_condition.cuh, Agreement), so the graphs take the same decisions without the host.
// Devices without peer access between them agree through an NCCL all-reduce captured before each
// evaluation instead (GraphAgreement); such recordings do not fuse loops (a fused body agrees
// inside its kernel, through peer memory), and without peer access cannot copy between devices
// either (the recorder says so before a program is recorded: CudaGraphRecorder::Unsupported).
#ifndef DISTARRAY_SERVER_CUDA_GRAPH_RECORDING_H_
#define DISTARRAY_SERVER_CUDA_GRAPH_RECORDING_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "server/backend/backend.h"
#include "server/backend/graph_recorder.h"
#include "server/cuda/cuda_buffer.h"
#include "server/cuda/cuda_device.h"
#include "server/cuda/cuda_resources.h"
#include "server/cuda/cuda_work.h"
#include "server/cuda/fusion/rtc_compiler.h"
#include "server/cuda/graph/graph_resources.h"
#include "server/cuda/loop_control.h"

namespace distarray {

class CudaGraphRecording final : public GraphRecording {
 public:
  // What a recording uses of the backend: its devices, the counter of reshard bytes, NVRTC for
  // fused loops and their unrolling.
  struct Context {
    CudaDevices* gpus;
    Backend* backend;  // CountReshardBytes only
    cuda::RtcCompiler* rtc;
    int loop_unroll;
    // Fused loops on one device run persistent kernels (else unrolled copies).
    bool persistent_loops;
  };
  // Opens a recording on `devices`. Over several devices, they agree through `clique` (an NCCL
  // communicator per device, in the order of `devices`), or where it is null through peer memory,
  // which needs peer access between every pair.
  static absl::StatusOr<std::unique_ptr<CudaGraphRecording>> Start(
      const Context& context, absl::Span<const int> devices,
      std::shared_ptr<cuda::NcclClique> clique);
  // Abandoning: ends every capture, then frees what the recording allocated.
  ~CudaGraphRecording() override;

  absl::Status BeginWhile(const ConditionFlags& flag, int64_t max_iterations) override;
  absl::Status EndWhile(const ConditionFlags& flag) override;
  // fused_loop.cc: NVRTC compiles the chain into one kernel (fusion/), and each
  // device's WHILE body holds the backend's loop_unroll copies of it.
  absl::Status RecordFusedWhile(absl::Span<const FusedLoop> loops) override;
  bool fuses_chains() const override { return context_.loop_unroll >= 1; }
  absl::Status RecordFusedChain(absl::Span<const FusedLoop> chains) override;
  absl::Status BeginIf(const ConditionFlags& flag) override;
  absl::Status Else() override;
  absl::Status EndIf() override;
  absl::StatusOr<std::unique_ptr<RecordedGraph>> Finish() override;

  // DeviceOps: recorded into the capture of the work's device.
  absl::StatusOr<BufferPtr> Allocate(int device, int64_t bytes) override;
  absl::Status FillConstant(DType dtype, const BufferBox& dst, const Scalar& value) override;
  absl::Status FillGenerated(DType dtype, const BufferPtr& dst, const Shape& global_shape,
                             const Box& chunk_box, const Generator& generator) override;
  // Copies between two devices of the recording go through RecordPeerCopies.
  absl::Status Copy(DType dtype, absl::Span<const BoxCopy> copies) override;
  using GraphRecording::Elementwise;
  absl::Status Elementwise(ElementwiseOpId op, DType compute, DType storage, const BufferPtr& out,
                           int64_t n, absl::Span<const ElementwiseArg> args) override;
  absl::Status Cast(DType from, DType to, const BufferPtr& src, const BufferPtr& dst,
                    int64_t n) override;
  using GraphRecording::Reduce;
  absl::Status Reduce(ReduceKind kind, DType in, DType storage, const BufferPtr& src,
                      const ReduceGeometry& geometry, const BufferPtr& dst, double scale,
                      const BufferPtr& extreme) override;
  using GraphRecording::Gemm;
  absl::Status Gemm(DType dtype, const BufferPtr& a, const BufferPtr& b, const BufferPtr& c,
                    const GemmShape& shape, bool allow_tf32) override;
  absl::Status Sort(DType dtype, const SortRuns& sort) override;
  int64_t SortScratchBytes(DType dtype, const SortRuns& sort) const override;
  absl::Status Scan(DType dtype, const ScanLines& scan) override;
  int64_t ScanScratchBytes(DType dtype, const ScanLines& scan) const override;
  absl::Status Merge(DType dtype, const MergeRuns& merge) override;
  absl::Status SearchSorted(DType dtype, const SearchRuns& search) override;
  absl::Status CsrMatmul(DType dtype, const CsrProduct& product) override;
  absl::Status CsrToDense(DType dtype, const CsrProduct& block) override;
  int64_t MergeScratchBytes(DType dtype, const MergeRuns& merge) const override;
  void CountReshardBytes(int device, int64_t bytes) override;

 private:
  // An open WHILE loop or IF on one device: the conditional node's body graphs and the stream
  // capturing the open one.
  struct Block {
    enum class Kind { kWhile, kIf };
    Kind kind;
    cudaGraphConditionalHandle handle = 0;
    std::array<cudaGraph_t, 2> bodies = {nullptr, nullptr};
    int branch = 0;  // the body being captured (IF: 1 after Else)
    std::optional<cuda::CudaStream> stream;
    bool capturing = false;    // `stream` is capturing bodies[branch]
    int64_t* count = nullptr;  // WHILE: the loop's iteration count
    int64_t max_iterations = 0;
  };
  // One device's capture. Every device opens and closes the same blocks, in the same order.
  struct Capture {
    int device = 0;
    std::optional<cuda::CudaStream> stream;  // the top-level capture
    bool capturing = false;                  // `stream` is capturing
    std::vector<Block> open;                 // innermost last
    bool counters_reset = false;             // ResetCountersBeforeFirstBlock recorded its reset
    // The innermost open capture: the last open block's stream, else the top-level one.
    cudaStream_t current() const {
      return open.empty() ? stream->get() : open.back().stream->get();
    }
  };

  explicit CudaGraphRecording(const Context& context) : context_(context) {}

  // Whether `device` is one of the recording's.
  bool records(int device) const { return IndexOf(device) >= 0; }
  // Checks that work of `call` for `device` touches buffers of that device only, and keeps them
  // alive with the recording.
  absl::Status Admit(absl::string_view call, int device, const std::vector<CudaBuffer*>& reads,
                     const std::vector<CudaBuffer*>& writes);
  // Captures `work` (of `call`) on the innermost open body of its device, keeping its buffers
  // alive with the recording, under the devices' enqueue lock (the work may use the device's
  // shared cuBLAS handle and scratch).
  absl::Status Submit(absl::string_view call, CudaWork work);
  // Records copies across devices of the recording: a barrier on every device (every device's
  // earlier work is done), then on each destination device a kernel reading the source through
  // its peer address, then a barrier again (no device overwrites a source still being read).
  // Conditional bodies cannot hold copy nodes between devices; a kernel reading peer memory is
  // one device's work. Every device takes part in both barriers, wherever the copies go.
  absl::Status RecordPeerCopies(DType dtype, absl::Span<const BoxCopy* const> copies);
  // Keeps a buffer the recorded work touches alive with it (and with the recorded graph).
  void Keep(BufferPtr buffer);
  // INTERNAL: `call` was given work the recording cannot hold, which the recorder's Unsupported
  // (asked before recording) should have kept from it.
  absl::Status NotHeld(absl::string_view call, absl::string_view why) const;

  // The index of `device` among the recording's, or -1.
  int IndexOf(int device) const;
  std::string DeviceList() const;
  CudaDeviceGraph& resources(size_t i) { return resources_.devices[i]; }
  // The device addresses the condition kernels use, on the i-th device.
  const unsigned int* cancel_word(size_t i) const;
  cuda::GraphCounters* counters(size_t i) const {
    return static_cast<cuda::GraphCounters*>(resources_.devices[i].counters->data());
  }
  cuda::Agreement agreement(size_t i) const;
  // OK while calls may still be recorded; otherwise why not, naming `call`.
  absl::Status CheckRecording(absl::string_view call) const;
  // Checks a condition (one flag at least, each a bool in element 0 of a buffer of a recorded
  // device, at most cuda::kMaxLocalFlags per device) and keeps its buffers.
  absl::Status AdmitFlags(absl::string_view call, const ConditionFlags& flags);
  // The flags of an admitted condition that lie on the i-th device.
  cuda::LocalFlags LocalFlagsOn(size_t i, const ConditionFlags& flags) const;
  // The graph the capture's innermost open capture records into (where a new conditional node
  // and its handle belong).
  absl::StatusOr<cudaGraph_t> CapturingGraph(const Capture& capture);
  // Adds a conditional node after the innermost capture's last work and makes it that capture's
  // last work; returns the node's body graphs.
  absl::StatusOr<std::array<cudaGraph_t, 2>> AddConditional(const Capture& capture,
                                                            cudaGraphConditionalNodeType type,
                                                            cudaGraphConditionalHandle handle,
                                                            unsigned int size);
  // Opens a WHILE block on the i-th device for BeginWhile and RecordFusedWhile: a conditional
  // handle, the entry evaluation of `flags` (while semantics; it also restarts `count`, and tells
  // a fused body's first copy to run through `running` when not null), the WHILE node, and the
  // capture of its body. Callers run it inside Broken().
  absl::Status OpenWhile(size_t i, const cuda::LocalFlags& flags, int64_t max_iterations,
                         int64_t* count, unsigned int* running);
  // Before device i's first conditional block, which is at the top level (an inner one needs an
  // outer one open): resets its counters there, so every replay counts from zero before any loop.
  absl::Status ResetCountersBeforeFirstBlock(size_t i);
  // The same on every device, before a block every device opens (the NCCL ballots that precede
  // its first evaluation read the counters).
  absl::Status ResetAllCountersBeforeFirstBlock();
  // Starts capturing the block's current branch on its stream / ends that capture.
  absl::Status BeginBody(int device, Block& block);
  absl::Status EndBody(Block& block);
  // A barrier kernel on every device's innermost capture (an exchange without a vote).
  absl::Status RecordBarrier();
  // Whether the devices agree through NCCL (the recording spans several).
  bool nccl_agreement() const { return resources_.clique != nullptr; }
  // The exchange through peer memory alone (no tally), for barriers: where the devices have peer
  // access, copies between them are recorded whichever way conditions agree.
  cuda::Agreement barrier_agreement(size_t i) const;
  // Agreeing through NCCL, before every device's condition kernel on its innermost capture: each
  // device casts its ballot on `flags` (with the cancel word when `read_cancel`), and one
  // all-reduce over the clique sums them into every device's tally. A no-op otherwise (the
  // condition kernels exchange their votes themselves).
  absl::Status CastBallots(const ConditionFlags& flags, bool read_cancel);
  // Ends every open capture (innermost first). The first error, if a capture was invalidated.
  absl::Status EndAllCaptures();
  // Marks the recording unusable after a failure that may have left a capture half-built.
  absl::Status Broken(absl::Status status);

  const Context context_;
  std::vector<Capture> captures_;  // parallel to resources_.devices
  bool capturing_ = false;         // some capture is still open
  bool finished_ = false;
  absl::Status broken_;
  CudaGraphResources resources_;
  // Whether every pair of the devices has peer access: copies between them can be recorded.
  bool peer_access_ = true;
  // Whether the graph has a conditional block, and so counters to reset at its top level and to
  // copy back at its end. A graph without one skips both nodes (a few µs of every replay).
  bool has_conditionals_ = false;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_CUDA_GRAPH_RECORDING_H_
