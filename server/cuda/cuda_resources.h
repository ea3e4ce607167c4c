// RAII owners for CUDA and NCCL resources: one move-only owner each, destructors that never
// throw and log instead (tolerating cudaErrorCudartUnloading at exit).
#ifndef DISTARRAY_SERVER_CUDA_CUDA_RESOURCES_H_
#define DISTARRAY_SERVER_CUDA_CUDA_RESOURCES_H_

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/statusor.h"
#include "server/cuda/cublas_api.h"

namespace distarray::cuda {

// Makes `device` current for a scope and restores the previous one if it changed it (code inside
// the scope switches devices only through nested scopes).
class ScopedDevice {
 public:
  explicit ScopedDevice(int device);
  ~ScopedDevice();
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  int device_;
  int previous_ = 0;
};

class CudaStream {
 public:
  // A non-blocking stream on `device`.
  static absl::StatusOr<CudaStream> Create(int device);
  CudaStream(CudaStream&& other) noexcept : stream_(other.stream_), device_(other.device_) {
    other.stream_ = nullptr;
  }
  CudaStream& operator=(CudaStream&&) = delete;
  CudaStream(const CudaStream&) = delete;
  ~CudaStream();
  cudaStream_t get() const { return stream_; }

 private:
  CudaStream(cudaStream_t stream, int device) : stream_(stream), device_(device) {}
  cudaStream_t stream_;
  int device_;
};

// A timing-free event, shared by the buffers whose hazards it marks.
// Every launch records one, so they are pooled: an event whose last holder lets go goes back to
// its device's free list instead of cudaEventDestroy, and the next Record reuses it (a wait that
// was enqueued on it already captured the record it waits for, so recording it again is safe).
class CudaEvent {
 public:
  // Records an event on `stream` (of the current device), which must outlive the event: the
  // backend's compute and transfer streams do (ordered_before compares stream handles).
  static absl::StatusOr<std::shared_ptr<CudaEvent>> Record(cudaStream_t stream);
  // The same with timing enabled, for cudaEventElapsedTime (a little dearer to record; not
  // pooled).
  static absl::StatusOr<std::shared_ptr<CudaEvent>> RecordTimed(cudaStream_t stream);
  ~CudaEvent();
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  cudaEvent_t get() const { return event_; }
  bool done() const { return cudaEventQuery(event_) == cudaSuccess; }
  // Whether work enqueued on `stream` from now on is ordered after this event anyway (it was
  // recorded on that stream): such work needs neither a query nor a wait.
  bool ordered_before(cudaStream_t stream) const { return stream == stream_; }

 private:
  CudaEvent(cudaEvent_t event, int pooled_device, cudaStream_t stream)
      : event_(event), pooled_device_(pooled_device), stream_(stream) {}
  cudaEvent_t event_;
  int pooled_device_;    // the device whose free list takes it back; -1: destroyed instead
  cudaStream_t stream_;  // where it was recorded (the backend's streams live as long as it)
};
using CudaEventPtr = std::shared_ptr<CudaEvent>;

// One communicator per device of a set of local GPUs, made together by ncclCommInitAll; rank i
// is the i-th device of the set.
class NcclClique {
 public:
  // Over devices 0 .. device_count - 1 (rank = device).
  static absl::StatusOr<std::unique_ptr<NcclClique>> Create(int device_count);
  static absl::StatusOr<std::unique_ptr<NcclClique>> Create(const std::vector<int>& devices);
  ~NcclClique();
  ncclComm_t comm(int rank) const { return comms_[rank]; }
  // Revokes every communicator (ncclCommRevoke): NCCL kernels waiting for a peer that will never
  // come return, so their streams drain. The clique is unusable afterwards; its destructor still
  // destroys the communicators. (ncclCommAbort would wait for every graph that captured them to be
  // destroyed first.)
  void Revoke();
  bool revoked() const { return revoked_.load(); }
  // Whether the NCCL library loaded has ncclCommRevoke (2.28.9 has it; 2.28.3 does not).
  static bool CanRevoke();
  // NCCL calls on one communicator must not run concurrently: callers on several threads hold
  // this around theirs (a group call included).
  std::mutex& calls_mu() { return calls_mu_; }

 private:
  explicit NcclClique(std::vector<ncclComm_t> comms) : comms_(std::move(comms)) {}
  std::vector<ncclComm_t> comms_;
  std::atomic<bool> revoked_{false};
  std::mutex calls_mu_;
};

// Page-locked host blocks for staging transfers, reused once the copy that last used a block
// has completed. Blocks come in power-of-two sizes from kMinBlockBytes to kBlockBytes, each
// transfer taking the smallest that fits, so a download slab made of many small pieces (one
// pending read per chunk it touches) holds about its own size in pinned memory, not a 16 MiB
// block per piece. Grows to the working set of concurrent transfers.
class PinnedPool {
 public:
  static constexpr size_t kBlockBytes = size_t{16} << 20;  // the largest block
  static constexpr size_t kMinBlockBytes = size_t{4} << 10;

  struct Block {
    void* data = nullptr;
    size_t bytes = 0;
    CudaEventPtr busy_until;  // the last copy that used this block
  };

  ~PinnedPool();
  // A block of at least `bytes` (at most kBlockBytes) that no copy is using. Blocks on nothing;
  // allocates when all blocks of its size are busy.
  absl::StatusOr<Block*> Acquire(size_t bytes = kBlockBytes);
  // Returns a block; it is handed out again once `busy_until` (null: at once) has completed.
  void Release(Block* block, CudaEventPtr busy_until);

 private:
  static constexpr int kClasses = 13;  // 4 KiB << 0 .. 4 KiB << 12 = 16 MiB
  static int ClassOf(size_t bytes);

  std::mutex mu_;
  std::vector<std::unique_ptr<Block>> all_;
  std::vector<Block*> free_[kClasses];
};

// Device memory from cudaMalloc, outside the stream-ordered pool: fixed per-device scratch that
// lives as long as the backend (reduction partials, the cuBLAS workspace).
class DeviceBlock {
 public:
  static absl::StatusOr<DeviceBlock> Allocate(int device, size_t bytes);
  // The same, zeroed before it returns (the reduction scratch's tickets start at zero).
  static absl::StatusOr<DeviceBlock> AllocateZeroed(int device, size_t bytes);
  DeviceBlock(DeviceBlock&& other) noexcept
      : data_(other.data_), bytes_(other.bytes_), device_(other.device_) {
    other.data_ = nullptr;
  }
  DeviceBlock& operator=(DeviceBlock&&) = delete;
  DeviceBlock(const DeviceBlock&) = delete;
  ~DeviceBlock();
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  DeviceBlock(void* data, size_t bytes, int device) : data_(data), bytes_(bytes), device_(device) {}
  void* data_;
  size_t bytes_;
  int device_;
};

// An owned CUDA graph (cudaGraphDestroy also destroys the bodies of its conditional nodes).
class CudaGraph {
 public:
  // Takes ownership of `graph` (may be null).
  explicit CudaGraph(cudaGraph_t graph) : graph_(graph) {}
  CudaGraph(CudaGraph&& other) noexcept : graph_(other.graph_) { other.graph_ = nullptr; }
  CudaGraph& operator=(CudaGraph&&) = delete;
  CudaGraph(const CudaGraph&) = delete;
  ~CudaGraph();
  cudaGraph_t get() const { return graph_; }

 private:
  cudaGraph_t graph_;
};

// An instantiated graph.
class CudaGraphExec {
 public:
  static absl::StatusOr<CudaGraphExec> Instantiate(cudaGraph_t graph);
  CudaGraphExec(CudaGraphExec&& other) noexcept : exec_(other.exec_) { other.exec_ = nullptr; }
  CudaGraphExec& operator=(CudaGraphExec&&) = delete;
  CudaGraphExec(const CudaGraphExec&) = delete;
  ~CudaGraphExec();
  cudaGraphExec_t get() const { return exec_; }

 private:
  explicit CudaGraphExec(cudaGraphExec_t exec) : exec_(exec) {}
  cudaGraphExec_t exec_;
};

// Page-locked host memory mapped into every device's address space (cudaHostAllocMapped), zeroed:
// a word the host writes and running kernels read, or a landing place for values a graph copies
// back to the host.
class MappedHostBlock {
 public:
  static absl::StatusOr<MappedHostBlock> Allocate(size_t bytes);
  MappedHostBlock(MappedHostBlock&& other) noexcept : host_(other.host_), device_(other.device_) {
    other.host_ = nullptr;
  }
  MappedHostBlock& operator=(MappedHostBlock&&) = delete;
  MappedHostBlock(const MappedHostBlock&) = delete;
  ~MappedHostBlock();
  void* host() const { return host_; }
  // The same memory as kernels address it.
  void* device() const { return device_; }

 private:
  MappedHostBlock(void* host, void* device) : host_(host), device_(device) {}
  void* host_;
  void* device_;
};

// A cuBLAS handle bound to one device, with a fixed workspace (cublasSetWorkspace), so no GEMM
// allocates: what graph capture will need.
class CublasHandle {
 public:
  static absl::StatusOr<CublasHandle> Create(int device, void* workspace, size_t workspace_bytes);
  CublasHandle(CublasHandle&& other) noexcept
      : handle_(other.handle_), device_(other.device_), api_(other.api_) {
    other.handle_ = nullptr;
  }
  CublasHandle& operator=(CublasHandle&&) = delete;
  CublasHandle(const CublasHandle&) = delete;
  ~CublasHandle();
  cublasHandle_t get() const { return handle_; }
  const CublasApi& api() const { return *api_; }

 private:
  CublasHandle(cublasHandle_t handle, int device, const CublasApi* api)
      : handle_(handle), device_(device), api_(api) {}
  cublasHandle_t handle_;
  int device_;
  const CublasApi* api_;
};

}  // namespace distarray::cuda

#endif  // DISTARRAY_SERVER_CUDA_CUDA_RESOURCES_H_
