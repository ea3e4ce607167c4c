// GPU UUIDs spelled as nvidia-smi and dcgm-exporter print them, so our per-device metrics join
// with theirs on the UUID.
#ifndef DISTARRAY_SERVER_BACKEND_GPU_UUID_H_
#define DISTARRAY_SERVER_BACKEND_GPU_UUID_H_

#include <string>

#include "absl/strings/str_format.h"

namespace distarray {

// "GPU-" and the 16 bytes of cudaDeviceProp::uuid (cudaUUID_t::bytes, a char array) as
// 8-4-4-4-12 lowercase hex digits, e.g. GPU-5f4e2c1a-0b3d-9e8f-7a6b-5c4d3e2f1a0b.
inline std::string FormatGpuUuid(const char (&bytes)[16]) {
  std::string hex;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) hex += '-';
    absl::StrAppendFormat(&hex, "%02x", static_cast<unsigned char>(bytes[i]));
  }
  return "GPU-" + hex;
}

}  // namespace distarray

#endif  // DISTARRAY_SERVER_BACKEND_GPU_UUID_H_
