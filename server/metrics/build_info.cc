#include "server/metrics/build_info.h"

#include <prometheus/gauge.h>

#include "absl/strings/str_cat.h"

#if defined(DISTARRAY_HAVE_CUDA)
#include <cuda_runtime_api.h>
#include <nccl.h>
#endif

#ifndef DISTARRAY_VERSION
#error "DISTARRAY_VERSION must be defined by the build"
#endif

namespace distarray::metrics {

BuildInfo CurrentBuildInfo(absl::string_view backend) {
  BuildInfo info;
  info.version = DISTARRAY_VERSION;
#if defined(DISTARRAY_HAVE_CUDA)
  // CUDART_VERSION is 1000 * major + 10 * minor.
  info.cuda = absl::StrCat(CUDART_VERSION / 1000, ".", (CUDART_VERSION % 1000) / 10);
  info.nccl = absl::StrCat(NCCL_MAJOR, ".", NCCL_MINOR, ".", NCCL_PATCH);
#else
  info.cuda = "none";
  info.nccl = "none";
#endif
  info.backend = std::string(backend);
  return info;
}

void RegisterBuildInfo(prometheus::Registry& registry, const BuildInfo& info) {
  prometheus::BuildGauge()
      .Name("distarray_build_info")
      .Help(
          "A constant 1 labelled with the daemon's version, the CUDA and NCCL it was built with, "
          "and the backend it runs")
      .Register(registry)
      .Add({{"version", info.version},
            {"cuda", info.cuda},
            {"nccl", info.nccl},
            {"backend", info.backend}})
      .Set(1);
}

}  // namespace distarray::metrics
