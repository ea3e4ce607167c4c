// The leader's backend over the whole cluster: the devices of every node, numbered node-major
// (the leader's own first). Work on the leader's devices goes to its own backend; work on a
// member's devices is forwarded to that member (RemoteNode), which runs it on its backend in
// order. The engine above plans by device and never knows which node holds one.
//
// Only Copy touches more than one device, so only Copy crosses nodes: its cross-node copies run
// as a Send on the source's node and a Receive on the destination's, over the data plane
// (data_plane.h). Every other op must find its buffers on one node (the engine co-locates
// operands first); INTERNAL otherwise.
//
// A program whose devices are all the leader's records and replays as on one daemon; one that
// touches another node's devices runs eagerly (a recorded graph is one node's).
#ifndef DISTARRAY_SERVER_CLUSTER_CLUSTER_BACKEND_H_
#define DISTARRAY_SERVER_CLUSTER_CLUSTER_BACKEND_H_

#include <atomic>
#include <initializer_list>
#include <memory>
#include <string>

#include "server/backend/backend.h"
#include "server/backend/graph_recorder.h"
#include "server/cluster/cluster_leader.h"

namespace distarray::cluster {

class ClusterBackend final : public Backend {
 public:
  // `leader` has formed the cluster; `local` is rank 0's backend.
  ClusterBackend(std::unique_ptr<Backend> local, ClusterLeader& leader);

  absl::string_view name() const override { return local_->name(); }
  int device_count() const override { return leader_.device_count(); }
  int node_count() const override { return leader_.size(); }
  int device_node(int device) const override { return Place(device).rank; }
  DeviceMemory memory(int device) const override;
  std::string device_uuid(int device) const override;
  absl::Status DeviceStatus(int device) const override;
  // A member's buffer: whether the member process that allocated it is still a live member.
  absl::Status BufferStatus(const DeviceBuffer& buffer) const override;

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
  absl::Status Sort(DType dtype, const SortRuns& sort) override;
  int64_t SortScratchBytes(DType dtype, const SortRuns& sort) const override;
  absl::Status Scan(DType dtype, const ScanLines& scan) override;
  int64_t ScanScratchBytes(DType dtype, const ScanLines& scan) const override;
  absl::Status Merge(DType dtype, const MergeRuns& merge) override;
  int64_t MergeScratchBytes(DType dtype, const MergeRuns& merge) const override;
  absl::Status SearchSorted(DType dtype, const SearchRuns& search) override;
  absl::Status CsrMatmul(DType dtype, const CsrProduct& product) override;
  absl::Status CsrToDense(DType dtype, const CsrProduct& block) override;
  absl::Status Factorize(DType dtype, const DenseFactorization& f) override;

  absl::Status WriteFromHost(const BufferPtr& dst, int64_t offset, const void* src,
                             int64_t bytes) override;
  absl::StatusOr<std::unique_ptr<PendingRead>> ReadToHost(const BufferPtr& src, int64_t offset,
                                                          int64_t bytes, void* dst) override;
  absl::StatusOr<std::unique_ptr<StagedRead>> ReadToStaging(const BufferPtr& src, int64_t offset,
                                                            int64_t bytes) override;
  absl::Status Synchronize() override;
  GraphRecorder* graph_recorder() override { return recorder_.get(); }

 private:
  struct Placement {
    int rank = 0;
    int local = 0;  // the device's id on its node
  };
  Placement Place(int device) const;
  // The rank every given buffer (null ones skipped) lies on; INTERNAL when they span nodes.
  absl::StatusOr<int> RankOf(std::initializer_list<const BufferPtr*> buffers) const;
  // Sends `work` to the node holding `buffer` (a member's).
  absl::Status Forward(const BufferPtr& buffer, const wire::DeviceWork& work) const;
  // A copy between two nodes, and the ranks of its halves.
  struct CrossNodeCopy {
    const BoxCopy* copy;
    int src_rank;
    int dst_rank;
  };
  // Copies between nodes that no order ties together (no copy reads or writes a buffer another
  // one writes): every Send is posted first, then the Receives wait side by side, so the pieces
  // of a reshard that cross nodes in several directions move at once.
  absl::Status CopyWaveAcrossNodes(DType dtype, absl::Span<const CrossNodeCopy> wave);
  // The two halves of one copy between nodes under `tag`: the source node posts its bytes, the
  // destination node takes them (it returns once they are written and combined).
  absl::Status StartSend(DType dtype, const CrossNodeCopy& c, uint64_t tag);
  absl::Status Receive(DType dtype, const CrossNodeCopy& c, uint64_t tag);

  std::unique_ptr<Backend> local_;
  ClusterLeader& leader_;
  std::atomic<uint64_t> next_tag_{1};
  std::unique_ptr<GraphRecorder> recorder_;  // null when the local backend records nothing
};

}  // namespace distarray::cluster

#endif  // DISTARRAY_SERVER_CLUSTER_CLUSTER_BACKEND_H_
