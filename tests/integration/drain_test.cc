// Drain on SIGTERM, against the real daemon: a new call on an already-open connection is
// refused with UNAVAILABLE; streams in flight either finish (when the client finishes them in
// time) or end UNAVAILABLE when the drain time runs out, never CANCELLED; the daemon exits 0.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "distarray/client.h"
#include "distarray/index_maps.h"
#include "distarray/v1/distarray.grpc.pb.h"
#include "tests/support/daemon.h"
#include "tests/support/run_command.h"

namespace distarray::testing {
namespace {

constexpr int kGraceSeconds = 1;
constexpr int kDrainSeconds = 2;

std::unique_ptr<Daemon> StartDrainingDaemon() {
  Daemon::Options options;
  options.extra_flags = {absl::StrCat("--drain_grace_seconds=", kGraceSeconds),
                         absl::StrCat("--drain_seconds=", kDrainSeconds), "--log_level=info"};
  auto daemon = Daemon::Start(options);
  EXPECT_TRUE(daemon.ok()) << daemon.status();
  return daemon.ok() ? *std::move(daemon) : nullptr;
}

// SIGTERM, then waits until the health port reports the drain.
void BeginDrain(Daemon& daemon) {
  ASSERT_EQ(kill(daemon.pid(), SIGTERM), 0);
  for (int i = 0; i < 100; ++i) {
    if (Probe(daemon.health_address(), "readiness").exit_code == 1) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  FAIL() << "readiness still SERVING 1 s after SIGTERM";
}

std::unique_ptr<v1::ArrayService::Stub> NewStub(const Daemon& daemon) {
  // Each stream on a connection of its own, so one cut-off connection cannot end another's.
  grpc::ChannelArguments args;
  args.SetInt("distarray.test.channel", static_cast<int>(std::rand()));
  return v1::ArrayService::NewStub(
      grpc::CreateCustomChannel(daemon.address(), grpc::InsecureChannelCredentials(), args));
}

v1::ArrayInfo CreateFloatArray(const Client& client, int64_t elements) {
  ArrayOptions options;
  options.index_map = OnDevice(1, 0);
  auto array = client.Create({elements}, v1::DTYPE_FLOAT32, options);
  EXPECT_TRUE(array.ok()) << array.status();
  if (!array.ok()) return {};
  array->Release();  // kept after the client goes: the daemon's exit is what ends it
  return array->info();
}

TEST(Drain, NewCallOnAnOpenConnectionIsUnavailable) {
  std::unique_ptr<Daemon> daemon = StartDrainingDaemon();
  ASSERT_NE(daemon, nullptr);
  auto client = Client::Connect(daemon->address());
  ASSERT_TRUE(client.ok()) << client.status();
  const v1::ArrayInfo info = CreateFloatArray(*client, 1024);
  ASSERT_TRUE(client->ServerInfo().ok());

  ASSERT_NO_FATAL_FAILURE(BeginDrain(*daemon));
  // First a call the SDK does not retry, which carries the daemon's own answer.
  ArrayOptions options;
  options.index_map = OnDevice(1, 0);
  const auto created = client->Create({4}, v1::DTYPE_FLOAT32, options);
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.status().code(), absl::StatusCode::kUnavailable) << created.status();
  EXPECT_NE(created.status().message().find("draining"), std::string::npos) << created.status();
  // Retried by the SDK (docs/api.md, "Retries"), and still UNAVAILABLE: the last attempt's answer,
  // which may be the closed listener's once the retries outlast the grace period.
  const auto served = client->ServerInfo();
  ASSERT_FALSE(served.ok());
  EXPECT_EQ(served.status().code(), absl::StatusCode::kUnavailable) << served.status();
  const auto opened = client->Open(info.handle());
  EXPECT_EQ(opened.status().code(), absl::StatusCode::kUnavailable) << opened.status();
  // After the grace period the listener is closed: still UNAVAILABLE, never CANCELLED.
  std::this_thread::sleep_for(std::chrono::milliseconds(kGraceSeconds * 1000 + 300));
  const auto late = client->ServerInfo();
  EXPECT_EQ(late.status().code(), absl::StatusCode::kUnavailable) << late.status();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(daemon->Terminate(10000), 0) << daemon->log();
  EXPECT_LT(std::chrono::steady_clock::now() - start,
            std::chrono::seconds(kGraceSeconds + kDrainSeconds + 1));
}

TEST(Drain, StreamsInFlightFinishOrEndUnavailable) {
  std::unique_ptr<Daemon> daemon = StartDrainingDaemon();
  ASSERT_NE(daemon, nullptr);
  auto client = Client::Connect(daemon->address());
  ASSERT_TRUE(client.ok()) << client.status();
  constexpr int64_t kElements = int64_t{16} << 20;  // 64 MiB of float32
  constexpr int64_t kBytes = kElements * 4;
  constexpr int64_t kPiece = 64 << 10;
  const v1::ArrayInfo target = CreateFloatArray(*client, kElements);
  const v1::ArrayInfo source = CreateFloatArray(*client, kElements);
  const std::string piece(kPiece, '\0');

  struct Upload {
    std::unique_ptr<v1::ArrayService::Stub> stub;
    grpc::ClientContext context;
    v1::UploadArrayResponse response;
    std::unique_ptr<grpc::ClientWriter<v1::UploadArrayRequest>> writer;
    int64_t sent = 0;
  };
  const auto begin_upload = [&](Upload& u) {
    u.stub = NewStub(*daemon);
    u.writer = u.stub->UploadArray(&u.context, &u.response);
    v1::UploadArrayRequest header;
    header.mutable_header()->set_handle(target.handle());
    ASSERT_TRUE(u.writer->Write(header));
    v1::UploadArrayRequest data;
    data.set_data(piece);
    for (int i = 0; i < 16; ++i, u.sent += kPiece) ASSERT_TRUE(u.writer->Write(data));
  };
  // finishing: completed by the client during the grace period; trickling: still sending when
  // the drain time runs out; idle: sends nothing more, so the server waits in a read.
  Upload finishing, trickling, idle;
  ASSERT_NO_FATAL_FAILURE(begin_upload(finishing));
  ASSERT_NO_FATAL_FAILURE(begin_upload(trickling));
  ASSERT_NO_FATAL_FAILURE(begin_upload(idle));
  // A download read slowly, one 64 KiB message every 20 ms (64 MiB would take 20 s).
  auto download_stub = NewStub(*daemon);
  grpc::ClientContext download_context;
  v1::DownloadArrayRequest download_request;
  download_request.set_handle(source.handle());
  download_request.set_max_message_bytes(kPiece);
  auto reader = download_stub->DownloadArray(&download_context, download_request);
  v1::DownloadArrayResponse message;
  ASSERT_TRUE(reader->Read(&message));

  ASSERT_NO_FATAL_FAILURE(BeginDrain(*daemon));
  const auto drain_start = std::chrono::steady_clock::now();

  std::atomic<bool> stop_trickle{false};
  std::thread trickle([&] {
    v1::UploadArrayRequest data;
    data.set_data(piece);
    while (!stop_trickle && trickling.sent + kPiece < kBytes && trickling.writer->Write(data)) {
      trickling.sent += kPiece;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  std::thread slow_reader([&] {
    while (reader->Read(&message)) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  });

  // In flight when SIGTERM came, finished by the client well within the drain: it succeeds.
  v1::UploadArrayRequest data;
  data.set_data(piece);
  while (finishing.sent < kBytes && finishing.writer->Write(data)) finishing.sent += kPiece;
  finishing.writer->WritesDone();
  const grpc::Status finished = finishing.writer->Finish();
  EXPECT_TRUE(finished.ok()) << finished.error_code() << ": " << finished.error_message();
  EXPECT_EQ(finishing.sent, kBytes);

  trickle.join();
  const grpc::Status trickled = trickling.writer->Finish();
  EXPECT_EQ(trickled.error_code(), grpc::StatusCode::UNAVAILABLE) << trickled.error_message();
  idle.writer->WritesDone();
  const grpc::Status idled = idle.writer->Finish();
  // WritesDone ends the stream short: the server answers the missing bytes as a client error,
  // unless the drain got there first. Either way it is never CANCELLED.
  EXPECT_NE(idled.error_code(), grpc::StatusCode::CANCELLED) << idled.error_message();
  slow_reader.join();
  const grpc::Status downloaded = reader->Finish();
  // The handler answers "draining" at its next message, unless it is still blocked in a write
  // (the slow reader's flow-control window full) when the cut-off's slack ends: then the daemon
  // closes the connection. Either way the client sees UNAVAILABLE.
  EXPECT_EQ(downloaded.error_code(), grpc::StatusCode::UNAVAILABLE) << downloaded.error_message();
  const double cut_off_after =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - drain_start).count();
  EXPECT_GE(cut_off_after, kGraceSeconds + kDrainSeconds - 0.5);
  stop_trickle = true;

  EXPECT_EQ(daemon->Terminate(10000), 0) << daemon->log();
}

// A stream whose client is silent when the drain time runs out (the handler waits in a read and
// cannot answer) still ends UNAVAILABLE: the daemon closes its connection.
TEST(Drain, SilentStreamEndsUnavailable) {
  std::unique_ptr<Daemon> daemon = StartDrainingDaemon();
  ASSERT_NE(daemon, nullptr);
  auto client = Client::Connect(daemon->address());
  ASSERT_TRUE(client.ok()) << client.status();
  const v1::ArrayInfo target = CreateFloatArray(*client, 1 << 20);
  auto stub = NewStub(*daemon);
  grpc::ClientContext context;
  v1::UploadArrayResponse response;
  auto writer = stub->UploadArray(&context, &response);
  v1::UploadArrayRequest header;
  header.mutable_header()->set_handle(target.handle());
  ASSERT_TRUE(writer->Write(header));
  ASSERT_NO_FATAL_FAILURE(BeginDrain(*daemon));
  const grpc::Status status = writer->Finish();  // waits for the server's end of the stream
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  EXPECT_EQ(daemon->Terminate(10000), 0) << daemon->log();
}

int CountOccurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A client polling through the drain is refused with UNAVAILABLE on every call: the shutdown
// working as designed, so the log says so at info, one line per second with the count, never
// one error line per call (a routine 5 s drain made 97).
TEST(Drain, RefusalsAreCountedNotLoggedAsErrors) {
  Daemon::Options options;
  options.extra_flags = {"--drain_grace_seconds=2", "--drain_seconds=1", "--log_level=info"};
  auto daemon = Daemon::Start(options);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  ConnectOptions quiet;
  quiet.keepalive = false;
  auto client = Client::Connect((*daemon)->address(), 5000, quiet);
  ASSERT_TRUE(client.ok()) << client.status();
  ASSERT_NO_FATAL_FAILURE(BeginDrain(**daemon));
  int refused = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
  while (std::chrono::steady_clock::now() < until) {
    ArrayOptions array_options;
    array_options.index_map = OnDevice(1, 0);
    // CreateArray: not retried by the SDK, so each call is one refusal.
    const auto created = client->Create({4}, v1::DTYPE_FLOAT32, array_options);
    ASSERT_EQ(created.status().code(), absl::StatusCode::kUnavailable) << created.status();
    ++refused;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_GE(refused, 20);
  EXPECT_EQ((*daemon)->Terminate(10000), 0);
  const std::string log = (*daemon)->log();
  EXPECT_EQ(CountOccurrences(log, "failed: UNAVAILABLE"), 0) << log;
  const int lines = CountOccurrences(log, "draining: refused");
  EXPECT_GE(lines, 1) << log;
  EXPECT_LE(lines, 4) << refused << " refusals in about 1.5 s:\n" << log;
}

// The SDK retries the calls that change nothing (here GetServerInfo) on UNAVAILABLE, as the docs
// say to during a drain, and only those: a CreateArray is refused once.
TEST(Drain, SdkRetriesIdempotentCallsOnly) {
  Daemon::Options options;
  options.extra_flags = {"--drain_grace_seconds=4", "--drain_seconds=1", "--log_level=debug"};
  auto daemon = Daemon::Start(options);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  ConnectOptions quiet;
  quiet.keepalive = false;
  auto client = Client::Connect((*daemon)->address(), 5000, quiet);
  ASSERT_TRUE(client.ok()) << client.status();
  ASSERT_NO_FATAL_FAILURE(BeginDrain(**daemon));
  const auto start = std::chrono::steady_clock::now();
  const auto served = client->ServerInfo();
  const double retried_for =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(served.status().code(), absl::StatusCode::kUnavailable) << served.status();
  ArrayOptions array_options;
  array_options.index_map = OnDevice(1, 0);
  const auto created = client->Create({4}, v1::DTYPE_FLOAT32, array_options);
  EXPECT_EQ(created.status().code(), absl::StatusCode::kUnavailable) << created.status();
  EXPECT_EQ((*daemon)->Terminate(10000), 0);
  const std::string log = (*daemon)->log();
  EXPECT_EQ(CountOccurrences(log, "GetServerInfo refused"), 5) << log;  // every attempt
  EXPECT_EQ(CountOccurrences(log, "CreateArray refused"), 1) << log;
  // Backoffs drawn from [0, 0.1], [0, 0.2], [0, 0.4] and [0, 0.8] s.
  EXPECT_LT(retried_for, 3.0);
}

}  // namespace
}  // namespace distarray::testing
