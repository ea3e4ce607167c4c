// The daemon logs a multi-stream transfer once, with its total bytes, stream count and aggregate
// rate, not one line per stream with each stream's share.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "distarray/client.h"
#include "distarray/index_maps.h"
#include "tests/support/daemon.h"

namespace distarray::testing {
namespace {

TEST(TransferLogs, ParallelStreamsAreLoggedAsOneTransfer) {
  Daemon::Options daemon_options;
  daemon_options.extra_flags = {"--log_level=info"};
  auto daemon = Daemon::Start(daemon_options);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  constexpr int64_t kElements = int64_t{16} << 20;  // 64 MiB of float32: logged at info
  constexpr int64_t kBytes = kElements * 4;
  std::string handle;
  {
    ConnectOptions options;
    options.shared_memory = SharedMemoryUse::kNever;  // streams, whatever host the test runs on
    options.parallel_streams = 4;
    options.parallel_min_bytes = 1 << 20;
    auto client = Client::Connect((*daemon)->address(), 5000, options);
    ASSERT_TRUE(client.ok()) << client.status();
    ArrayOptions array_options;
    array_options.index_map = OnDevice(1, 0);
    auto array = client->Create({kElements}, v1::DTYPE_FLOAT32, array_options);
    ASSERT_TRUE(array.ok()) << array.status();
    handle = array->handle();
    std::vector<char> data(kBytes, 1);
    ASSERT_TRUE(client->WriteAll(array->info(), data.data(), kBytes).ok());
    ASSERT_TRUE(client->DownloadAll(array->info(), data.data(), kBytes).ok());
  }
  ASSERT_EQ((*daemon)->Terminate(10000), 0);
  const std::string log = (*daemon)->log();
  for (const char* direction : {"upload", "download"}) {
    const std::string line = absl::StrCat(direction, " ", handle, ": 64 MiB in ");
    const size_t at = log.find(line);
    ASSERT_NE(at, std::string::npos) << line << "\n" << log;
    const std::string rest = log.substr(at, log.find('\n', at) - at);
    EXPECT_NE(rest.find("GB/s) over 4 streams"), std::string::npos) << rest;
  }
  EXPECT_EQ(log.find(": 16 MiB in "), std::string::npos) << "a stream's share was logged:\n" << log;
}

// The streams of one transfer need not overlap: a fresh client (the command line's `put`) may
// start its last stream after the others ended. Here two halves go 150 ms apart, past the 20 ms
// the daemon waits between a shared-memory transfer's calls: still one line of 128 MiB, as two
// whole uploads in a row are two lines.
TEST(TransferLogs, StreamsOfOneTransferThatDoNotOverlapAreOneLine) {
  Daemon::Options daemon_options;
  daemon_options.extra_flags = {"--log_level=info"};
  auto daemon = Daemon::Start(daemon_options);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  constexpr int64_t kRows = 2048;
  constexpr int64_t kColumns = 16384;  // float32: 64 KiB a row, 128 MiB in all
  constexpr int64_t kBytes = kRows * kColumns * 4;
  std::string handle;
  {
    ConnectOptions options;
    options.shared_memory = SharedMemoryUse::kNever;
    options.parallel_streams = 1;
    auto client = Client::Connect((*daemon)->address(), 5000, options);
    ASSERT_TRUE(client.ok()) << client.status();
    ArrayOptions array_options;
    array_options.index_map = OnDevice(2, 0);
    auto array = client->Create({kRows, kColumns}, v1::DTYPE_FLOAT32, array_options);
    ASSERT_TRUE(array.ok()) << array.status();
    handle = array->handle();
    std::vector<char> data(kBytes, 1);
    for (int half = 0; half < 2; ++half) {
      v1::UploadHeader header;
      header.set_handle(handle);
      v1::Slice* rows = header.mutable_region()->add_slices();
      rows->set_start(half * kRows / 2);
      rows->set_stop((half + 1) * kRows / 2);
      header.mutable_region()->add_slices();
      ASSERT_TRUE(client->UploadBytes(header, data.data(), kBytes / 2).ok());
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
    }
    ASSERT_TRUE(client->WriteAll(array->info(), data.data(), kBytes).ok());
    ASSERT_TRUE(client->WriteAll(array->info(), data.data(), kBytes).ok());
  }
  ASSERT_EQ((*daemon)->Terminate(10000), 0);
  const std::string log = (*daemon)->log();
  const std::string line = absl::StrCat("upload ", handle, ": 128 MiB in ");
  int lines = 0;
  for (size_t at = log.find(line); at != std::string::npos; at = log.find(line, at + 1)) ++lines;
  EXPECT_EQ(lines, 3) << log;
  EXPECT_EQ(log.find(absl::StrCat("upload ", handle, ": 64 MiB in ")), std::string::npos) << log;
  EXPECT_NE(log.find("over 2 streams"), std::string::npos) << log;
}

}  // namespace
}  // namespace distarray::testing
