// The data path against the real daemon: extreme slices in regions and chunks (exact codes, or the
// one element they select), regions with negative steps in NumPy's order across several slabs,
// and downloads cancelled mid-stream or failing part-way through a slab. After each, the daemon
// still serves, a bystander array is intact, and device memory returns to its baseline.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstring>
#include <limits>
#include <random>
#include <thread>

#include "tests/support/backend_fixture.h"
#include "tests/support/raw_stub.h"
#include "tests/support/reference.h"
#include "tests/support/server_state.h"

namespace distarray::testing {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

// A raw download through the stub, so the test sees the exact status.
grpc::Status RawDownload(v1::ArrayService::Stub& stub, const std::string& handle,
                         const v1::Region& region, std::string* bytes = nullptr) {
  grpc::ClientContext context;
  v1::DownloadArrayRequest request;
  request.set_handle(handle);
  *request.mutable_region() = region;
  auto reader = stub.DownloadArray(&context, request);
  v1::DownloadArrayResponse message;
  while (reader->Read(&message)) {
    if (bytes != nullptr) bytes->append(message.data());
  }
  return reader->Finish();
}

// Downloads the first message of a large download, then cancels it.
grpc::Status CancelAfterFirstMessage(v1::ArrayService::Stub& stub, const std::string& handle) {
  grpc::ClientContext context;
  v1::DownloadArrayRequest request;
  request.set_handle(handle);
  auto reader = stub.DownloadArray(&context, request);
  v1::DownloadArrayResponse message;
  EXPECT_TRUE(reader->Read(&message));
  context.TryCancel();
  while (reader->Read(&message)) {
  }
  return reader->Finish();
}

class DataPathTest : public BystanderTest {};

TEST_P(DataPathTest, ExtremeRegionStepsSelectOneElement) {
  std::mt19937_64 rng(21);
  const std::vector<int32_t> values = RandomValues<int32_t>(64, rng);
  ASSERT_OK_AND_ASSIGN(Array array,
                       client().Upload<int32_t>(values, {64}, {Split(1, 0, 64, {dev(0), dev(1)})}));
  // 0:64:(2^63-1) wrapped the row count to zero and divided by it (SIGFPE).
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> first,
                       array.Download<int32_t>(MakeRegion({SliceSpec{0, 64, kMax}})));
  EXPECT_EQ(first, std::vector<int32_t>{values[0]});
  ASSERT_OK_AND_ASSIGN(
      std::vector<int32_t> last,
      array.Download<int32_t>(MakeRegion({SliceSpec{std::nullopt, std::nullopt, kMin}})));
  EXPECT_EQ(last, std::vector<int32_t>{values[63]});
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> down,
                       array.Download<int32_t>(MakeRegion({SliceSpec{40, -65, -kMax}})));
  EXPECT_EQ(down, std::vector<int32_t>{values[40]});
  ExpectBystanderIntact();
}

TEST_P(DataPathTest, ExtremeRegionBoundsAreRefusedWithExactCodes) {
  ASSERT_OK_AND_ASSIGN(Array array, client().Create({64}, v1::DTYPE_INT8, {OnDevice(1, dev(1))}));
  struct Case {
    SliceSpec slice;
    grpc::StatusCode code;
  };
  const std::vector<Case> cases = {
      {SliceSpec{kMax, std::nullopt, std::nullopt}, grpc::StatusCode::OUT_OF_RANGE},
      {SliceSpec{kMin, std::nullopt, std::nullopt}, grpc::StatusCode::OUT_OF_RANGE},
      {SliceSpec{0, kMin, std::nullopt}, grpc::StatusCode::OUT_OF_RANGE},
      {SliceSpec{kMin, kMax, kMin}, grpc::StatusCode::OUT_OF_RANGE},
      {SliceSpec{kMax, kMin, -1}, grpc::StatusCode::OUT_OF_RANGE},
      {SliceSpec{0, 64, 0}, grpc::StatusCode::INVALID_ARGUMENT},
      {SliceSpec{5, 5, kMax}, grpc::StatusCode::INVALID_ARGUMENT},  // selects nothing
  };
  const RawStub raw(address());
  for (const Case& c : cases) {
    SCOPED_TRACE(MakeRegion({c.slice}).ShortDebugString());
    const grpc::Status status = RawDownload(raw.stub(), array.handle(), MakeRegion({c.slice}));
    EXPECT_EQ(status.error_code(), c.code) << status.error_message();
    EXPECT_NE(status.error_message().find("region.slices[0]"), std::string::npos)
        << status.error_message();
    const int8_t one = 1;
    const absl::Status write =
        array.Write<int8_t>(std::span<const int8_t>(&one, 1), MakeRegion({c.slice}));
    EXPECT_EQ(static_cast<int>(write.code()), static_cast<int>(c.code)) << write;
    ExpectBystanderIntact();
  }
}

TEST_P(DataPathTest, UploadsIntoExtremeRegionsWriteOneElement) {
  ASSERT_OK_AND_ASSIGN(Array array,
                       client().Create({64}, v1::DTYPE_INT32, {Split(1, 0, 64, {dev(2), dev(3)})}));
  const int32_t a = 11, b = 22;
  ASSERT_OK(
      array.Write<int32_t>(std::span<const int32_t>(&a, 1), MakeRegion({SliceSpec{3, 64, kMax}})));
  ASSERT_OK(array.Write<int32_t>(std::span<const int32_t>(&b, 1),
                                 MakeRegion({SliceSpec{std::nullopt, std::nullopt, kMin}})));
  // One element too many for the region: refused, nothing written past it.
  const int32_t two[2] = {33, 44};
  const absl::Status over =
      array.Write<int32_t>(std::span<const int32_t>(two, 2), MakeRegion({SliceSpec{0, 64, kMax}}));
  EXPECT_EQ(over.code(), absl::StatusCode::kInvalidArgument) << over;
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> back, array.Download<int32_t>());
  std::vector<int32_t> want(64, 0);
  want[3] = 11;
  want[63] = 22;
  EXPECT_EQ(back, want);
  ExpectBystanderIntact();
}

TEST_P(DataPathTest, ExtremeChunkSlicesMakeOneElementChunks) {
  // 0:5:(2^63-3) normalized to stop 7 and 1:-6:-(2^63-1) to start -1: out-of-bounds chunks that
  // read and wrote other arrays' memory. Each is the one element it selects.
  const v1::IndexMap map = MakeIndexMap({
      MakeChunk(dev(0), {SliceSpec{0, 5, kMax - 2}}),      // {0}
      MakeChunk(dev(1), {SliceSpec{1, -6, -kMax}}),        // {1}
      MakeChunk(dev(2), {SliceSpec{2, 5, std::nullopt}}),  // {2, 3, 4}
  });
  std::mt19937_64 rng(8);
  const std::vector<double> values = RandomValues<double>(5, rng);
  ASSERT_OK_AND_ASSIGN(Array array, client().Upload<double>(values, {5}, {map}));
  ASSERT_EQ(array.info().index_map().chunks_size(), 3);
  ASSERT_OK_AND_ASSIGN(std::vector<double> back, array.Download<double>());
  EXPECT_EQ(back, values);
  // Resharded from and to such a layout.
  ASSERT_OK_AND_ASSIGN(Array moved, array.Reshard(OnDevice(1, dev(3))));
  ASSERT_OK_AND_ASSIGN(std::vector<double> moved_back, moved.Download<double>());
  EXPECT_EQ(moved_back, values);
  ASSERT_OK_AND_ASSIGN(Array again, moved.Reshard(map));
  ASSERT_OK_AND_ASSIGN(std::vector<double> again_back, again.Download<double>());
  EXPECT_EQ(again_back, values);
  ExpectBystanderIntact();
}

// [::-2, ::-1, -1:2:-3] of a 75 MiB int8 array: the download's slabs (16 MiB) and the upload's
// (8 MiB) split it several ways, and within each slab the values are reordered on the host.
class NegativeStepsTest : public DataPathTest {
 protected:
  void SetUp() override {
    DataPathTest::SetUp();
    if (IsSkipped()) return;
    std::mt19937_64 rng(77);
    values_.resize(NumElements(shape_));
    for (size_t i = 0; i < values_.size(); i += 8) {
      const uint64_t r = rng();
      std::memcpy(&values_[i], &r, std::min<size_t>(8, values_.size() - i));
    }
    const v1::IndexMap map =
        MakeIndexMap({MakeChunk(dev(0), {SliceSpec{0, 3}, SliceSpec{}, SliceSpec{}}),
                      MakeChunk(dev(1), {SliceSpec{3, 5}, SliceSpec{}, SliceSpec{0, 4 << 20}}),
                      MakeChunk(dev(2), {SliceSpec{3, 5}, SliceSpec{}, SliceSpec{4 << 20}})});
    auto array = client().Upload<int8_t>(values_, shape_, {map});
    ASSERT_TRUE(array.ok()) << array.status();
    array_.emplace(*std::move(array));
    // NumPy's order of a[::-2, ::-1, -1:2:-3], as flat indices.
    for (int64_t i0 = 4; i0 >= 0; i0 -= 2) {
      for (int64_t i1 = 2; i1 >= 0; --i1) {
        for (int64_t i2 = shape_[2] - 1; i2 > 2; i2 -= 3) {
          flat_.push_back((i0 * 3 + i1) * shape_[2] + i2);
        }
      }
    }
  }

  const Shape shape_ = {5, 3, 5 << 20};
  const v1::Region region_ =
      MakeRegion({SliceSpec{std::nullopt, std::nullopt, -2},
                  SliceSpec{std::nullopt, std::nullopt, -1}, SliceSpec{-1, 2, -3}});
  std::vector<int8_t> values_;
  std::vector<int64_t> flat_;
  std::optional<Array> array_;
};

TEST_P(NegativeStepsTest, DownloadsFollowNumPyOrderAcrossSlabs) {
  ASSERT_OK_AND_ASSIGN(std::vector<int8_t> got, array_->Download<int8_t>(region_));
  ASSERT_EQ(got.size(), flat_.size());
  size_t mismatches = 0;
  for (size_t k = 0; k < flat_.size(); ++k) mismatches += got[k] != values_[flat_[k]];
  EXPECT_EQ(mismatches, 0u);
  ExpectBystanderIntact();
}

TEST_P(NegativeStepsTest, UploadsFollowNumPyOrderAcrossSlabs) {
  // a[region] = patch writes patch's first element where NumPy would.
  std::vector<int8_t> patch(flat_.size());
  for (size_t k = 0; k < patch.size(); ++k) patch[k] = static_cast<int8_t>(k * 7 + 3);
  ASSERT_OK(array_->Write<int8_t>(patch, region_));
  for (size_t k = 0; k < flat_.size(); ++k) values_[flat_[k]] = patch[k];
  ASSERT_OK_AND_ASSIGN(std::vector<int8_t> whole, array_->Download<int8_t>());
  ASSERT_EQ(whole.size(), values_.size());
  size_t mismatches = 0;
  for (size_t k = 0; k < values_.size(); ++k) mismatches += whole[k] != values_[k];
  EXPECT_EQ(mismatches, 0u);
  ExpectBystanderIntact();
}

DISTARRAY_INSTANTIATE_BACKENDS(NegativeStepsTest);

// A client that cancels a download larger than a slab: the slabs being read must not be freed
// under the copies into them, and the staging buffers of strided chunks must come back.
TEST_P(DataPathTest, CancelledDownloadsLeaveNothingBehind) {
  ASSERT_OK(client().Synchronize());
  const int64_t baseline = UsedBytes(client());
  v1::Fill fill;
  fill.mutable_arange()->set_start(0);
  fill.mutable_arange()->set_step(1);
  // 64 MiB in two interleaved (strided) chunks: every piece goes through device staging.
  ASSERT_OK_AND_ASSIGN(
      Array big,
      client().Create({16 << 20}, v1::DTYPE_FLOAT32,
                      {MakeIndexMap({MakeChunk(dev(0), {SliceSpec{0, std::nullopt, 2}}),
                                     MakeChunk(dev(1), {SliceSpec{1, std::nullopt, 2}})})},
                      fill));
  const RawStub raw(address());
  for (int i = 0; i < 5; ++i) {
    const grpc::Status status = CancelAfterFirstMessage(raw.stub(), big.handle());
    EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED) << status.error_message();
    ExpectBystanderIntact();
  }
  // Still readable after the cancellations.
  std::string bytes;
  ASSERT_TRUE(RawDownload(raw.stub(), big.handle(),
                          MakeRegion({SliceSpec{(16 << 20) - 3, std::nullopt, std::nullopt}}),
                          &bytes)
                  .ok());
  float tail[3];
  ASSERT_EQ(bytes.size(), sizeof(tail));
  std::memcpy(tail, bytes.data(), sizeof(tail));
  EXPECT_EQ(tail[2], static_cast<float>((16 << 20) - 1));
  ASSERT_OK(big.Delete());
  // The client sees CANCELLED at once; the daemon's handler lets go of the array (and its
  // staging) when it next notices, which must be promptly.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  int64_t used = 0;
  do {
    ASSERT_OK(client().Synchronize());
    used = UsedBytes(client());
    if (used == baseline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(used, baseline);
}

DISTARRAY_INSTANTIATE_BACKENDS(DataPathTest);

// A staging allocation refused part-way through a slab: the slab's reads already started must
// finish before its buffers go. Its own daemon, so the memory limit is small and exact.
class StagingFailureTest : public ::testing::TestWithParam<std::string> {};

TEST_P(StagingFailureTest, RefusedStagingIsResourceExhaustedAndNothingLeaks) {
  Daemon::Options options = OptionsFor(GetParam());
  options.memory_limit = "64MiB";
  std::unique_ptr<Daemon> daemon;
  ASSERT_NO_FATAL_FAILURE(StartOwnDaemon(GetParam(), options, daemon));
  if (IsSkipped()) return;
  ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(daemon->address()));
  const RawStub raw(daemon->address());
  ASSERT_OK(client.Synchronize());
  const int64_t baseline = UsedBytes(client);

  // 32 MiB on device 0 in two row-interleaved chunks, and 20 MiB more beside it. The region
  // leaves out the last column, so each 16 MiB slab (four rows) takes a strided 8 MiB piece of
  // each chunk through device staging: the first fits under the 64 MiB limit, the second does
  // not, while the first piece's read is in flight.
  const int64_t cols = (int64_t{1} << 20) + 1;
  ASSERT_OK_AND_ASSIGN(
      Array big,
      client.Create({8, cols}, v1::DTYPE_FLOAT32,
                    {MakeIndexMap({MakeChunk(0, {SliceSpec{0, std::nullopt, 2}, SliceSpec{}}),
                                   MakeChunk(0, {SliceSpec{1, std::nullopt, 2}, SliceSpec{}})})}));
  ASSERT_OK_AND_ASSIGN(Array filler, client.Create({5 << 20}, v1::DTYPE_FLOAT32, {OnDevice(1, 0)}));
  ASSERT_OK(client.Synchronize());
  const int64_t held = UsedBytes(client);  // the arrays, with whatever bookkeeping is charged
  ASSERT_GE(held, baseline + 8 * cols * 4 + (20 << 20));
  const v1::Region region = MakeRegion({SliceSpec{}, SliceSpec{0, cols - 1}});
  for (int i = 0; i < 3; ++i) {
    const grpc::Status status = RawDownload(raw.stub(), big.handle(), region);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
  }
  ASSERT_OK(client.Synchronize());
  EXPECT_EQ(UsedBytes(client), held);
  // A small region still downloads.
  std::string bytes;
  ASSERT_TRUE(
      RawDownload(raw.stub(), big.handle(), MakeRegion({SliceSpec{1, 2}, SliceSpec{5, 9}}), &bytes)
          .ok());
  EXPECT_EQ(bytes, std::string(16, '\0'));
  ASSERT_OK(big.Delete());
  ASSERT_OK(filler.Delete());
  ASSERT_OK(client.Synchronize());
  EXPECT_EQ(UsedBytes(client), baseline);
  EXPECT_TRUE(daemon->alive());
}

INSTANTIATE_TEST_SUITE_P(Backends, StagingFailureTest,
                         ::testing::Values("host", "cuda", "cuda_nccl"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace distarray::testing
