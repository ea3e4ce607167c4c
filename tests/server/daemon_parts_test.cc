// The daemon's parts that tests against the real daemon cannot reach on the host backend (a
// sticky device error) or observe precisely (the transfer log's aggregation, JSON escaping).
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "server/daemon/flags.h"
#include "server/daemon/health_server.h"
#include "server/daemon/log_setup.h"
#include "server/logging/transfer_log.h"
#include "server/service/drain_gate.h"

namespace distarray::daemon {
namespace {

TEST(HealthServer, StartUpDrainAndStickyErrors) {
  auto health = HealthServer::Start("127.0.0.1:0");
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_GT((*health)->port(), 0);
  // Start-up: alive, not ready.
  EXPECT_TRUE((*health)->live());
  EXPECT_FALSE((*health)->ready());
  (*health)->SetStarted();
  EXPECT_TRUE((*health)->ready());
  // OK is no error.
  (*health)->SetDeviceError(absl::OkStatus());
  EXPECT_TRUE((*health)->live());
  // A sticky error turns both off for good.
  (*health)->SetDeviceError(absl::UnavailableError("device in a sticky error state"));
  EXPECT_FALSE((*health)->live());
  EXPECT_FALSE((*health)->ready());
}

TEST(HealthServer, DrainTurnsReadinessOffOnly) {
  auto health = HealthServer::Start("127.0.0.1:0");
  ASSERT_TRUE(health.ok()) << health.status();
  (*health)->SetStarted();
  (*health)->SetDraining();
  EXPECT_TRUE((*health)->live());
  EXPECT_FALSE((*health)->ready());
}

TEST(HealthServer, UnbindableAddressNamesTheFlag) {
  auto health = HealthServer::Start("256.0.0.1:1");
  ASSERT_FALSE(health.ok());
  EXPECT_NE(health.status().message().find("--health_listen"), std::string::npos);
}

// The drain's answers are told apart from other UNAVAILABLEs, and counted one line a second.
TEST(DrainGate, RefusalsAreRecognizedAndCountedPerInterval) {
  DrainGate gate;
  gate.BeginDrain();
  EXPECT_TRUE(DrainGate::IsRefusal(gate.Admit()));
  gate.CutOff();
  EXPECT_TRUE(DrainGate::IsRefusal(gate.CheckRunning()));
  EXPECT_FALSE(DrainGate::IsRefusal(absl::UnavailableError("device 0: sticky CUDA error")));
  EXPECT_FALSE(DrainGate::IsRefusal(absl::OkStatus()));

  DrainRefusalLog refusals(absl::Seconds(1));
  const absl::Time start = absl::FromUnixSeconds(1000);
  EXPECT_EQ(refusals.Count(start), 1);  // the first is reported at once
  EXPECT_EQ(refusals.Count(start + absl::Milliseconds(100)), 0);
  EXPECT_EQ(refusals.Count(start + absl::Milliseconds(900)), 0);
  EXPECT_EQ(refusals.Count(start + absl::Milliseconds(1000)), 3);  // the three since
  EXPECT_EQ(refusals.Count(start + absl::Milliseconds(1500)), 0);
  EXPECT_EQ(refusals.Count(start + absl::Milliseconds(2100)), 2);
}

TEST(DrainGate, RefusesThenCutsOffAndCountsCalls) {
  DrainGate gate;
  EXPECT_TRUE(gate.Admit().ok());
  EXPECT_TRUE(gate.CheckRunning().ok());
  {
    DrainGate::CallScope call(&gate);
    EXPECT_EQ(gate.WaitForCalls(absl::Now() + absl::Milliseconds(10)), 1);
    gate.BeginDrain();
    EXPECT_EQ(gate.Admit().code(), absl::StatusCode::kUnavailable);
    EXPECT_TRUE(gate.CheckRunning().ok()) << "running calls may finish until the cut-off";
    gate.CutOff();
    EXPECT_EQ(gate.CheckRunning().code(), absl::StatusCode::kUnavailable);
  }
  EXPECT_EQ(gate.WaitForCalls(absl::Now() + absl::Seconds(1)), 0);
  DrainGate::CallScope no_gate(nullptr);  // a service without a gate counts nothing
}

TEST(Flags, LogLevelsAnyCaseAndNothingElse) {
  EXPECT_EQ(*ParseLogLevel("INFO"), spdlog::level::info);
  EXPECT_EQ(*ParseLogLevel("Warning"), spdlog::level::warn);
  EXPECT_EQ(*ParseLogLevel("off"), spdlog::level::off);
  for (const char* bad : {"verbose", "", "info ", "inf"}) {
    auto level = ParseLogLevel(bad);
    ASSERT_FALSE(level.ok()) << bad;
    EXPECT_NE(level.status().message().find("--log_level"), std::string::npos);
  }
}

TEST(Flags, ByteCounts) {
  EXPECT_EQ(*ParseByteCount("64MiB"), int64_t{64} << 20);
  EXPECT_EQ(*ParseByteCount("512"), 512);
  for (const char* bad : {"0", "-1MiB", "MiB", "1TiB", "9999999999GiB", "12 MiB"}) {
    EXPECT_FALSE(ParseByteCount(bad).ok()) << bad;
  }
}

TEST(LogSetup, JsonQuoteEscapesAndReplacesInvalidUtf8) {
  EXPECT_EQ(JsonQuote("plain"), "\"plain\"");
  EXPECT_EQ(JsonQuote("a\"b\\c\nd\te"), "\"a\\\"b\\\\c\\nd\\te\"");
  EXPECT_EQ(JsonQuote(std::string("\x01", 1)), "\"\\u0001\"");
  EXPECT_EQ(JsonQuote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");             // valid UTF-8 kept
  EXPECT_EQ(JsonQuote("bad\xff"), "\"bad\\ufffd\"");                  // invalid byte
  EXPECT_EQ(JsonQuote("cut\xe2\x82"), "\"cut\\ufffd\\ufffd\"");       // truncated sequence
  EXPECT_EQ(JsonQuote("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");  // a surrogate
}

// Captures what spdlog's default logger writes while alive.
class CapturedLog {
 public:
  CapturedLog() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
    auto logger = std::make_shared<spdlog::logger>("captured", sink);
    logger->set_level(spdlog::level::debug);
    logger->set_pattern("%l %v");
    spdlog::set_default_logger(logger);
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  std::string text() const { return out_.str(); }

 private:
  std::shared_ptr<spdlog::logger> previous_;
  std::ostringstream out_;
};

TEST(TransferLog, OverlappingStreamsOfOneArrayAreOneTransfer) {
  CapturedLog log;
  TransferLog transfers(absl::ZeroDuration(), /*info_bytes=*/100);
  {
    std::vector<TransferLog::Stream> streams;
    for (int i = 0; i < 4; ++i) streams.push_back(transfers.Begin("upload", "t", "arr-1"));
    for (auto& s : streams) {
      s.Add(int64_t{32} << 20);
      s.Succeed();
    }
    // Another array and another tenant's same name are transfers of their own.
    TransferLog::Stream other = transfers.Begin("upload", "t", "arr-2");
    TransferLog::Stream other_tenant = transfers.Begin("upload", "u", "arr-1");
    other.Succeed();
    other_tenant.Succeed();
  }
  const std::string text = log.text();
  EXPECT_NE(text.find("info upload arr-1: 128 MiB in "), std::string::npos) << text;
  EXPECT_NE(text.find("over 4 streams"), std::string::npos) << text;
  EXPECT_EQ(text.find("32 MiB"), std::string::npos) << "a stream's share was logged: " << text;
  EXPECT_NE(text.find("upload arr-2: 0 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("over 1 stream\n"), std::string::npos) << text;
}

TEST(TransferLog, AStreamWithinTheLingerContinuesTheTransfer) {
  CapturedLog log;
  {
    TransferLog transfers(absl::ZeroDuration(), /*info_bytes=*/100, absl::Milliseconds(200));
    for (int call = 0; call < 3; ++call) {  // one after another, as a segment's calls
      TransferLog::Stream stream = transfers.Begin("shared-memory upload", "t", "arr-1");
      stream.Add(int64_t{32} << 20);
      stream.Succeed();
    }
    transfers.FlushLingering();  // ended just now: still lingering
    EXPECT_EQ(log.text(), "");
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    transfers.FlushLingering();
    EXPECT_NE(log.text().find("info shared-memory upload arr-1: 96 MiB in "), std::string::npos)
        << log.text();
    EXPECT_NE(log.text().find("over 3 streams"), std::string::npos) << log.text();

    // A stream after the linger (not yet flushed) starts a transfer of its own, and the one it
    // found is logged then; the last one is logged when the log goes.
    { transfers.Begin("download", "t", "arr-2").Succeed(); }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    { transfers.Begin("download", "t", "arr-2").Succeed(); }
    EXPECT_NE(log.text().find("download arr-2: 0 MiB"), std::string::npos) << log.text();
  }
  const std::string text = log.text();
  const size_t first = text.find("download arr-2: 0 MiB");
  ASSERT_NE(first, std::string::npos);
  EXPECT_NE(text.find("download arr-2: 0 MiB", first + 1), std::string::npos) << text;
  EXPECT_EQ(text.find("32 MiB"), std::string::npos) << "a call's share was logged: " << text;
}

// A transfer that knows its array's size waits for its other streams, even ones that start well
// after the first ones ended (a fresh client's last parallel stream), and is logged as soon as it
// has moved the whole array, so two whole transfers in a row stay two.
TEST(TransferLog, APartialTransferWaitsForTheRestOfItsArray) {
  CapturedLog log;
  constexpr int64_t kWhole = int64_t{128} << 20;
  TransferLog transfers(absl::ZeroDuration(), /*info_bytes=*/100, absl::Milliseconds(20),
                        absl::Milliseconds(500));
  for (int stream = 0; stream < 4; ++stream) {  // one after another, 60 ms apart
    {
      TransferLog::Stream s = transfers.Begin("upload", "t", "arr-1");
      s.set_whole_bytes(kWhole);
      s.Add(kWhole / 4);
      s.Succeed();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    transfers.FlushLingering();
  }
  // The fourth stream completed the array: logged at once, one line.
  EXPECT_NE(log.text().find("info upload arr-1: 128 MiB in "), std::string::npos) << log.text();
  EXPECT_NE(log.text().find("over 4 streams"), std::string::npos) << log.text();
  EXPECT_EQ(log.text().find("32 MiB"), std::string::npos) << log.text();
  // Two whole uploads back to back are two transfers.
  for (int upload = 0; upload < 2; ++upload) {
    TransferLog::Stream s = transfers.Begin("upload", "t", "arr-2");
    s.set_whole_bytes(kWhole);
    s.Add(kWhole);
    s.Succeed();
  }
  const std::string text = log.text();
  const size_t first = text.find("upload arr-2: 128 MiB in ");
  ASSERT_NE(first, std::string::npos) << text;
  EXPECT_NE(text.find("upload arr-2: 128 MiB in ", first + 1), std::string::npos) << text;
  EXPECT_EQ(text.find("256 MiB"), std::string::npos) << text;
  // A part whose rest never comes is logged once the longer linger has passed.
  {
    TransferLog::Stream s = transfers.Begin("download", "t", "arr-3");
    s.set_whole_bytes(kWhole);
    s.Add(kWhole / 2);
    s.Succeed();
  }
  transfers.FlushLingering();
  EXPECT_EQ(log.text().find("download arr-3"), std::string::npos) << log.text();
  std::this_thread::sleep_for(std::chrono::milliseconds(550));
  transfers.FlushLingering();
  EXPECT_NE(log.text().find("info download arr-3: 64 MiB in "), std::string::npos) << log.text();
}

TEST(TransferLog, FailedStreamsAndProgress) {
  CapturedLog log;
  TransferLog transfers(absl::Milliseconds(1));
  {
    TransferLog::Stream stream = transfers.Begin("download", "t", "arr-9");
    stream.Add(1 << 20);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    stream.Add(1 << 20);  // past the interval: a progress line
    // No Succeed(): cancelled, cut off by the drain, or failed.
  }
  const std::string text = log.text();
  EXPECT_NE(text.find("info download arr-9: 2 MiB so far in "), std::string::npos) << text;
  EXPECT_NE(text.find("1 streams running"), std::string::npos) << text;
  EXPECT_NE(text.find("info download arr-9: 2 MiB in "), std::string::npos) << text;
  EXPECT_NE(text.find(", 1 failed"), std::string::npos) << text;
}

}  // namespace
}  // namespace distarray::daemon
