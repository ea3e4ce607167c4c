// A test fixture parameterized by backend ("host", "cuda", and "cuda_nccl": the CUDA backend
// moving data across devices with NCCL send/recv instead of peer copies, and RunGraph's graphs
// over several devices agreeing on conditions through NCCL all-reduces instead of peer memory,
// as where GPUs lack peer access): the same integration
// tests run on all of them against a real distarrayd. Where the backend cannot start (no GPU), the
// tests skip with the daemon's own message, unless the environment variable
// DISTARRAY_REQUIRE_BACKENDS (a comma-separated list, e.g. "cuda" or "cuda,cuda_nccl") names the
// backend: then they fail, so a GPU run cannot pass with its CUDA cases skipped. The host backend
// never skips.
#ifndef DISTARRAY_TESTS_SUPPORT_BACKEND_FIXTURE_H_
#define DISTARRAY_TESTS_SUPPORT_BACKEND_FIXTURE_H_

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "distarray/client.h"
#include "distarray/index_maps.h"
#include "tests/support/daemon.h"
#include "tests/support/required_backends.h"

namespace distarray::testing {

// The daemon options a test parameter stands for.
inline Daemon::Options OptionsFor(const std::string& param) {
  Daemon::Options options;
  options.backend = param == "cuda_nccl" ? "cuda" : param == "host_cluster" ? "host" : param;
  if (param == "host_cluster") {
    // Two daemons of two simulated devices each: the layouts the tests write for four devices
    // spread over two nodes, so every copy between devices 0-1 and 2-3 crosses the data plane.
    options.host_devices = 2;
    options.cluster_size = 2;
  }
  if (param == "cuda_nccl") {
    options.transfer = "nccl";
    options.graph_agreement = "nccl";
  }
  return options;
}

// Starts a daemon of its own for `param` with `options` into `daemon`. Where the backend cannot
// start here, the calling test skips, or fails when the backend is required
// (DISTARRAY_REQUIRE_BACKENDS, or host): use it as ASSERT_NO_FATAL_FAILURE(StartOwnDaemon(...))
// followed by `if (IsSkipped()) return;`.
inline void StartOwnDaemon(const std::string& param, const Daemon::Options& options,
                           std::unique_ptr<Daemon>& daemon) {
  auto started = Daemon::Start(options);
  if (!started.ok() && started.status().code() == absl::StatusCode::kUnavailable) {
    if (BackendRequired(param)) {
      GTEST_FAIL() << "backend " << param
                   << " unavailable, and required: " << started.status().message();
    }
    GTEST_SKIP() << "backend " << param << " unavailable: " << started.status().message();
  }
  ASSERT_TRUE(started.ok()) << started.status();
  daemon = *std::move(started);
}

class SharedDaemonsStopCleanly;

class BackendTest : public ::testing::TestWithParam<std::string> {
 protected:
  friend class SharedDaemonsStopCleanly;
  void SetUp() override {
    auto& entry = Shared()[GetParam()];
    if (!entry.started) {
      entry.started = true;
      Daemon::Options options = OptionsFor(GetParam());
      auto daemon = Daemon::Start(options);
      if (daemon.ok()) {
        entry.daemon = std::move(*daemon);
      } else {
        entry.skip_reason = std::string(daemon.status().message());
        ASSERT_EQ(daemon.status().code(), absl::StatusCode::kUnavailable) << entry.skip_reason;
      }
    }
    if (!entry.daemon) {
      if (BackendRequired(GetParam())) {
        GTEST_FAIL() << "backend " << GetParam()
                     << " unavailable, and required (DISTARRAY_REQUIRE_BACKENDS or host): "
                     << entry.skip_reason;
      }
      GTEST_SKIP() << "backend " << GetParam() << " unavailable: " << entry.skip_reason;
    }
    daemon_ = entry.daemon.get();
    auto client = Client::Connect(daemon_->address());
    ASSERT_TRUE(client.ok()) << client.status();
    client_.emplace(*std::move(client));
    auto info = client_->ServerInfo();
    ASSERT_TRUE(info.ok()) << info.status();
    devices_ = info->devices_size();
  }

  void TearDown() override {
    if (daemon_ != nullptr) EXPECT_TRUE(daemon_->alive()) << "distarrayd died during the test";
  }

  // Stops the shared daemons and fails unless each exits 0 after SIGTERM: a crash or a sanitizer
  // abort while draining and freeing every array would otherwise go unseen.
  static void StopSharedDaemons() {
    for (auto& [param, entry] : Shared()) {
      if (!entry.daemon) continue;
      const int status = entry.daemon->Terminate(/*timeout_ms=*/30000);
      EXPECT_TRUE(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
          << "distarrayd (" << param << ") did not stop cleanly after SIGTERM: wait status "
          << status << "\n"
          << entry.daemon->log();
      entry.daemon.reset();
    }
  }

  const Client& client() const { return *client_; }
  const std::string& address() const { return daemon_->address(); }
  int devices() const { return devices_; }
  // Device ids in tests are taken modulo the number of devices, so layouts written for four
  // devices also run on a one- or two-GPU machine.
  int dev(int i) const { return i % devices_; }

 private:
  struct Entry {
    bool started = false;
    std::unique_ptr<Daemon> daemon;
    std::string skip_reason;
  };
  // One daemon per backend for the whole test program; stopped at exit.
  static std::map<std::string, Entry>& Shared() {
    static auto* shared = [] {
      auto* map = new std::map<std::string, Entry>();
      std::atexit([] { Shared().clear(); });
      return map;
    }();
    return *shared;
  }

  Daemon* daemon_ = nullptr;
  std::optional<Client> client_;
  int devices_ = 0;
};

// Checks the shared daemons' exit once every test has run (one registration per test program).
class SharedDaemonsStopCleanly : public ::testing::Environment {
 public:
  void TearDown() override { BackendTest::StopSharedDaemons(); }
};
inline ::testing::Environment* const kSharedDaemonsStopCleanly =
    ::testing::AddGlobalTestEnvironment(new SharedDaemonsStopCleanly);

#define DISTARRAY_INSTANTIATE_BACKENDS(suite)                                              \
  INSTANTIATE_TEST_SUITE_P(Backends, suite,                                                \
                           ::testing::Values("host", "host_cluster", "cuda", "cuda_nccl"), \
                           [](const ::testing::TestParamInfo<std::string>& p) { return p.param; })

// A chunk on `device` holding [lo, hi) of `axis` and the other axes of a rank-`rank` array whole.
inline v1::Chunk Band(int device, int rank, int axis, int64_t lo, int64_t hi) {
  std::vector<SliceSpec> slices(rank);
  slices[axis] = SliceSpec{lo, hi};
  return MakeChunk(device, slices);
}

// Runs `fn(T{})` for every implemented dtype's C++ type.
template <typename Fn>
void ForEachDType(Fn&& fn) {
  fn(bool{});
  fn(int8_t{});
  fn(int16_t{});
  fn(int32_t{});
  fn(int64_t{});
  fn(uint8_t{});
  fn(uint16_t{});
  fn(uint32_t{});
  fn(uint64_t{});
  fn(float{});
  fn(double{});
}

#define ASSERT_OK_AND_ASSIGN(lhs, expr)                \
  auto DA_TEST_CONCAT_(result_, __LINE__) = (expr);    \
  ASSERT_TRUE(DA_TEST_CONCAT_(result_, __LINE__).ok()) \
      << DA_TEST_CONCAT_(result_, __LINE__).status();  \
  lhs = *std::move(DA_TEST_CONCAT_(result_, __LINE__))
#define DA_TEST_CONCAT_INNER_(a, b) a##b
#define DA_TEST_CONCAT_(a, b) DA_TEST_CONCAT_INNER_(a, b)
#define ASSERT_OK(expr)             \
  do {                              \
    const absl::Status s_ = (expr); \
    ASSERT_TRUE(s_.ok()) << s_;     \
  } while (false)

}  // namespace distarray::testing

#endif  // DISTARRAY_TESTS_SUPPORT_BACKEND_FIXTURE_H_
