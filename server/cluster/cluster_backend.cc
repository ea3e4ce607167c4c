#include "server/cluster/cluster_backend.h"

#include <algorithm>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/cluster/remote_node.h"

namespace distarray::cluster {
namespace {

// Tags of the data plane's copies: the top bit keeps them apart from Gloo's own collectives.
constexpr uint64_t kCopyTagBit = uint64_t{1} << 63;
// The most copies between nodes one wave runs at once (a thread waits for each receive but the
// first), and the most bytes: each half holds its copy's bytes in host memory until it is done,
// and the copies of a wave share the links, so a later one's pieces wait behind the earlier ones'
// within the transfer timeout. A copy larger than the byte bound goes alone.
constexpr int kMaxCopiesInAWave = 16;
constexpr int64_t kMaxBytesInAWave = int64_t{256} << 20;

uint64_t HandleOf(const BufferPtr& buffer) {
  return buffer == nullptr ? 0 : static_cast<const RemoteBuffer&>(*buffer).handle();
}

void BufferBoxToWire(const BufferBox& box, wire::BufferBox* out) {
  out->set_buffer(HandleOf(box.buffer));
  out->mutable_shape()->Add(box.shape.begin(), box.shape.end());
  ToWire(box.box, out->mutable_box());
}

// A completed read (the bytes came back synchronously from a member).
class DoneRead final : public PendingRead {
 public:
  absl::Status Wait() override { return absl::OkStatus(); }
};

class HeldRead final : public StagedRead {
 public:
  explicit HeldRead(std::string bytes) : bytes_(std::move(bytes)) {}
  absl::StatusOr<absl::string_view> Wait() override { return absl::string_view(bytes_); }

 private:
  std::string bytes_;
};

// The leader's own recorder, for device sets wholly on the leader (whose global device ids are
// its local ones).
class LeaderRecorder final : public GraphRecorder {
 public:
  LeaderRecorder(GraphRecorder& local, int leader_devices)
      : local_(local), leader_devices_(leader_devices) {}
  absl::StatusOr<std::unique_ptr<GraphRecording>> Begin(absl::Span<const int> devices) override {
    return local_.Begin(devices);
  }
  bool CanRecord(absl::Span<const int> devices) const override {
    for (int d : devices) {
      if (d < 0 || d >= leader_devices_) return false;
    }
    return local_.CanRecord(devices);
  }
  std::optional<std::string> Unsupported(const RecordingNeeds& needs) const override {
    return local_.Unsupported(needs);
  }
  bool ReplayBeatsLaunches() const override { return local_.ReplayBeatsLaunches(); }

 private:
  GraphRecorder& local_;
  const int leader_devices_;
};

}  // namespace

ClusterBackend::ClusterBackend(std::unique_ptr<Backend> local, ClusterLeader& leader)
    : local_(std::move(local)), leader_(leader) {
  if (GraphRecorder* recorder = local_->graph_recorder(); recorder != nullptr) {
    recorder_ = std::make_unique<LeaderRecorder>(*recorder, local_->device_count());
  }
}

ClusterBackend::Placement ClusterBackend::Place(int device) const {
  const std::vector<int>& first = leader_.first_devices();
  // first[0] == 0 and ascending: the last node whose first device is at or below `device`.
  const auto it = std::upper_bound(first.begin(), first.end(), device);
  const int rank = std::max(0, static_cast<int>(it - first.begin()) - 1);
  return Placement{rank, device - first[rank]};
}

absl::StatusOr<int> ClusterBackend::RankOf(std::initializer_list<const BufferPtr*> buffers) const {
  int rank = -1;
  for (const BufferPtr* buffer : buffers) {
    if (*buffer == nullptr) continue;
    const int here = Place((*buffer)->device()).rank;
    if (rank >= 0 && here != rank) {
      return absl::InternalError(
          absl::StrCat("one device op's buffers lie on cluster nodes ", rank, " and ", here));
    }
    rank = here;
  }
  if (rank < 0) return absl::InternalError("a device op without buffers");
  return rank;
}

absl::Status ClusterBackend::Forward(const BufferPtr& buffer, const wire::DeviceWork& work) const {
  return static_cast<const RemoteBuffer&>(*buffer).node().Execute(work);
}

DeviceMemory ClusterBackend::memory(int device) const {
  const Placement p = Place(device);
  if (p.rank == 0) return local_->memory(p.local);
  DeviceMemory m = leader_.node(p.rank)->memory(p.local);
  m.name = absl::StrCat(m.name, " on node ", p.rank);
  return m;
}

std::string ClusterBackend::device_uuid(int device) const {
  const Placement p = Place(device);
  if (p.rank == 0) return local_->device_uuid(p.local);
  return leader_.node(p.rank)->device_uuid(p.local);
}

absl::Status ClusterBackend::DeviceStatus(int device) const {
  const Placement p = Place(device);
  if (p.rank == 0) return local_->DeviceStatus(p.local);
  return leader_.node(p.rank)->DeviceStatus(p.local);
}

absl::Status ClusterBackend::BufferStatus(const DeviceBuffer& buffer) const {
  if (Place(buffer.device()).rank == 0) return local_->BufferStatus(buffer);
  return static_cast<const RemoteBuffer&>(buffer).node().Usable();
}

absl::StatusOr<BufferPtr> ClusterBackend::Allocate(int device, int64_t bytes) {
  if (device < 0 || device >= device_count()) {
    return absl::InternalError(absl::StrCat("device ", device, " is not in the cluster"));
  }
  const Placement p = Place(device);
  if (p.rank == 0) return local_->Allocate(p.local, bytes);
  return leader_.node(p.rank)->Allocate(p.local, bytes);
}

absl::Status ClusterBackend::FillConstant(DType dtype, const BufferBox& dst, const Scalar& value) {
  ASSIGN_OR_RETURN(int rank, RankOf({&dst.buffer}));
  if (rank == 0) return local_->FillConstant(dtype, dst, value);
  wire::DeviceWork work;
  wire::FillConstant* fill = work.mutable_fill_constant();
  fill->set_dtype(static_cast<int32_t>(dtype));
  BufferBoxToWire(dst, fill->mutable_dst());
  ToWire(value, fill->mutable_value());
  return Forward(dst.buffer, work);
}

absl::Status ClusterBackend::FillGenerated(DType dtype, const BufferPtr& dst,
                                           const Shape& global_shape, const Box& chunk_box,
                                           const Generator& generator) {
  ASSIGN_OR_RETURN(int rank, RankOf({&dst}));
  if (rank == 0) return local_->FillGenerated(dtype, dst, global_shape, chunk_box, generator);
  wire::DeviceWork work;
  wire::FillGenerated* fill = work.mutable_fill_generated();
  fill->set_dtype(static_cast<int32_t>(dtype));
  fill->set_dst(HandleOf(dst));
  fill->mutable_global_shape()->Add(global_shape.begin(), global_shape.end());
  ToWire(chunk_box, fill->mutable_chunk_box());
  ToWire(generator, fill->mutable_generator());
  return Forward(dst, work);
}

absl::Status ClusterBackend::Copy(DType dtype, absl::Span<const BoxCopy> copies) {
  // The batch's order rule (device_ops.h): same-device copies first, then the cross-device ones
  // in the order given. Each node's same-device copies go as one batch; the cross-device ones
  // go in order, consecutive copies within one node as one batch, consecutive copies between
  // nodes in waves that run at once (CopyWaveAcrossNodes).
  const int nodes = leader_.size();
  std::vector<std::vector<BoxCopy>> same_device(nodes);
  for (const BoxCopy& copy : copies) {
    if (copy.src.buffer->device() == copy.dst.buffer->device()) {
      same_device[Place(copy.dst.buffer->device()).rank].push_back(copy);
    }
  }
  auto flush = [&](int rank, std::vector<BoxCopy>& batch) -> absl::Status {
    if (batch.empty()) return absl::OkStatus();
    absl::Status status;
    if (rank == 0) {
      status = local_->Copy(dtype, batch);
    } else {
      wire::DeviceWork work;
      wire::Copy* forwarded = work.mutable_copy();
      forwarded->set_dtype(static_cast<int32_t>(dtype));
      for (const BoxCopy& copy : batch) {
        wire::BoxCopy* c = forwarded->add_copies();
        BufferBoxToWire(copy.src, c->mutable_src());
        BufferBoxToWire(copy.dst, c->mutable_dst());
        c->set_combine(static_cast<int32_t>(copy.combine));
      }
      status = Forward(batch.front().dst.buffer, work);
    }
    batch.clear();
    return status;
  };
  for (int rank = 0; rank < nodes; ++rank) RETURN_IF_ERROR(flush(rank, same_device[rank]));

  std::vector<BoxCopy> run;
  int run_rank = -1;
  std::vector<CrossNodeCopy> wave;
  int64_t wave_bytes = 0;
  // Whether `copy` must wait for the wave: it writes or reads a buffer a copy of the wave writes,
  // or writes one it reads (the batch's order decides their result).
  auto tied_to_wave = [&wave](const BoxCopy& copy) {
    for (const CrossNodeCopy& c : wave) {
      const DeviceBuffer* written = c.copy->dst.buffer.get();
      if (copy.dst.buffer.get() == written || copy.src.buffer.get() == written ||
          copy.dst.buffer.get() == c.copy->src.buffer.get()) {
        return true;
      }
    }
    return false;
  };
  auto flush_wave = [&]() -> absl::Status {
    absl::Status status = CopyWaveAcrossNodes(dtype, wave);
    wave.clear();
    wave_bytes = 0;
    return status;
  };
  for (const BoxCopy& copy : copies) {
    if (copy.src.buffer->device() == copy.dst.buffer->device()) continue;
    const int src_rank = Place(copy.src.buffer->device()).rank;
    const int dst_rank = Place(copy.dst.buffer->device()).rank;
    if (src_rank == dst_rank) {
      RETURN_IF_ERROR(flush_wave());
      if (run_rank != dst_rank) RETURN_IF_ERROR(flush(run_rank, run));
      run_rank = dst_rank;
      run.push_back(copy);
      continue;
    }
    RETURN_IF_ERROR(flush(run_rank, run));
    // Refused later by StartSend, with the copy named; here it only sizes the wave.
    const int64_t bytes = BoxBytes(dtype, copy.src.box).value_or(0);
    if (tied_to_wave(copy) || static_cast<int>(wave.size()) == kMaxCopiesInAWave ||
        (!wave.empty() && wave_bytes + bytes > kMaxBytesInAWave)) {
      RETURN_IF_ERROR(flush_wave());
    }
    wave.push_back(CrossNodeCopy{&copy, src_rank, dst_rank});
    wave_bytes += bytes;
  }
  RETURN_IF_ERROR(flush_wave());
  return flush(run_rank, run);
}

absl::Status ClusterBackend::CopyWaveAcrossNodes(DType dtype,
                                                 absl::Span<const CrossNodeCopy> wave) {
  // Every send is posted before any receive waits: a send only queues its device reads and hands
  // its pieces to a sender thread, so none waits for another copy's receive.
  std::vector<uint64_t> tags;
  absl::Status status;
  for (const CrossNodeCopy& c : wave) {
    // The counter's low bits name the copy; the bits from kPieceShift up name its pieces.
    const uint64_t tag =
        kCopyTagBit | (next_tag_.fetch_add(1) & ((uint64_t{1} << kPieceShift) - 1));
    status = StartSend(dtype, c, tag);
    if (!status.ok()) break;  // the copies sent so far are still received below
    tags.push_back(tag);
  }
  // The receives side by side, the first on this thread: each waits for its own bytes only.
  // Where no thread can be started, the rest are received here, one after another.
  std::vector<absl::Status> received(tags.size());
  std::vector<std::thread> waiting;
  size_t threaded = 1;
  for (; threaded < tags.size(); ++threaded) {
    try {
      waiting.emplace_back([&, i = threaded] { received[i] = Receive(dtype, wave[i], tags[i]); });
    } catch (const std::system_error&) {
      break;
    }
  }
  if (!tags.empty()) received[0] = Receive(dtype, wave[0], tags[0]);
  for (size_t i = threaded; i < tags.size(); ++i) received[i] = Receive(dtype, wave[i], tags[i]);
  for (std::thread& t : waiting) t.join();
  for (const absl::Status& r : received) status.Update(r);
  return status;
}

absl::Status ClusterBackend::StartSend(DType dtype, const CrossNodeCopy& c, uint64_t tag) {
  const BoxCopy& copy = *c.copy;
  if (copy.src.box.size() != copy.dst.box.size()) {
    return absl::InternalError("a copy between nodes with boxes of different ranks");
  }
  for (size_t d = 0; d < copy.src.box.size(); ++d) {
    if (copy.src.box[d].count != copy.dst.box[d].count) {
      return absl::InternalError("a copy between nodes with boxes of different extents");
    }
  }
  ASSIGN_OR_RETURN(int64_t bytes, BoxBytes(dtype, copy.src.box));
  if (bytes == 0) return absl::OkStatus();
  if (c.src_rank == 0) {
    return leader_.data_plane().Send(*local_, dtype, copy.src, c.dst_rank, tag);
  }
  wire::DeviceWork work;
  wire::SendBox* send = work.mutable_send_box();
  send->set_dtype(static_cast<int32_t>(dtype));
  BufferBoxToWire(copy.src, send->mutable_src());
  send->set_peer_rank(c.dst_rank);
  send->set_tag(tag);
  return Forward(copy.src.buffer, work);
}

absl::Status ClusterBackend::Receive(DType dtype, const CrossNodeCopy& c, uint64_t tag) {
  const BoxCopy& copy = *c.copy;
  // StartSend checked the boxes; an empty one sent nothing.
  ASSIGN_OR_RETURN(int64_t bytes, BoxBytes(dtype, copy.dst.box));
  if (bytes == 0) return absl::OkStatus();
  if (c.dst_rank == 0) {
    return leader_.data_plane().Receive(*local_, dtype, copy.dst, copy.combine, c.src_rank, tag);
  }
  wire::DeviceWork work;
  wire::ReceiveBox* receive = work.mutable_receive_box();
  receive->set_dtype(static_cast<int32_t>(dtype));
  BufferBoxToWire(copy.dst, receive->mutable_dst());
  receive->set_combine(static_cast<int32_t>(copy.combine));
  receive->set_peer_rank(c.src_rank);
  receive->set_tag(tag);
  return Forward(copy.dst.buffer, work);
}

absl::Status ClusterBackend::Elementwise(ElementwiseOpId op, DType compute, DType storage,
                                         const BufferPtr& out, int64_t n,
                                         absl::Span<const ElementwiseArg> args) {
  ASSIGN_OR_RETURN(int rank, RankOf({&out}));
  for (const ElementwiseArg& arg : args) RETURN_IF_ERROR(RankOf({&out, &arg.buffer}).status());
  if (rank == 0) return local_->Elementwise(op, compute, storage, out, n, args);
  wire::DeviceWork work;
  wire::Elementwise* e = work.mutable_elementwise();
  e->set_op(static_cast<int32_t>(op));
  e->set_compute(static_cast<int32_t>(compute));
  e->set_storage(static_cast<int32_t>(storage));
  e->set_out(HandleOf(out));
  e->set_n(n);
  for (const ElementwiseArg& arg : args) {
    wire::ElementwiseArg* a = e->add_args();
    a->set_buffer(HandleOf(arg.buffer));
    ToWire(arg.view, a->mutable_view());
    a->set_contiguous(arg.contiguous);
    ToWire(arg.scalar, a->mutable_scalar());
  }
  return Forward(out, work);
}

absl::Status ClusterBackend::Cast(DType from, DType to, const BufferPtr& src, const BufferPtr& dst,
                                  int64_t n) {
  ASSIGN_OR_RETURN(int rank, RankOf({&src, &dst}));
  if (rank == 0) return local_->Cast(from, to, src, dst, n);
  wire::DeviceWork work;
  wire::Cast* cast = work.mutable_cast();
  cast->set_from(static_cast<int32_t>(from));
  cast->set_to(static_cast<int32_t>(to));
  cast->set_src(HandleOf(src));
  cast->set_dst(HandleOf(dst));
  cast->set_n(n);
  return Forward(dst, work);
}

absl::Status ClusterBackend::Reduce(ReduceKind kind, DType in, DType storage, const BufferPtr& src,
                                    const ReduceGeometry& geometry, const BufferPtr& dst,
                                    double scale, const BufferPtr& extreme) {
  ASSIGN_OR_RETURN(int rank, RankOf({&src, &dst, &extreme}));
  if (rank == 0) return local_->Reduce(kind, in, storage, src, geometry, dst, scale, extreme);
  wire::DeviceWork work;
  wire::Reduce* r = work.mutable_reduce();
  r->set_kind(static_cast<int32_t>(kind));
  r->set_in(static_cast<int32_t>(in));
  r->set_storage(static_cast<int32_t>(storage));
  r->set_src(HandleOf(src));
  ToWire(geometry, r->mutable_geometry());
  r->set_dst(HandleOf(dst));
  r->set_scale(scale);
  r->set_extreme(HandleOf(extreme));
  return Forward(dst, work);
}

absl::Status ClusterBackend::Gemm(DType dtype, const BufferPtr& a, const BufferPtr& b,
                                  const BufferPtr& c, const GemmShape& shape, bool allow_tf32) {
  ASSIGN_OR_RETURN(int rank, RankOf({&a, &b, &c}));
  if (rank == 0) return local_->Gemm(dtype, a, b, c, shape, allow_tf32);
  wire::DeviceWork work;
  wire::Gemm* g = work.mutable_gemm();
  g->set_dtype(static_cast<int32_t>(dtype));
  g->set_a(HandleOf(a));
  g->set_b(HandleOf(b));
  g->set_c(HandleOf(c));
  g->set_m(shape.m);
  g->set_n(shape.n);
  g->set_k(shape.k);
  g->set_batch(shape.batch);
  g->set_stride_a(shape.stride_a);
  g->set_stride_b(shape.stride_b);
  g->set_stride_c(shape.stride_c);
  g->set_symmetric_a(shape.symmetric_a);
  g->set_allow_tf32(allow_tf32);
  return Forward(c, work);
}

absl::Status ClusterBackend::Sort(DType dtype, const SortRuns& sort) {
  ASSIGN_OR_RETURN(int rank,
                   RankOf({&sort.keys_in, &sort.keys_out, &sort.indices_out, &sort.scratch}));
  if (rank == 0) return local_->Sort(dtype, sort);
  wire::DeviceWork work;
  wire::Sort* s = work.mutable_sort();
  s->set_dtype(static_cast<int32_t>(dtype));
  s->set_keys_in(HandleOf(sort.keys_in));
  s->set_keys_out(HandleOf(sort.keys_out));
  s->set_indices_out(HandleOf(sort.indices_out));
  s->set_scratch(HandleOf(sort.scratch));
  s->set_lines(sort.lines);
  s->set_length(sort.length);
  s->set_index_base(sort.index_base);
  s->set_descending(sort.descending);
  s->set_zeros_equal(sort.zeros_equal);
  return Forward(sort.keys_in, work);
}

// Scratch sizes depend on dtypes and counts alone, and every node runs the same backend kind.
int64_t ClusterBackend::SortScratchBytes(DType dtype, const SortRuns& sort) const {
  return local_->SortScratchBytes(dtype, sort);
}
int64_t ClusterBackend::ScanScratchBytes(DType dtype, const ScanLines& scan) const {
  return local_->ScanScratchBytes(dtype, scan);
}
int64_t ClusterBackend::MergeScratchBytes(DType dtype, const MergeRuns& merge) const {
  return local_->MergeScratchBytes(dtype, merge);
}

absl::Status ClusterBackend::Scan(DType dtype, const ScanLines& scan) {
  ASSIGN_OR_RETURN(int rank, RankOf({&scan.in, &scan.out, &scan.carry, &scan.scratch}));
  if (rank == 0) return local_->Scan(dtype, scan);
  wire::DeviceWork work;
  wire::Scan* s = work.mutable_scan();
  s->set_dtype(static_cast<int32_t>(dtype));
  s->set_in(HandleOf(scan.in));
  s->set_out(HandleOf(scan.out));
  s->set_carry(HandleOf(scan.carry));
  s->set_scratch(HandleOf(scan.scratch));
  s->set_outer(scan.outer);
  s->set_length(scan.length);
  s->set_inner(scan.inner);
  s->set_product(scan.product);
  return Forward(scan.out, work);
}

absl::Status ClusterBackend::Merge(DType dtype, const MergeRuns& merge) {
  ASSIGN_OR_RETURN(int rank,
                   RankOf({&merge.a_keys, &merge.a_indices, &merge.b_keys, &merge.b_indices,
                           &merge.out_keys, &merge.out_indices, &merge.scratch}));
  if (rank == 0) return local_->Merge(dtype, merge);
  wire::DeviceWork work;
  wire::Merge* m = work.mutable_merge();
  m->set_dtype(static_cast<int32_t>(dtype));
  m->set_a_keys(HandleOf(merge.a_keys));
  m->set_a_indices(HandleOf(merge.a_indices));
  m->set_b_keys(HandleOf(merge.b_keys));
  m->set_b_indices(HandleOf(merge.b_indices));
  m->set_out_keys(HandleOf(merge.out_keys));
  m->set_out_indices(HandleOf(merge.out_indices));
  m->set_scratch(HandleOf(merge.scratch));
  m->set_a_count(merge.a_count);
  m->set_b_count(merge.b_count);
  m->set_descending(merge.descending);
  m->set_zeros_equal(merge.zeros_equal);
  return Forward(merge.out_keys, work);
}

absl::Status ClusterBackend::SearchSorted(DType dtype, const SearchRuns& search) {
  ASSIGN_OR_RETURN(int rank, RankOf({&search.sorted, &search.values, &search.out}));
  if (rank == 0) return local_->SearchSorted(dtype, search);
  wire::DeviceWork work;
  wire::SearchSorted* s = work.mutable_search_sorted();
  s->set_dtype(static_cast<int32_t>(dtype));
  s->set_sorted(HandleOf(search.sorted));
  s->set_values(HandleOf(search.values));
  s->set_out(HandleOf(search.out));
  s->set_sorted_count(search.sorted_count);
  s->set_count(search.count);
  s->set_right(search.right);
  return Forward(search.out, work);
}

namespace {
void CsrToWire(DType dtype, const CsrProduct& p, bool to_dense, wire::CsrBlock* out) {
  out->set_dtype(static_cast<int32_t>(dtype));
  out->set_to_dense(to_dense);
  out->set_indptr(HandleOf(p.indptr));
  out->set_indices(HandleOf(p.indices));
  out->set_data(HandleOf(p.data));
  out->set_x(HandleOf(p.x));
  out->set_y(HandleOf(p.y));
  out->set_index_dtype(static_cast<int32_t>(p.index_dtype));
  out->set_rows(p.rows);
  out->set_cols(p.cols);
  out->set_k(p.k);
  out->set_capacity(p.capacity);
}
}  // namespace

absl::Status ClusterBackend::CsrMatmul(DType dtype, const CsrProduct& product) {
  ASSIGN_OR_RETURN(
      int rank, RankOf({&product.indptr, &product.indices, &product.data, &product.x, &product.y}));
  if (rank == 0) return local_->CsrMatmul(dtype, product);
  wire::DeviceWork work;
  CsrToWire(dtype, product, /*to_dense=*/false, work.mutable_csr());
  return Forward(product.y, work);
}

absl::Status ClusterBackend::CsrToDense(DType dtype, const CsrProduct& block) {
  ASSIGN_OR_RETURN(int rank, RankOf({&block.indptr, &block.indices, &block.data, &block.y}));
  if (rank == 0) return local_->CsrToDense(dtype, block);
  wire::DeviceWork work;
  CsrToWire(dtype, block, /*to_dense=*/true, work.mutable_csr());
  return Forward(block.y, work);
}

absl::Status ClusterBackend::Factorize(DType dtype, const DenseFactorization& f) {
  ASSIGN_OR_RETURN(int rank, RankOf({&f.a, &f.b, &f.out0, &f.out1, &f.out2, &f.info}));
  if (rank == 0) return local_->Factorize(dtype, f);
  wire::DeviceWork work;
  wire::Factorize* w = work.mutable_factorize();
  w->set_dtype(static_cast<int32_t>(dtype));
  w->set_kind(static_cast<int32_t>(f.kind));
  w->set_batch(f.batch);
  w->set_m(f.m);
  w->set_n(f.n);
  w->set_nrhs(f.nrhs);
  w->set_upper(f.upper);
  w->set_full_matrices(f.full_matrices);
  w->set_compute_uv(f.compute_uv);
  w->set_det(f.det);
  w->set_a(HandleOf(f.a));
  w->set_b(HandleOf(f.b));
  w->set_out0(HandleOf(f.out0));
  w->set_out1(HandleOf(f.out1));
  w->set_out2(HandleOf(f.out2));
  w->set_info(HandleOf(f.info));
  return Forward(f.a, work);
}

absl::Status ClusterBackend::WriteFromHost(const BufferPtr& dst, int64_t offset, const void* src,
                                           int64_t bytes) {
  if (Place(dst->device()).rank == 0) return local_->WriteFromHost(dst, offset, src, bytes);
  const auto& remote = static_cast<const RemoteBuffer&>(*dst);
  return remote.node().Write(remote.handle(), offset, src, bytes);
}

absl::StatusOr<std::unique_ptr<PendingRead>> ClusterBackend::ReadToHost(const BufferPtr& src,
                                                                        int64_t offset,
                                                                        int64_t bytes, void* dst) {
  if (Place(src->device()).rank == 0) return local_->ReadToHost(src, offset, bytes, dst);
  // A member's bytes come back in the reply, so the read is done when it returns.
  const auto& remote = static_cast<const RemoteBuffer&>(*src);
  RETURN_IF_ERROR(remote.node().Read(remote.handle(), offset, bytes, dst));
  return std::make_unique<DoneRead>();
}

absl::StatusOr<std::unique_ptr<StagedRead>> ClusterBackend::ReadToStaging(const BufferPtr& src,
                                                                          int64_t offset,
                                                                          int64_t bytes) {
  if (Place(src->device()).rank == 0) return local_->ReadToStaging(src, offset, bytes);
  if (bytes < 0 || bytes > kMaxStagedReadBytes) {
    return absl::InternalError("a staged read larger than kMaxStagedReadBytes");
  }
  std::string staged(static_cast<size_t>(bytes), '\0');
  const auto& remote = static_cast<const RemoteBuffer&>(*src);
  RETURN_IF_ERROR(remote.node().Read(remote.handle(), offset, bytes, staged.data()));
  return std::make_unique<HeldRead>(std::move(staged));
}

absl::Status ClusterBackend::Synchronize() {
  absl::Status first = local_->Synchronize();
  for (int rank = 1; rank < leader_.size(); ++rank) {
    std::shared_ptr<RemoteNode> node = leader_.node(rank);
    // A lost node's work is gone with it; its arrays' own calls report that.
    if (!node->Usable().ok()) continue;
    if (absl::Status s = node->Synchronize(); !s.ok() && first.ok()) first = s;
  }
  return first;
}

}  // namespace distarray::cluster
