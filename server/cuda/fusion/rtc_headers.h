// The headers a runtime-compiled kernel includes, embedded into the daemon at build time
// (server/cuda/CMakeLists.txt): the element-level headers the nvcc-built kernels use, and
// the few standard headers they need, which NVRTC does not have (rtc_std/). The deployed image
// carries no CUDA headers, so nothing is read from disk at run time.
#ifndef DISTARRAY_SERVER_CUDA_FUSION_RTC_HEADERS_H_
#define DISTARRAY_SERVER_CUDA_FUSION_RTC_HEADERS_H_

namespace distarray::cuda {

struct RtcHeader {
  const char* name;  // as the source includes it
  const char* text;
};

extern const RtcHeader kRtcHeaders[];
extern const int kRtcHeaderCount;

}  // namespace distarray::cuda

#endif  // DISTARRAY_SERVER_CUDA_FUSION_RTC_HEADERS_H_
