// The daemon's stance on shared GPUs, decided at start-up from what the container was given.
//
// distarrayd takes whole GPUs: it sizes its memory pool as a fraction of each card, moves data
// between devices with peer copies and NCCL, and assumes no other process competes for the
// devices. A MIG slice offers none of that (no peer access or NCCL between MIG instances, a
// fraction of the card's memory), so the daemon refuses to start on one and says so. Time-slicing
// hands one GPU out several times; a daemon given the same GPU more than once would place
// "different" devices' arrays on one card, so it refuses that too. A time-sliced GPU given once
// (the daemon sharing it with other pods) looks like a whole GPU from inside the container and is
// not detectable here; docs/operations.md, "MIG and time-slicing", says to keep the daemon's
// nodes unshared.
#ifndef DISTARRAY_SERVER_DAEMON_GPU_SHARING_H_
#define DISTARRAY_SERVER_DAEMON_GPU_SHARING_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace distarray {

// What the daemon sees of its GPUs.
struct GivenGpus {
  // As the container runtime set them; empty when unset. The NVIDIA device plugin (environment
  // strategy) lists the GPUs it allocated in NVIDIA_VISIBLE_DEVICES, MIG slices as MIG-<uuid>.
  std::string nvidia_visible_devices;
  std::string cuda_visible_devices;
  // Entries of /dev/nvidia-caps (MIG access capabilities, nvidia-capN). Logged, not decided on:
  // the MIG- entries above are the plugin's own word for a slice.
  std::vector<std::string> mig_capability_devices;
  // The devices the backend opened, by UUID as nvidia-smi prints them.
  std::vector<std::string> device_uuids;
};

// OK for whole GPUs, each given once. FAILED_PRECONDITION, with a message that names what was
// seen and what to change, for a MIG slice or a GPU given more than once.
absl::Status CheckGivenGpus(const GivenGpus& gpus);

// One line for the log: what the daemon was given and what it opened.
std::string DescribeGivenGpus(const GivenGpus& gpus);

// Reads the environment variables and /dev/nvidia-caps; device_uuids is left to the caller.
GivenGpus ObserveGivenGpus();

}  // namespace distarray

#endif  // DISTARRAY_SERVER_DAEMON_GPU_SHARING_H_
