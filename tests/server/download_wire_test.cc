// DownloadArray's hand-written wire form: the daemon's serializer writes what protobuf would, and
// the SDK's reader takes the bytes back out of any slicing of the message, skipping other fields
// and refusing malformed input.
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/raw_download.h"
#include "server/service/download_message.h"

namespace distarray {
namespace {

std::string RandomBytes(std::mt19937_64& rng, size_t n) {
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(rng());
  return out;
}

std::string Flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string out;
  for (const grpc::Slice& s : slices)
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

// `wire` cut into slices at the given offsets.
grpc::ByteBuffer Sliced(const std::string& wire, std::vector<size_t> cuts) {
  cuts.push_back(wire.size());
  std::vector<grpc::Slice> slices;
  size_t begin = 0;
  for (size_t cut : cuts) {
    slices.emplace_back(wire.data() + begin, cut - begin);
    begin = cut;
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

absl::StatusOr<std::string> ReadData(grpc::ByteBuffer& message) {
  std::string data;
  absl::Status s = internal::ForEachDataPiece(message, [&](absl::string_view piece) {
    data.append(piece.data(), piece.size());
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return data;
}

v1::DownloadArrayResponse Head(bool first) {
  v1::DownloadArrayResponse head;
  if (first) {
    head.mutable_shape()->add_dims(1024);
    head.mutable_shape()->add_dims(3);
    head.set_dtype(v1::DTYPE_FLOAT32);
  }
  return head;
}

TEST(DownloadMessageTest, WritesWhatProtobufWrites) {
  std::mt19937_64 rng(std::random_device{}());
  for (bool first : {true, false}) {
    for (size_t n :
         {size_t{0}, size_t{1}, size_t{127}, size_t{128}, size_t{70000}, size_t{(1 << 20) + 3}}) {
      const std::string data = RandomBytes(rng, n);
      v1::DownloadArrayResponse full = Head(first);
      full.set_data(data);
      EXPECT_EQ(Flatten(SerializeDownloadMessage(Head(first), data)), full.SerializeAsString())
          << "first " << first << ", " << n << " bytes";
    }
  }
}

TEST(RawDownloadTest, ReadsTheBytesBackFromAnySlicing) {
  std::mt19937_64 rng(std::random_device{}());
  for (int trial = 0; trial < 200; ++trial) {
    v1::DownloadArrayResponse message = Head(trial % 2 == 0);
    message.set_data(RandomBytes(rng, rng() % 5000));
    const std::string wire = message.SerializeAsString();
    std::vector<size_t> cuts;
    for (size_t at = 0; at < wire.size(); at += 1 + rng() % 700) cuts.push_back(at);
    grpc::ByteBuffer buffer = Sliced(wire, cuts);
    absl::StatusOr<std::string> data = ReadData(buffer);
    ASSERT_TRUE(data.ok()) << data.status();
    EXPECT_EQ(*data, message.data()) << "trial " << trial;
  }
}

TEST(RawDownloadTest, SkipsFieldsItDoesNotKnow) {
  v1::DownloadArrayResponse message = Head(true);
  message.set_data("payload");
  // Field 9, a varint, and field 10, length-delimited: what a newer daemon might add.
  std::string wire = message.SerializeAsString() + std::string("\x48\x2a\x52\x03xyz", 7);
  grpc::ByteBuffer buffer = Sliced(wire, {});
  EXPECT_EQ(ReadData(buffer).value_or("<error>"), "payload");
}

TEST(RawDownloadTest, RefusesMalformedMessages) {
  v1::DownloadArrayResponse message = Head(true);
  message.set_data(std::string(300, 'x'));
  const std::string wire = message.SerializeAsString();
  const std::vector<std::string> malformed = {
      wire.substr(0, wire.size() - 1),    // the data field cut short
      wire.substr(0, wire.size() - 301),  // its length prefix cut short
      wire + std::string("\x1a\xff", 2),  // a length prefix with no end
      std::string("\x07", 1),             // wire type 7 does not exist
  };
  for (const std::string& bad : malformed) {
    grpc::ByteBuffer buffer = Sliced(bad, {});
    absl::StatusOr<std::string> data = ReadData(buffer);
    EXPECT_EQ(data.status().code(), absl::StatusCode::kDataLoss) << data.status();
  }
}

TEST(RawDownloadTest, StopsAtTheSinksError) {
  v1::DownloadArrayResponse message;
  message.set_data(std::string(1000, 'x'));
  const std::string wire = message.SerializeAsString();
  grpc::ByteBuffer buffer = Sliced(wire, {100, 200, 300});
  int calls = 0;
  absl::Status s = internal::ForEachDataPiece(buffer, [&](absl::string_view) {
    ++calls;
    return absl::ResourceExhaustedError("full");
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace distarray
