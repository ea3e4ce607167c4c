#include "server/graph/variable_mentions.h"

#include "absl/container/flat_hash_set.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace distarray {
namespace {

// The names mentioned by block[from..]: those last mentioned at `from` or later.
absl::flat_hash_set<std::string> MentionedFrom(const v1::Program& program, int from) {
  absl::flat_hash_set<std::string> out;
  for (const auto& [name, last] : LastMentions(program.statements())) {
    if (last >= from) out.insert(name);
  }
  return out;
}

v1::Program Parse(const char* text) {
  v1::Program program;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &program));
  return program;
}

// Operands, copies, reshard sources, a loop's condition and its nested body all count; what
// comes before `from` does not.
TEST(LastMentionsTest, FindsNamesInEveryKindOfStatementFromAnIndexOn) {
  const v1::Program program = Parse(R"pb(
    statements {
      target: "t"
      elementwise {
        op: ELEMENTWISE_OP_MULTIPLY
        operands { variable: "a" }
        operands { variable: "a" }
      }
    }
    statements { target: "u" copy: "t" }
    statements {
      target: "v"
      reshard { source: "u" }
    }
    statements {
      while_loop {
        condition: "c"
        body {
          target: "w"
          reduce {
            op: REDUCE_OP_SUM
            operand { variable: "deep" }
          }
        }
      }
    }
  )pb");
  const absl::flat_hash_set<std::string> expected = {"u", "t", "v", "c", "w", "deep"};
  EXPECT_EQ(MentionedFrom(program, 1), expected);
  EXPECT_TRUE(MentionedFrom(program, 4).empty());
}

}  // namespace
}  // namespace distarray
