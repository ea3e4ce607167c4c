// Tenants against the real daemon: two tenants with their own tokens see only their own arrays,
// names, sessions and programs; another tenant's handle, name or program id answers exactly as a
// missing one does; per-tenant memory quotas answer RESOURCE_EXHAUSTED naming the quota and leave
// nothing behind; without --auth_tokens_file everything is the tenant "default". One tenant at its
// bound of sessions or calls in flight leaves the other tenant served.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "distarray/client.h"
#include "distarray/graph.h"
#include "distarray/index_maps.h"
#include "gtest/gtest.h"
#include "tests/support/backend_fixture.h"
#include "tests/support/daemon.h"
#include "tests/support/raw_stub.h"

namespace distarray::testing {
namespace {

constexpr char kAliceToken[] = "alice-token-0123456789abcdef";
constexpr char kBobToken[] = "bob-token-0123456789abcdefgh";
constexpr int kLeaseSeconds = 2;

class TenantTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string dir = (std::filesystem::temp_directory_path() / "distarray-tenant-XXXXXX").string();
    dir_ = mkdtemp(dir.data());
    std::ofstream(dir_ + "/tokens") << "alice: " << kAliceToken << "\nbob: " << kBobToken << "\n";
    Daemon::Options options;
    options.host_devices = 2;
    options.memory_limit = "64MiB";
    options.extra_flags = {"--auth_tokens_file=" + dir_ + "/tokens",
                           // bob may hold 1 MiB per device, alice the default (none).
                           "--tenant_memory_quota_overrides=bob=1MiB",
                           absl::StrCat("--session_lease_seconds=", kLeaseSeconds)};
    for (std::string& flag : ExtraFlags()) options.extra_flags.push_back(std::move(flag));
    ASSERT_OK_AND_ASSIGN(daemon_, Daemon::Start(options));
    ASSERT_OK_AND_ASSIGN(alice_, Connect(kAliceToken));
    ASSERT_OK_AND_ASSIGN(bob_, Connect(kBobToken));
    alice_raw_ = std::make_unique<RawStub>(daemon_->address(), *alice_, kAliceToken);
    bob_raw_ = std::make_unique<RawStub>(daemon_->address(), *bob_, kBobToken);
  }
  void TearDown() override {
    alice_.reset();
    bob_.reset();
    if (daemon_ != nullptr) {
      const int status = daemon_->Terminate(10000);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << daemon_->log();
    }
    std::filesystem::remove_all(dir_);
  }
  // More daemon flags, for fixtures of their own.
  virtual std::vector<std::string> ExtraFlags() { return {}; }
  absl::StatusOr<std::unique_ptr<Client>> Connect(const std::string& token,
                                                  const std::string& session = "",
                                                  bool keepalive = true) {
    ConnectOptions options;
    options.token = token;
    options.session_id = session;
    options.keepalive = keepalive;
    absl::StatusOr<Client> client = Client::Connect(daemon_->address(), 5000, options);
    if (!client.ok()) return client.status();
    return std::make_unique<Client>(*std::move(client));
  }

  std::string dir_;
  std::unique_ptr<Daemon> daemon_;
  std::unique_ptr<Client> alice_;
  std::unique_ptr<Client> bob_;
  // Their sessions and tokens on stubs of their own, for raw calls.
  std::unique_ptr<RawStub> alice_raw_;
  std::unique_ptr<RawStub> bob_raw_;
};

v1::Fill FullOf(double value) {
  v1::Fill fill;
  fill.mutable_full()->mutable_value()->set_float_value(value);
  return fill;
}

// What a lookup of `what` answers when nothing of that handle or name exists.
std::string Missing(const std::string& field, const std::string& what) {
  return absl::StrCat(field, ": no array '", what, "'");
}

void ExpectNotFound(const absl::Status& status, const std::string& message) {
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound) << status;
  EXPECT_EQ(status.message(), message);
}

TEST_F(TenantTest, AnotherTenantsArraysAnswerExactlyAsMissingOnes) {
  ASSERT_OK_AND_ASSIGN(Array named,
                       alice_->Create({8}, v1::DTYPE_FLOAT32,
                                      {OnDevice(1, 0), v1::MODE_REPLICA, "weights"}, FullOf(2.0)));
  ASSERT_OK_AND_ASSIGN(Array unnamed, alice_->Create({8}, v1::DTYPE_FLOAT32, {OnDevice(1, 1)}));
  // A handle that never existed, for comparison: the same answer, word for word.
  const std::string never = "arr-0123456789abcdef";
  ExpectNotFound(bob_->Open(never).status(), Missing("handle", never));
  for (const std::string& target : {named.handle(), unnamed.handle(), std::string("weights")}) {
    SCOPED_TRACE(target);
    ExpectNotFound(bob_->Open(target).status(), Missing("handle", target));
    std::string bytes;
    ExpectNotFound(bob_->DownloadBytes(target, {}, &bytes), Missing("handle", target));
    v1::ReshardRequest reshard;
    reshard.set_handle(target);
    grpc::ClientContext context;
    bob_raw_->AttachSession(context);
    v1::ReshardResponse response;
    const grpc::Status s = bob_raw_->stub().Reshard(&context, reshard, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_EQ(s.error_message(), Missing("handle", target));
    v1::ElementwiseRequest add;
    add.mutable_spec()->set_op(v1::ELEMENTWISE_OP_ADD);
    add.mutable_spec()->add_operands()->set_handle(target);
    add.mutable_spec()->add_operands()->mutable_scalar()->set_float_value(1);
    ExpectNotFound(bob_->Elementwise(add).status(), Missing("spec.operands[0].handle", target));
    v1::DeleteArrayRequest del;
    del.set_handle(target);
    grpc::ClientContext delete_context;
    bob_raw_->AttachSession(delete_context);
    v1::DeleteArrayResponse deleted;
    EXPECT_EQ(bob_raw_->stub().DeleteArray(&delete_context, del, &deleted).error_code(),
              grpc::StatusCode::NOT_FOUND);
  }
  // Alice's arrays are intact after all that.
  ASSERT_OK_AND_ASSIGN(std::vector<float> values, named.Download<float>());
  EXPECT_EQ(values, std::vector<float>(8, 2.0f));
  ASSERT_OK(alice_->Open(unnamed.handle()).status());

  // Names are per tenant: bob may use alice's name; each sees their own.
  ASSERT_OK_AND_ASSIGN(Array bobs, bob_->Create({3}, v1::DTYPE_INT32,
                                                {OnDevice(1, 0), v1::MODE_REPLICA, "weights"}));
  ASSERT_OK_AND_ASSIGN(Array via_alice, alice_->Open("weights"));
  ASSERT_OK_AND_ASSIGN(Array via_bob, bob_->Open("weights"));
  EXPECT_EQ(via_alice.handle(), named.handle());
  EXPECT_EQ(via_bob.handle(), bobs.handle());
  // ...and within a tenant still unique.
  EXPECT_EQ(bob_->Create({3}, v1::DTYPE_INT32, {OnDevice(1, 0), v1::MODE_REPLICA, "weights"})
                .status()
                .code(),
            absl::StatusCode::kAlreadyExists);

  // ListArrays shows only the caller's arrays.
  ASSERT_OK_AND_ASSIGN(auto alice_list, alice_->List());
  ASSERT_OK_AND_ASSIGN(auto bob_list, bob_->List());
  std::set<std::string> alice_handles, bob_handles;
  for (const auto& info : alice_list) alice_handles.insert(info.handle());
  for (const auto& info : bob_list) bob_handles.insert(info.handle());
  EXPECT_EQ(alice_handles, (std::set<std::string>{named.handle(), unnamed.handle()}));
  EXPECT_EQ(bob_handles, (std::set<std::string>{bobs.handle()}));
  ASSERT_OK(via_alice.Delete());
  ASSERT_OK(via_bob.Delete());
}

TEST_F(TenantTest, ProgramsBelongToTheirTenant) {
  graph::ProgramBuilder p;
  graph::Var a = p.Input("a");
  p.Output("b", a + 1.0f);
  ASSERT_OK_AND_ASSIGN(std::string id, alice_->RegisterProgram(p.program()));
  ASSERT_OK_AND_ASSIGN(Array input, alice_->Create({4}, v1::DTYPE_FLOAT32, {OnDevice(1, 0)}));
  ASSERT_OK_AND_ASSIGN(Array bob_input, bob_->Create({4}, v1::DTYPE_FLOAT32, {OnDevice(1, 0)}));
  const std::string missing = absl::StrCat("program_id: no registered program '", id, "'");
  absl::Status run = bob_->RunGraph(id, {{"a", &bob_input}}).status();
  EXPECT_EQ(run.code(), absl::StatusCode::kNotFound) << run;
  EXPECT_EQ(run.message(), missing);
  absl::Status deleted = bob_->DeleteProgram(id);
  EXPECT_EQ(deleted.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(deleted.message(), missing);
  // Bob cannot pass alice's array to his own program either.
  ASSERT_OK_AND_ASSIGN(std::string bob_id, bob_->RegisterProgram(p.program()));
  v1::RunGraphRequest request;
  request.set_program_id(bob_id);
  (*request.mutable_arguments())["a"] = input.handle();
  absl::Status foreign = bob_->RunGraph(request).status();
  EXPECT_EQ(foreign.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(foreign.message(), Missing("arguments[a]", input.handle()));
  // Alice's program still runs for her.
  ASSERT_OK_AND_ASSIGN(GraphRun ran, alice_->RunGraph(id, {{"a", &input}}));
  ASSERT_OK_AND_ASSIGN(std::vector<float> b, ran.outputs.at("b").Download<float>());
  EXPECT_EQ(b, std::vector<float>(4, 1.0f));
  ASSERT_OK(alice_->DeleteProgram(id));
}

TEST_F(TenantTest, SessionsOfTheSameIdInTwoTenantsAreTwoSessions) {
  // Both pick the same session id and renew nothing by themselves.
  ASSERT_OK_AND_ASSIGN(auto alice, Connect(kAliceToken, "the-same-session", false));
  ASSERT_OK_AND_ASSIGN(auto bob, Connect(kBobToken, "the-same-session", false));
  ASSERT_OK_AND_ASSIGN(Array a, alice->Create({4}, v1::DTYPE_FLOAT32, {OnDevice(1, 0)}));
  ASSERT_OK_AND_ASSIGN(Array b1, bob->Create({4}, v1::DTYPE_FLOAT32, {OnDevice(1, 0)}));
  ASSERT_OK_AND_ASSIGN(Array b2, bob->Create({4}, v1::DTYPE_FLOAT32, {OnDevice(1, 1)}));
  const std::string a_handle = a.Release(), b_handle = b1.Release();
  b2.Release();
  auto keep_alive = [this](Client& client, const std::string& token) -> absl::StatusOr<int64_t> {
    const RawStub raw(daemon_->address(), client, token);
    grpc::ClientContext context;
    raw.AttachSession(context);
    v1::KeepAliveResponse response;
    const grpc::Status s = raw.stub().KeepAlive(&context, {}, &response);
    if (!s.ok())
      return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
    return response.session_arrays();
  };
  ASSERT_OK_AND_ASSIGN(int64_t alice_count, keep_alive(*alice, kAliceToken));
  ASSERT_OK_AND_ASSIGN(int64_t bob_count, keep_alive(*bob, kBobToken));
  EXPECT_EQ(alice_count, 1);
  EXPECT_EQ(bob_count, 2);
  // Bob's calls keep only bob's session alive: alice's expires and takes her array.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2 * kLeaseSeconds + 1);
  while (std::chrono::steady_clock::now() < until) {
    ASSERT_OK(keep_alive(*bob, kBobToken).status());
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ExpectNotFound(alice->Open(a_handle).status(), Missing("handle", a_handle));
  ASSERT_OK(bob->Open(b_handle).status());
}

TEST_F(TenantTest, QuotaRefusesWhatWouldPassItNamingItAndLeavesNothing) {
  ASSERT_OK_AND_ASSIGN(v1::GetServerInfoResponse before, bob_->ServerInfo());
  // 1 MiB per device for bob: 192 Ki float32 (768 KiB) fit on device 0, a second one does not.
  ASSERT_OK_AND_ASSIGN(Array first, bob_->Create({192 << 10}, v1::DTYPE_FLOAT32, {OnDevice(1, 0)}));
  const absl::Status second =
      bob_->Create({192 << 10}, v1::DTYPE_FLOAT32, {OnDevice(1, 0)}).status();
  EXPECT_EQ(second.code(), absl::StatusCode::kResourceExhausted) << second;
  EXPECT_EQ(second.message(),
            "tenant 'bob': device 0: 787584 more bytes would pass the tenant memory quota of "
            "1048576 bytes per device (--tenant_memory_quota_overrides; 787584 in use; each chunk "
            "also counts 1152 bytes of bookkeeping)");
  // The quota is per device: device 1 still has room.
  ASSERT_OK_AND_ASSIGN(Array other, bob_->Create({192 << 10}, v1::DTYPE_FLOAT32, {OnDevice(1, 1)}));
  // An upload and a computed result are held to it too, and leave nothing behind.
  std::vector<float> data(192 << 10, 1.0f);
  const absl::Status upload = bob_->Upload<float>(data, {192 << 10}, {OnDevice(1, 0)}).status();
  EXPECT_EQ(upload.code(), absl::StatusCode::kResourceExhausted) << upload;
  const absl::Status sum = (first + first).status();
  EXPECT_EQ(sum.code(), absl::StatusCode::kResourceExhausted) << sum;
  EXPECT_NE(sum.message().find("tenant memory quota"), absl::string_view::npos) << sum;
  ASSERT_OK_AND_ASSIGN(auto list, bob_->List());
  EXPECT_EQ(list.size(), 2u);
  // Alice has no quota and is not limited by bob's use.
  ASSERT_OK_AND_ASSIGN(Array big, alice_->Create({1 << 20}, v1::DTYPE_FLOAT32, {OnDevice(1, 0)}));
  // Deleting frees the quota: the refused array fits now.
  ASSERT_OK(first.Delete());
  ASSERT_OK_AND_ASSIGN(Array again, bob_->Create({192 << 10}, v1::DTYPE_FLOAT32, {OnDevice(1, 0)}));
  ASSERT_OK(again.Delete());
  ASSERT_OK(other.Delete());
  ASSERT_OK(big.Delete());
  ASSERT_OK(alice_->Synchronize());
  ASSERT_OK_AND_ASSIGN(v1::GetServerInfoResponse after, bob_->ServerInfo());
  for (int d = 0; d < after.devices_size(); ++d) {
    EXPECT_EQ(after.devices(d).memory_used_bytes(), before.devices(d).memory_used_bytes()) << d;
  }
}

// Tight per-tenant bounds, under a daemon-wide call bound that one tenant could fill alone.
class TenantLimitsTest : public TenantTest {
 protected:
  static constexpr int kSessionsPerTenant = 4;
  static constexpr int kMaxCalls = 10;
  static constexpr int kCallsPerTenant = 3;
  std::vector<std::string> ExtraFlags() override {
    return {absl::StrCat("--max_sessions_per_tenant=", kSessionsPerTenant),
            absl::StrCat("--max_concurrent_calls=", kMaxCalls),
            absl::StrCat("--max_concurrent_calls_per_tenant=", kCallsPerTenant)};
  }
};

// One tenant holding every session it may hold gets RESOURCE_EXHAUSTED naming the flag for a new
// one, while its own sessions go on and the other tenant's new clients are served; its room
// returns as its sessions expire.
TEST_F(TenantLimitsTest, OneTenantsSessionsLeaveRoomForAnothersClients) {
  // alice_ holds one session already; these fill her bound.
  std::vector<std::unique_ptr<Client>> alices;
  for (int i = 1; i < kSessionsPerTenant; ++i) {
    ASSERT_OK_AND_ASSIGN(auto client, Connect(kAliceToken, absl::StrCat("alice-", i)));
    alices.push_back(std::move(client));
  }
  const absl::Status refused = Connect(kAliceToken, "alice-one-more").status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_EQ(refused.message(),
            absl::StrCat("distarray-session: tenant 'alice' has ", kSessionsPerTenant,
                         " live sessions, the most --max_sessions_per_tenant allows; reuse a "
                         "session or retry once some expire"));
  for (auto& alice : alices) ASSERT_OK(alice->ServerInfo().status());
  ASSERT_OK(alice_->Create({4}, v1::DTYPE_FLOAT32, {OnDevice(1, 0)}).status());
  // Bob's new clients are served up to his own bound.
  std::vector<std::unique_ptr<Client>> bobs;
  for (int i = 1; i < kSessionsPerTenant; ++i) {
    ASSERT_OK_AND_ASSIGN(auto client, Connect(kBobToken, absl::StrCat("bob-", i)));
    ASSERT_OK(client->Create({4}, v1::DTYPE_FLOAT32, {OnDevice(1, 1)}).status());
    bobs.push_back(std::move(client));
  }
  EXPECT_EQ(Connect(kBobToken, "bob-one-more").status().code(),
            absl::StatusCode::kResourceExhausted);
  // Alice's extra clients go (their keepalive stops); once their leases pass, she has room again.
  alices.clear();
  absl::Status again;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(4 * kLeaseSeconds);
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    again = Connect(kAliceToken, "alice-one-more").status();
  } while (!again.ok() && std::chrono::steady_clock::now() < until);
  EXPECT_TRUE(again.ok()) << again;
}

// One tenant holding every call slot it may hold (downloads whose client stopped reading) is
// refused RESOURCE_EXHAUSTED naming the flag beyond them, while the other tenant's calls are still
// served: without the per-tenant bound, alice's streams take the daemon's every thread. KeepAlive
// is not counted, so her sessions live on.
TEST_F(TenantLimitsTest, OneTenantHoldingItsCallsLeavesAnotherServed) {
  const std::vector<float> values(8 << 20, 1.5f);  // 32 MiB: far more than the stream window
  ASSERT_OK_AND_ASSIGN(Array a, alice_->Upload<float>(values, {8 << 20}, {OnDevice(1, 0)}));
  struct Stalled {
    grpc::ClientContext context;
    std::unique_ptr<grpc::ClientReader<v1::DownloadArrayResponse>> reader;
  };
  std::vector<std::unique_ptr<Stalled>> stalled;
  int started = 0;
  for (int i = 0; i < kMaxCalls + 2; ++i) {
    auto s = std::make_unique<Stalled>();
    alice_raw_->AttachSession(s->context);
    s->context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    v1::DownloadArrayRequest request;
    request.set_handle(a.handle());
    s->reader = alice_raw_->stub().DownloadArray(&s->context, request);
    v1::DownloadArrayResponse first;
    // Started (the first message came), or refused; either way the client then stops reading.
    if (s->reader->Read(&first)) {
      ++started;
    } else {
      const grpc::Status refused = s->reader->Finish();
      EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
          << refused.error_message();
      EXPECT_EQ(refused.error_message(),
                absl::StrCat("tenant 'alice' has ", kCallsPerTenant,
                             " calls in flight, the most --max_concurrent_calls_per_tenant "
                             "allows; retry once some finish"));
    }
    stalled.push_back(std::move(s));
  }
  EXPECT_EQ(started, kCallsPerTenant);
  const absl::Status alice_refused = alice_->ServerInfo().status();
  EXPECT_EQ(alice_refused.code(), absl::StatusCode::kResourceExhausted) << alice_refused;
  {
    grpc::ClientContext context;
    alice_raw_->AttachSession(context);
    v1::KeepAliveResponse response;
    const grpc::Status kept = alice_raw_->stub().KeepAlive(&context, {}, &response);
    EXPECT_TRUE(kept.ok()) << kept.error_message();
  }
  // Bob is served throughout: small calls, an upload and a download.
  ASSERT_OK(bob_->ServerInfo().status());
  std::vector<float> data(1000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i);
  ASSERT_OK_AND_ASSIGN(Array b, bob_->Upload<float>(data, {1000}, {OnDevice(1, 1)}));
  ASSERT_OK_AND_ASSIGN(std::vector<float> back, b.Download<float>());
  EXPECT_EQ(back, data);
  ASSERT_OK_AND_ASSIGN(auto bob_two, Connect(kBobToken));
  ASSERT_OK(bob_two->ServerInfo().status());
  // Once alice's streams go, she is served again.
  for (auto& s : stalled) s->context.TryCancel();
  stalled.clear();
  absl::Status served;
  for (int attempt = 0; attempt < 50; ++attempt) {
    served = alice_->ServerInfo().status();
    if (served.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(served.ok()) << served;
  EXPECT_TRUE(daemon_->alive());
}

TEST(TenantLimitFlags, BadLimitsFailStartUpNamingTheFlag) {
  for (const auto& [flag, expected] : std::vector<std::pair<std::string, std::string>>{
           {"--max_sessions_per_tenant=0", "--max_sessions_per_tenant: must be in [1, 65536]"},
           {"--max_sessions_per_tenant=65537", "--max_sessions_per_tenant: must be in [1, 65536]"},
           {"--max_concurrent_calls_per_tenant=0",
            "--max_concurrent_calls_per_tenant: must be at least 1"},
           {"--upload_min_bytes_per_second=-1",
            "--upload_min_bytes_per_second: must be in [0, 1073741824]"},
           {"--metrics_tenant_labels=yes", "--metrics_tenant_labels: 'on' or 'off', got 'yes'"}}) {
    Daemon::Options options;
    options.extra_flags = {flag};
    absl::StatusOr<std::unique_ptr<Daemon>> daemon = Daemon::Start(options);
    ASSERT_FALSE(daemon.ok()) << flag;
    EXPECT_NE(daemon.status().message().find("exited with 2"), absl::string_view::npos)
        << daemon.status();
    EXPECT_NE(daemon.status().message().find(expected), absl::string_view::npos) << daemon.status();
  }
}

// Without --auth_tokens_file every client is the one tenant "default": the per-tenant bounds of
// sessions and calls are then the daemon's, or one client would take the default tenant's share.
TEST(TenantDefault, WithoutAuthenticationTheDaemonsBoundsApply) {
  Daemon::Options options;
  options.host_devices = 1;
  options.extra_flags = {"--max_sessions_per_tenant=1", "--max_concurrent_calls_per_tenant=1"};
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Daemon> daemon, Daemon::Start(options));
  {
    ASSERT_OK_AND_ASSIGN(Client first, Client::Connect(daemon->address()));
    ASSERT_OK_AND_ASSIGN(Client second, Client::Connect(daemon->address()));  // a second session
    const RawStub first_raw(daemon->address(), first);
    const std::vector<float> values(8 << 20, 1.5f);  // 32 MiB: far more than the stream window
    ASSERT_OK_AND_ASSIGN(Array a, first.Upload<float>(values, {8 << 20}, {OnDevice(1, 0)}));
    grpc::ClientContext context;
    first_raw.AttachSession(context);
    v1::DownloadArrayRequest request;
    request.set_handle(a.handle());
    auto stalled = first_raw.stub().DownloadArray(&context, request);
    v1::DownloadArrayResponse piece;
    ASSERT_TRUE(stalled->Read(&piece));  // started; the client stops reading
    ASSERT_OK(second.ServerInfo().status());
    ASSERT_OK(first.ServerInfo().status());
    context.TryCancel();
    stalled->Finish().IgnoreError();
  }
  const int status = daemon->Terminate(10000);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << daemon->log();
}

TEST(TenantQuotaFlags, BadQuotasFailStartUpNamingTheFlag) {
  for (const auto& [flag, expected] : std::vector<std::pair<std::string, std::string>>{
           {"--tenant_memory_quota=lots", "--tenant_memory_quota: expected a positive byte count"},
           {"--tenant_memory_quota_overrides=alice",
            "--tenant_memory_quota_overrides: expected "
            "tenant=bytes, got 'alice'"},
           {"--tenant_memory_quota_overrides=a/b=1MiB", "--tenant_memory_quota_overrides: tenant"},
           {"--tenant_memory_quota_overrides=alice=1MiB,alice=2MiB",
            "--tenant_memory_quota_overrides: alice is given twice"}}) {
    Daemon::Options options;
    options.extra_flags = {flag};
    absl::StatusOr<std::unique_ptr<Daemon>> daemon = Daemon::Start(options);
    ASSERT_FALSE(daemon.ok()) << flag;
    EXPECT_NE(daemon.status().message().find("exited with 2"), absl::string_view::npos)
        << daemon.status();
    EXPECT_NE(daemon.status().message().find(expected), absl::string_view::npos) << daemon.status();
  }
}

TEST(TenantDefault, WithoutAuthenticationAQuotaAppliesToTheDefaultTenant) {
  Daemon::Options options;
  options.host_devices = 1;
  options.extra_flags = {"--tenant_memory_quota=1MiB"};
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Daemon> daemon, Daemon::Start(options));
  {
    ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(daemon->address()));
    const absl::Status big = client.Create({1 << 20}, v1::DTYPE_FLOAT32, {OnDevice(1, 0)}).status();
    EXPECT_EQ(big.code(), absl::StatusCode::kResourceExhausted);
    EXPECT_NE(big.message().find("tenant 'default': device 0: 4195456 more bytes would pass the "
                                 "tenant memory quota of 1048576 bytes per device "
                                 "(--tenant_memory_quota; 0 in use"),
              absl::string_view::npos)
        << big;
    ASSERT_OK(client.Create({1024}, v1::DTYPE_FLOAT32, {OnDevice(1, 0)}).status());
  }
  const int status = daemon->Terminate(10000);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << daemon->log();
}

}  // namespace
}  // namespace distarray::testing
