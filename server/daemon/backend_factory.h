// Creates the backend the flags name. The only code that knows every backend implementation,
// kept with the daemon so the interface layer (server/backend/) includes none of them.
#ifndef DISTARRAY_SERVER_DAEMON_BACKEND_FACTORY_H_
#define DISTARRAY_SERVER_DAEMON_BACKEND_FACTORY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/backend/backend.h"

namespace distarray {

struct BackendOptions {
  std::string kind = "auto";  // auto: cuda when a GPU is usable, else host
  int host_devices = 4;
  int64_t memory_limit_bytes = 0;  // per device; 0: host 1 GiB, cuda memory_fraction of the card
  double memory_fraction = 0.9;
  int loop_unroll = 8;  // cuda: fused loop body copies per WHILE iteration; 0: no fusion
  // cuda: fused loops on one device run persistent kernels (else unrolled copies).
  bool persistent_loops = true;
  std::string transfer = "peer";  // cuda: cross-device copies by "peer" copies or "nccl" send/recv
  // cuda: how a program's graphs over several devices agree on conditions: "auto" (peer memory
  // where every pair has peer access, else NCCL), "peer" or "nccl".
  std::string graph_agreement = "auto";
};

// INVALID_ARGUMENT for an unknown kind; UNAVAILABLE when `cuda` is asked for and no GPU is usable
// (or the daemon was built without CUDA).
absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(const BackendOptions& options);

}  // namespace distarray

#endif  // DISTARRAY_SERVER_DAEMON_BACKEND_FACTORY_H_
