#include "server/daemon/heap_tuning.h"

#include <malloc.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

namespace distarray::daemon {

void TuneHeapForStreaming() {
  if (std::getenv("GLIBC_TUNABLES") != nullptr) {
    spdlog::info("GLIBC_TUNABLES is set: the heap keeps the C library's settings");
    return;
  }
  // The largest threshold glibc takes on 64-bit hosts; a fixed one also stops glibc from moving
  // it (and the trim threshold) as blocks are freed. Host-backend arrays above it stay mmap'ed
  // and go back to the kernel when deleted.
  constexpr int kMmapThreshold = 32 << 20;
  constexpr int kTrimThreshold = 1 << 30;
  // Sanitizer builds replace malloc; mallopt then reports failure, and the defaults stay.
  if (mallopt(M_MMAP_THRESHOLD, kMmapThreshold) == 0 ||
      mallopt(M_TRIM_THRESHOLD, kTrimThreshold) == 0) {
    spdlog::debug("mallopt refused the heap settings; the C library's defaults stay");
  }
}

}  // namespace distarray::daemon
