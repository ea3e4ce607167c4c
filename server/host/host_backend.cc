#include "server/host/host_backend.h"

#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/host/host_buffer.h"
#include "server/host/host_graph_recorder.h"
#include "server/kernels/host_kernels.h"

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

absl::Status HostBackend::RefuseWhileRecording(absl::string_view call,
                                               absl::string_view why) const {
  if (HostGraphRecording* recording = HostGraphRecording::Current(this)) {
    return recording->Refuse(call, why);
  }
  return absl::OkStatus();
}

absl::StatusOr<BufferPtr> HostBackend::Allocate(int device, int64_t bytes) {
  bytes = std::max<int64_t>(bytes, 1);
  HostGraphRecording* recording = HostGraphRecording::Current(this);
  if (recording != nullptr && device != recording->device()) {
    // As on CUDA: a graph's buffers are its slots on its one device.
    return recording->Refuse("Allocate", absl::StrCat("it is for device ", device));
  }
  MemoryLedger& ledger = *ledgers_[device];
  if (absl::Status s = ledger.Reserve(bytes); !s.ok()) return s;
  auto* data = static_cast<std::byte*>(::operator new[](bytes, std::align_val_t{64}, std::nothrow));
  if (data == nullptr) {
    ledger.Release(bytes);
    ledger.CountFailure();
    return absl::ResourceExhaustedError(
        absl::StrCat("device ", device, ": host memory for ", bytes, " bytes is exhausted"));
  }
  auto buffer = std::make_shared<HostBuffer>(device, bytes, data, &ledger);
  // Allocated while recording: a slot of the graph, alive (and charged) as long as it is.
  if (recording != nullptr) recording->Keep(buffer);
  return buffer;
}

absl::StatusOr<HostEventPtr> HostBackend::Launch(absl::string_view call, int device,
                                                 const std::vector<HostBuffer*>& reads,
                                                 const std::vector<HostBuffer*>& writes,
                                                 std::function<void()> work) {
  if (HostGraphRecording* recording = HostGraphRecording::Current(this)) {
    RETURN_IF_ERROR(recording->Record(call, device, reads, writes, std::move(work)));
    return HostEventPtr();
  }
  auto event = std::make_shared<HostEvent>();
  std::lock_guard lock(order_mu_);
  std::vector<HostEventPtr> deps;
  for (HostBuffer* b : reads) b->hazards().CollectForRead(deps);
  for (HostBuffer* b : writes) b->hazards().CollectForWrite(deps);
  for (HostBuffer* b : reads) {
    b->hazards().RecordRead(event, [](const HostEventPtr& e) { return e->done(); });
  }
  for (HostBuffer* b : writes) b->hazards().RecordWrite(event);
  streams_[device]->Enqueue([deps = std::move(deps), event, work = std::move(work)] {
    for (const HostEventPtr& dep : deps) dep->Wait();  // as cudaStreamWaitEvent
    work();
    event->Signal();
  });
  return event;
}

absl::Status HostBackend::FillConstant(DType dtype, const BufferBox& dst, const Scalar& value) {
  auto buffer = AsHost(dst.buffer);
  const StridedBox box = MakeStridedBox(dst.shape, dst.box);
  auto work = [buffer, box, dtype, value] {
    DispatchStorageDType(dtype, [&](auto tag) {
      using T = decltype(tag);
      FillBoxOnHost(buffer->as<T>(), box, value.As<T>());
    });
  };
  return Launch("FillConstant", buffer->device(), {}, {buffer.get()}, std::move(work)).status();
}

absl::Status HostBackend::FillGenerated(DType dtype, const BufferPtr& dst,
                                        const Shape& global_shape, const Box& chunk_box,
                                        const Generator& generator) {
  auto buffer = AsHost(dst);
  auto work = [=] {
    DispatchStorageDType(dtype, [&](auto tag) {
      using T = decltype(tag);
      FillGeneratedOnHost(buffer->as<T>(), global_shape, chunk_box, generator);
    });
  };
  return Launch("FillGenerated", buffer->device(), {}, {buffer.get()}, std::move(work)).status();
}

absl::Status HostBackend::Copy(DType dtype, absl::Span<const BoxCopy> copies) {
  if (HostGraphRecording* recording = HostGraphRecording::Current(this)) {
    // The whole batch is admitted before any of it is recorded: a refused batch leaves nothing
    // half-recorded.
    for (const BoxCopy& copy : copies) {
      const int from = copy.src.buffer->device(), to = copy.dst.buffer->device();
      if (from != to) {
        return recording->Refuse(
            "Copy", absl::StrCat("it copies across devices (device ", from, " to ", to, ")"));
      }
      RETURN_IF_ERROR(recording->Admit(
          "Copy", to, {AsHost(copy.src.buffer).get(), AsHost(copy.dst.buffer).get()}));
    }
  }
  // Same-device copies first, then cross-device ones, as the CUDA backend orders them.
  std::vector<const BoxCopy*> ordered;
  for (const BoxCopy& c : copies) {
    if (c.src.buffer->device() == c.dst.buffer->device()) ordered.push_back(&c);
  }
  for (const BoxCopy& c : copies) {
    if (c.src.buffer->device() != c.dst.buffer->device()) ordered.push_back(&c);
  }
  for (const BoxCopy* copy_ptr : ordered) {
    const BoxCopy& copy = *copy_ptr;
    auto src = AsHost(copy.src.buffer);
    auto dst = AsHost(copy.dst.buffer);
    const StridedBox src_box = MakeStridedBox(copy.src.shape, copy.src.box);
    const StridedBox dst_box = MakeStridedBox(copy.dst.shape, copy.dst.box);
    const Combine combine = copy.combine;
    auto work = [=] {
      DispatchStorageDType(dtype, [&](auto tag) {
        using T = decltype(tag);
        CopyBoxOnHost(src->as<T>(), src_box, dst->as<T>(), dst_box, combine);
      });
    };
    RETURN_IF_ERROR(
        Launch("Copy", dst->device(), {src.get()}, {dst.get()}, std::move(work)).status());
  }
  return absl::OkStatus();
}

absl::Status HostBackend::WriteFromHost(const BufferPtr& dst, int64_t offset, const void* src,
                                        int64_t bytes) {
  RETURN_IF_ERROR(RefuseWhileRecording("WriteFromHost", "host transfers cannot be recorded"));
  auto buffer = AsHost(dst);
  auto staged = std::make_shared<std::vector<std::byte>>(bytes);
  // memcpy's pointers must be valid even for zero bytes, and an empty source may be null.
  if (bytes > 0) std::memcpy(staged->data(), src, bytes);
  auto work = [buffer, staged, offset] {
    if (!staged->empty()) std::memcpy(buffer->data() + offset, staged->data(), staged->size());
  };
  return Launch("WriteFromHost", buffer->device(), {}, {buffer.get()}, std::move(work)).status();
}

absl::StatusOr<std::unique_ptr<PendingRead>> HostBackend::ReadToHost(const BufferPtr& src,
                                                                     int64_t offset, int64_t bytes,
                                                                     void* dst) {
  ASSIGN_OR_RETURN(HostEventPtr done, StartRead("ReadToHost", src, offset, bytes, dst));
  return std::make_unique<HostPendingRead>(std::move(done));
}

absl::StatusOr<HostEventPtr> HostBackend::StartRead(absl::string_view call, const BufferPtr& src,
                                                    int64_t offset, int64_t bytes, void* dst) {
  RETURN_IF_ERROR(RefuseWhileRecording(call, "host transfers cannot be recorded"));
  auto buffer = AsHost(src);
  auto work = [buffer, offset, bytes, dst] {
    if (bytes > 0) std::memcpy(dst, buffer->data() + offset, bytes);  // an empty `dst` may be null
  };
  return Launch(call, buffer->device(), {buffer.get()}, {}, std::move(work));
}

absl::StatusOr<std::unique_ptr<StagedRead>> HostBackend::ReadToStaging(const BufferPtr& src,
                                                                       int64_t offset,
                                                                       int64_t bytes) {
  if (bytes < 0 || bytes > kMaxStagedReadBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("ReadToStaging: ", bytes, " bytes; at most ", kMaxStagedReadBytes));
  }
  auto read = std::make_unique<HostStagedRead>(bytes);
  ASSIGN_OR_RETURN(HostEventPtr done, StartRead("ReadToStaging", src, offset, bytes, read->data()));
  read->set_event(std::move(done));
  return read;
}

absl::Status HostBackend::Synchronize() {
  RETURN_IF_ERROR(RefuseWhileRecording("Synchronize",
                                       "the recorded work has not run and cannot be waited for"));
  for (auto& stream : streams_) stream->Synchronize();
  return absl::OkStatus();
}

}  // namespace distarray
