#include "common/host_id.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace distarray {
namespace {

// The rule written out independently of common/host_id.cc, so a change there that breaks the
// agreement with the Python SDK (and with daemons already deployed) fails here.
std::string ExpectedHostId(const std::string& boot_id, const std::string& dir) {
  struct stat st;
  EXPECT_EQ(stat(dir.c_str(), &st), 0) << dir;
  const std::string key = absl::StrCat(boot_id, ":", static_cast<uint64_t>(st.st_dev), ":",
                                       static_cast<uint64_t>(st.st_ino));
  uint64_t hash = 14695981039346656037ULL;
  for (unsigned char c : key) hash = (hash ^ c) * 1099511628211ULL;
  return absl::StrFormat("%016x", hash);
}

class HostIdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "/host_id_test.XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    shm_ = dir_ + "/shm";
    ASSERT_TRUE(std::filesystem::create_directory(shm_));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string WriteBootId(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  std::string dir_;
  std::string shm_;
};

TEST_F(HostIdTest, HashesBootIdDeviceAndInode) {
  const std::string boot_id = WriteBootId("boot_id", "0b6c1f9e-2d3a-4c5b-8e7f-112233445566\n");
  const std::string id = HostIdOf(boot_id, shm_);
  EXPECT_EQ(id, ExpectedHostId("0b6c1f9e-2d3a-4c5b-8e7f-112233445566", shm_));
  ASSERT_EQ(id.size(), 16u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
}

TEST_F(HostIdTest, ReadsOnlyTheFirstLineWithoutSurroundingWhitespace) {
  const std::string plain = WriteBootId("plain", "abc");
  const std::string padded = WriteBootId("padded", "  abc \t\nsecond line\n");
  EXPECT_EQ(HostIdOf(plain, shm_), ExpectedHostId("abc", shm_));
  EXPECT_EQ(HostIdOf(padded, shm_), HostIdOf(plain, shm_));
}

TEST_F(HostIdTest, AnotherDirectoryOrBootIdIsAnotherHost) {
  const std::string boot_id = WriteBootId("boot_id", "abc\n");
  const std::string other_boot_id = WriteBootId("other", "abd\n");
  const std::string id = HostIdOf(boot_id, shm_);
  EXPECT_NE(HostIdOf(boot_id, dir_), id);
  EXPECT_NE(HostIdOf(other_boot_id, shm_), id);
  EXPECT_FALSE(HostIdOf(boot_id, dir_).empty());
}

TEST_F(HostIdTest, EmptyWhenEitherCannotBeRead) {
  const std::string boot_id = WriteBootId("boot_id", "abc\n");
  EXPECT_EQ(HostIdOf(dir_ + "/missing", shm_), "");
  EXPECT_EQ(HostIdOf(boot_id, dir_ + "/missing"), "");
  EXPECT_EQ(HostIdOf(WriteBootId("empty", ""), shm_), "");
  EXPECT_EQ(HostIdOf(WriteBootId("blank", " \n"), shm_), "");
}

TEST(ThisHostIdTest, SixteenHexDigitsAndStable) {
  const std::string id = ThisHostId();
  ASSERT_EQ(id.size(), 16u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
  EXPECT_EQ(ThisHostId(), id);
  EXPECT_EQ(id, HostIdOf("/proc/sys/kernel/random/boot_id", "/dev/shm"));
}

}  // namespace
}  // namespace distarray
