#include "server/cuda/cuda_backend.h"

#include <cstdlib>
#include <cstring>

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "server/backend/gpu_uuid.h"
#include "server/cuda/cuda_buffer.h"
#include "server/cuda/cuda_status.h"
#include "server/cuda/graph/recorder.h"
#include "server/cuda/kernels.h"

namespace distarray {

namespace {

class CudaPendingRead final : public PendingRead {
 public:
  struct Piece {
    cuda::PinnedPool::Block* block;
    CudaEventPtr copied;
    char* dst;
    int64_t bytes;
  };
  explicit CudaPendingRead(cuda::PinnedPool& pool) : pool_(pool) {}
  // Dropping a read without Wait (a cancelled download, an error part-way through a slab) is
  // safe: the device writes only into the pool's blocks, never into the caller's memory (Wait
  // copies from the block), and each block goes back with its copy's event, so the pool hands it
  // out again only once the copy into it has completed.
  ~CudaPendingRead() override {
    for (Piece& p : pieces_) pool_.Release(p.block, p.copied);
  }
  void Add(Piece piece) { pieces_.push_back(piece); }
  absl::Status Wait() override {
    absl::Status status;
    for (Piece& p : pieces_) {
      if (status.ok()) status = cuda::CudaStatus(cudaEventSynchronize(p.copied->get()), "D2H copy");
      if (status.ok()) std::memcpy(p.dst, p.block->data, p.bytes);
      pool_.Release(p.block, p.copied);
    }
    pieces_.clear();
    return status;
  }

 private:
  cuda::PinnedPool& pool_;
  std::vector<Piece> pieces_;
};

// One pool block the caller reads in place. Dropping it without Wait is as safe as dropping a
// CudaPendingRead: the block goes back with the copy's event.
class CudaStagedRead final : public StagedRead {
 public:
  CudaStagedRead(cuda::PinnedPool& pool, cuda::PinnedPool::Block* block, CudaEventPtr copied,
                 int64_t bytes)
      : pool_(pool), block_(block), copied_(std::move(copied)), bytes_(bytes) {}
  ~CudaStagedRead() override { pool_.Release(block_, copied_); }
  absl::StatusOr<absl::string_view> Wait() override {
    RETURN_IF_ERROR(cuda::CudaStatus(cudaEventSynchronize(copied_->get()), "D2H copy"));
    return absl::string_view(static_cast<const char*>(block_->data), static_cast<size_t>(bytes_));
  }

 private:
  cuda::PinnedPool& pool_;
  cuda::PinnedPool::Block* block_;
  CudaEventPtr copied_;
  int64_t bytes_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CudaBackend>> CudaBackend::Create(const Options& options) {
  // NVLink multicast (NVLS) can take a shared host's GPUs out of service; keep it off unless the
  // operator explicitly turned it on.
  setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/0);
  // An all-reduce captured inside a conditional body (graphs agreeing through NCCL,
  // graph_recorder.h) fails to instantiate with NCCL's graph mixing support on: it adds event
  // nodes, which conditional bodies may not hold. Off, NCCL assumes a communicator is not used by
  // graphs and eager calls at once; the graphs' communicators are their own, never used eagerly.
  setenv("NCCL_GRAPH_MIXING_SUPPORT", "0", /*overwrite=*/0);
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess || count == 0) {
    return absl::UnavailableError(absl::StrCat("backend cuda: no usable GPU (cudaGetDeviceCount: ",
                                               e == cudaSuccess ? "0 devices" : cudaGetErrorName(e),
                                               ")"));
  }
  std::unique_ptr<CudaBackend> backend(new CudaBackend(
      options.transfer, options.loop_unroll, options.persistent_loops, options.graph_agreement));
  backend->devices_.devices.resize(count);
  for (int d = 0; d < count; ++d) {
    ScopedDevice scope(d);
    CudaDevice& state = backend->devices_[d];
    cudaDeviceProp props{};
    CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&props, d));
    size_t free_bytes = 0, total_bytes = 0;
    CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes));
    state.name = absl::StrCat("cuda:", d, " ", props.name);
    state.uuid = FormatGpuUuid(props.uuid.bytes);
    state.total_bytes = static_cast<int64_t>(total_bytes);
    const int64_t limit = options.memory_limit_bytes > 0
                              ? options.memory_limit_bytes
                              : static_cast<int64_t>(options.memory_fraction * total_bytes);
    state.ledger = std::make_unique<MemoryLedger>(d, limit);
    // Keep freed memory in the pool up to the limit: allocation is then a pool lookup.
    cudaMemPool_t pool;
    CUDA_RETURN_IF_ERROR(cudaDeviceGetDefaultMemPool(&pool, d));
    uint64_t threshold = static_cast<uint64_t>(limit);
    CUDA_RETURN_IF_ERROR(
        cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    auto stream = cuda::CudaStream::Create(d);
    if (!stream.ok()) return stream.status();
    state.stream.emplace(*std::move(stream));
    auto transfer = cuda::CudaStream::Create(d);
    if (!transfer.ok()) return transfer.status();
    state.transfer_stream.emplace(*std::move(transfer));
    state.sm_count = props.multiProcessorCount;
    auto scratch = cuda::DeviceBlock::AllocateZeroed(d, CudaDevice::kReduceScratchBytes);
    if (!scratch.ok()) return scratch.status();
    state.reduce_scratch.emplace(*std::move(scratch));
    auto workspace = cuda::DeviceBlock::Allocate(d, CudaDevice::kCublasWorkspaceBytes);
    if (!workspace.ok()) return workspace.status();
    state.cublas_workspace.emplace(*std::move(workspace));
    auto cublas = cuda::CublasHandle::Create(d, state.cublas_workspace->data(),
                                             CudaDevice::kCublasWorkspaceBytes);
    if (!cublas.ok()) return cublas.status();
    state.cublas.emplace(*std::move(cublas));
  }
  // Peer access, for both plain allocations and the pools' memory, wherever the topology allows.
  for (int d = 0; d < count; ++d) {
    ScopedDevice scope(d);
    cudaMemPool_t pool;
    CUDA_RETURN_IF_ERROR(cudaDeviceGetDefaultMemPool(&pool, d));
    for (int peer = 0; peer < count; ++peer) {
      if (peer == d) continue;
      int can = 0;
      CUDA_RETURN_IF_ERROR(cudaDeviceCanAccessPeer(&can, d, peer));
      if (!can) {
        spdlog::warn("device {} cannot access device {} directly", d, peer);
        continue;
      }
      if (cudaError_t e = cudaDeviceEnablePeerAccess(peer, 0);
          e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) {
        return cuda::CudaStatus(e, "cudaDeviceEnablePeerAccess");
      }
      cudaGetLastError();  // clear a tolerated already-enabled error
      cudaMemAccessDesc access{};
      access.location.type = cudaMemLocationTypeDevice;
      access.location.id = peer;
      access.flags = cudaMemAccessFlagsProtReadWrite;
      CUDA_RETURN_IF_ERROR(cudaMemPoolSetAccess(pool, &access, 1));
    }
  }
  // One clique over all local GPUs, made at startup whichever transfer mode copies use: it is the
  // collective path for reductions and the send/recv path of --transfer=nccl.
  if (count > 1) {
    auto clique = cuda::NcclClique::Create(count);
    if (!clique.ok()) return clique.status();
    backend->nccl_ = *std::move(clique);
  }
  backend->recorder_ = std::make_unique<CudaGraphRecorder>(
      backend.get(), &backend->devices_, &backend->rtc_,
      CudaGraphRecorder::Options{backend->graph_agreement_, backend->loop_unroll_,
                                 backend->persistent_loops_});
  spdlog::info("cuda backend: {} devices, cross-device copies by {}", count,
               options.transfer == Transfer::kNccl ? "NCCL send/recv" : "peer copies");
  return backend;
}

CudaBackend::CudaBackend(Transfer transfer, int loop_unroll, bool persistent_loops,
                         GraphAgreement graph_agreement)
    : transfer_(transfer),
      loop_unroll_(loop_unroll),
      persistent_loops_(persistent_loops),
      graph_agreement_(graph_agreement) {}

CudaBackend::~CudaBackend() { Synchronize().IgnoreError(); }

GraphRecorder* CudaBackend::graph_recorder() { return recorder_.get(); }

DeviceMemory CudaBackend::memory(int device) const {
  const CudaDevice& s = devices_[device];
  return DeviceMemory{s.name, s.ledger->used(), s.ledger->limit(), s.total_bytes,
                      s.ledger->failures()};
}

absl::Status CudaBackend::DeviceStatus(int device) const {
  // A sticky error makes every call on the context fail with it, so a stream query sees it
  // without waiting for the stream; NotReady (work queued) and other errors say nothing of it.
  const cudaError_t e = cudaStreamQuery(stream(device));
  if (e == cudaSuccess || e == cudaErrorNotReady) return absl::OkStatus();
  absl::Status status = cuda::CudaStatus(e, absl::StrCat("device ", device));
  return status.code() == absl::StatusCode::kUnavailable ? status : absl::OkStatus();
}

absl::Status WaitForEvents(cudaStream_t stream, const std::vector<CudaEventPtr>& deps) {
  for (const CudaEventPtr& event : deps) {
    // Same-stream work is ordered already; finished work needs no wait. Asking the stream first
    // saves a driver call per dependency in the common case (everything on the compute stream).
    if (event->ordered_before(stream) || event->done()) continue;
    CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream, event->get(), 0));
  }
  return absl::OkStatus();
}

absl::StatusOr<CudaEventPtr> CudaBackend::Submit(CudaWork work) {
  std::lock_guard lock(devices_.enqueue_mu);
  ScopedDevice scope(work.device);
  std::vector<CudaEventPtr> deps;
  for (CudaBuffer* b : work.reads) b->hazards().CollectForRead(deps);
  for (CudaBuffer* b : work.writes) b->hazards().CollectForWrite(deps);
  RETURN_IF_ERROR(WaitForEvents(stream(work.device), deps));
  RETURN_IF_ERROR(work.enqueue(stream(work.device)));
  ASSIGN_OR_RETURN(CudaEventPtr event, CudaEvent::Record(stream(work.device)));
  for (CudaBuffer* b : work.reads) b->hazards().RecordRead(event, IsDone);
  for (CudaBuffer* b : work.writes) b->hazards().RecordWrite(event);
  return event;
}

absl::StatusOr<BufferPtr> CudaBackend::Allocate(int device, int64_t bytes) {
  bytes = std::max<int64_t>(bytes, 1);
  CudaDevice& state = devices_[device];
  RETURN_IF_ERROR(state.ledger->Reserve(bytes));
  std::lock_guard lock(devices_.enqueue_mu);
  ScopedDevice scope(device);
  void* data = nullptr;
  if (cudaError_t e = cudaMallocAsync(&data, bytes, stream(device)); e != cudaSuccess) {
    state.ledger->Release(bytes);
    state.ledger->CountFailure();
    cudaGetLastError();
    return cuda::CudaStatus(e, absl::StrCat("device ", device, ": allocating ", bytes, " bytes"));
  }
  auto buffer =
      std::make_shared<CudaBuffer>(device, bytes, data, stream(device), state.ledger.get());
  // The allocation is ordered on this stream; work on other streams must wait for it.
  ASSIGN_OR_RETURN(CudaEventPtr allocated, CudaEvent::Record(stream(device)));
  buffer->hazards().RecordWrite(allocated);
  return buffer;
}

absl::Status CudaBackend::FillConstant(DType dtype, const BufferBox& dst, const Scalar& value) {
  return Submit(cuda::FillConstantWork(dtype, dst, value)).status();
}

absl::Status CudaBackend::FillGenerated(DType dtype, const BufferPtr& dst,
                                        const Shape& global_shape, const Box& chunk_box,
                                        const Generator& generator) {
  return Submit(cuda::FillGeneratedWork(dtype, dst, global_shape, chunk_box, generator)).status();
}

absl::Status CudaBackend::Elementwise(ElementwiseOpId op, DType compute, DType storage,
                                      const BufferPtr& out, int64_t n,
                                      absl::Span<const ElementwiseArg> args) {
  return Submit(cuda::ElementwiseWork(devices_, op, compute, storage, out, n, args)).status();
}

absl::Status CudaBackend::Cast(DType from, DType to, const BufferPtr& src, const BufferPtr& dst,
                               int64_t n) {
  return Submit(cuda::CastWork(devices_, from, to, src, dst, n)).status();
}

absl::Status CudaBackend::Reduce(ReduceKind kind, DType in, DType storage, const BufferPtr& src,
                                 const ReduceGeometry& geometry, const BufferPtr& dst, double scale,
                                 const BufferPtr& extreme) {
  return Submit(cuda::ReduceWork(devices_, kind, in, storage, src, geometry, dst, scale, extreme))
      .status();
}

absl::Status CudaBackend::Scan(DType dtype, const ScanLines& scan) {
  ASSIGN_OR_RETURN(CudaWork work, cuda::ScanWork(dtype, scan));
  return Submit(std::move(work)).status();
}

int64_t CudaBackend::ScanScratchBytes(DType dtype, const ScanLines& scan) const {
  return cuda::ScanScratchBytes(dtype, scan);
}

absl::Status CudaBackend::Sort(DType dtype, const SortRuns& sort) {
  ASSIGN_OR_RETURN(CudaWork work, cuda::SortWork(dtype, sort));
  return Submit(std::move(work)).status();
}

int64_t CudaBackend::SortScratchBytes(DType dtype, const SortRuns& sort) const {
  return cuda::SortScratchBytes(dtype, sort);
}

absl::Status CudaBackend::SearchSorted(DType dtype, const SearchRuns& search) {
  ASSIGN_OR_RETURN(CudaWork work, cuda::SearchSortedWork(dtype, search));
  return Submit(std::move(work)).status();
}

absl::Status CudaBackend::CsrMatmul(DType dtype, const CsrProduct& product) {
  ASSIGN_OR_RETURN(CudaWork work, cuda::CsrMatmulWork(dtype, product));
  return Submit(std::move(work)).status();
}

absl::Status CudaBackend::CsrToDense(DType dtype, const CsrProduct& block) {
  ASSIGN_OR_RETURN(CudaWork work, cuda::CsrToDenseWork(dtype, block));
  return Submit(std::move(work)).status();
}

absl::Status CudaBackend::Merge(DType dtype, const MergeRuns& merge) {
  ASSIGN_OR_RETURN(CudaWork work, cuda::MergeWork(dtype, merge));
  return Submit(std::move(work)).status();
}

int64_t CudaBackend::MergeScratchBytes(DType dtype, const MergeRuns& merge) const {
  return cuda::MergeScratchBytes(dtype, merge);
}

absl::Status CudaBackend::Gemm(DType dtype, const BufferPtr& a, const BufferPtr& b,
                               const BufferPtr& c, const GemmShape& shape, bool allow_tf32) {
  ASSIGN_OR_RETURN(CudaWork work, cuda::GemmWork(devices_, dtype, a, b, c, shape, allow_tf32));
  return Submit(std::move(work)).status();
}

// One cross-device piece: what is sent from where and received where. Strided sides go through
// dense staging buffers (packed before sending, unpacked and combined after receiving).
struct CudaBackend::CrossDeviceCopy {
  const BoxCopy* copy;
  CudaBuffer* src;
  CudaBuffer* dst;
  int64_t bytes;
  BufferPtr src_staging;  // null: send straight from src
  BufferPtr dst_staging;  // null: receive straight into dst
  const char* send_from;
  char* receive_into;
};

absl::Status CudaBackend::CopyAcrossDevices(DType dtype, absl::Span<const BoxCopy* const> copies) {
  const int64_t element = DTypeSize(dtype);
  // Everything that can fail for lack of memory happens before anything is launched.
  std::vector<CrossDeviceCopy> plan;
  for (const BoxCopy* copy : copies) {
    CrossDeviceCopy c{copy, AsCuda(copy->src.buffer), AsCuda(copy->dst.buffer),
                      NumElements(copy->src.box) * element};
    if (auto offset = ContiguousOffset(copy->src.shape, copy->src.box)) {
      c.send_from = c.src->data() + *offset * element;
    } else {
      ASSIGN_OR_RETURN(c.src_staging, Allocate(c.src->device(), c.bytes));
      c.send_from = AsCuda(c.src_staging)->data();
    }
    auto dst_offset = ContiguousOffset(copy->dst.shape, copy->dst.box);
    if (dst_offset && copy->combine == Combine::kAssign) {
      c.receive_into = c.dst->data() + *dst_offset * element;
    } else {
      ASSIGN_OR_RETURN(c.dst_staging, Allocate(c.dst->device(), c.bytes));
      c.receive_into = AsCuda(c.dst_staging)->data();
    }
    plan.push_back(std::move(c));
  }

  std::lock_guard lock(devices_.enqueue_mu);
  // 1. Each stream waits for its inputs; strided sources are packed on their own device.
  for (CrossDeviceCopy& c : plan) {
    {
      ScopedDevice scope(c.src->device());
      std::vector<CudaEventPtr> deps;
      c.src->hazards().CollectForRead(deps);
      if (c.src_staging) AsCuda(c.src_staging)->hazards().CollectForWrite(deps);
      RETURN_IF_ERROR(WaitForEvents(transfer_stream(c.src->device()), deps));
      if (c.src_staging) {
        const Shape dense = BoxShape(c.copy->src.box);
        CUDA_RETURN_IF_ERROR(cuda::LaunchCopyBox(
            dtype, c.src->data(), MakeStridedBox(c.copy->src.shape, c.copy->src.box),
            AsCuda(c.src_staging)->data(), MakeStridedBox(dense, FullBox(dense)), Combine::kAssign,
            transfer_stream(c.src->device())));
      }
    }
    ScopedDevice scope(c.dst->device());
    std::vector<CudaEventPtr> deps;
    c.dst->hazards().CollectForWrite(deps);
    if (c.dst_staging) AsCuda(c.dst_staging)->hazards().CollectForWrite(deps);
    RETURN_IF_ERROR(WaitForEvents(transfer_stream(c.dst->device()), deps));
  }

  // 2. The transfers: one NCCL group of send/recv pairs, or peer copies on the receiving stream.
  if (transfer_ == Transfer::kNccl && nccl_) {
    NCCL_RETURN_IF_ERROR(ncclGroupStart());
    for (CrossDeviceCopy& c : plan) {
      const int from = c.src->device(), to = c.dst->device();
      NCCL_RETURN_IF_ERROR(
          ncclSend(c.send_from, c.bytes, ncclUint8, to, nccl_->comm(from), transfer_stream(from)));
      NCCL_RETURN_IF_ERROR(
          ncclRecv(c.receive_into, c.bytes, ncclUint8, from, nccl_->comm(to), transfer_stream(to)));
    }
    NCCL_RETURN_IF_ERROR(ncclGroupEnd());
  } else {
    // Mark every source ready before enqueueing any copy: a marker recorded after a copy on the
    // same stream would serialize the two directions of a swap.
    std::vector<CudaEventPtr> ready(devices_.count());
    for (CrossDeviceCopy& c : plan) {
      const int from = c.src->device();
      if (ready[from]) continue;
      ScopedDevice scope(from);
      ASSIGN_OR_RETURN(ready[from], CudaEvent::Record(transfer_stream(from)));
    }
    for (CrossDeviceCopy& c : plan) {
      const int from = c.src->device(), to = c.dst->device();
      ScopedDevice scope(to);
      CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(transfer_stream(to), ready[from]->get(), 0));
      CUDA_RETURN_IF_ERROR(
          cudaMemcpyPeerAsync(c.receive_into, to, c.send_from, from, c.bytes, transfer_stream(to)));
    }
  }

  // 3. Unpack and combine staged receipts, then record what each stream did.
  for (CrossDeviceCopy& c : plan) {
    if (!c.dst_staging) continue;
    ScopedDevice scope(c.dst->device());
    const Shape dense = BoxShape(c.copy->dst.box);
    CUDA_RETURN_IF_ERROR(cuda::LaunchCopyBox(dtype, AsCuda(c.dst_staging)->data(),
                                             MakeStridedBox(dense, FullBox(dense)), c.dst->data(),
                                             MakeStridedBox(c.copy->dst.shape, c.copy->dst.box),
                                             c.copy->combine, transfer_stream(c.dst->device())));
  }
  std::vector<CudaEventPtr> done(devices_.count());
  auto done_on = [&](int device) -> absl::StatusOr<CudaEventPtr> {
    if (!done[device]) {
      ScopedDevice scope(device);
      ASSIGN_OR_RETURN(done[device], CudaEvent::Record(transfer_stream(device)));
    }
    return done[device];
  };
  const bool peer = !(transfer_ == Transfer::kNccl && nccl_);
  for (CrossDeviceCopy& c : plan) {
    // With peer copies the receiving stream reads the source; with NCCL the sending stream does.
    ASSIGN_OR_RETURN(CudaEventPtr read, done_on(peer ? c.dst->device() : c.src->device()));
    ASSIGN_OR_RETURN(CudaEventPtr wrote, done_on(c.dst->device()));
    c.src->hazards().RecordRead(read, IsDone);
    c.dst->hazards().RecordWrite(wrote);
    if (c.src_staging) AsCuda(c.src_staging)->hazards().RecordWrite(read);
    if (c.dst_staging) AsCuda(c.dst_staging)->hazards().RecordWrite(wrote);
  }
  return absl::OkStatus();
}

absl::Status CudaBackend::Copy(DType dtype, absl::Span<const BoxCopy> copies) {
  // Same-device copies first, then one batch of cross-device ones (the contract in device_ops.h).
  std::vector<const BoxCopy*> cross;
  for (const BoxCopy& copy : copies) {
    if (copy.src.buffer->device() == copy.dst.buffer->device()) {
      RETURN_IF_ERROR(Submit(cuda::SameDeviceCopyWork(dtype, copy)).status());
    } else {
      cross.push_back(&copy);
    }
  }
  if (cross.empty()) return absl::OkStatus();
  return CopyAcrossDevices(dtype, cross);
}

// A staging block whose copy's launch failed. If the copy never reached the stream the block is
// free at once. If it did (the event after it could not be recorded), nothing marks when it ends,
// so the stream is drained first; a stream that cannot even be drained is in a sticky error, and
// the block stays out of the pool rather than be reused under a copy that may still run.
static void ReleaseAfterFailedLaunch(cuda::PinnedPool& pool, cuda::PinnedPool::Block* block,
                                     int device, cudaStream_t stream, bool enqueued) {
  if (enqueued) {
    ScopedDevice scope(device);
    if (cudaError_t e = cudaStreamSynchronize(stream); e != cudaSuccess) {
      spdlog::error("device {}: a staging block is retired after a failed copy: {}", device,
                    cudaGetErrorName(e));
      return;
    }
  }
  pool.Release(block, nullptr);
}

absl::Status CudaBackend::WriteFromHost(const BufferPtr& dst, int64_t offset, const void* src,
                                        int64_t bytes) {
  CudaBuffer* buffer = AsCuda(dst);
  const char* from = static_cast<const char*>(src);
  for (int64_t done = 0; done < bytes;) {
    const int64_t n = std::min<int64_t>(bytes - done, cuda::PinnedPool::kBlockBytes);
    ASSIGN_OR_RETURN(cuda::PinnedPool::Block * block, pinned_.Acquire(n));
    std::memcpy(block->data, from + done, n);  // the caller's memory is free once we return
    bool enqueued = false;
    auto copied = Submit(CudaWork{buffer->device(), {}, {buffer}, [&](cudaStream_t s) {
                                    absl::Status status = cuda::CudaStatus(
                                        cudaMemcpyAsync(buffer->data() + offset + done, block->data,
                                                        n, cudaMemcpyHostToDevice, s),
                                        "host-to-device copy");
                                    enqueued = status.ok();
                                    return status;
                                  }});
    if (!copied.ok()) {
      ReleaseAfterFailedLaunch(pinned_, block, buffer->device(), stream(buffer->device()),
                               enqueued);
      return copied.status();
    }
    // Not reused until the copy out of it has completed.
    pinned_.Release(block, *copied);
    done += n;
  }
  return absl::OkStatus();
}

// Copies `bytes` of `buffer` at `offset` into a pool block, after the work that writes it;
// returns the block with the copy's event. On failure the block is back in the pool (or retired).
absl::StatusOr<CudaBackend::StagedBlock> CudaBackend::ReadIntoBlock(CudaBuffer* buffer,
                                                                    int64_t offset, int64_t bytes) {
  ASSIGN_OR_RETURN(cuda::PinnedPool::Block * block,
                   pinned_.Acquire(static_cast<size_t>(std::max<int64_t>(bytes, 1))));
  bool enqueued = false;
  auto copied = Submit(CudaWork{buffer->device(), {buffer}, {}, [&](cudaStream_t s) {
                                  absl::Status status = cuda::CudaStatus(
                                      cudaMemcpyAsync(block->data, buffer->data() + offset, bytes,
                                                      cudaMemcpyDeviceToHost, s),
                                      "device-to-host copy");
                                  enqueued = status.ok();
                                  return status;
                                }});
  if (!copied.ok()) {
    ReleaseAfterFailedLaunch(pinned_, block, buffer->device(), stream(buffer->device()), enqueued);
    return copied.status();
  }
  return StagedBlock{block, *copied};
}

absl::StatusOr<std::unique_ptr<PendingRead>> CudaBackend::ReadToHost(const BufferPtr& src,
                                                                     int64_t offset, int64_t bytes,
                                                                     void* dst) {
  CudaBuffer* buffer = AsCuda(src);
  // On an error part-way, `pending` releases the blocks already in flight with their events.
  auto pending = std::make_unique<CudaPendingRead>(pinned_);
  char* to = static_cast<char*>(dst);
  for (int64_t done = 0; done < bytes;) {
    const int64_t n = std::min<int64_t>(bytes - done, cuda::PinnedPool::kBlockBytes);
    ASSIGN_OR_RETURN(StagedBlock staged, ReadIntoBlock(buffer, offset + done, n));
    pending->Add({staged.block, staged.copied, to + done, n});
    done += n;
  }
  return pending;
}

absl::StatusOr<std::unique_ptr<StagedRead>> CudaBackend::ReadToStaging(const BufferPtr& src,
                                                                       int64_t offset,
                                                                       int64_t bytes) {
  static_assert(cuda::PinnedPool::kBlockBytes >= kMaxStagedReadBytes);
  if (bytes < 0 || bytes > kMaxStagedReadBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("ReadToStaging: ", bytes, " bytes; at most ", kMaxStagedReadBytes));
  }
  ASSIGN_OR_RETURN(StagedBlock staged, ReadIntoBlock(AsCuda(src), offset, bytes));
  return std::make_unique<CudaStagedRead>(pinned_, staged.block, staged.copied, bytes);
}

absl::Status CudaBackend::Synchronize() {
  for (int d = 0; d < device_count(); ++d) {
    ScopedDevice scope(d);
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(transfer_stream(d)));
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream(d)));
  }
  return absl::OkStatus();
}

}  // namespace distarray
