// A fixture over backend kinds ("host", "cuda", ...) whose backend is made once per process and
// kind and options (a CUDA backend costs seconds and a context per GPU) and shared by every test
// and suite that asks for the same. A kind that cannot be made here skips its tests with the
// reason, or fails them where DISTARRAY_REQUIRE_BACKENDS names it.
#ifndef DISTARRAY_TESTS_SUPPORT_SHARED_BACKEND_TEST_H_
#define DISTARRAY_TESTS_SUPPORT_SHARED_BACKEND_TEST_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "absl/status/status.h"
#include "server/backend/backend.h"
#include "server/daemon/backend_factory.h"
#include "tests/support/required_backends.h"

namespace distarray::testing {

class SharedBackendTest : public ::testing::TestWithParam<std::string> {
 protected:
  // The options a suite's backend of kind `kind` is made with.
  virtual BackendOptions OptionsFor(const std::string& kind) const {
    BackendOptions options;
    options.kind = kind;
    return options;
  }

  void SetUp() override {
    const BackendOptions options = OptionsFor(GetParam());
    Entry& entry = Backends()[{options.kind, options.host_devices, options.memory_limit_bytes,
                               options.memory_fraction, options.loop_unroll, options.transfer,
                               options.graph_agreement}];
    if (!entry.tried) {
      entry.tried = true;
      auto created = CreateBackend(options);
      if (created.ok()) {
        entry.backend = created->release();  // kept for the process: one per kind and options
      } else {
        entry.status = created.status();
      }
    }
    if (entry.backend == nullptr) {
      ASSERT_EQ(entry.status.code(), absl::StatusCode::kUnavailable) << entry.status;
      if (BackendRequired(GetParam())) {
        GTEST_FAIL() << "backend " << GetParam()
                     << " unavailable, and required: " << entry.status.message();
      }
      GTEST_SKIP() << "backend " << GetParam() << " unavailable: " << entry.status.message();
    }
    backend_ = entry.backend;
  }

  Backend& backend() { return *backend_; }

  Backend* backend_ = nullptr;

 private:
  struct Entry {
    bool tried = false;
    Backend* backend = nullptr;
    absl::Status status;
  };
  using Key = std::tuple<std::string, int, int64_t, double, int, std::string, std::string>;
  static std::map<Key, Entry>& Backends() {
    static auto* backends = new std::map<Key, Entry>;
    return *backends;
  }
};

}  // namespace distarray::testing

#endif  // DISTARRAY_TESTS_SUPPORT_SHARED_BACKEND_TEST_H_
