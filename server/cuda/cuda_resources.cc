#include "server/cuda/cuda_resources.h"

#include <dlfcn.h>

#include <cstring>

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"

#include "common/status_macros.h"
#include "server/cuda/cuda_status.h"

namespace distarray::cuda {
namespace {

void LogIfFailed(cudaError_t error, const char* what) {
  if (error != cudaSuccess && error != cudaErrorCudartUnloading) {
    spdlog::error("{}: {}", what, cudaGetErrorName(error));
  }
}

}  // namespace

ScopedDevice::ScopedDevice(int device) : device_(device) {
  LogIfFailed(cudaGetDevice(&previous_), "cudaGetDevice");
  if (device != previous_) LogIfFailed(cudaSetDevice(device), "cudaSetDevice");
}

ScopedDevice::~ScopedDevice() {
  if (previous_ != device_) LogIfFailed(cudaSetDevice(previous_), "cudaSetDevice");
}

absl::StatusOr<CudaStream> CudaStream::Create(int device) {
  ScopedDevice scope(device);
  cudaStream_t stream = nullptr;
  CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return CudaStream(stream, device);
}

CudaStream::~CudaStream() {
  if (stream_ == nullptr) return;
  ScopedDevice scope(device_);
  LogIfFailed(cudaStreamDestroy(stream_), "cudaStreamDestroy");
}

namespace {

// Timing-free events no one holds, per device. Never destroyed: events may be released during
// process exit, after static destructors would have run.
class EventPool {
 public:
  static EventPool& Get() {
    static EventPool* pool = new EventPool;
    return *pool;
  }
  cudaEvent_t Take(int device) {
    std::lock_guard lock(mu_);
    if (device < 0 || static_cast<size_t>(device) >= free_.size() || free_[device].empty()) {
      return nullptr;
    }
    cudaEvent_t event = free_[device].back();
    free_[device].pop_back();
    return event;
  }
  void Give(int device, cudaEvent_t event) {
    std::lock_guard lock(mu_);
    if (static_cast<size_t>(device) >= free_.size()) free_.resize(device + 1);
    free_[device].push_back(event);
  }

 private:
  std::mutex mu_;
  std::vector<std::vector<cudaEvent_t>> free_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<CudaEvent>> CudaEvent::Record(cudaStream_t stream) {
  int device = 0;
  CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  cudaEvent_t event = EventPool::Get().Take(device);
  if (event == nullptr) {
    CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  }
  auto owned = std::shared_ptr<CudaEvent>(new CudaEvent(event, device, stream));
  CUDA_RETURN_IF_ERROR(cudaEventRecord(event, stream));
  return owned;
}

absl::StatusOr<std::shared_ptr<CudaEvent>> CudaEvent::RecordTimed(cudaStream_t stream) {
  cudaEvent_t event = nullptr;
  CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&event, cudaEventDefault));
  auto owned = std::shared_ptr<CudaEvent>(new CudaEvent(event, /*pooled_device=*/-1, stream));
  CUDA_RETURN_IF_ERROR(cudaEventRecord(event, stream));
  return owned;
}

CudaEvent::~CudaEvent() {
  if (pooled_device_ >= 0) {
    EventPool::Get().Give(pooled_device_, event_);
  } else {
    LogIfFailed(cudaEventDestroy(event_), "cudaEventDestroy");
  }
}

absl::StatusOr<std::unique_ptr<NcclClique>> NcclClique::Create(int device_count) {
  std::vector<int> devices(device_count);
  for (int d = 0; d < device_count; ++d) devices[d] = d;
  return Create(devices);
}

absl::StatusOr<std::unique_ptr<NcclClique>> NcclClique::Create(const std::vector<int>& devices) {
  std::vector<ncclComm_t> comms(devices.size());
  NCCL_RETURN_IF_ERROR(
      ncclCommInitAll(comms.data(), static_cast<int>(devices.size()), devices.data()));
  return std::unique_ptr<NcclClique>(new NcclClique(std::move(comms)));
}

namespace {
// Looked up at run time: ncclCommRevoke is recent (NCCL 2.28.9), and the daemon must still start
// against an older library.
using RevokeFn = ncclResult_t (*)(ncclComm_t, int);
RevokeFn FindRevoke() {
  static const auto revoke = reinterpret_cast<RevokeFn>(dlsym(RTLD_DEFAULT, "ncclCommRevoke"));
  return revoke;
}
}  // namespace

bool NcclClique::CanRevoke() { return FindRevoke() != nullptr; }

void NcclClique::Revoke() {
  if (revoked_.exchange(true)) return;
  // Without ncclCommRevoke nothing stops the kernels (ncclCommAbort would block until every graph
  // that captured the communicators is destroyed); the caller's bounded drain then gives up on
  // the devices and says so.
  const RevokeFn revoke = FindRevoke();
  if (revoke == nullptr) {
    spdlog::critical("this NCCL has no ncclCommRevoke: the communicators cannot be revoked");
    return;
  }
  for (ncclComm_t comm : comms_) {
    if (revoke(comm, NCCL_REVOKE_DEFAULT) != ncclSuccess) spdlog::error("ncclCommRevoke failed");
  }
}

NcclClique::~NcclClique() {
  for (ncclComm_t comm : comms_) {
    if (ncclCommDestroy(comm) != ncclSuccess) spdlog::error("ncclCommDestroy failed");
  }
}

PinnedPool::~PinnedPool() {
  for (auto& block : all_) {
    if (block->busy_until) LogIfFailed(cudaEventSynchronize(block->busy_until->get()), "sync");
    LogIfFailed(cudaFreeHost(block->data), "cudaFreeHost");
  }
}

int PinnedPool::ClassOf(size_t bytes) {
  int c = 0;
  while (c + 1 < kClasses && (kMinBlockBytes << c) < bytes) ++c;
  return c;
}

absl::StatusOr<PinnedPool::Block*> PinnedPool::Acquire(size_t bytes) {
  const int c = ClassOf(bytes);
  {
    std::lock_guard lock(mu_);
    std::vector<Block*>& free = free_[c];
    for (auto it = free.begin(); it != free.end(); ++it) {
      Block* block = *it;
      if (!block->busy_until || block->busy_until->done()) {
        free.erase(it);
        return block;
      }
    }
  }
  auto block = std::make_unique<Block>();
  block->bytes = kMinBlockBytes << c;
  CUDA_RETURN_IF_ERROR(cudaMallocHost(&block->data, block->bytes));
  std::lock_guard lock(mu_);
  all_.push_back(std::move(block));
  return all_.back().get();
}

void PinnedPool::Release(Block* block, CudaEventPtr busy_until) {
  std::lock_guard lock(mu_);
  block->busy_until = std::move(busy_until);
  free_[ClassOf(block->bytes)].push_back(block);
}

absl::StatusOr<DeviceBlock> DeviceBlock::Allocate(int device, size_t bytes) {
  ScopedDevice scope(device);
  void* data = nullptr;
  CUDA_RETURN_IF_ERROR(cudaMalloc(&data, bytes));
  return DeviceBlock(data, bytes, device);
}

absl::StatusOr<DeviceBlock> DeviceBlock::AllocateZeroed(int device, size_t bytes) {
  ASSIGN_OR_RETURN(DeviceBlock block, Allocate(device, bytes));
  ScopedDevice scope(device);
  // The memset runs on the legacy stream, which the daemon's non-blocking streams do not wait
  // for: wait here, so the first user sees zeros.
  CUDA_RETURN_IF_ERROR(cudaMemset(block.data(), 0, bytes));
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(nullptr));
  return block;
}

DeviceBlock::~DeviceBlock() {
  if (data_ == nullptr) return;
  ScopedDevice scope(device_);
  LogIfFailed(cudaFree(data_), "cudaFree");
}

CudaGraph::~CudaGraph() {
  if (graph_ != nullptr) LogIfFailed(cudaGraphDestroy(graph_), "cudaGraphDestroy");
}

absl::StatusOr<CudaGraphExec> CudaGraphExec::Instantiate(cudaGraph_t graph) {
  cudaGraphExec_t exec = nullptr;
  CUDA_RETURN_IF_ERROR(cudaGraphInstantiate(&exec, graph, 0));
  return CudaGraphExec(exec);
}

CudaGraphExec::~CudaGraphExec() {
  if (exec_ != nullptr) LogIfFailed(cudaGraphExecDestroy(exec_), "cudaGraphExecDestroy");
}

absl::StatusOr<MappedHostBlock> MappedHostBlock::Allocate(size_t bytes) {
  void* host = nullptr;
  // Portable: mapped in every device's context, whichever device is current here.
  CUDA_RETURN_IF_ERROR(cudaHostAlloc(&host, bytes, cudaHostAllocMapped | cudaHostAllocPortable));
  std::memset(host, 0, bytes);
  void* device = nullptr;
  if (cudaError_t e = cudaHostGetDevicePointer(&device, host, 0); e != cudaSuccess) {
    LogIfFailed(cudaFreeHost(host), "cudaFreeHost");
    return CudaStatus(e, "cudaHostGetDevicePointer");
  }
  return MappedHostBlock(host, device);
}

MappedHostBlock::~MappedHostBlock() {
  if (host_ != nullptr) LogIfFailed(cudaFreeHost(host_), "cudaFreeHost");
}

absl::StatusOr<CublasHandle> CublasHandle::Create(int device, void* workspace,
                                                  size_t workspace_bytes) {
  ASSIGN_OR_RETURN(const CublasApi* api, LoadCublas());
  ScopedDevice scope(device);
  cublasHandle_t handle = nullptr;
  if (cublasStatus_t s = api->create(&handle); s != CUBLAS_STATUS_SUCCESS) {
    return absl::InternalError(absl::StrCat("cublasCreate: ", api->status_name(s)));
  }
  CublasHandle owner(handle, device, api);
  if (cublasStatus_t s = api->set_workspace(handle, workspace, workspace_bytes);
      s != CUBLAS_STATUS_SUCCESS) {
    return absl::InternalError(absl::StrCat("cublasSetWorkspace: ", api->status_name(s)));
  }
  return owner;
}

CublasHandle::~CublasHandle() {
  if (handle_ == nullptr) return;
  ScopedDevice scope(device_);
  if (cublasStatus_t s = api_->destroy(handle_); s != CUBLAS_STATUS_SUCCESS) {
    spdlog::error("cublasDestroy: {}", api_->status_name(s));
  }
}

}  // namespace distarray::cuda
