// Bounds on what a request may cost: ListArrays pages (by count and by bytes), the size of an
// array's description, names, idle upload and download streams, deadlines, and the daemon's
// flags.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "client/include/distarray/graph.h"
#include "tests/support/backend_fixture.h"
#include "tests/support/compute_reference.h"
#include "tests/support/raw_stub.h"
#include "tests/support/sanitized_daemon.h"
#include "tests/support/server_state.h"

namespace distarray::testing {
namespace {

constexpr int kMaxPageSize = 120;
constexpr int kIdleTimeoutMs = 1000;
constexpr int64_t kFourMiB = int64_t{4} << 20;

// A [rows, cols] float32 map of one-element chunks over `devices` devices.
v1::IndexMap OneElementChunks(int64_t rows, int64_t cols, int devices) {
  v1::IndexMap map;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      *map.add_chunks() = MakeChunk(static_cast<int>((r * cols + c) % devices),
                                    {SliceSpec{r, r + 1}, SliceSpec{c, c + 1}});
    }
  }
  return map;
}

class LimitsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    Daemon::Options options = OptionsFor(GetParam());
    options.extra_flags = {absl::StrCat("--max_list_page_size=", kMaxPageSize),
                           absl::StrCat("--upload_idle_timeout_ms=", kIdleTimeoutMs),
                           "--log_level=info"};
    ASSERT_NO_FATAL_FAILURE(StartOwnDaemon(GetParam(), options, daemon_));
    if (IsSkipped()) return;
    auto client = Client::Connect(daemon_->address());
    ASSERT_TRUE(client.ok()) << client.status();
    client_.emplace(*std::move(client));
    raw_.emplace(daemon_->address(), *client_);
    auto info = client_->ServerInfo();
    ASSERT_TRUE(info.ok()) << info.status();
    devices_ = info->devices_size();
  }
  void TearDown() override {
    if (daemon_) EXPECT_TRUE(daemon_->alive()) << "distarrayd died during the test";
  }

  grpc::Status ListPage(int page_size, const std::string& token, v1::ListArraysResponse* out) {
    grpc::ClientContext context;
    v1::ListArraysRequest request;
    request.set_page_size(page_size);
    request.set_page_token(token);
    return raw_->stub().ListArrays(&context, request, out);
  }

  std::unique_ptr<Daemon> daemon_;
  std::optional<Client> client_;
  std::optional<RawStub> raw_;  // client_'s session, for raw calls
  int devices_ = 1;
};

TEST_P(LimitsTest, ServerInfoReportsTheLimits) {
  ASSERT_OK_AND_ASSIGN(auto info, client_->ServerInfo());
  EXPECT_EQ(info.limits().max_chunks_per_index_map(), 65536);
  EXPECT_EQ(info.limits().max_name_bytes(), 256);
  EXPECT_EQ(info.limits().max_list_page_size(), kMaxPageSize);
  EXPECT_EQ(info.limits().upload_idle_timeout_ms(), kIdleTimeoutMs);
  EXPECT_EQ(info.session_lease_seconds(), 60);
  EXPECT_GE(info.live_sessions(), 1);
}

TEST_P(LimitsTest, ListArraysPagesByCountAndToken) {
  std::set<std::string> created;
  std::vector<Array> arrays;
  for (int i = 0; i < 250; ++i) {
    ASSERT_OK_AND_ASSIGN(Array a, client_->Create({4}, v1::DTYPE_INT32, {OnDevice(1, 0)}));
    created.insert(a.handle());
    arrays.push_back(std::move(a));
  }
  // Default page size 100: pages of 100, 100, 50 in handle order.
  std::vector<int> sizes;
  std::vector<std::string> seen;
  std::string token;
  do {
    v1::ListArraysResponse page;
    ASSERT_TRUE(ListPage(0, token, &page).ok());
    sizes.push_back(page.arrays_size());
    for (const auto& info : page.arrays()) seen.push_back(info.handle());
    token = page.next_page_token();
  } while (!token.empty());
  EXPECT_EQ(sizes, (std::vector<int>{100, 100, 50}));
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()), created);

  // Above the maximum: clamped.
  v1::ListArraysResponse big;
  ASSERT_TRUE(ListPage(100000, "", &big).ok());
  EXPECT_EQ(big.arrays_size(), kMaxPageSize);
  EXPECT_FALSE(big.next_page_token().empty());

  // A deleted array's handle still works as a token.
  v1::ListArraysResponse first;
  ASSERT_TRUE(ListPage(10, "", &first).ok());
  const std::string last = first.next_page_token();
  for (Array& a : arrays) {
    if (a.handle() == last) ASSERT_OK(a.Delete());
  }
  v1::ListArraysResponse second;
  ASSERT_TRUE(ListPage(10, last, &second).ok());
  ASSERT_EQ(second.arrays_size(), 10);
  EXPECT_GT(second.arrays(0).handle(), last);

  // The SDK follows the pages.
  ASSERT_OK_AND_ASSIGN(auto all, client_->List());
  EXPECT_EQ(all.size(), 249u);

  v1::ListArraysResponse bad;
  grpc::Status s = ListPage(0, "not-a-token", &bad);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_NE(s.error_message().find("page_token"), std::string::npos);
  s = ListPage(-1, "", &bad);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_NE(s.error_message().find("page_size"), std::string::npos);
}

TEST_P(LimitsTest, HugeIndexMapsStayUnderFourMiBPerResponse) {
  // Two arrays of 65,536 one-element chunks (the default maximum).
  const v1::IndexMap map = OneElementChunks(256, 256, devices_);
  std::vector<Array> arrays;
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK_AND_ASSIGN(Array a, client_->Create({256, 256}, v1::DTYPE_FLOAT32, {map}));
    arrays.push_back(std::move(a));
  }
  ASSERT_OK_AND_ASSIGN(Array small, client_->Create({4}, v1::DTYPE_FLOAT32, {OnDevice(1, 0)}));

  // DescribeArray through a channel with gRPC's default 4 MiB receive limit.
  auto channel = grpc::CreateChannel(daemon_->address(), grpc::InsecureChannelCredentials());
  auto stub = v1::ArrayService::NewStub(channel);
  {
    grpc::ClientContext context;
    v1::DescribeArrayRequest request;
    request.set_handle(arrays[0].handle());
    v1::DescribeArrayResponse response;
    grpc::Status s = stub->DescribeArray(&context, request, &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(response.array().index_map().chunks_size(), 65536);
    const int64_t bytes = static_cast<int64_t>(response.ByteSizeLong());
    EXPECT_LT(bytes, 3 * (int64_t{1} << 20));
    std::printf("DescribeArray of a 65,536-chunk 2-D array: %lld bytes\n",
                static_cast<long long>(bytes));
  }
  // ListArrays: every page fits; the pages together hold all four arrays.
  int pages = 0, listed = 0;
  std::string token;
  do {
    grpc::ClientContext context;
    v1::ListArraysRequest request;
    request.set_page_token(token);
    v1::ListArraysResponse response;
    grpc::Status s = stub->ListArrays(&context, request, &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_LT(static_cast<int64_t>(response.ByteSizeLong()), kFourMiB);
    ++pages;
    listed += response.arrays_size();
    token = response.next_page_token();
  } while (!token.empty());
  EXPECT_EQ(listed, 3);
  EXPECT_GE(pages, 2);  // 1.4 MB each: one page cannot hold both under its 1 MiB cap
  ASSERT_OK_AND_ASSIGN(auto all, client_->List());
  EXPECT_EQ(all.size(), 3u);
}

TEST_P(LimitsTest, TooManyChunksIsInvalidArgument) {
  const v1::IndexMap map = OneElementChunks(257, 256, devices_);  // 65,792 chunks
  auto a = client_->Create({257, 256}, v1::DTYPE_FLOAT32, {map});
  ASSERT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument) << a.status();
  EXPECT_NE(a.status().message().find("spec.index_map"), std::string::npos) << a.status();
}

TEST_P(LimitsTest, LongNamesAreShortInvalidArguments) {
  const std::string huge(1 << 20, 'n');
  auto a = client_->Create({4}, v1::DTYPE_FLOAT32, {OnDevice(1, 0), v1::MODE_REPLICA, huge});
  ASSERT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument) << a.status().code();
  EXPECT_LT(a.status().message().size(), 1024u);
  EXPECT_NE(a.status().message().find("spec.name"), std::string::npos) << a.status();

  std::vector<float> data(4, 1.0f);
  auto u = client_->Upload<float>(data, {4}, {OnDevice(1, 0), v1::MODE_REPLICA, huge});
  ASSERT_EQ(u.status().code(), absl::StatusCode::kInvalidArgument) << u.status().code();
  EXPECT_NE(u.status().message().find("header.new_array.name"), std::string::npos);
  EXPECT_LT(u.status().message().size(), 1024u);

  ASSERT_OK_AND_ASSIGN(Array x, client_->Create({4}, v1::DTYPE_FLOAT32, {OnDevice(1, 0)}));
  {
    grpc::ClientContext context;
    raw_->AttachSession(context);
    v1::ElementwiseRequest request;
    request.mutable_spec()->set_op(v1::ELEMENTWISE_OP_ADD);
    *request.mutable_spec()->add_operands() = x.AsOperand();
    *request.mutable_spec()->add_operands() = x.AsOperand();
    request.set_result_name(huge);
    v1::ElementwiseResponse response;
    grpc::Status s = raw_->stub().Elementwise(&context, request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("result_name"), std::string::npos);
    EXPECT_LT(s.error_message().size(), 1024u);
  }
  // A long unknown handle: NOT_FOUND with a bounded quote of it.
  auto opened = client_->Open(huge);
  ASSERT_EQ(opened.status().code(), absl::StatusCode::kNotFound) << opened.status().code();
  EXPECT_LT(opened.status().message().size(), 1024u);
  // A long name that is taken: ALREADY_EXISTS, short.
  const std::string taken(256, 't');
  ASSERT_OK_AND_ASSIGN(Array named, client_->Create({4}, v1::DTYPE_FLOAT32,
                                                    {OnDevice(1, 0), v1::MODE_REPLICA, taken}));
  auto again = client_->Create({4}, v1::DTYPE_FLOAT32, {OnDevice(1, 0), v1::MODE_REPLICA, taken});
  ASSERT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists) << again.status();
  EXPECT_LT(again.status().message().size(), 256u);
  ASSERT_OK(named.Delete());
}

TEST_P(LimitsTest, IdleUploadIsCancelledAndItsMemoryReturns) {
  ASSERT_OK(client_->Synchronize());
  const int64_t baseline = UsedBytes(*client_);
  grpc::ClientContext context;
  raw_->AttachSession(context);
  v1::UploadArrayResponse response;
  auto writer = raw_->stub().UploadArray(&context, &response);
  v1::UploadArrayRequest header;
  v1::ArraySpec* spec = header.mutable_header()->mutable_new_array();
  spec->mutable_shape()->add_dims(4 << 20);
  spec->set_dtype(v1::DTYPE_FLOAT32);
  *spec->mutable_index_map() = OnDevice(1, 0);
  ASSERT_TRUE(writer->Write(header));  // the header only, then silence
  // The header reserved 16 MiB.
  const auto reserved_by = std::chrono::steady_clock::now() + std::chrono::milliseconds(800);
  while (UsedBytes(*client_) < baseline + (int64_t{16} << 20) &&
         std::chrono::steady_clock::now() < reserved_by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_GE(UsedBytes(*client_), baseline + (int64_t{16} << 20));
  // After the idle timeout the server cancels the stream and releases the reservation.
  const auto released_by = std::chrono::steady_clock::now() + std::chrono::seconds(4);
  while (UsedBytes(*client_) != baseline && std::chrono::steady_clock::now() < released_by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(UsedBytes(*client_), baseline);
  grpc::Status s = writer->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::CANCELLED) << s.error_message();
  EXPECT_NE(daemon_->log().find("no upload message for 1000 ms"), std::string::npos)
      << daemon_->log();
  // A stream that keeps sending is not affected by the timeout.
  std::vector<float> data(1 << 20, 2.0f);
  ASSERT_OK_AND_ASSIGN(Array a, client_->Upload<float>(data, {1 << 20}, {OnDevice(1, 0)}));
  ASSERT_OK_AND_ASSIGN(std::vector<float> back, a.Download<float>());
  EXPECT_EQ(back, data);
}

// A stream that sends just inside every idle timeout would hold its thread and reservation as
// long as a silent one: an upload slower than --upload_min_bytes_per_second (1 KiB/s by default,
// measured over windows of the idle timeout) is cancelled like an idle one, and its memory returns.
TEST_P(LimitsTest, TrickledUploadIsCancelled) {
  ASSERT_OK(client_->Synchronize());
  const int64_t baseline = UsedBytes(*client_);
  grpc::ClientContext context;
  raw_->AttachSession(context);
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::UploadArrayResponse response;
  auto writer = raw_->stub().UploadArray(&context, &response);
  v1::UploadArrayRequest header;
  v1::ArraySpec* spec = header.mutable_header()->mutable_new_array();
  spec->mutable_shape()->add_dims(4096);
  spec->set_dtype(v1::DTYPE_FLOAT32);
  *spec->mutable_index_map() = OnDevice(1, 0);
  ASSERT_TRUE(writer->Write(header));
  const auto start = std::chrono::steady_clock::now();
  v1::UploadArrayRequest piece;
  piece.set_data(std::string(1, '\0'));
  // One byte every 100 ms: never silent for the idle timeout (1000 ms), but 10 bytes a second.
  // The client goes on until the daemon says it cut the stream (a client's writes may be
  // buffered for a while after the server ended the call) or 10 s pass.
  const std::string expected =
      "the upload sent less than --upload_min_bytes_per_second (1024 bytes per second) over 1000 "
      "ms; the upload was cancelled";
  bool cut = false;
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(10)) {
    if (daemon_->log().find(expected) != std::string::npos) {
      cut = true;
      break;
    }
    writer->Write(piece);  // false once the call ended: then wait for the log line
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(cut) << "the trickle was never cut:\n" << daemon_->log();
  // The first window of the idle timeout that brings under 1024 bytes ends it (plus the
  // watchdog's period, a quarter of the timeout, twice).
  EXPECT_LT(seconds, 4.0) << daemon_->log();
  if (!cut) context.TryCancel();
  const grpc::Status s = writer->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::CANCELLED) << s.error_message();
  const auto released_by = std::chrono::steady_clock::now() + std::chrono::seconds(4);
  while (UsedBytes(*client_) != baseline && std::chrono::steady_clock::now() < released_by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(UsedBytes(*client_), baseline);
}

// The daemon reads a download's request in its handler (server/service/array_service.h), so a
// client that opens the call and never sends it would hold a handler thread; the idle timeout
// cancels it as it does a silent upload.
TEST_P(LimitsTest, DownloadWithoutRequestIsCancelled) {
  auto channel = grpc::CreateChannel(daemon_->address(), grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue cq;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call =
      stub.PrepareCall(&context, "/distarray.v1.ArrayService/DownloadArray", &cq);
  void* tag = nullptr;
  bool ok = false;
  call->StartCall(reinterpret_cast<void*>(1));
  ASSERT_TRUE(cq.Next(&tag, &ok));  // started; now silence, not even a half-close
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(2));
  ASSERT_TRUE(cq.Next(&tag, &ok));
  EXPECT_EQ(tag, reinterpret_cast<void*>(2));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED) << status.error_message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  // The watchdog's cancel reaches the client first; the handler logs why as it unwinds.
  const auto logged_by = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (daemon_->log().find("no download request for 1000 ms") == std::string::npos &&
         std::chrono::steady_clock::now() < logged_by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_NE(daemon_->log().find("no download request for 1000 ms"), std::string::npos)
      << daemon_->log();
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  // Downloads that send their request are not affected.
  std::vector<float> data(1 << 16, 3.0f);
  ASSERT_OK_AND_ASSIGN(Array a, client_->Upload<float>(data, {1 << 16}, {OnDevice(1, 0)}));
  ASSERT_OK_AND_ASSIGN(std::vector<float> back, a.Download<float>());
  EXPECT_EQ(back, data);
}

TEST_P(LimitsTest, ExpiredDeadlineRegistersNoArray) {
  ASSERT_OK(client_->Synchronize());
  const int64_t baseline = UsedBytes(*client_);
  ASSERT_OK_AND_ASSIGN(auto before, client_->List());
  // A create whose validation alone takes longer than its deadline.
  v1::CreateArrayRequest request;
  request.mutable_spec()->mutable_shape()->add_dims(256);
  request.mutable_spec()->mutable_shape()->add_dims(256);
  request.mutable_spec()->set_dtype(v1::DTYPE_FLOAT32);
  *request.mutable_spec()->mutable_index_map() = OneElementChunks(256, 256, devices_);
  for (int attempt = 0; attempt < 3; ++attempt) {
    grpc::ClientContext context;
    raw_->AttachSession(context);
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(30));
    v1::CreateArrayResponse response;
    grpc::Status s = raw_->stub().CreateArray(&context, request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << s.error_message();
  }
  // The handlers ran on past the deadline and discarded their results.
  const auto logged_by = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  const auto rejections = [&] {
    const std::string log = daemon_->log();
    int n = 0;
    for (size_t at = 0;
         (at = log.find("CreateArray rejected: DEADLINE_EXCEEDED", at)) != std::string::npos;
         ++at) {
      ++n;
    }
    return n;
  };
  while (rejections() < 3 && std::chrono::steady_clock::now() < logged_by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // Usually all three handlers log their discarded result. gRPC drops a call whose deadline
  // passed before its handler started, which logs nothing; under ASan on two loaded cores the
  // client's serialization of 65,536 chunks alone can outlast the 30 ms, so all three may be
  // dropped there (CI saw 0). What matters is below: no call left an array behind.
  if (!DaemonSanitized()) EXPECT_GE(rejections(), 1) << daemon_->log();
  EXPECT_LE(rejections(), 3) << daemon_->log();
  ASSERT_OK_AND_ASSIGN(auto after, client_->List());
  EXPECT_EQ(after.size(), before.size());
  ASSERT_OK(client_->Synchronize());
  EXPECT_EQ(UsedBytes(*client_), baseline);
}

// SIGTERM ends the daemon within the drain time plus 1 s even while a handler is busy with CPU
// work (here a create of 65,536 chunks). The drain's end cancels the call, which the engine sees
// between chunks; work that never looks is ended by the daemon's exit watchdog (exit code 4).
TEST_P(LimitsTest, SigtermEndsTheDaemonWithinTheDrainTimeDuringCpuWork) {
  Daemon::Options options = OptionsFor(GetParam());
  options.extra_flags = {"--drain_seconds=0", "--log_level=info"};
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Daemon> daemon, Daemon::Start(options));
  ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(daemon->address()));
  const RawStub raw(daemon->address(), client);
  v1::CreateArrayRequest request;
  request.mutable_spec()->mutable_shape()->add_dims(256);
  request.mutable_spec()->mutable_shape()->add_dims(256);
  request.mutable_spec()->set_dtype(v1::DTYPE_FLOAT32);
  *request.mutable_spec()->mutable_index_map() = OneElementChunks(256, 256, devices_);
  std::thread busy([&] {
    grpc::ClientContext context;
    v1::CreateArrayResponse response;
    raw.stub().CreateArray(&context, request, &response).ok();  // any outcome
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto start = std::chrono::steady_clock::now();
  const int status = daemon->Terminate(/*timeout_ms=*/3000);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  busy.join();
  EXPECT_NE(status, -1) << "still running 3 s after SIGTERM with --drain_seconds=0";
  EXPECT_LT(seconds, 2.0);
  std::printf("SIGTERM to exit: %.2f s, wait status %d\n", seconds, status);
  // 0 after a clean drain, 4 when the watchdog had to end a busy handler.
  EXPECT_TRUE(WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 4))
      << status << "\n"
      << daemon->log();
}

// A loop without a deadline cannot hold a device for hours: RunGraph stops at the daemon's
// bound (--run_graph_default_seconds without a client deadline, --run_graph_max_seconds with
// one), on the devices as at a deadline, and the message names the flag. Nothing is registered.
TEST_P(LimitsTest, RunGraphStopsAtTheDaemonsTimeBound) {
  Daemon::Options options = OptionsFor(GetParam());
  options.extra_flags = {"--run_graph_default_seconds=1", "--run_graph_max_seconds=2"};
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Daemon> daemon, Daemon::Start(options));
  ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(daemon->address()));
  const std::vector<float> values(64, 1.0f);
  ASSERT_OK_AND_ASSIGN(Array a, client.Upload<float>(values, {64}, {OnDevice(1, 0)}));
  // while all(a > -1): a = a + 1 -- forever (float32 stops growing at 2^24, stays > -1).
  graph::ProgramBuilder p;
  graph::Var va = p.Input("a");
  graph::Vars out =
      p.WhileLoop([](auto v) { return graph::All(v[0] > -1.0f); },
                  [](auto v) { return graph::Vars{v[0] + 1.0f}; }, {va}, int64_t{1} << 30);
  p.Output("a", out[0]);
  struct Case {
    int64_t timeout_ms;  // 0: no client deadline
    const char* flag;
    double bound_seconds;
  };
  for (const Case& c :
       {Case{0, "run_graph_default_seconds", 1}, Case{60000, "run_graph_max_seconds", 2}}) {
    const auto start = std::chrono::steady_clock::now();
    auto run = client.RunGraph(p.program(), {{"a", &a}}, c.timeout_ms);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_TRUE(StatusIs(run.status(), absl::StatusCode::kDeadlineExceeded, {c.flag}));
    EXPECT_GE(seconds, c.bound_seconds * 0.9) << c.flag;
    EXPECT_LT(seconds, c.bound_seconds + 5) << c.flag << ": the loop did not stop promptly";
  }
  ASSERT_OK_AND_ASSIGN(std::vector<v1::ArrayInfo> listed, client.List());
  EXPECT_EQ(listed.size(), 1u);  // the input alone
  EXPECT_EQ(a.Download<float>().value(), values);
  EXPECT_TRUE(daemon->alive());
}

// Concurrent calls are bounded: with --max_concurrent_calls=3, downloads whose clients stop
// reading hold their handlers, and calls beyond the bound are answered RESOURCE_EXHAUSTED at
// once instead of starting another thread; once the streams go, calls are served again.
TEST_P(LimitsTest, ConcurrentCallsAreBounded) {
  Daemon::Options options = OptionsFor(GetParam());
  constexpr int kMaxCalls = 3;
  options.extra_flags = {absl::StrCat("--max_concurrent_calls=", kMaxCalls)};
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Daemon> daemon, Daemon::Start(options));
  ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(daemon->address()));
  const RawStub raw(daemon->address(), client);
  const std::vector<float> values(8 << 20, 1.5f);  // 32 MiB: far more than the stream window
  ASSERT_OK_AND_ASSIGN(Array a, client.Upload<float>(values, {8 << 20}, {OnDevice(1, 0)}));
  struct Stalled {
    grpc::ClientContext context;
    std::unique_ptr<grpc::ClientReader<v1::DownloadArrayResponse>> reader;
  };
  std::vector<std::unique_ptr<Stalled>> stalled;
  int started = 0;
  for (int i = 0; i < 8; ++i) {
    auto s = std::make_unique<Stalled>();
    v1::DownloadArrayRequest request;
    request.set_handle(a.handle());
    s->reader = raw.stub().DownloadArray(&s->context, request);
    v1::DownloadArrayResponse first;
    // Started (the first message came), or refused; either way the client then stops reading.
    if (s->reader->Read(&first)) {
      ++started;
    } else {
      const grpc::Status refused = s->reader->Finish();
      EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
          << refused.error_message();
    }
    stalled.push_back(std::move(s));
  }
  auto info_status = [&] {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::GetServerInfoResponse response;
    return raw.stub().GetServerInfo(&context, v1::GetServerInfoRequest(), &response);
  };
  // gRPC's polling thread shares the quota, so one call fewer may run while it polls.
  EXPECT_GE(started, kMaxCalls - 1);
  EXPECT_LE(started, kMaxCalls);
  const grpc::Status refused = info_status();
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << refused.error_message();
  for (auto& s : stalled) s->context.TryCancel();
  stalled.clear();
  grpc::Status served;
  for (int attempt = 0; attempt < 50; ++attempt) {
    served = info_status();
    if (served.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(served.ok()) << served.error_message();
  EXPECT_TRUE(daemon->alive());
}

TEST(DaemonFlags, HelpListsEveryFlagAndLoopbackDefaults) {
  FILE* pipe = popen(absl::StrCat(DaemonBinary(), " --help 2>&1").c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string help;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof(buffer), pipe)) > 0;) help.append(buffer, n);
  pclose(pipe);
  for (const char* flag :
       {"--listen", "--metrics_listen", "--backend", "--host_devices", "--memory_limit",
        "--memory_fraction", "--transfer", "--port_file", "--log_level", "--drain_seconds",
        "--session_lease_seconds", "--max_chunks", "--upload_idle_timeout_ms",
        "--max_list_page_size", "--max_concurrent_calls_per_tenant", "--max_sessions_per_tenant",
        "--upload_min_bytes_per_second", "--metrics_tenant_labels"}) {
    EXPECT_NE(help.find(absl::StrCat(flag, " (")), std::string::npos) << flag << "\n" << help;
  }
  EXPECT_NE(help.find("default: \"127.0.0.1:50051\""), std::string::npos) << help;
  EXPECT_NE(help.find("default: \"127.0.0.1:9464\""), std::string::npos) << help;
}

INSTANTIATE_TEST_SUITE_P(Backends, LimitsTest, ::testing::Values("host", "cuda", "cuda_nccl"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace distarray::testing
