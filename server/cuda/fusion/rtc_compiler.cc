#include "server/cuda/fusion/rtc_compiler.h"

#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/cuda/cuda_status.h"
#include "server/cuda/fusion/nvrtc_api.h"
#include "server/cuda/fusion/rtc_headers.h"
#include "spdlog/spdlog.h"

namespace distarray::cuda {
namespace {

absl::StatusOr<std::string> Compile(const NvrtcApi& nvrtc, const std::string& source,
                                    const std::string& arch) {
  std::vector<const char*> names, texts;
  for (int i = 0; i < kRtcHeaderCount; ++i) {
    names.push_back(kRtcHeaders[i].name);
    texts.push_back(kRtcHeaders[i].text);
  }
  nvrtcProgram program;
  nvrtcResult result = nvrtc.create_program(&program, source.c_str(), "fused.cu", kRtcHeaderCount,
                                            texts.data(), names.data());
  if (result != NVRTC_SUCCESS) {
    return absl::InternalError(
        absl::StrCat("NVRTC: creating a program: ", nvrtc.error_string(result)));
  }
  // Exactly the unfused values: no fast math and no FMA contraction, as the nvcc-built kernels
  // (server/cuda/CMakeLists.txt says why); fused, one op's multiply and the next op's add would
  // otherwise contract.
  const std::string arch_option = "--gpu-architecture=" + arch;
  // -default-device: the shared headers' unannotated constexpr helpers are device code here.
  // C++20 as the host build (the functors rely on its conversion rules).
  const char* options[] = {arch_option.c_str(), "-std=c++20", "--fmad=false", "-default-device"};
  result = nvrtc.compile_program(program, 4, options);
  std::string cubin;
  if (result == NVRTC_SUCCESS) {
    size_t size = 0;
    nvrtc.get_cubin_size(program, &size);
    cubin.resize(size);
    nvrtc.get_cubin(program, cubin.data());
  } else {
    size_t size = 0;
    nvrtc.get_log_size(program, &size);
    std::string log(size, '\0');
    nvrtc.get_log(program, log.data());
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    nvrtc.destroy_program(&program);
    return absl::InternalError(absl::StrCat("NVRTC: the generated kernel does not compile (",
                                            nvrtc.error_string(result), "): ", log));
  }
  nvrtc.destroy_program(&program);
  return cubin;
}

}  // namespace

absl::StatusOr<std::string> CompileToCubin(const std::string& source, const std::string& arch) {
  ASSIGN_OR_RETURN(const NvrtcApi* nvrtc, LoadNvrtc());
  return Compile(*nvrtc, source, arch);
}

RtcKernel::~RtcKernel() {
  if (library_ != nullptr) cudaLibraryUnload(library_);
}

absl::StatusOr<std::shared_ptr<const RtcKernel>> RtcCompiler::Compile(const std::string& source,
                                                                      const char* name,
                                                                      int device) {
  int major = 0, minor = 0;
  CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  const std::string arch = absl::StrCat("sm_", major, minor);
  const std::string key = absl::StrCat(arch, "\n", name, "\n", source);
  {
    absl::MutexLock lock(&mu_);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  }
  const auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(const std::string cubin, CompileToCubin(source, arch));
  cudaLibrary_t library = nullptr;
  CUDA_RETURN_IF_ERROR(
      cudaLibraryLoadData(&library, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  cudaKernel_t kernel = nullptr;
  if (const cudaError_t e = cudaLibraryGetKernel(&kernel, library, name); e != cudaSuccess) {
    cudaLibraryUnload(library);
    return CudaStatus(e, "cudaLibraryGetKernel");
  }
  auto compiled = std::make_shared<const RtcKernel>(library, kernel);
  spdlog::debug(
      "NVRTC: compiled {} for {} in {:.1f} ms ({} bytes of cubin)", name, arch,
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(),
      cubin.size());
  absl::MutexLock lock(&mu_);
  if (cache_.size() >= kMaxCached) {
    // Kernels in use stay alive through their graphs; the cache only forgets them.
    cache_.clear();
  }
  cache_.emplace(key, compiled);
  return compiled;
}

}  // namespace distarray::cuda
