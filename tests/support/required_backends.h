// Which backends a test run requires: a required backend that cannot start fails its tests
// instead of skipping them, so a GPU run cannot pass with its CUDA cases skipped.
#ifndef DISTARRAY_TESTS_SUPPORT_REQUIRED_BACKENDS_H_
#define DISTARRAY_TESTS_SUPPORT_REQUIRED_BACKENDS_H_

#include <cstdlib>
#include <sstream>
#include <string>

namespace distarray::testing {

// The host backend always; another when the comma-separated environment variable
// DISTARRAY_REQUIRE_BACKENDS names it (e.g. "cuda,cuda_nccl" on the GPU machine).
inline bool BackendRequired(const std::string& name) {
  if (name == "host" || name == "host_cluster") return true;  // no hardware to lack
  const char* list = std::getenv("DISTARRAY_REQUIRE_BACKENDS");
  if (list == nullptr) return false;
  std::stringstream names(list);
  for (std::string item; std::getline(names, item, ',');) {
    if (item == name) return true;
  }
  return false;
}

}  // namespace distarray::testing

#endif  // DISTARRAY_TESTS_SUPPORT_REQUIRED_BACKENDS_H_
