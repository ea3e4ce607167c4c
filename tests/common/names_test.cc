#include "common/names.h"

#include <gtest/gtest.h>

#include <string>

namespace distarray {
namespace {

TEST(ValidateNameTest, AcceptsTheDocumentedAlphabet) {
  EXPECT_TRUE(ValidateName("", "name").ok());
  EXPECT_TRUE(ValidateName("weights.layer-1_v2", "name").ok());
  EXPECT_TRUE(ValidateName(std::string(kMaxNameBytes, 'a'), "name").ok());
  EXPECT_TRUE(ValidateName("arr-0123", "name").ok());  // too short to be a handle
}

TEST(ValidateNameTest, RefusesLongOddAndHandleLikeNames) {
  EXPECT_EQ(ValidateName(std::string(kMaxNameBytes + 1, 'a'), "spec.name").message(),
            "spec.name: a name has at most 256 bytes, got 257");
  EXPECT_EQ(ValidateName("-x", "n").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateName("a b", "n").message(),
            "n: a name holds only letters, digits, '.', '_' and '-'; byte 1 of 'a b' is not one");
  EXPECT_EQ(ValidateName("a\xff\xfe", "n").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateName("arr-0123456789abcdef", "n").message(),
            "n: 'arr-0123456789abcdef' has the form of a handle and cannot be a name");
  EXPECT_EQ(ValidateName("ARR-0123456789ABCDEF", "n").code(), absl::StatusCode::kInvalidArgument);
}

TEST(QuoteClientStringTest, BoundsAndEscapes) {
  EXPECT_EQ(QuoteClientString("abc"), "'abc'");
  EXPECT_EQ(QuoteClientString("a\nb\xff"), "'a\\nb\\xff'");
  const std::string quoted = QuoteClientString(std::string(1 << 20, 'x'));
  EXPECT_EQ(quoted, "'" + std::string(64, 'x') + "'... (1048576 bytes)");
}

}  // namespace
}  // namespace distarray
