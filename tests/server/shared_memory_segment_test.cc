// The request checks of shared-memory transfers, without a daemon: names and ranges; and the
// segments the daemon makes.
#include "server/service/shared_memory_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
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

bool Exists(const std::string& name) {
  struct stat st;
  return stat(("/dev/shm" + name).c_str(), &st) == 0;
}

TEST(DaemonSegment, AnUnguessableNameModeSixHundredItsSizeMappedAndRemoved) {
  auto made = DaemonSegment::Create(10000);
  ASSERT_TRUE(made.ok()) << made.status();
  std::unique_ptr<DaemonSegment> segment = *std::move(made);
  const std::string name = segment->name();
  ASSERT_EQ(name.rfind(kSharedMemoryNamePrefix, 0), 0u) << name;
  const std::string suffix = name.substr(std::strlen(kSharedMemoryNamePrefix));
  EXPECT_EQ(suffix.size(), 32u);
  EXPECT_EQ(suffix.find_first_not_of("0123456789abcdef"), std::string::npos) << suffix;
  EXPECT_TRUE(CheckSharedMemoryName(name, "name").ok());
  struct stat st;
  ASSERT_EQ(stat(("/dev/shm" + name).c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_uid, geteuid());
  EXPECT_EQ(st.st_size, 10000);
  EXPECT_EQ(segment->size(), 10000);
  ASSERT_NE(segment->data(), nullptr);
  // The mapping is the file: what the daemon writes, a client opening the name reads.
  std::memcpy(segment->data() + 5000, "abc", 3);
  const int fd = shm_open(name.c_str(), O_RDONLY, 0);
  ASSERT_GE(fd, 0);
  char got[3];
  ASSERT_EQ(pread(fd, got, 3, 5000), 3);
  close(fd);
  EXPECT_EQ(std::string(got, 3), "abc");
  EXPECT_TRUE(segment->CheckIntact("source.name").ok());
  // Two segments never share a name.
  auto other = DaemonSegment::Create(0);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_NE((*other)->name(), name);
  EXPECT_EQ((*other)->data(), nullptr);
  // Unlink removes the name and keeps the mapping; destruction removes the rest.
  segment->Unlink();
  EXPECT_FALSE(Exists(name));
  EXPECT_EQ(std::memcmp(segment->data() + 5000, "abc", 3), 0);
  const std::string other_name = (*other)->name();
  other->reset();
  EXPECT_FALSE(Exists(other_name));
}

TEST(DaemonSegment, ASegmentShrunkUnderTheDaemonIsRefusedBeforeACopy) {
  auto made = DaemonSegment::Create(8192);
  ASSERT_TRUE(made.ok()) << made.status();
  const int fd = shm_open((*made)->name().c_str(), O_RDWR, 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 4096), 0);
  close(fd);
  const absl::Status status = (*made)->CheckIntact("destination.name");
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_NE(status.message().find("destination.name"), std::string::npos) << status;
  EXPECT_NE(status.message().find("truncated"), std::string::npos) << status;
}

TEST(DaemonSegment, NegativeSizesAreRefused) {
  EXPECT_EQ(DaemonSegment::Create(-1).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace distarray
