// NVRTC (the CUDA runtime compiler), loaded with dlopen the first time a loop is fused, like
// cuBLAS (cublas_api.h): the daemon starts, and runs everything unfused, where the library is
// missing (the image installs it: deploy/container/runtime-packages.txt).
#ifndef DISTARRAY_SERVER_CUDA_FUSION_NVRTC_API_H_
#define DISTARRAY_SERVER_CUDA_FUSION_NVRTC_API_H_

#include <nvrtc.h>

#include "absl/status/statusor.h"

namespace distarray::cuda {

struct NvrtcApi {
  decltype(&nvrtcCreateProgram) create_program;
  decltype(&nvrtcDestroyProgram) destroy_program;
  decltype(&nvrtcCompileProgram) compile_program;
  decltype(&nvrtcGetProgramLogSize) get_log_size;
  decltype(&nvrtcGetProgramLog) get_log;
  decltype(&nvrtcGetCUBINSize) get_cubin_size;
  decltype(&nvrtcGetCUBIN) get_cubin;
  decltype(&nvrtcGetErrorString) error_string;
};

// The loaded API (once per process); UNAVAILABLE naming the library when it cannot be loaded.
absl::StatusOr<const NvrtcApi*> LoadNvrtc();

}  // namespace distarray::cuda

#endif  // DISTARRAY_SERVER_CUDA_FUSION_NVRTC_API_H_
