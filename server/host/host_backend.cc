#include "server/host/host_backend.h"

#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/host/host_buffer.h"
#include "server/host/host_graph_recorder.h"
#include "server/host/host_work.h"

namespace distarray {

namespace {

// The copy writes into the caller's memory from a device thread, so a read dropped without
// Wait (a cancelled download, an error part-way through a slab) must still wait: otherwise the
// memory is freed while the copy into it is queued.
class HostPendingRead final : public PendingRead {
 public:
  explicit HostPendingRead(HostEventPtr event) : event_(std::move(event)) {}
  ~HostPendingRead() override { event_->Wait(); }
  absl::Status Wait() override {
    event_->Wait();
    return absl::OkStatus();
  }

 private:
  HostEventPtr event_;
};

// The host backend's staging is a vector the read owns; the copy into it waits like any read.
class HostStagedRead final : public StagedRead {
 public:
  explicit HostStagedRead(int64_t bytes) : bytes_(static_cast<size_t>(bytes)) {}
  ~HostStagedRead() override {
    if (event_) event_->Wait();
  }
  absl::StatusOr<absl::string_view> Wait() override {
    event_->Wait();
    return absl::string_view(bytes_.data(), bytes_.size());
  }
  char* data() { return bytes_.data(); }
  void set_event(HostEventPtr event) { event_ = std::move(event); }

 private:
  std::vector<char> bytes_;
  HostEventPtr event_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<HostBackend>> HostBackend::Create(const Options& options) {
  if (options.device_count < 1 || options.device_count > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("host devices: must be in [1, 64], got ", options.device_count));
  }
  if (options.memory_limit_bytes <= 0) {
    return absl::InvalidArgumentError("memory limit: must be positive");
  }
  return std::unique_ptr<HostBackend>(new HostBackend(options));
}

HostBackend::HostBackend(const Options& options)
    : recorder_(std::make_unique<HostGraphRecorder>(this)) {
  for (int d = 0; d < options.device_count; ++d) {
    ledgers_.push_back(std::make_unique<MemoryLedger>(d, options.memory_limit_bytes));
    streams_.push_back(std::make_unique<HostStream>());
  }
}

HostBackend::~HostBackend() { streams_.clear(); }  // joins workers before ledgers go

DeviceMemory HostBackend::memory(int device) const {
  const MemoryLedger& ledger = *ledgers_[device];
  return DeviceMemory{absl::StrCat("host:", device), ledger.used(), ledger.limit(), ledger.limit(),
                      ledger.failures()};
}

std::string HostBackend::device_uuid(int device) const { return absl::StrCat("host-", device); }

GraphRecorder* HostBackend::graph_recorder() { return recorder_.get(); }

absl::StatusOr<BufferPtr> HostBackend::Allocate(int device, int64_t bytes) {
  bytes = std::max<int64_t>(bytes, 1);
  MemoryLedger& ledger = *ledgers_[device];
  if (absl::Status s = ledger.Reserve(bytes); !s.ok()) return s;
  auto* data = static_cast<std::byte*>(::operator new[](bytes, std::align_val_t{64}, std::nothrow));
  if (data == nullptr) {
    ledger.Release(bytes);
    ledger.CountFailure();
    return absl::ResourceExhaustedError(
        absl::StrCat("device ", device, ": host memory for ", bytes, " bytes is exhausted"));
  }
  return std::make_shared<HostBuffer>(device, bytes, data, &ledger);
}

absl::StatusOr<HostEventPtr> HostBackend::Submit(HostWork work) {
  auto event = std::make_shared<HostEvent>();
  std::lock_guard lock(order_mu_);
  std::vector<HostEventPtr> deps;
  for (HostBuffer* b : work.reads) b->hazards().CollectForRead(deps);
  for (HostBuffer* b : work.writes) b->hazards().CollectForWrite(deps);
  for (HostBuffer* b : work.reads) {
    b->hazards().RecordRead(event, [](const HostEventPtr& e) { return e->done(); });
  }
  for (HostBuffer* b : work.writes) b->hazards().RecordWrite(event);
  streams_[work.device]->Enqueue([deps = std::move(deps), event, run = std::move(work.run)] {
    for (const HostEventPtr& dep : deps) dep->Wait();  // as cudaStreamWaitEvent
    run();
    event->Signal();
  });
  return event;
}

absl::Status HostBackend::FillConstant(DType dtype, const BufferBox& dst, const Scalar& value) {
  return Submit(host::FillConstantWork(dtype, dst, value)).status();
}

absl::Status HostBackend::FillGenerated(DType dtype, const BufferPtr& dst,
                                        const Shape& global_shape, const Box& chunk_box,
                                        const Generator& generator) {
  return Submit(host::FillGeneratedWork(dtype, dst, global_shape, chunk_box, generator)).status();
}

absl::Status HostBackend::Copy(DType dtype, absl::Span<const BoxCopy> copies) {
  // Same-device copies first, then cross-device ones, as the CUDA backend orders them.
  for (const bool cross : {false, true}) {
    for (const BoxCopy& copy : copies) {
      if ((copy.src.buffer->device() != copy.dst.buffer->device()) != cross) continue;
      RETURN_IF_ERROR(Submit(host::CopyWork(dtype, copy)).status());
    }
  }
  return absl::OkStatus();
}

absl::Status HostBackend::Elementwise(ElementwiseOpId op, DType compute, DType storage,
                                      const BufferPtr& out, int64_t n,
                                      absl::Span<const ElementwiseArg> args) {
  ASSIGN_OR_RETURN(HostWork work, host::ElementwiseWork(op, compute, storage, out, n, args));
  return Submit(std::move(work)).status();
}

absl::Status HostBackend::Cast(DType from, DType to, const BufferPtr& src, const BufferPtr& dst,
                               int64_t n) {
  return Submit(host::CastWork(from, to, src, dst, n)).status();
}

absl::Status HostBackend::Reduce(ReduceKind kind, DType in, DType storage, const BufferPtr& src,
                                 const ReduceGeometry& geometry, const BufferPtr& dst, double scale,
                                 const BufferPtr& extreme) {
  ASSIGN_OR_RETURN(HostWork work,
                   host::ReduceWork(kind, in, storage, src, geometry, dst, scale, extreme));
  return Submit(std::move(work)).status();
}

absl::Status HostBackend::Sort(DType dtype, const SortRuns& sort) {
  ASSIGN_OR_RETURN(HostWork work, host::SortWork(dtype, sort));
  return Submit(std::move(work)).status();
}

absl::Status HostBackend::Scan(DType dtype, const ScanLines& scan) {
  ASSIGN_OR_RETURN(HostWork work, host::ScanWork(dtype, scan));
  return Submit(std::move(work)).status();
}

absl::Status HostBackend::SearchSorted(DType dtype, const SearchRuns& search) {
  ASSIGN_OR_RETURN(HostWork work, host::SearchSortedWork(dtype, search));
  return Submit(std::move(work)).status();
}

absl::Status HostBackend::CsrMatmul(DType dtype, const CsrProduct& product) {
  ASSIGN_OR_RETURN(HostWork work, host::CsrMatmulWork(dtype, product));
  return Submit(std::move(work)).status();
}

absl::Status HostBackend::CsrToDense(DType dtype, const CsrProduct& block) {
  ASSIGN_OR_RETURN(HostWork work, host::CsrToDenseWork(dtype, block));
  return Submit(std::move(work)).status();
}

absl::Status HostBackend::Merge(DType dtype, const MergeRuns& merge) {
  ASSIGN_OR_RETURN(HostWork work, host::MergeWork(dtype, merge));
  return Submit(std::move(work)).status();
}

absl::Status HostBackend::Gemm(DType dtype, const BufferPtr& a, const BufferPtr& b,
                               const BufferPtr& c, const GemmShape& shape, bool /*allow_tf32*/) {
  ASSIGN_OR_RETURN(HostWork work, host::GemmWork(dtype, a, b, c, shape));
  return Submit(std::move(work)).status();
}

absl::Status HostBackend::Factorize(DType dtype, const DenseFactorization& f) {
  ASSIGN_OR_RETURN(HostWork work, host::FactorizeWork(dtype, f));
  return Submit(std::move(work)).status();
}

absl::Status HostBackend::WriteFromHost(const BufferPtr& dst, int64_t offset, const void* src,
                                        int64_t bytes) {
  auto buffer = AsHost(dst);
  auto staged = std::make_shared<std::vector<std::byte>>(bytes);
  // memcpy's pointers must be valid even for zero bytes, and an empty source may be null.
  if (bytes > 0) std::memcpy(staged->data(), src, bytes);
  auto work = [buffer, staged, offset] {
    if (!staged->empty()) std::memcpy(buffer->data() + offset, staged->data(), staged->size());
  };
  return Submit(HostWork{buffer->device(), {}, {buffer.get()}, std::move(work)}).status();
}

absl::StatusOr<std::unique_ptr<PendingRead>> HostBackend::ReadToHost(const BufferPtr& src,
                                                                     int64_t offset, int64_t bytes,
                                                                     void* dst) {
  ASSIGN_OR_RETURN(HostEventPtr done, StartRead(src, offset, bytes, dst));
  return std::make_unique<HostPendingRead>(std::move(done));
}

absl::StatusOr<HostEventPtr> HostBackend::StartRead(const BufferPtr& src, int64_t offset,
                                                    int64_t bytes, void* dst) {
  auto buffer = AsHost(src);
  auto work = [buffer, offset, bytes, dst] {
    if (bytes > 0) std::memcpy(dst, buffer->data() + offset, bytes);  // an empty `dst` may be null
  };
  return Submit(HostWork{buffer->device(), {buffer.get()}, {}, std::move(work)});
}

absl::StatusOr<std::unique_ptr<StagedRead>> HostBackend::ReadToStaging(const BufferPtr& src,
                                                                       int64_t offset,
                                                                       int64_t bytes) {
  if (bytes < 0 || bytes > kMaxStagedReadBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("ReadToStaging: ", bytes, " bytes; at most ", kMaxStagedReadBytes));
  }
  auto read = std::make_unique<HostStagedRead>(bytes);
  ASSIGN_OR_RETURN(HostEventPtr done, StartRead(src, offset, bytes, read->data()));
  read->set_event(std::move(done));
  return read;
}

absl::Status HostBackend::Synchronize() {
  for (auto& stream : streams_) stream->Synchronize();
  return absl::OkStatus();
}

}  // namespace distarray
