// Sessions and leases: an unnamed array belongs to the session of the client that made it and is
// deleted when that session's lease runs out; named arrays and live clients' arrays stay.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "tests/support/backend_fixture.h"
#include "tests/support/raw_stub.h"
#include "tests/support/server_state.h"

namespace distarray::testing {
namespace {

constexpr int kLeaseSeconds = 2;
// The child creates these, then dies without deleting them.
constexpr int64_t kChildArrayElements = 1 << 20;  // 4 MiB of float32 each
constexpr int kChildUnnamedArrays = 3;

// Environment of the child process (this test binary run again with only the child's test).
constexpr char kChildAddressEnv[] = "DISTARRAY_SESSION_CHILD_ADDRESS";
constexpr char kChildOutEnv[] = "DISTARRAY_SESSION_CHILD_OUT";

std::set<std::string> Handles(const Client& client) {
  std::set<std::string> handles;
  auto list = client.List();
  EXPECT_TRUE(list.ok()) << list.status();
  for (const auto& info : *list) handles.insert(info.handle());
  return handles;
}

// Runs this binary's child test with the daemon's address; returns the handles it printed, the
// last one being its named array.
std::vector<std::string> RunChild(const std::string& address, const std::string& out_file) {
  const pid_t pid = fork();
  if (pid == 0) {
    setenv(kChildAddressEnv, address.c_str(), 1);
    setenv(kChildOutEnv, out_file.c_str(), 1);
    // A sharded run's shard would filter the child's one test out.
    unsetenv("GTEST_SHARD_INDEX");
    unsetenv("GTEST_TOTAL_SHARDS");
    std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    std::string filter = "--gtest_filter=SessionChild.DISABLED_HoldArraysThenDie";
    std::string disabled = "--gtest_also_run_disabled_tests";
    char* argv[] = {self.data(), filter.data(), disabled.data(), nullptr};
    execv(argv[0], argv);
    _exit(127);
  }
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 42) << "child status " << status;
  std::vector<std::string> handles;
  std::ifstream in(out_file);
  for (std::string h; in >> h;) handles.push_back(h);
  return handles;
}

// The child: connects, creates arrays, writes their handles, and exits at once without deleting
// anything (as a crashed client would: no destructor runs, no goodbye).
TEST(SessionChild, DISABLED_HoldArraysThenDie) {
  const char* address = std::getenv(kChildAddressEnv);
  const char* out = std::getenv(kChildOutEnv);
  ASSERT_NE(address, nullptr);
  ASSERT_NE(out, nullptr);
  ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(address));
  std::ofstream handles(out);
  std::vector<Array> held;
  for (int i = 0; i < kChildUnnamedArrays; ++i) {
    ASSERT_OK_AND_ASSIGN(Array a,
                         client.Create({kChildArrayElements}, v1::DTYPE_FLOAT32, {OnDevice(1, 0)}));
    handles << a.handle() << "\n";
    held.push_back(std::move(a));
  }
  // A derived result belongs to the session too.
  ASSERT_OK_AND_ASSIGN(Array sum, held[0] + held[1]);
  handles << sum.handle() << "\n";
  held.push_back(std::move(sum));
  ASSERT_OK_AND_ASSIGN(Array named, client.Create({1024}, v1::DTYPE_FLOAT32,
                                                  {OnDevice(1, 0), v1::MODE_REPLICA,
                                                   absl::StrCat("survivor-", getpid())}));
  handles << named.handle() << "\n";
  handles.close();
  std::_Exit(42);
}

class SessionsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    Daemon::Options options = OptionsFor(GetParam());
    options.extra_flags = {absl::StrCat("--session_lease_seconds=", kLeaseSeconds),
                           "--log_level=info"};
    ASSERT_NO_FATAL_FAILURE(StartOwnDaemon(GetParam(), options, daemon_));
    if (IsSkipped()) return;
  }
  void TearDown() override {
    if (daemon_) EXPECT_TRUE(daemon_->alive()) << "distarrayd died during the test";
  }

  std::unique_ptr<Daemon> daemon_;
};

TEST_P(SessionsTest, DeadClientsUnnamedArraysAreDeletedWithinTheLease) {
  ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(daemon_->address()));
  ASSERT_OK_AND_ASSIGN(auto info, client.ServerInfo());
  EXPECT_EQ(info.session_lease_seconds(), kLeaseSeconds);
  ASSERT_OK(client.Synchronize());
  const int64_t baseline = UsedBytes(client);

  const std::string out =
      (std::filesystem::temp_directory_path() / absl::StrCat("distarray-session-child-", getpid()))
          .string();
  const std::vector<std::string> child = RunChild(daemon_->address(), out);
  std::filesystem::remove(out);
  ASSERT_EQ(child.size(), kChildUnnamedArrays + 2u);
  const std::string named = child.back();

  // The child is gone, its arrays are not (yet).
  ASSERT_OK(client.Synchronize());
  const int64_t array_bytes = kChildArrayElements * 4;
  EXPECT_GE(UsedBytes(client), baseline + (kChildUnnamedArrays + 1) * array_bytes);
  for (const std::string& h : child) EXPECT_TRUE(Handles(client).contains(h)) << h;

  // Within the lease plus a sweep and some slack, the memory returns and the unnamed arrays are
  // gone; the named one (4 KiB and its bookkeeping) stays.
  const int64_t named_at_most = 64 << 10;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kLeaseSeconds + 3);
  while (UsedBytes(client) > baseline + named_at_most &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_LE(UsedBytes(client), baseline + named_at_most);
  EXPECT_GE(UsedBytes(client), baseline + 4096);
  const std::set<std::string> left = Handles(client);
  for (size_t i = 0; i + 1 < child.size(); ++i) EXPECT_FALSE(left.contains(child[i])) << child[i];
  EXPECT_TRUE(left.contains(named));
  EXPECT_NE(daemon_->log().find("expired"), std::string::npos) << daemon_->log();

  ASSERT_OK_AND_ASSIGN(Array survivor, client.Open(named));
  ASSERT_OK(survivor.Delete());
  ASSERT_OK(client.Synchronize());
  EXPECT_EQ(UsedBytes(client), baseline);
}

TEST_P(SessionsTest, LiveClientsArraysSurvivePastTheLease) {
  ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(daemon_->address()));
  v1::Fill ones;
  ones.mutable_ones();
  ASSERT_OK_AND_ASSIGN(Array a, client.Create({256}, v1::DTYPE_FLOAT32, {OnDevice(1, 0)}, ones));
  // Idle for more than two leases: only the keepalive thread speaks.
  std::this_thread::sleep_for(std::chrono::seconds(2 * kLeaseSeconds + 1));
  ASSERT_OK_AND_ASSIGN(std::vector<float> values, a.Download<float>());
  EXPECT_EQ(values[255], 1.0f);

  ASSERT_OK_AND_ASSIGN(auto info, client.ServerInfo());
  EXPECT_GE(info.live_sessions(), 1);
  const RawStub raw(daemon_->address(), client);
  grpc::ClientContext context;
  raw.AttachSession(context);
  v1::KeepAliveResponse keepalive;
  ASSERT_TRUE(raw.stub().KeepAlive(&context, {}, &keepalive).ok());
  EXPECT_EQ(keepalive.lease_seconds(), kLeaseSeconds);
  EXPECT_EQ(keepalive.session_arrays(), 1);
}

TEST_P(SessionsTest, ArraysOfCallsWithoutASessionPersist) {
  ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(daemon_->address()));
  // A raw call without the metadata key: no session owns the result.
  v1::CreateArrayRequest request;
  request.mutable_spec()->mutable_shape()->add_dims(16);
  request.mutable_spec()->set_dtype(v1::DTYPE_FLOAT32);
  *request.mutable_spec()->mutable_index_map() = OnDevice(1, 0);
  grpc::ClientContext context;
  v1::CreateArrayResponse response;
  ASSERT_TRUE(RawStub(daemon_->address()).stub().CreateArray(&context, request, &response).ok());
  // A session that creates an array and then stops renewing.
  ConnectOptions quiet;
  quiet.keepalive = false;
  ASSERT_OK_AND_ASSIGN(Client silent, Client::Connect(daemon_->address(), 5000, quiet));
  ASSERT_OK_AND_ASSIGN(Array doomed, silent.Create({16}, v1::DTYPE_FLOAT32, {OnDevice(1, 0)}));
  const std::string doomed_handle = doomed.Release();

  std::this_thread::sleep_for(std::chrono::seconds(2 * kLeaseSeconds + 1));
  const std::set<std::string> left = Handles(client);
  EXPECT_TRUE(left.contains(response.array().handle()));
  EXPECT_FALSE(left.contains(doomed_handle));
}

// A client that goes ends its session at once: it stops counting in live_sessions and its
// unnamed arrays (released ones included) go, without waiting for the lease. A session id the
// caller chose may be shared, so that client leaves it to its lease.
TEST_P(SessionsTest, ClientThatGoesEndsItsSession) {
  ConnectOptions observer_options;
  observer_options.keepalive = false;
  ASSERT_OK_AND_ASSIGN(Client observer,
                       Client::Connect(daemon_->address(), 5000, observer_options));
  ASSERT_OK_AND_ASSIGN(auto before, observer.ServerInfo());
  std::string released;
  {
    ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(daemon_->address()));
    ASSERT_OK_AND_ASSIGN(Array a, client.Create({16}, v1::DTYPE_FLOAT32, {OnDevice(1, 0)}));
    released = a.Release();
    ASSERT_OK_AND_ASSIGN(auto during, observer.ServerInfo());
    EXPECT_EQ(during.live_sessions(), before.live_sessions() + 1);
  }
  ASSERT_OK_AND_ASSIGN(auto after, observer.ServerInfo());
  EXPECT_EQ(after.live_sessions(), before.live_sessions());
  EXPECT_FALSE(Handles(observer).contains(released));

  ConnectOptions chosen;
  chosen.session_id = "shared-session";
  {
    ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(daemon_->address(), 5000, chosen));
    ASSERT_OK_AND_ASSIGN(Array a, client.Create({16}, v1::DTYPE_FLOAT32, {OnDevice(1, 0)}));
    released = a.Release();
  }
  ASSERT_OK_AND_ASSIGN(auto shared, observer.ServerInfo());
  EXPECT_EQ(shared.live_sessions(), before.live_sessions() + 1);
  EXPECT_TRUE(Handles(observer).contains(released));
}

// EndSession ends only the calling session, and only its unnamed arrays go.
TEST_P(SessionsTest, EndSessionDeletesTheSessionsUnnamedArraysOnly) {
  ConnectOptions options;
  options.session_id = "ending";
  options.keepalive = false;
  ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(daemon_->address(), 5000, options));
  ASSERT_OK_AND_ASSIGN(Array unnamed, client.Create({16}, v1::DTYPE_FLOAT32, {OnDevice(1, 0)}));
  ASSERT_OK_AND_ASSIGN(Array named, client.Create({16}, v1::DTYPE_FLOAT32,
                                                  {OnDevice(1, 0), v1::MODE_REPLICA, "kept"}));
  ConnectOptions other_options;
  other_options.session_id = "other";
  other_options.keepalive = false;
  ASSERT_OK_AND_ASSIGN(Client other, Client::Connect(daemon_->address(), 5000, other_options));
  ASSERT_OK_AND_ASSIGN(Array others, other.Create({16}, v1::DTYPE_FLOAT32, {OnDevice(1, 0)}));
  const std::string unnamed_handle = unnamed.Release();
  const RawStub raw(daemon_->address(), client);
  grpc::ClientContext context;
  raw.AttachSession(context);
  v1::EndSessionResponse ended;
  ASSERT_TRUE(raw.stub().EndSession(&context, {}, &ended).ok());
  EXPECT_EQ(ended.deleted_arrays(), 1);
  const std::set<std::string> left = Handles(other);
  EXPECT_FALSE(left.contains(unnamed_handle));
  EXPECT_TRUE(left.contains(named.handle()));
  EXPECT_TRUE(left.contains(others.handle()));
  ASSERT_OK(named.Delete());
}

TEST_P(SessionsTest, OversizedSessionIdIsInvalidArgument) {
  ConnectOptions options;
  options.session_id = std::string(129, 's');
  auto client = Client::Connect(daemon_->address(), 5000, options);
  ASSERT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument) << client.status();
  EXPECT_NE(client.status().message().find("distarray-session"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Backends, SessionsTest, ::testing::Values("host", "cuda", "cuda_nccl"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace distarray::testing
