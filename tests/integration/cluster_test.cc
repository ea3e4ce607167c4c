// Clusters of host-backend daemons on loopback (docs/cluster.md): three nodes serving one device
// space, the configurations a cluster refuses with their exit codes, and members that die during
// work: calls end UNAVAILABLE within the documented time, arrays on live nodes stay intact, and a
// restarted member rejoins with its devices empty. The whole integration suite also runs over a
// two-node cluster (the "host_cluster" parameter of backend_fixture.h).
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "distarray/client.h"
#include "distarray/graph.h"
#include "distarray/index_maps.h"
#include "distarray/internal/v1/cluster.grpc.pb.h"
#include "tests/support/backend_fixture.h"
#include "tests/support/daemon.h"
#include "tests/support/reference.h"
#include "tests/support/run_command.h"
#include "tests/support/test_certificates.h"

namespace distarray::testing {
namespace {

namespace g = graph;
namespace wire = ::distarray::internal::v1;
using Clock = std::chrono::steady_clock;

constexpr int kExitBadFlags = 2;
constexpr int kExitClusterNotFormed = 5;
constexpr int kExitClusterRefused = 6;
constexpr int kExitClusterLeaderLost = 7;

Daemon::Options ClusterOf(int size, std::vector<std::string> extra_flags = {}) {
  Daemon::Options options;
  options.backend = "host";
  options.host_devices = 2;
  options.cluster_size = size;
  options.extra_flags = std::move(extra_flags);
  return options;
}

int ExitCode(int wait_status) {
  return wait_status != -1 && WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
}

// The seed's loop: while all(a < limit): a += 1.
v1::Program SeedLoop(float limit) {
  g::ProgramBuilder p;
  g::Var a = p.Input("a");
  g::Vars out = p.WhileLoop([limit](auto v) { return g::All(v[0] < limit); },
                            [](auto v) { return g::Vars{v[0] + 1.0f}; }, {a}, int64_t{1} << 20);
  p.Output("a", out[0]);
  return p.program();
}

TEST(Cluster, ThreeNodesServeOneDeviceSpaceNumberedNodeMajor) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Daemon> daemon, Daemon::Start(ClusterOf(3)));
  ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(daemon->address()));
  ASSERT_OK_AND_ASSIGN(v1::GetServerInfoResponse info, client.ServerInfo());
  EXPECT_EQ(info.cluster_size(), 3);
  ASSERT_EQ(info.devices_size(), 6);
  for (int d = 0; d < 6; ++d) {
    EXPECT_EQ(info.devices(d).id(), d);
    EXPECT_EQ(info.devices(d).node(), d / 2) << d;
    EXPECT_GT(info.devices(d).memory_limit_bytes(), 0) << d;
  }

  std::mt19937_64 rng(31);
  const Shape shape = {12, 10};
  const std::vector<double> x = RandomValues<double>(120, rng);
  ASSERT_OK_AND_ASSIGN(Array rows,
                       client.Upload<double>(x, shape, {Split(2, 0, 12, {0, 1, 2, 3, 4, 5})}));
  // Columns in another order: every piece crosses a node or a device.
  ASSERT_OK_AND_ASSIGN(Array cols, rows.Reshard(Split(2, 1, 10, {5, 3, 1, 4, 2})));
  ASSERT_OK_AND_ASSIGN(std::vector<double> got, cols.Download<double>());
  EXPECT_EQ(got, x);

  ASSERT_OK_AND_ASSIGN(Array doubled, rows * 2.0);
  ASSERT_OK_AND_ASSIGN(Array sum, doubled + cols);
  ASSERT_OK_AND_ASSIGN(std::vector<double> sum_values, sum.Download<double>());
  for (int i = 0; i < 120; ++i) EXPECT_EQ(sum_values[i], 3 * x[i]) << i;

  ASSERT_OK_AND_ASSIGN(Array column_sums, Reduce(rows, v1::REDUCE_OP_SUM, {0}, false, true));
  ASSERT_OK_AND_ASSIGN(std::vector<double> sums, column_sums.Download<double>());
  for (int j = 0; j < 10; ++j) {
    long double expected = 0;
    for (int i = 0; i < 12; ++i) expected += x[i * 10 + j];
    EXPECT_NEAR(sums[j], static_cast<double>(expected), 1e-12) << j;
  }

  ASSERT_OK_AND_ASSIGN(
      Array square, client.Upload<double>(std::vector<double>(x.begin(), x.begin() + 100), {10, 10},
                                          {Split(2, 0, 10, {4, 0})}));
  ASSERT_OK_AND_ASSIGN(Array other, square.Reshard(Split(2, 1, 10, {2, 5})));
  ASSERT_OK_AND_ASSIGN(Array product, Matmul(square, other));
  ASSERT_OK_AND_ASSIGN(std::vector<double> product_values, product.Download<double>());
  for (int i = 0; i < 10; ++i) {
    for (int j = 0; j < 10; ++j) {
      long double expected = 0;
      for (int k = 0; k < 10; ++k) expected += (long double)x[i * 10 + k] * x[k * 10 + j];
      EXPECT_NEAR(product_values[i * 10 + j], static_cast<double>(expected),
                  1e-13 * std::abs(static_cast<double>(expected)) + 1e-12);
    }
  }

  // A loop whose condition spans the three nodes runs eagerly on the leader; one on the
  // leader's own devices records a graph as a single daemon does.
  std::vector<float> start(60);
  std::uniform_real_distribution<float> uniform(0.0f, 10.0f);
  for (float& v : start) v = uniform(rng);
  std::vector<float> expected = start;
  int64_t iterations = 0;
  auto all_below = [&] {
    for (float v : expected) {
      if (!(v < 20.0f)) return false;
    }
    return true;
  };
  while (all_below()) {
    for (float& v : expected) v += 1.0f;
    ++iterations;
  }
  ASSERT_GT(iterations, 5);
  for (const std::vector<int>& devices : {std::vector<int>{0, 2, 4}, std::vector<int>{1}}) {
    ASSERT_OK_AND_ASSIGN(Array a, client.Upload<float>(start, {60}, {Split(1, 0, 60, devices)}));
    ASSERT_OK_AND_ASSIGN(GraphRun run, client.RunGraph(SeedLoop(20.0f), {{"a", &a}}));
    ASSERT_OK_AND_ASSIGN(std::vector<float> looped, run.outputs.at("a").Download<float>());
    EXPECT_EQ(looped, expected) << devices.size();
    EXPECT_EQ(run.execution,
              devices.size() == 3 ? v1::GRAPH_EXECUTION_EAGER : v1::GRAPH_EXECUTION_DEVICE_GRAPH);
  }
  EXPECT_EQ(ExitCode(daemon->Terminate(30000)), 0) << daemon->log();
}

// Two CUDA daemons forming a cluster (on a one-GPU machine both use GPU 0): the forwarding and
// the data plane run on the GPU backend too, where the bytes between nodes stage through host
// memory. Skips without a GPU unless DISTARRAY_REQUIRE_BACKENDS names cuda.
TEST(Cluster, CudaDaemonsServeOneDeviceSpace) {
  Daemon::Options options = ClusterOf(2);
  options.backend = "cuda";
  std::unique_ptr<Daemon> daemon;
  ASSERT_NO_FATAL_FAILURE(StartOwnDaemon("cuda", options, daemon));
  if (::testing::Test::IsSkipped()) return;
  ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(daemon->address()));
  ASSERT_OK_AND_ASSIGN(v1::GetServerInfoResponse info, client.ServerInfo());
  ASSERT_EQ(info.cluster_size(), 2);
  const int devices = info.devices_size();
  ASSERT_GE(devices, 2);
  std::vector<int> all(devices), reversed(devices);
  for (int d = 0; d < devices; ++d) {
    all[d] = d;
    reversed[d] = devices - 1 - d;
  }
  EXPECT_EQ(info.devices(devices - 1).node(), 1);
  std::mt19937_64 rng(77);
  const Shape shape = {96, 80};
  const std::vector<double> x = RandomValues<double>(96 * 80, rng);
  ASSERT_OK_AND_ASSIGN(Array rows, client.Upload<double>(x, shape, {Split(2, 0, 96, all)}));
  ASSERT_OK_AND_ASSIGN(Array cols, rows.Reshard(Split(2, 1, 80, reversed)));
  ASSERT_OK_AND_ASSIGN(std::vector<double> moved, cols.Download<double>());
  EXPECT_EQ(moved, x);
  ASSERT_OK_AND_ASSIGN(Array twice, rows * 2.0);
  ASSERT_OK_AND_ASSIGN(Array sum, twice + cols);
  ASSERT_OK_AND_ASSIGN(std::vector<double> summed, sum.Download<double>());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(summed[i], 3 * x[i]) << i;
  ASSERT_OK_AND_ASSIGN(Array column_sums, Reduce(rows, v1::REDUCE_OP_SUM, {0}, false, true));
  ASSERT_OK_AND_ASSIGN(std::vector<double> sums, column_sums.Download<double>());
  for (int j = 0; j < 80; ++j) {
    long double expected = 0;
    for (int i = 0; i < 96; ++i) expected += x[i * 80 + j];
    EXPECT_NEAR(sums[j], static_cast<double>(expected), 1e-11) << j;
  }
  EXPECT_EQ(ExitCode(daemon->Terminate(30000)), 0) << daemon->log();
}

TEST(Cluster, BadConfigurationsAreBadFlags) {
  const std::vector<std::vector<std::string>> cases = {
      {"--cluster_size=65"},
      {"--cluster_size=2", "--cluster_rank=2"},
      {"--cluster_size=2", "--cluster_rank=1", "--cluster_leader="},
      {"--cluster_size=2", "--cluster_rank=0", "--cluster_listen=0.0.0.0:0", "--cluster_address="},
  };
  const std::vector<std::string> named = {"--cluster_size", "--cluster_rank", "--cluster_leader",
                                          "--cluster_address"};
  for (size_t i = 0; i < cases.size(); ++i) {
    Daemon::Options options = ClusterOf(1, cases[i]);
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Daemon> daemon, Daemon::Launch(options, 0, 0));
    EXPECT_EQ(ExitCode(daemon->WaitForExit(20000)), kExitBadFlags) << daemon->log();
    EXPECT_NE(daemon->log().find(named[i]), std::string::npos) << daemon->log();
  }
}

TEST(Cluster, AMemberThatCannotReachTheLeaderRetriesThenExits) {
  Daemon::Options options = ClusterOf(2, {"--cluster_form_timeout_seconds=2"});
  // Port 1 on loopback: nothing listens there.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Daemon> member, Daemon::Launch(options, 1, 1));
  EXPECT_EQ(ExitCode(member->WaitForExit(20000)), kExitClusterNotFormed) << member->log();
  EXPECT_NE(member->log().find("retrying"), std::string::npos) << member->log();
  EXPECT_NE(member->log().find("127.0.0.1:1"), std::string::npos) << member->log();
}

TEST(Cluster, ALeaderIsNotReadyUntilFormedAndExitsWhenMembersNeverCome) {
  Daemon::Options options = ClusterOf(3, {"--cluster_form_timeout_seconds=3"});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Daemon> leader, Daemon::Launch(options, 0, 0));
  ASSERT_OK_AND_ASSIGN(int health_port, leader->WaitForPort("health_port", 20000));
  const CommandResult readiness =
      Probe(absl::StrCat("127.0.0.1:", health_port), "readiness", /*timeout_ms=*/2000);
  EXPECT_EQ(readiness.exit_code, 1) << readiness.output;
  EXPECT_EQ(ExitCode(leader->WaitForExit(20000)), kExitClusterNotFormed) << leader->log();
  EXPECT_NE(leader->log().find("rank(s) 1, 2"), std::string::npos) << leader->log();
}

TEST(Cluster, TheLeaderRefusesASecondDaemonWithATakenRankAndOtherReleases) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Daemon> daemon, Daemon::Start(ClusterOf(2)));
  ASSERT_OK_AND_ASSIGN(int leader_port, daemon->WaitForPort("cluster_port", 1000));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Daemon> second,
                       Daemon::Launch(ClusterOf(2), 1, leader_port));
  EXPECT_EQ(ExitCode(second->WaitForExit(20000)), kExitClusterRefused) << second->log();
  EXPECT_NE(second->log().find("held by the live daemon"), std::string::npos) << second->log();

  ASSERT_OK_AND_ASSIGN(Client api, Client::Connect(daemon->address()));
  ASSERT_OK_AND_ASSIGN(v1::GetServerInfoResponse info, api.ServerInfo());
  const std::string daemon_version = info.version();
  // Raw joins: another protocol, release or size is refused with the field named.
  auto stub = wire::ClusterService::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", leader_port), grpc::InsecureChannelCredentials()));
  auto join = [&](const wire::JoinRequest& request) {
    grpc::ClientContext context;
    wire::JoinResponse response;
    return stub->Join(&context, request, &response);
  };
  wire::JoinRequest request;
  request.set_protocol(wire::PROTOCOL_VERSION_CURRENT);
  request.set_version("0.0.0-other");
  request.set_backend("host");
  request.set_rank(1);
  request.set_cluster_size(2);
  request.add_devices()->set_name("host:0");
  grpc::Status status = join(request);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(status.error_message().find("release"), std::string::npos) << status.error_message();
  request.set_protocol(wire::PROTOCOL_VERSION_UNSPECIFIED);
  EXPECT_EQ(join(request).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  // The right release but more devices than a node has: refused before anything is kept.
  wire::JoinRequest crowded = request;
  crowded.set_protocol(wire::PROTOCOL_VERSION_CURRENT);
  crowded.set_version(daemon_version);
  for (int d = 0; d < 64; ++d) crowded.add_devices()->set_name("host:x");
  const grpc::Status too_many = join(crowded);
  EXPECT_EQ(too_many.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << too_many.error_message();
  EXPECT_NE(too_many.error_message().find("65 devices"), std::string::npos)
      << too_many.error_message();
  // The rendezvous store takes small keys and values only.
  grpc::ClientContext store_context;
  wire::StoreSetRequest huge;
  huge.set_key("epoch9/huge");
  huge.set_value(std::string(1 << 20, 'x'));
  wire::StoreSetResponse stored;
  EXPECT_EQ(stub->StoreSet(&store_context, huge, &stored).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  // The leader serves no device work, and the cluster port no client API.
  grpc::ClientContext context;
  wire::DeviceWork work;
  wire::DeviceWorkResult result;
  EXPECT_EQ(stub->Execute(&context, work, &result).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(Client::Connect(absl::StrCat("127.0.0.1:", leader_port)).status().code(),
            absl::StatusCode::kUnimplemented);
  // The API port serves no cluster calls.
  auto api_stub = wire::ClusterService::NewStub(
      grpc::CreateChannel(daemon->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext api_context;
  wire::JoinResponse api_response;
  EXPECT_EQ(api_stub->Join(&api_context, request, &api_response).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
}

// Repeats `call` until it fails; the failure, or OK when `deadline` passed first.
template <typename Fn>
absl::Status UntilFailure(Fn call, Clock::time_point deadline) {
  while (Clock::now() < deadline) {
    if (absl::Status s = call(); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// A member killed with SIGKILL while reshards, loops and uploads cross to it: each call ends
// UNAVAILABLE naming the node within the documented time, arrays on the leader stay intact, the
// leader stays up, and the restarted member rejoins with its devices usable again.
TEST(Cluster, AKilledMemberFailsCallsQuicklyAndRejoinsAfterARestart) {
  const Daemon::Options options = ClusterOf(2, {"--cluster_lost_after_seconds=2"});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Daemon> daemon, Daemon::Start(options));
  ASSERT_OK_AND_ASSIGN(int leader_port, daemon->WaitForPort("cluster_port", 1000));
  ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(daemon->address()));
  std::mt19937_64 rng(5);
  const Shape shape = {512, 512};
  const std::vector<float> x = RandomValues<float>(512 * 512, rng);
  const v1::IndexMap everywhere = Split(2, 0, 512, {0, 1, 2, 3});
  ASSERT_OK_AND_ASSIGN(Array on_leader, client.Upload<float>(x, shape, {Split(2, 0, 512, {0, 1})}));
  ASSERT_OK_AND_ASSIGN(Array spread, client.Upload<float>(x, shape, {everywhere}));
  const std::vector<float> small(64, 0.5f);
  ASSERT_OK_AND_ASSIGN(Array counter, client.Upload<float>(small, {64}, {Split(1, 0, 64, {1, 2})}));

  const auto give_up = Clock::now() + std::chrono::seconds(30);
  absl::Status reshard, loop, upload;
  Clock::time_point reshard_end, loop_end, upload_end;
  std::thread reshards([&] {
    reshard = UntilFailure(
        [&] {
          return spread.Reshard(Split(2, 1, 512, {3, 2, 1, 0})).status();
        },
        give_up);
    reshard_end = Clock::now();
  });
  std::thread loops([&] {
    // About 10^6 eager iterations across the two nodes: still running when the member dies.
    loop = client.RunGraph(SeedLoop(1e6f), {{"a", &counter}}).status();
    loop_end = Clock::now();
  });
  std::thread uploads([&] {
    upload = UntilFailure([&] { return client.Upload<float>(x, shape, {everywhere}).status(); },
                          give_up);
    upload_end = Clock::now();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  Daemon& member = *daemon->members()[0];
  ASSERT_EQ(kill(member.pid(), SIGKILL), 0);
  const Clock::time_point killed = Clock::now();
  reshards.join();
  loops.join();
  uploads.join();
  // The documented bound: --cluster_lost_after_seconds plus a heartbeat period, with a margin
  // for two busy cores.
  constexpr auto kBound = std::chrono::seconds(2 + 1 + 3);
  for (const auto& [what, status, end] :
       {std::tuple{"reshard", reshard, reshard_end}, std::tuple{"loop", loop, loop_end},
        std::tuple{"upload", upload, upload_end}}) {
    EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << what << ": " << status;
    EXPECT_NE(status.message().find("cluster node 1"), std::string::npos) << what << ": " << status;
    EXPECT_LT(end - killed, kBound) << what;
  }
  const int member_status = member.WaitForExit(5000);  // reaped: killed by the signal
  EXPECT_TRUE(member_status != -1 && WIFSIGNALED(member_status)) << member_status;
  ASSERT_TRUE(daemon->alive()) << daemon->log();

  // The leader's arrays are intact; the ones with chunks on the lost node say so, and once the
  // heartbeats have found the node lost a failing call names them (and only them).
  absl::Status named;
  do {
    named = spread.Reshard(Split(2, 0, 512, {0, 1})).status();
  } while (named.message().find("is lost") == std::string::npos && Clock::now() - killed < kBound);
  EXPECT_EQ(named.code(), absl::StatusCode::kUnavailable) << named;
  EXPECT_NE(named.message().find(spread.handle()), std::string::npos) << named;
  EXPECT_NE(named.message().find(counter.handle()), std::string::npos) << named;
  EXPECT_EQ(named.message().find(on_leader.handle()), std::string::npos) << named;
  ASSERT_OK_AND_ASSIGN(std::vector<float> kept, on_leader.Download<float>());
  EXPECT_EQ(kept, x);
  ASSERT_OK_AND_ASSIGN(Array kept_sum, on_leader + 1.0f);
  ASSERT_OK_AND_ASSIGN(std::vector<float> kept_plus, kept_sum.Download<float>());
  EXPECT_EQ(kept_plus[7], x[7] + 1.0f);

  // The member restarts and rejoins; its devices come back empty and work again.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Daemon> restarted, Daemon::Launch(options, 1, leader_port));
  absl::Status rejoined = absl::UnavailableError("not yet");
  const auto rejoin_deadline = Clock::now() + std::chrono::seconds(30);
  while (!rejoined.ok() && Clock::now() < rejoin_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    absl::StatusOr<Array> again = client.Upload<float>(x, shape, {everywhere});
    if (!again.ok()) {
      rejoined = again.status();
      continue;
    }
    absl::StatusOr<Array> moved = again->Reshard(Split(2, 1, 512, {3, 2, 1, 0}));
    rejoined = moved.status();
    if (moved.ok()) {
      ASSERT_OK_AND_ASSIGN(std::vector<float> values, moved->Download<float>());
      EXPECT_EQ(values, x);
    }
  }
  ASSERT_TRUE(rejoined.ok()) << rejoined << "\n" << daemon->log() << "\n" << restarted->log();
  absl::StatusOr<std::vector<float>> gone = spread.Download<float>();
  EXPECT_EQ(gone.status().code(), absl::StatusCode::kUnavailable) << gone.status();
  // Still named after the node's rank came back: its chunks went with the old process.
  EXPECT_NE(gone.status().message().find(spread.handle()), std::string::npos) << gone.status();
  daemon->members()[0] = std::move(restarted);
  EXPECT_EQ(ExitCode(daemon->Terminate(30000)), 0) << daemon->log();
}

// A member that died outright refuses its connections at once, long before the heartbeats find it
// lost (60 s here): the calls that try it already name the caller's arrays with chunks on its
// devices, and only those, and say the node is not yet written off.
TEST(Cluster, ACallThatFindsAMemberDeadNamesTheArraysOnIt) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Daemon> daemon,
                       Daemon::Start(ClusterOf(2, {"--cluster_lost_after_seconds=60"})));
  ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(daemon->address()));
  std::mt19937_64 rng(11);
  const std::vector<float> x = RandomValues<float>(4096, rng);
  ASSERT_OK_AND_ASSIGN(Array on_leader,
                       client.Upload<float>(x, {4096}, {Split(1, 0, 4096, {0, 1})}));
  ASSERT_OK_AND_ASSIGN(Array spread,
                       client.Upload<float>(x, {4096}, {Split(1, 0, 4096, {0, 1, 2, 3})}));
  ASSERT_OK_AND_ASSIGN(Array on_member,
                       client.Upload<float>(x, {4096}, {Split(1, 0, 4096, {2, 3})}));
  Daemon& member = *daemon->members()[0];
  ASSERT_EQ(kill(member.pid(), SIGKILL), 0);
  ASSERT_NE(member.WaitForExit(5000), -1);  // reaped: its sockets are closed
  const Clock::time_point killed = Clock::now();

  absl::StatusOr<std::vector<float>> read = spread.Download<float>();
  absl::Status moved = on_member.Reshard(Split(1, 0, 4096, {1, 0})).status();
  EXPECT_LT(Clock::now() - killed, std::chrono::seconds(10));
  for (const absl::Status& status : {read.status(), moved}) {
    EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
    const absl::string_view message = status.message();
    EXPECT_NE(message.find("cluster node 1"), std::string::npos) << status;
    EXPECT_EQ(message.find("is lost"), std::string::npos) << status;
    EXPECT_NE(message.find("your arrays with chunks on node 1"), std::string::npos) << status;
    EXPECT_NE(message.find(spread.handle()), std::string::npos) << status;
    EXPECT_NE(message.find(on_member.handle()), std::string::npos) << status;
    EXPECT_EQ(message.find(on_leader.handle()), std::string::npos) << status;
  }
  // The leader's own arrays work on.
  ASSERT_OK_AND_ASSIGN(std::vector<float> kept, on_leader.Download<float>());
  EXPECT_EQ(kept, x);
  EXPECT_TRUE(daemon->alive()) << daemon->log();
  // Told to stop, the leader still does; its status says that it could not synchronize every
  // device at exit (the dead member's, not yet written off).
  daemon->members().clear();
  EXPECT_EQ(ExitCode(daemon->Terminate(30000)), 1) << daemon->log();
}

// A member that stops answering without closing its connections (SIGSTOP: a hung host, a
// partition) is found lost by the heartbeats; the call waiting on it is cancelled then, not left
// hanging. When it wakes, the leader no longer heartbeats it, so it exits for a restart.
TEST(Cluster, ASilentMemberIsFoundLostAndItsWaitingCallsEnd) {
  const Daemon::Options options = ClusterOf(2, {"--cluster_lost_after_seconds=2"});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Daemon> daemon, Daemon::Start(options));
  ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(daemon->address()));
  const std::vector<double> values(1000, 1.5);
  ASSERT_OK_AND_ASSIGN(Array a, client.Upload<double>(values, {1000}, {Split(1, 0, 1000, {0, 3})}));
  Daemon& member = *daemon->members()[0];
  ASSERT_EQ(kill(member.pid(), SIGSTOP), 0);
  const Clock::time_point stopped = Clock::now();
  absl::StatusOr<std::vector<double>> read = a.Download<double>();
  EXPECT_EQ(read.status().code(), absl::StatusCode::kUnavailable) << read.status();
  EXPECT_NE(read.status().message().find("is lost"), std::string::npos) << read.status();
  EXPECT_LT(Clock::now() - stopped, std::chrono::seconds(2 + 1 + 3));
  ASSERT_EQ(kill(member.pid(), SIGCONT), 0);
  EXPECT_EQ(ExitCode(member.WaitForExit(15000)), kExitClusterLeaderLost) << member.log();
  EXPECT_TRUE(daemon->alive());
  daemon->members().clear();
  EXPECT_EQ(ExitCode(daemon->Terminate(30000)), 0) << daemon->log();
}

// A call's own deadline bounds its wait on a member that stops answering, long before the
// heartbeats would find the member lost: a download with a 1 s deadline frees its handler (the
// daemon's only call thread here) about then, not when the member is found lost 60 s later; once
// the member wakes (still a member: its silence was shorter than --cluster_lost_after_seconds) the
// same download succeeds.
TEST(Cluster, ACallsDeadlineEndsItsWaitOnASilentMember) {
  // One call at a time: a handler still waiting on the member holds the only call thread, and the
  // next call is refused.
  const Daemon::Options options =
      ClusterOf(2, {"--cluster_lost_after_seconds=60", "--max_concurrent_calls=1"});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Daemon> daemon, Daemon::Start(options));
  ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(daemon->address()));
  std::vector<float> values(1000);
  for (int i = 0; i < 1000; ++i) values[i] = static_cast<float>(i % 7);
  // On the member's devices (2 and 3), and on the leader's.
  ASSERT_OK_AND_ASSIGN(Array remote,
                       client.Upload<float>(values, {1000}, {Split(1, 0, 1000, {2, 3})}));
  ASSERT_OK_AND_ASSIGN(Array local,
                       client.Upload<float>(values, {1000}, {Split(1, 0, 1000, {0, 1})}));
  Daemon& member = *daemon->members()[0];
  ASSERT_EQ(kill(member.pid(), SIGSTOP), 0);
  // Woken on every way out: a stopped member would outlive the test's teardown.
  struct Wake {
    pid_t pid;
    ~Wake() { kill(pid, SIGCONT); }
  } wake{member.pid()};
  const Clock::time_point stopped = Clock::now();
  {
    auto stub = v1::ArrayService::NewStub(
        grpc::CreateChannel(daemon->address(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(1));
    v1::DownloadArrayRequest request;
    request.set_handle(remote.handle());
    auto reader = stub->DownloadArray(&context, request);
    v1::DownloadArrayResponse response;
    while (reader->Read(&response)) {
    }
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  }
  // The handler let go of its wait and its call slot soon after the deadline.
  absl::StatusOr<std::vector<float>> intact = absl::UnavailableError("not tried");
  while (!intact.ok() && Clock::now() - stopped < std::chrono::seconds(5)) {
    intact = local.Download<float>();
    if (!intact.ok()) {
      EXPECT_EQ(intact.status().code(), absl::StatusCode::kResourceExhausted) << intact.status();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  ASSERT_TRUE(intact.ok()) << intact.status();
  EXPECT_EQ(*intact, values);
  ASSERT_EQ(kill(member.pid(), SIGCONT), 0);
  ASSERT_OK_AND_ASSIGN(std::vector<float> got, remote.Download<float>());
  EXPECT_EQ(got, values);
  EXPECT_TRUE(daemon->alive());
}

TEST(Cluster, TheLeadersLossEndsTheMembers) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Daemon> daemon,
                       Daemon::Start(ClusterOf(3, {"--cluster_lost_after_seconds=2"})));
  ASSERT_EQ(kill(daemon->pid(), SIGKILL), 0);
  EXPECT_NE(daemon->WaitForExit(5000), -1);
  for (std::unique_ptr<Daemon>& member : daemon->members()) {
    EXPECT_EQ(ExitCode(member->WaitForExit(15000)), kExitClusterLeaderLost) << member->log();
    EXPECT_NE(member->log().find("sent no heartbeat"), std::string::npos) << member->log();
  }
  daemon->members().clear();
}

// Mutual TLS between the daemons (--cluster_tls_*), with certificates made by openssl at test
// time: a cluster CA and a node certificate for the name every daemon checks
// ("distarray-cluster"), and one of another CA with the same name.
class ClusterTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(MakeCertificates(
        "distarray-ctls",
        absl::StrCat(SelfSignedCa("ca", "cluster-ca"), SelfSignedCa("other-ca", "another-ca"),
                     "printf 'subjectAltName=DNS:distarray-cluster\\nextendedKeyUsage="
                     "serverAuth,clientAuth\\n' > node.ext; ",
                     SignedBy("ca", "node", "distarray-cluster", "node.ext"),
                     SignedBy("other-ca", "stranger", "distarray-cluster", "node.ext"),
                     "printf 'not a certificate\\n' > garbage.pem")));
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }
  static std::string File(const std::string& name) { return *dir_ + "/" + name; }
  // The cluster flags of a daemon holding `who`.crt and .key and trusting `ca`.crt.
  static std::vector<std::string> TlsFlags(const std::string& who, const std::string& ca = "ca") {
    return {"--cluster_tls_cert_file=" + File(who + ".crt"),
            "--cluster_tls_key_file=" + File(who + ".key"),
            "--cluster_tls_ca_file=" + File(ca + ".crt")};
  }
  static std::string* dir_;
};
std::string* ClusterTlsTest::dir_ = nullptr;

TEST_F(ClusterTlsTest, DaemonsWithTheClusterCertificateFormAndWorkAcrossNodes) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Daemon> daemon,
                       Daemon::Start(ClusterOf(2, TlsFlags("node"))));
  ASSERT_OK_AND_ASSIGN(int leader_port, daemon->WaitForPort("cluster_port", 1000));
  ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(daemon->address()));
  std::mt19937_64 rng(41);
  const std::vector<float> x = RandomValues<float>(4 * 1000, rng);
  ASSERT_OK_AND_ASSIGN(Array rows, client.Upload<float>(x, {4, 1000}, {Split(2, 0, 4, {0, 3})}));
  ASSERT_OK_AND_ASSIGN(Array cols, rows.Reshard(Split(2, 1, 1000, {2, 1, 0})));
  ASSERT_OK_AND_ASSIGN(std::vector<float> got, cols.Download<float>());
  EXPECT_EQ(got, x);

  // The cluster port takes neither a plaintext caller nor one whose certificate another CA
  // signed; one with the cluster's certificate gets an answer (a refusal of its join).
  wire::JoinRequest join;
  join.set_protocol(wire::PROTOCOL_VERSION_CURRENT);
  join.set_rank(1);
  join.set_cluster_size(2);
  const std::string target = absl::StrCat("127.0.0.1:", leader_port);
  auto join_with = [&](std::shared_ptr<grpc::ChannelCredentials> credentials) {
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride("distarray-cluster");
    auto stub = wire::ClusterService::NewStub(grpc::CreateCustomChannel(target, credentials, args));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    wire::JoinResponse response;
    return stub->Join(&context, join, &response);
  };
  auto tls = [&](const std::string& who) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = ReadPem(File("ca.crt"));
    ssl.pem_private_key = ReadPem(File(who + ".key"));
    ssl.pem_cert_chain = ReadPem(File(who + ".crt"));
    return grpc::SslCredentials(ssl);
  };
  EXPECT_EQ(join_with(grpc::InsecureChannelCredentials()).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(join_with(tls("stranger")).error_code(), grpc::StatusCode::UNAVAILABLE);
  const grpc::Status member = join_with(tls("node"));
  EXPECT_EQ(member.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << member.error_message();
  EXPECT_TRUE(daemon->alive());
}

TEST_F(ClusterTlsTest, AMemberWithAnotherCasCertificateCannotJoin) {
  std::vector<std::string> leader_flags = TlsFlags("node");
  leader_flags.push_back("--cluster_form_timeout_seconds=4");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Daemon> leader,
                       Daemon::Launch(ClusterOf(2, leader_flags), 0, 0));
  ASSERT_OK_AND_ASSIGN(int leader_port, leader->WaitForPort("cluster_port", 20000));
  // It trusts the cluster CA but presents the stranger's certificate: the leader refuses the
  // handshake, and the member retries until its form timeout.
  std::vector<std::string> member_flags = TlsFlags("stranger", "ca");
  member_flags.push_back("--cluster_form_timeout_seconds=3");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Daemon> member,
                       Daemon::Launch(ClusterOf(2, member_flags), 1, leader_port));
  EXPECT_EQ(ExitCode(member->WaitForExit(20000)), kExitClusterNotFormed) << member->log();
  EXPECT_NE(member->log().find("retrying"), std::string::npos) << member->log();
  EXPECT_EQ(ExitCode(leader->WaitForExit(20000)), kExitClusterNotFormed) << leader->log();
  EXPECT_NE(leader->log().find("rank(s) 1"), std::string::npos) << leader->log();
}

TEST_F(ClusterTlsTest, IncompleteOrUnusableFilesAreBadFlags) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--cluster_tls_cert_file=" + File("node.crt")}, "--cluster_tls_key_file"},
      {{"--cluster_tls_cert_file=" + File("node.crt"),
        "--cluster_tls_key_file=" + File("node.key")},
       "--cluster_tls_ca_file"},
      {{"--cluster_tls_ca_file=" + File("ca.crt")}, "--cluster_tls_cert_file"},
      {{"--cluster_tls_cert_file=" + File("node.crt"),
        "--cluster_tls_key_file=" + File("stranger.key"),
        "--cluster_tls_ca_file=" + File("ca.crt")},
       "does not belong"},
      {{"--cluster_tls_cert_file=" + File("node.crt"), "--cluster_tls_key_file=" + File("node.key"),
        "--cluster_tls_ca_file=" + File("garbage.pem")},
       "--cluster_tls_ca_file"},
  };
  for (const auto& [flags, named] : cases) {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Daemon> daemon, Daemon::Launch(ClusterOf(2, flags), 0, 0));
    EXPECT_EQ(ExitCode(daemon->WaitForExit(20000)), kExitBadFlags) << daemon->log();
    EXPECT_NE(daemon->log().find(named), std::string::npos) << named << "\n" << daemon->log();
  }
}

}  // namespace
}  // namespace distarray::testing
