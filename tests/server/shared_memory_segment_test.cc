// The request checks of shared-memory transfers, without a daemon: names and ranges.
#include "server/service/shared_memory_segment.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace distarray {
namespace {

v1::SharedMemoryRange Range(std::string name, int64_t segment_bytes, int64_t offset,
                            int64_t bytes) {
  v1::SharedMemoryRange range;
  range.set_name(std::move(name));
  range.set_segment_bytes(segment_bytes);
  range.set_offset(offset);
  range.set_bytes(bytes);
  return range;
}

TEST(SharedMemoryName, AcceptsOneComponentOfTheAllowedBytes) {
  for (const std::string name :
       {std::string("/a"), std::string("/distarray-12-0af3"), std::string("/A.b_c-9"),
        std::string("/..."), "/" + std::string(200, 'x')}) {
    EXPECT_TRUE(CheckSharedMemoryName(name, "source.name").ok()) << name;
  }
}

TEST(SharedMemoryName, RefusesEverythingElseNamingTheField) {
  for (const std::string name :
       {std::string(), std::string("a"), std::string("/"), std::string("/."), std::string("/.."),
        std::string("/a/b"), std::string("//a"), std::string("/a b"), std::string("/a\n"),
        std::string("/a\0b", 4), std::string("/\xff"), "/" + std::string(201, 'x')}) {
    const absl::Status status = CheckSharedMemoryName(name, "source.name");
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_NE(status.message().find("source.name"), std::string::npos) << status;
  }
}

TEST(SharedMemoryRange, BoundsWithCheckedArithmetic) {
  EXPECT_TRUE(CheckSharedMemoryRange(Range("/s", 100, 0, 100), "source").ok());
  EXPECT_TRUE(CheckSharedMemoryRange(Range("/s", 100, 100, 0), "source").ok());
  EXPECT_TRUE(CheckSharedMemoryRange(Range("/s", 0, 0, 0), "source").ok());
  struct Case {
    v1::SharedMemoryRange range;
    const char* field;
  };
  const Case cases[] = {
      {Range("/s", 100, 1, 100), "source.offset + source.bytes"},
      {Range("/s", 100, INT64_MAX, 1), "source.offset + source.bytes"},
      {Range("/s", INT64_MAX, INT64_MAX, INT64_MAX), "source.offset + source.bytes"},
      {Range("/s", -1, 0, 0), "source.segment_bytes"},
      {Range("/s", 100, -1, 1), "source.offset"},
      {Range("/s", 100, 0, INT64_MIN), "source.bytes"},
      {Range("s", 100, 0, 1), "source.name"},
  };
  for (const Case& c : cases) {
    const absl::Status status = CheckSharedMemoryRange(c.range, "source");
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.range.ShortDebugString();
    EXPECT_NE(status.message().find(c.field), std::string::npos) << status;
  }
}

TEST(SharedMemoryHostId, SixteenHexDigitsAndStable) {
  const std::string id = SharedMemoryHostId();
  ASSERT_EQ(id.size(), 16u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
  EXPECT_EQ(SharedMemoryHostId(), id);
}

}  // namespace
}  // namespace distarray
