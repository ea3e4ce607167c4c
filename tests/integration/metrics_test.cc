// The daemon's /metrics, scraped over HTTP while requests run against it: the gRPC interceptor's
// series (grpc-ecosystem names and codes), per-device memory right from start-up and at scrape
// time, reshard bytes, allocation failures, graph counters, build info and process metrics; tenant
// names only with --metrics_tenant_labels=on.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "distarray/client.h"
#include "distarray/index_maps.h"
#include "tests/support/backend_fixture.h"
#include "tests/support/run_command.h"

namespace distarray::testing {
namespace {

constexpr int64_t kLimitBytes = 64 << 20;

// A loopback port free right now (the kernel's pick); the daemon binds it a moment later.
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (fd >= 0) close(fd);
    return 0;
  }
  close(fd);
  return ntohs(addr.sin_port);
}

// GET /metrics over a plain HTTP/1.0 connection; the body, or nullopt when no 200 came back.
std::optional<std::string> Scrape(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return std::nullopt;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  std::string response;
  std::string error;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    error = absl::StrCat("connect: ", strerror(errno));
  } else {
    const std::string request = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(request.size())) {
      error = absl::StrCat("send: ", strerror(errno));
    } else {
      char buffer[65536];
      ssize_t n;
      while ((n = recv(fd, buffer, sizeof(buffer), 0)) > 0) response.append(buffer, n);
      if (n < 0) error = absl::StrCat("recv: ", strerror(errno));
    }
  }
  close(fd);
  const size_t body = response.find("\r\n\r\n");
  if (!absl::StartsWith(response, "HTTP/1.1 200") && !absl::StartsWith(response, "HTTP/1.0 200")) {
    ADD_FAILURE() << "GET /metrics answered: " << response.substr(0, 300) << " " << error;
    return std::nullopt;
  }
  if (body == std::string::npos) return std::nullopt;
  return response.substr(body + 4);
}

// One sample line of the text exposition format.
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

std::vector<Sample> ParseExposition(const std::string& text) {
  std::vector<Sample> samples;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (absl::StartsWith(line, "#")) continue;
    Sample sample;
    const size_t brace = line.find('{');
    const size_t space = line.rfind(' ');
    if (space == absl::string_view::npos) continue;
    if (brace != absl::string_view::npos && brace < space) {
      sample.name = std::string(line.substr(0, brace));
      const size_t close = line.rfind('}');
      // Our label values hold no quotes, commas or braces, so a plain split suffices here.
      for (absl::string_view pair :
           absl::StrSplit(line.substr(brace + 1, close - brace - 1), ',', absl::SkipEmpty())) {
        const size_t eq = pair.find('=');
        absl::string_view value = pair.substr(eq + 1);
        absl::ConsumePrefix(&value, "\"");
        absl::ConsumeSuffix(&value, "\"");
        sample.labels[std::string(pair.substr(0, eq))] = std::string(value);
      }
    } else {
      sample.name = std::string(line.substr(0, space));
    }
    if (!absl::SimpleAtod(line.substr(space + 1), &sample.value)) continue;
    samples.push_back(std::move(sample));
  }
  return samples;
}

class Scraped {
 public:
  explicit Scraped(const std::string& text) : text_(text), samples_(ParseExposition(text)) {}

  // The value of the one sample of `name` whose labels include `labels`; nullopt when none.
  // Fails the test when several match.
  std::optional<double> Get(const std::string& name,
                            const std::map<std::string, std::string>& labels = {}) const {
    std::optional<double> found;
    for (const Sample& s : samples_) {
      if (s.name != name) continue;
      bool match = true;
      for (const auto& [k, v] : labels) {
        auto it = s.labels.find(k);
        match = match && it != s.labels.end() && it->second == v;
      }
      if (!match) continue;
      EXPECT_FALSE(found.has_value()) << "several samples of " << name << " match";
      found = s.value;
    }
    return found;
  }
  double Value(const std::string& name,
               const std::map<std::string, std::string>& labels = {}) const {
    std::optional<double> v = Get(name, labels);
    EXPECT_TRUE(v.has_value()) << "no sample " << name << " in the scrape:\n" << text_;
    return v.value_or(-1);
  }
  const std::vector<Sample>& samples() const { return samples_; }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  std::vector<Sample> samples_;
};

std::map<std::string, std::string> Call(const std::string& method, const std::string& code,
                                        const std::string& type = "unary") {
  return {{"grpc_service", "distarray.v1.ArrayService"},
          {"grpc_method", method},
          {"grpc_code", code},
          {"grpc_type", type}};
}

std::map<std::string, std::string> Device(int d) { return {{"device", absl::StrCat(d)}}; }

class MetricsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    // The port is chosen before the daemon binds it; another process may take it meanwhile, so
    // a failed start is tried again with a new one.
    absl::Status last_error;
    for (int attempt = 0; attempt < 3 && daemon_ == nullptr; ++attempt) {
      metrics_port_ = FreePort();
      ASSERT_GT(metrics_port_, 0);
      Daemon::Options options = OptionsFor(GetParam());
      options.memory_limit = "64MiB";
      options.extra_flags = {absl::StrCat("--metrics_listen=127.0.0.1:", metrics_port_)};
      auto started = Daemon::Start(options);
      if (started.ok()) {
        daemon_ = *std::move(started);
      } else if (started.status().code() == absl::StatusCode::kUnavailable) {
        if (BackendRequired(GetParam())) GTEST_FAIL() << started.status();
        GTEST_SKIP() << "backend " << GetParam() << " unavailable: " << started.status().message();
      } else {
        last_error = started.status();
      }
    }
    ASSERT_NE(daemon_, nullptr) << last_error;
    // Streamed transfers, so the upload and download below are gRPC streams with messages to
    // count (the same-host shared-memory path moves no bytes through gRPC).
    ConnectOptions connect;
    connect.shared_memory = SharedMemoryUse::kNever;
    auto client = Client::Connect(daemon_->address(), 5000, connect);
    ASSERT_TRUE(client.ok()) << client.status();
    client_.emplace(*std::move(client));
    auto info = client_->ServerInfo();
    ASSERT_TRUE(info.ok()) << info.status();
    devices_ = info->devices_size();
  }

  Scraped ScrapeNow() {
    std::optional<std::string> text = Scrape(metrics_port_);
    EXPECT_TRUE(text.has_value()) << "GET /metrics on port " << metrics_port_
                                  << " failed; daemon alive: " << daemon_->alive() << "\n"
                                  << daemon_->log();
    return Scraped(text.value_or(""));
  }

  int dev(int i) const { return i % devices_; }

  std::unique_ptr<Daemon> daemon_;
  std::optional<Client> client_;
  int metrics_port_ = 0;
  int devices_ = 0;
};

// Device series exist from start-up, before any RPC has touched them, with the configured limit,
// the device's UUID, and every gRPC method's series at zero.
TEST_P(MetricsTest, SeriesExistFromStartUp) {
  if (IsSkipped()) return;
  const Scraped s = ScrapeNow();
  for (int d = 0; d < devices_; ++d) {
    EXPECT_EQ(s.Value("distarray_device_memory_used_bytes", Device(d)), 0);
    EXPECT_EQ(s.Value("distarray_device_memory_limit_bytes", Device(d)), kLimitBytes);
    EXPECT_EQ(s.Value("distarray_device_arrays", Device(d)), 0);
    EXPECT_EQ(s.Value("distarray_device_sticky_error", Device(d)), 0);
    EXPECT_EQ(s.Value("distarray_device_allocation_failures_total", Device(d)), 0);
    std::string uuid;
    for (const Sample& sample : s.samples()) {
      if (sample.name == "distarray_device_memory_used_bytes" &&
          sample.labels.at("device") == absl::StrCat(d)) {
        uuid = sample.labels.at("gpu_uuid");
      }
    }
    if (GetParam() == "host") {
      EXPECT_EQ(uuid, absl::StrCat("host-", d));
    } else {
      // GPU-8-4-4-4-12 hex digits, as nvidia-smi and dcgm-exporter print it.
      EXPECT_EQ(uuid.size(), 40u) << uuid;
      EXPECT_TRUE(absl::StartsWith(uuid, "GPU-")) << uuid;
    }
  }
  EXPECT_EQ(s.Value("distarray_build_info",
                    {{"backend", GetParam() == "host" ? "host" : "cuda"}, {"version", "0.1.0"}}),
            1);
  // Pre-registered: a rate or ratio over a code that has not happened yet still has a series.
  EXPECT_EQ(s.Value("grpc_server_handled_total", Call("Reshard", "Unauthenticated")), 0);
  EXPECT_EQ(s.Value("grpc_server_handled_total", Call("DownloadArray", "OK", "server_stream")), 0);
  EXPECT_GT(s.Value("process_resident_memory_bytes"), 1 << 20);
  EXPECT_GT(s.Value("process_open_fds"), 3);
  EXPECT_GE(s.Value("process_max_fds"), s.Value("process_open_fds"));
  EXPECT_GT(s.Value("process_start_time_seconds"), 1.6e9);
  // Counted in clock ticks (10 ms): a daemon that just started may not have spent one yet.
  EXPECT_GE(s.Value("process_cpu_seconds_total"), 0);
  EXPECT_EQ(s.Value("distarray_arrays"), 0);
  // Tenant memory per device from start-up, naming no tenant.
  for (int d = 0; d < devices_; ++d) {
    EXPECT_EQ(s.Value("distarray_tenant_memory_used_bytes", Device(d)), 0);
  }
  for (const Sample& sample : s.samples()) {
    EXPECT_EQ(sample.labels.count("tenant"), 0u) << sample.name;
  }
}

// Values move with the requests: calls by method and code, messages, memory used at scrape time
// (after an upload and after a delete), arrays per device, reshard bytes, allocation failures.
TEST_P(MetricsTest, ValuesFollowRequests) {
  if (IsSkipped()) return;
  const Scraped before = ScrapeNow();
  const double info_ok = before.Value("grpc_server_handled_total", Call("GetServerInfo", "OK"));

  constexpr int64_t kElements = 1 << 18;  // 1 MiB of float32, a quarter on each device
  std::vector<float> values(kElements, 1.5f);
  auto a = client_->Upload<float>(values, {kElements},
                                  {Split(1, 0, kElements, {dev(0), dev(1), dev(2), dev(3)})});
  ASSERT_TRUE(a.ok()) << a.status();
  const Scraped uploaded = ScrapeNow();
  EXPECT_EQ(uploaded.Value("grpc_server_handled_total", Call("UploadArray", "OK", "client_stream")),
            1);
  EXPECT_EQ(uploaded.Value("grpc_server_started_total",
                           {{"grpc_method", "UploadArray"}, {"grpc_type", "client_stream"}}),
            1);
  // A header and at least one data message.
  EXPECT_GE(uploaded.Value("grpc_server_msg_received_total", {{"grpc_method", "UploadArray"}}), 2);
  EXPECT_EQ(uploaded.Value("grpc_server_msg_sent_total", {{"grpc_method", "UploadArray"}}), 1);
  EXPECT_EQ(uploaded.Value("distarray_transfer_bytes_total", {{"direction", "upload"}}),
            kElements * 4);
  EXPECT_EQ(uploaded.Value("distarray_arrays"), 1);
  double used = 0;
  for (int d = 0; d < devices_; ++d) {
    used += uploaded.Value("distarray_device_memory_used_bytes", Device(d));
    EXPECT_EQ(uploaded.Value("distarray_device_arrays", Device(d)), 1);
  }
  EXPECT_GE(used, kElements * 4);
  // Tenants' memory, aggregated (no tenant label without --metrics_tenant_labels=on).
  double tenant_used = 0;
  for (int d = 0; d < devices_; ++d) {
    tenant_used += uploaded.Value("distarray_tenant_memory_used_bytes", Device(d));
  }
  EXPECT_GE(tenant_used, kElements * 4);
  // The GetServerInfo of SetUp, and none since.
  EXPECT_EQ(uploaded.Value("grpc_server_handled_total", Call("GetServerInfo", "OK")), info_ok);
  EXPECT_EQ(uploaded.Value("grpc_server_handling_seconds_count", {{"grpc_method", "UploadArray"}}),
            1);

  // A reshard onto one device writes every byte of the array there.
  const double reshard_before =
      uploaded.Value("distarray_device_reshard_bytes_total", Device(dev(0)));
  auto b = a->Reshard(OnDevice(1, dev(0)));
  ASSERT_TRUE(b.ok()) << b.status();
  auto downloaded = b->Download<float>();
  ASSERT_TRUE(downloaded.ok()) << downloaded.status();
  const Scraped resharded = ScrapeNow();
  EXPECT_GE(
      resharded.Value("distarray_device_reshard_bytes_total", Device(dev(0))) - reshard_before,
      kElements * 4);
  EXPECT_EQ(resharded.Value("grpc_server_handled_total", Call("Reshard", "OK")), 1);
  EXPECT_EQ(
      resharded.Value("grpc_server_handled_total", Call("DownloadArray", "OK", "server_stream")),
      1);
  EXPECT_GE(resharded.Value("grpc_server_msg_sent_total", {{"grpc_method", "DownloadArray"}}), 1);

  // Client mistakes, with their codes spelled as the grpc-ecosystem exporters spell them.
  EXPECT_EQ(client_->Open("no-such-array").status().code(), absl::StatusCode::kNotFound);
  auto too_big = client_->Create({kLimitBytes}, v1::DTYPE_FLOAT64, {OnDevice(1, dev(1))});
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kResourceExhausted);
  const Scraped refused = ScrapeNow();
  EXPECT_EQ(refused.Value("grpc_server_handled_total", Call("DescribeArray", "NotFound")), 1);
  EXPECT_EQ(refused.Value("grpc_server_handled_total", Call("CreateArray", "ResourceExhausted")),
            1);
  EXPECT_GE(refused.Value("distarray_device_allocation_failures_total", Device(dev(1))), 1);

  // Memory returns at scrape time, with no RPC after the deletes to refresh anything.
  ASSERT_TRUE(a->Delete().ok());
  ASSERT_TRUE(b->Delete().ok());
  ASSERT_TRUE(client_->Synchronize().ok());
  const Scraped deleted = ScrapeNow();
  for (int d = 0; d < devices_; ++d) {
    EXPECT_EQ(deleted.Value("distarray_device_memory_used_bytes", Device(d)), 0) << "device " << d;
    EXPECT_EQ(deleted.Value("distarray_device_arrays", Device(d)), 0);
    EXPECT_EQ(deleted.Value("distarray_tenant_memory_used_bytes", Device(d)), 0);
  }
  EXPECT_EQ(deleted.Value("distarray_arrays"), 0);
}

// Scrapes taken while clients call the daemon from several threads: every scrape answers, the
// counters never go back, and at the end they hold every call.
TEST_P(MetricsTest, ScrapesWhileCallsRun) {
  if (IsSkipped()) return;
  const double start = ScrapeNow().Value("grpc_server_handled_total", Call("GetServerInfo", "OK"));
  constexpr int kThreads = 4;
  constexpr int kCallsPerThread = 50;
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kCallsPerThread; ++i) {
        if (!client_->ServerInfo().ok()) ++failed;
      }
    });
  }
  double last = start;
  int scrapes = 0;
  for (; scrapes < 20; ++scrapes) {
    const double now = ScrapeNow().Value("grpc_server_handled_total", Call("GetServerInfo", "OK"));
    EXPECT_GE(now, last);
    last = now;
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failed.load(), 0);
  const Scraped end = ScrapeNow();
  EXPECT_EQ(end.Value("grpc_server_handled_total", Call("GetServerInfo", "OK")) - start,
            kThreads * kCallsPerThread);
  EXPECT_EQ(end.Value("grpc_server_started_total",
                      {{"grpc_method", "GetServerInfo"}, {"grpc_type", "unary"}}) -
                start,
            kThreads * kCallsPerThread);
  EXPECT_GE(end.Value("grpc_server_handling_seconds_count", {{"grpc_method", "GetServerInfo"}}),
            kThreads * kCallsPerThread);
}

// A call to a method the server does not have is counted as Unimplemented under one "unknown"
// series, whatever name the client sent: clients cannot add series.
TEST_P(MetricsTest, UnknownMethodsShareOneSeries) {
  if (IsSkipped()) return;
  auto channel = grpc::CreateChannel(daemon_->address(), grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  for (int i = 0; i < 3; ++i) {
    grpc::ClientContext context;
    grpc::Slice payload(std::string("x"));
    grpc::ByteBuffer request(&payload, 1), response;
    std::atomic<bool> done{false};
    grpc::Status status;
    stub.UnaryCall(&context, absl::StrCat("/distarray.v1.ArrayService/NoSuchMethod", i), {},
                   &request, &response, [&](grpc::Status s) {
                     status = s;
                     done = true;
                   });
    while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  }
  const Scraped s = ScrapeNow();
  for (const Sample& sample : s.samples()) {
    if (sample.name != "grpc_server_handled_total") continue;
    EXPECT_FALSE(absl::StartsWith(sample.labels.at("grpc_method"), "NoSuchMethod"))
        << "a client-chosen method name became a label";
  }
  double unimplemented = 0;
  for (const Sample& sample : s.samples()) {
    if (sample.name == "grpc_server_handled_total" &&
        sample.labels.at("grpc_code") == "Unimplemented") {
      unimplemented += sample.value;
    }
  }
  EXPECT_EQ(unimplemented, 3);
}

// The handling-time buckets start at 25 µs: most calls take 0.02 to 1.2 ms, which buckets from
// 5 ms (Prometheus's defaults) all put in the first one, so every quantile read 2.5 or 4.95 ms.
TEST_P(MetricsTest, HandlingBucketsResolveSubMillisecondCalls) {
  if (IsSkipped()) return;
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(client_->ServerInfo().ok());
  const Scraped s = ScrapeNow();
  std::vector<double> bounds;
  for (const Sample& sample : s.samples()) {
    if (sample.name != "grpc_server_handling_seconds_bucket" ||
        sample.labels.at("grpc_method") != "GetServerInfo" || sample.labels.at("le") == "+Inf") {
      continue;
    }
    double le = 0;
    ASSERT_TRUE(absl::SimpleAtod(sample.labels.at("le"), &le)) << sample.labels.at("le");
    bounds.push_back(le);
  }
  ASSERT_FALSE(bounds.empty()) << s.text();
  std::sort(bounds.begin(), bounds.end());
  EXPECT_NEAR(bounds.front(), 25e-6, 1e-9);
  EXPECT_EQ(bounds.back(), 10);
  // At least three buckets under a millisecond, where the daemon's small calls fall.
  EXPECT_GE(std::count_if(bounds.begin(), bounds.end(), [](double b) { return b < 1e-3; }), 3);
}

// A grpc.health.v1 Check sent to the API port (which serves no health service) is a unary call
// to a method the server does not have: gRPC's generic handler takes it as bidi_stream, which the
// metrics must not repeat.
TEST_P(MetricsTest, CallToAnUnservedMethodIsNotCountedAsABidiStream) {
  if (IsSkipped()) return;
  const CommandResult probe = Probe(daemon_->address(), "");
  ASSERT_EQ(probe.exit_code, 1) << probe.output;  // UNIMPLEMENTED on the API port
  const Scraped s = ScrapeNow();
  double unknown_unimplemented = 0;
  for (const Sample& sample : s.samples()) {
    if (sample.name != "grpc_server_handled_total") continue;
    EXPECT_NE(sample.labels.at("grpc_type"), "bidi_stream")
        << sample.labels.at("grpc_service") << "/" << sample.labels.at("grpc_method");
    if (sample.labels.at("grpc_service") == "unknown" &&
        sample.labels.at("grpc_code") == "Unimplemented") {
      EXPECT_EQ(sample.labels.at("grpc_type"), "unknown");
      unknown_unimplemented += sample.value;
    }
  }
  EXPECT_EQ(unknown_unimplemented, 1) << s.text();
}

// Libraries with large static TLS (libcublasLt, OpenBLAS) break civetweb when mapped at start-up:
// the first scrape answers, the second finds the listener gone. The daemon loads them on first
// use instead; a matmul loads them, and scrapes after it must still answer.
TEST_P(MetricsTest, ScrapesKeepAnsweringAfterAMatmul) {
  if (IsSkipped()) return;
  std::vector<float> values(64 * 64, 0.5f);
  auto a = client_->Upload<float>(values, {64, 64}, {OnDevice(2, dev(0))});
  ASSERT_TRUE(a.ok()) << a.status();
  auto product = Matmul(*a, *a);
  ASSERT_TRUE(product.ok()) << product.status();
  ASSERT_TRUE(client_->Synchronize().ok());
  for (int i = 0; i < 3; ++i) {
    const Scraped s = ScrapeNow();
    EXPECT_GE(s.Value("grpc_server_handled_total", Call("Matmul", "OK")), 1) << "scrape " << i;
  }
}

// The metrics port is unauthenticated: by default it names no tenant, neither those that
// allocated nor those of the quota overrides (carol never connects), and shows their memory as a
// total per device and the worst quota ratio; --metrics_tenant_labels=on names them.
TEST(TenantMetrics, TenantNamesOnlyWhenAsked) {
  std::string dir = (std::filesystem::temp_directory_path() / "distarray-metrics-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  std::ofstream(dir + "/tokens") << "alice: alice-token-0123456789abcdef\n"
                                 << "bob: bob-token-0123456789abcdefgh\n";
  for (const bool labels : {false, true}) {
    SCOPED_TRACE(labels ? "labels on" : "labels off");
    std::unique_ptr<Daemon> daemon;
    int port = 0;
    absl::Status last_error;
    for (int attempt = 0; attempt < 3 && daemon == nullptr; ++attempt) {
      port = FreePort();
      ASSERT_GT(port, 0);
      Daemon::Options options;
      options.host_devices = 2;
      options.memory_limit = "64MiB";
      options.extra_flags = {absl::StrCat("--metrics_listen=127.0.0.1:", port),
                             "--auth_tokens_file=" + dir + "/tokens",
                             "--tenant_memory_quota_overrides=bob=1MiB,carol=2MiB"};
      if (labels) options.extra_flags.push_back("--metrics_tenant_labels=on");
      absl::StatusOr<std::unique_ptr<Daemon>> started = Daemon::Start(options);
      if (started.ok()) {
        daemon = *std::move(started);
      } else {
        last_error = started.status();
      }
    }
    ASSERT_NE(daemon, nullptr) << last_error;
    {
      std::vector<Client> clients;
      for (const char* token : {"alice-token-0123456789abcdef", "bob-token-0123456789abcdefgh"}) {
        ConnectOptions connect;
        connect.token = token;
        absl::StatusOr<Client> client = Client::Connect(daemon->address(), 5000, connect);
        ASSERT_TRUE(client.ok()) << client.status();
        clients.push_back(*std::move(client));
      }
      // alice: 64 KiB on device 0; bob: 256 KiB on device 0, a quarter of his quota (and a bit).
      auto a = clients[0].Create({16 << 10}, v1::DTYPE_FLOAT32, {OnDevice(1, 0)});
      auto b = clients[1].Create({64 << 10}, v1::DTYPE_FLOAT32, {OnDevice(1, 0)});
      ASSERT_TRUE(a.ok()) << a.status();
      ASSERT_TRUE(b.ok()) << b.status();
      const std::optional<std::string> text = Scrape(port);
      ASSERT_TRUE(text.has_value());
      const Scraped s(*text);
      const double alice_bytes = (16 << 10) * 4, bob_bytes = (64 << 10) * 4;
      if (!labels) {
        for (const char* name : {"alice", "bob", "carol", "tenant="}) {
          EXPECT_EQ(text->find(name), std::string::npos) << name << "\n" << *text;
        }
        EXPECT_GE(s.Value("distarray_tenant_memory_used_bytes", Device(0)),
                  alice_bytes + bob_bytes);
        EXPECT_LT(s.Value("distarray_tenant_memory_used_bytes", Device(0)),
                  alice_bytes + bob_bytes + 4096);
        EXPECT_EQ(s.Value("distarray_tenant_memory_used_bytes", Device(1)), 0);
      } else {
        EXPECT_GE(
            s.Value("distarray_tenant_memory_used_bytes", {{"tenant", "alice"}, {"device", "0"}}),
            alice_bytes);
        EXPECT_GE(
            s.Value("distarray_tenant_memory_used_bytes", {{"tenant", "bob"}, {"device", "0"}}),
            bob_bytes);
        EXPECT_EQ(
            s.Value("distarray_tenant_memory_quota_bytes", {{"tenant", "carol"}, {"device", "1"}}),
            2 << 20);
      }
      // bob holds the worst ratio, a quarter of his quota (plus bookkeeping), either way.
      const double ratio = s.Value("distarray_tenant_memory_quota_used_ratio_max", Device(0));
      EXPECT_GE(ratio, 0.25);
      EXPECT_LT(ratio, 0.26);
    }
    const int status = daemon->Terminate(10000);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << daemon->log();
  }
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Backends, MetricsTest, ::testing::Values("host", "cuda"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace distarray::testing
