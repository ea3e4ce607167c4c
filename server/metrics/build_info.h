// distarray_build_info: a constant 1 whose labels say what is running (the Prometheus convention
// for versions, joined onto other series with `* on(instance) group_left(version)`).
#ifndef DISTARRAY_SERVER_METRICS_BUILD_INFO_H_
#define DISTARRAY_SERVER_METRICS_BUILD_INFO_H_

#include <string>

#include <prometheus/registry.h>

#include "absl/strings/string_view.h"

namespace distarray::metrics {

struct BuildInfo {
  std::string version;  // the daemon's release, e.g. 0.1.0
  std::string cuda;     // CUDA runtime the binary was built with, e.g. 13.0; "none" without CUDA
  std::string nccl;     // NCCL the binary was built with, e.g. 2.27.3; "none" without CUDA
  std::string backend;  // the backend this process runs: cuda or host
};

// This binary's versions, with `backend` the running backend's name.
BuildInfo CurrentBuildInfo(absl::string_view backend);

// Registers distarray_build_info{version,cuda,nccl,backend} = 1.
void RegisterBuildInfo(prometheus::Registry& registry, const BuildInfo& info);

}  // namespace distarray::metrics

#endif  // DISTARRAY_SERVER_METRICS_BUILD_INFO_H_
