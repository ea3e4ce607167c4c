// grpc.health.v1 on the daemon's own health port, through distarray_probe: liveness, readiness
// and the overall status, NOT_SERVING during the drain's grace period, nothing served on the API
// port, and the probe's exit codes.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "tests/support/daemon.h"
#include "tests/support/run_command.h"

namespace distarray::testing {
namespace {

TEST(Health, ServicesServeOnTheHealthPortOnly) {
  auto daemon = Daemon::Start({});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  const std::string health = (*daemon)->health_address();
  for (const char* service : {"", "liveness", "readiness"}) {
    const CommandResult probe = Probe(health, service);
    EXPECT_EQ(probe.exit_code, 0) << service << ": " << probe.output;
    EXPECT_NE(probe.output.find(": SERVING"), std::string::npos) << probe.output;
  }
  const CommandResult unknown = Probe(health, "distarray.v1.ArrayService");
  EXPECT_EQ(unknown.exit_code, 1) << unknown.output;
  EXPECT_NE(unknown.output.find("no such service"), std::string::npos) << unknown.output;
  // The API port serves no health service: probes must use the health port.
  const CommandResult api = Probe((*daemon)->address(), "readiness");
  EXPECT_EQ(api.exit_code, 1) << api.output;
  EXPECT_EQ((*daemon)->Terminate(10000), 0);
}

TEST(Health, ReadinessIsNotServingDuringTheDrainGracePeriod) {
  Daemon::Options options;
  options.extra_flags = {"--drain_grace_seconds=3", "--log_level=info"};
  auto daemon = Daemon::Start(options);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  const std::string health = (*daemon)->health_address();
  ASSERT_EQ(Probe(health, "readiness").exit_code, 0);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(kill((*daemon)->pid(), SIGTERM), 0);
  // The drain starts at once: poll until readiness turns.
  CommandResult readiness;
  for (int i = 0; i < 50; ++i) {
    readiness = Probe(health, "readiness");
    if (readiness.exit_code != 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(readiness.exit_code, 1) << readiness.output;
  EXPECT_NE(readiness.output.find("NOT_SERVING"), std::string::npos) << readiness.output;
  const CommandResult overall = Probe(health, "");
  EXPECT_EQ(overall.exit_code, 1) << overall.output;
  // Draining is not dying: liveness stays SERVING, so the kubelet does not restart the pod.
  const CommandResult liveness = Probe(health, "liveness");
  EXPECT_EQ(liveness.exit_code, 0) << liveness.output;
  // Still visible well into the grace period.
  std::this_thread::sleep_until(start + std::chrono::milliseconds(2000));
  EXPECT_EQ(Probe(health, "readiness").exit_code, 1);
  EXPECT_TRUE((*daemon)->alive());
  EXPECT_EQ((*daemon)->Terminate(10000), 0) << (*daemon)->log();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(seconds, 3.0) << "the process left before its grace period";
}

TEST(Health, HealthPortThatCannotBeBoundIsABadFlag) {
  auto first = Daemon::Start({});
  ASSERT_TRUE(first.ok()) << first.status();
  Daemon::Options options;
  options.extra_flags = {absl::StrCat("--health_listen=", (*first)->health_address())};
  auto second = Daemon::Start(options);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("exited with 2"), std::string::npos) << second.status();
  EXPECT_NE(second.status().message().find("--health_listen"), std::string::npos)
      << second.status();
}

TEST(Probe, ExitCodes) {
  // Nothing listens on the port of a daemon that is gone.
  std::string gone;
  {
    auto daemon = Daemon::Start({});
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    gone = (*daemon)->health_address();
  }
  const CommandResult unreachable = Probe(gone, "readiness", /*timeout_ms=*/500);
  EXPECT_EQ(unreachable.exit_code, 1) << unreachable.output;
  EXPECT_NE(unreachable.output.find("unreachable"), std::string::npos) << unreachable.output;
  for (const char* args : {"--timeout_ms=0", "--timeout_ms=soon", "--bogus=1", "--address"}) {
    const CommandResult bad = RunCommand(absl::StrCat("'", ProbeBinary(), "' ", args));
    EXPECT_EQ(bad.exit_code, 2) << args << ": " << bad.output;
  }
  EXPECT_EQ(RunCommand(absl::StrCat("'", ProbeBinary(), "' --help")).exit_code, 0);
}

}  // namespace
}  // namespace distarray::testing
