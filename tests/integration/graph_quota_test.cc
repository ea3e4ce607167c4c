// Cached graphs and memory: a program's recorded graph keeps device memory (its slots and
// temporaries) while it is cached. It is charged to the tenant that recorded it and cached only
// if that fits the tenant's quota; the tenant's own graphs go first when it reaches its quota, and
// any allocation a device refuses drops cached graphs before failing.
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "distarray/client.h"
#include "distarray/graph.h"
#include "distarray/index_maps.h"
#include "gtest/gtest.h"
#include "tests/support/backend_fixture.h"
#include "tests/support/daemon.h"

namespace distarray::testing {
namespace {

constexpr char kAliceToken[] = "alice-token-0123456789abcdef";
constexpr char kBobToken[] = "bob-token-0123456789abcdefgh";
constexpr int64_t kN = 1024;

// Two tenants on a host daemon of two 64 MiB devices, with the given quota overrides.
class GraphQuotaTest : public ::testing::Test {
 protected:
  void Start(const std::string& quotas) {
    Daemon::Options options;
    options.tokens = {{"alice", kAliceToken}, {"bob", kBobToken}};
    options.host_devices = 2;
    options.memory_limit = "64MiB";
    options.extra_flags = {"--tenant_memory_quota_overrides=" + quotas};
    ASSERT_OK_AND_ASSIGN(daemon_, Daemon::Start(options));
    ASSERT_OK_AND_ASSIGN(alice_, Connect(kAliceToken));
    ASSERT_OK_AND_ASSIGN(bob_, Connect(kBobToken));
  }
  void TearDown() override {
    alice_.reset();
    bob_.reset();
    if (daemon_ != nullptr) {
      const int status = daemon_->Terminate(10000);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << daemon_->log();
    }
  }
  absl::StatusOr<std::unique_ptr<Client>> Connect(const std::string& token) {
    ConnectOptions options;
    options.token = token;
    absl::StatusOr<Client> client = Client::Connect(daemon_->address(), 5000, options);
    if (!client.ok()) return client.status();
    return std::make_unique<Client>(*std::move(client));
  }

  // sum(x * y + c) for x of shape (kN, 1) and y of (1, kN), both on device 0: two kN x kN float32
  // temporaries (4 MiB each) that a recorded graph keeps, for 16 KiB of arguments.
  static v1::Program OuterSum(float c) {
    graph::ProgramBuilder p;
    graph::Var x = p.Input("x");
    graph::Var y = p.Input("y");
    p.ValueOutput("s", p.Reduce(x * y + c, v1::REDUCE_OP_SUM));
    return p.program();
  }
  // Runs OuterSum(c) for `client` on ones and checks its value.
  static absl::StatusOr<GraphRun> RunOuterSum(Client& client, float c) {
    v1::Fill ones;
    ones.mutable_full()->mutable_value()->set_float_value(1);
    auto x = client.Create({kN, 1}, v1::DTYPE_FLOAT32, {OnDevice(2, 0)}, ones);
    if (!x.ok()) return x.status();
    auto y = client.Create({1, kN}, v1::DTYPE_FLOAT32, {OnDevice(2, 0)}, ones);
    if (!y.ok()) return y.status();
    absl::StatusOr<GraphRun> ran = client.RunGraph(OuterSum(c), {{"x", &*x}, {"y", &*y}});
    if (!ran.ok()) return ran.status();
    float s = 0;
    std::memcpy(&s, ran->values.at("s").data().data(), sizeof(s));
    if (s != (1 + c) * kN * kN) return absl::InternalError(absl::StrCat("sum ", s));
    return ran;
  }

  std::unique_ptr<Daemon> daemon_;
  std::unique_ptr<Client> alice_;
  std::unique_ptr<Client> bob_;
};

// The case: a tenant with a 1 MiB quota ran programs whose graphs kept 8 MiB each on
// device 0; another tenant's 40 MiB allocation there then failed.
TEST_F(GraphQuotaTest, AGraphOverItsTenantsQuotaIsNotCachedAndHoldsNothing) {
  ASSERT_NO_FATAL_FAILURE(Start("bob=1MiB"));
  for (int i = 0; i < 6; ++i) {
    ASSERT_OK_AND_ASSIGN(GraphRun ran, RunOuterSum(*bob_, static_cast<float>(i)));
    // Runs, eagerly: its graph would pass bob's quota.
    EXPECT_EQ(ran.execution, v1::GRAPH_EXECUTION_EAGER);
  }
  ASSERT_OK(bob_->Synchronize());
  ASSERT_OK_AND_ASSIGN(v1::GetServerInfoResponse info, alice_->ServerInfo());
  EXPECT_LT(info.devices(0).memory_used_bytes(), int64_t{1} << 20);
  ASSERT_OK_AND_ASSIGN(Array big, alice_->Create({10 << 20}, v1::DTYPE_FLOAT32, {OnDevice(1, 0)}));
  EXPECT_EQ(big.info().shape().dims(0), 10 << 20);
}

TEST_F(GraphQuotaTest, ATenantsCachedGraphsCountAgainstItsQuotaAndGoFirst) {
  ASSERT_NO_FATAL_FAILURE(Start("alice=20MiB"));
  ASSERT_OK_AND_ASSIGN(GraphRun a, RunOuterSum(*alice_, 1));
  EXPECT_EQ(a.execution, v1::GRAPH_EXECUTION_DEVICE_GRAPH);
  ASSERT_OK_AND_ASSIGN(GraphRun again, RunOuterSum(*alice_, 1));
  EXPECT_TRUE(again.graph_cache_hit);
  // The cached graph (8 MiB) is alice's: with it, 16 MiB of arrays would pass her 20 MiB.
  // Rather than refusing, the daemon drops her graph.
  ASSERT_OK_AND_ASSIGN(Array held, alice_->Create({4 << 20}, v1::DTYPE_FLOAT32, {OnDevice(1, 0)}));
  ASSERT_OK_AND_ASSIGN(GraphRun evicted, RunOuterSum(*alice_, 1));
  EXPECT_FALSE(evicted.graph_cache_hit);
  // ...and now with 16 MiB held, a graph of 8 MiB cannot be kept for her: it runs eagerly.
  EXPECT_EQ(evicted.execution, v1::GRAPH_EXECUTION_EAGER);
  // Bob's graphs are his own: his run is recorded and cached whatever alice holds.
  ASSERT_OK_AND_ASSIGN(GraphRun bobs, RunOuterSum(*bob_, 2));
  EXPECT_EQ(bobs.execution, v1::GRAPH_EXECUTION_DEVICE_GRAPH);
  ASSERT_OK_AND_ASSIGN(GraphRun bobs_again, RunOuterSum(*bob_, 2));
  EXPECT_TRUE(bobs_again.graph_cache_hit);
}

TEST_F(GraphQuotaTest, AnAllocationTheDeviceRefusesDropsCachedGraphsFirst) {
  ASSERT_NO_FATAL_FAILURE(Start("bob=1MiB"));
  // 6 graphs of 8 MiB on device 0, all cached (alice has no quota).
  for (int i = 0; i < 6; ++i) {
    ASSERT_OK_AND_ASSIGN(GraphRun ran, RunOuterSum(*alice_, static_cast<float>(i)));
    EXPECT_EQ(ran.execution, v1::GRAPH_EXECUTION_DEVICE_GRAPH);
  }
  ASSERT_OK_AND_ASSIGN(v1::GetServerInfoResponse info, alice_->ServerInfo());
  EXPECT_GT(info.devices(0).memory_used_bytes(), int64_t{40} << 20);
  // 40 MiB more does not fit beside them: they go, and the allocation succeeds.
  ASSERT_OK_AND_ASSIGN(Array big, alice_->Create({10 << 20}, v1::DTYPE_FLOAT32, {OnDevice(1, 0)}));
  ASSERT_OK_AND_ASSIGN(GraphRun rerun, RunOuterSum(*alice_, 0));
  EXPECT_FALSE(rerun.graph_cache_hit);
}

}  // namespace
}  // namespace distarray::testing
