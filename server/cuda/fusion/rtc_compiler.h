// Kernels compiled at run time: CUDA C++ source -> NVRTC -> a cubin for the device's
// architecture -> a loaded library. Compiled once per (source, architecture) and kept while
// anything uses it (a recorded graph holds its kernels).
#ifndef DISTARRAY_SERVER_CUDA_FUSION_RTC_COMPILER_H_
#define DISTARRAY_SERVER_CUDA_FUSION_RTC_COMPILER_H_

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace distarray::cuda {

// A loaded kernel; unloads its library when the last user lets go.
class RtcKernel {
 public:
  RtcKernel(cudaLibrary_t library, cudaKernel_t kernel) : library_(library), kernel_(kernel) {}
  ~RtcKernel();
  RtcKernel(const RtcKernel&) = delete;
  RtcKernel& operator=(const RtcKernel&) = delete;
  // For cudaLaunchKernel and the occupancy queries, which take a kernel handle as `func`.
  const void* function() const { return reinterpret_cast<const void*>(kernel_); }

 private:
  cudaLibrary_t library_;
  cudaKernel_t kernel_;
};

// NVRTC alone: `source` compiled for `arch` (e.g. "sm_90") with the embedded headers; the cubin.
// Needs no GPU. UNAVAILABLE without NVRTC; INTERNAL with the compiler's log on a compile error.
absl::StatusOr<std::string> CompileToCubin(const std::string& source, const std::string& arch);

// Compiling runs on the calling RPC's thread at record time (tens of milliseconds, not bounded by
// the call's deadline); two calls compiling the same new source at once both compile. Scalars
// are part of a fused loop's source, so a new constant is a new compile: programs whose
// constants change per run should pass them as 0-d inputs.
class RtcCompiler {
 public:
  // The kernel `name` of `source` for `device`'s architecture. UNAVAILABLE without NVRTC;
  // INTERNAL with the compiler's log when the source does not compile (a bug in its generator).
  absl::StatusOr<std::shared_ptr<const RtcKernel>> Compile(const std::string& source,
                                                           const char* name, int device);

 private:
  // How many compiled kernels stay cached when nothing else holds them.
  static constexpr size_t kMaxCached = 256;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<const RtcKernel>> cache_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distarray::cuda

#endif  // DISTARRAY_SERVER_CUDA_FUSION_RTC_COMPILER_H_
