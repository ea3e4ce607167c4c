#include "server/daemon/backend_factory.h"

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "server/daemon/gpu_sharing.h"
#include "server/host/host_backend.h"
#ifdef DISTARRAY_HAVE_CUDA
#include "server/cuda/cuda_backend.h"
#endif

namespace distarray {
namespace {

absl::StatusOr<std::unique_ptr<Backend>> CreateCudaOnWholeGpus(const BackendOptions& options);

// The CUDA backend on the GPUs the container was given, once they are known to be whole GPUs,
// each given once (gpu_sharing.h): a MIG slice is refused before CUDA touches it, so the message
// says MIG rather than whatever CUDA or NCCL fails with there.
absl::StatusOr<std::unique_ptr<Backend>> CreateCuda(const BackendOptions& options) {
  GivenGpus given = ObserveGivenGpus();
  if (absl::Status status = CheckGivenGpus(given); !status.ok()) {
    spdlog::info("{}", DescribeGivenGpus(given));
    return status;
  }
  auto backend = CreateCudaOnWholeGpus(options);
  if (!backend.ok()) return backend.status();
  for (int device = 0; device < (*backend)->device_count(); ++device) {
    given.device_uuids.push_back((*backend)->device_uuid(device));
  }
  spdlog::info("{}", DescribeGivenGpus(given));
  if (absl::Status status = CheckGivenGpus(given); !status.ok()) return status;
  return backend;
}

absl::StatusOr<std::unique_ptr<Backend>> CreateCudaOnWholeGpus(const BackendOptions& options) {
#ifdef DISTARRAY_HAVE_CUDA
  CudaBackend::Options cuda;
  cuda.memory_limit_bytes = options.memory_limit_bytes;
  cuda.memory_fraction = options.memory_fraction;
  cuda.loop_unroll = options.loop_unroll;
  cuda.persistent_loops = options.persistent_loops;
  if (options.transfer == "peer") {
    cuda.transfer = CudaBackend::Transfer::kPeer;
  } else if (options.transfer != "nccl") {
    return absl::InvalidArgumentError(
        absl::StrCat("--transfer: expected nccl or peer, got '", options.transfer, "'"));
  }
  if (options.graph_agreement == "peer") {
    cuda.graph_agreement = GraphAgreement::kPeer;
  } else if (options.graph_agreement == "nccl") {
    cuda.graph_agreement = GraphAgreement::kNccl;
  } else if (options.graph_agreement != "auto") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--graph_agreement: expected auto, peer or nccl, got '", options.graph_agreement, "'"));
  }
  auto backend = CudaBackend::Create(cuda);
  if (!backend.ok()) return backend.status();
  return std::unique_ptr<Backend>(std::move(*backend));
#else
  return absl::UnavailableError("backend cuda: this daemon was built without CUDA");
#endif
}

absl::StatusOr<std::unique_ptr<Backend>> CreateHost(const BackendOptions& options) {
  HostBackend::Options host;
  host.device_count = options.host_devices;
  if (options.memory_limit_bytes > 0) host.memory_limit_bytes = options.memory_limit_bytes;
  auto backend = HostBackend::Create(host);
  if (!backend.ok()) return backend.status();
  return std::unique_ptr<Backend>(std::move(*backend));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(const BackendOptions& options) {
  if (options.kind == "host") return CreateHost(options);
  if (options.kind == "cuda") return CreateCuda(options);
  if (options.kind == "auto") {
    auto cuda = CreateCuda(options);
    if (cuda.ok()) return cuda;
    if (cuda.status().code() != absl::StatusCode::kUnavailable) return cuda.status();
    spdlog::info("no usable GPU ({}); using the host backend",
                 std::string(cuda.status().message()));
    return CreateHost(options);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--backend: expected auto, cuda or host, got '", options.kind, "'"));
}

}  // namespace distarray
