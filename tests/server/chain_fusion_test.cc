// PlanFusedChain on metadata alone: which runs fuse, what they store, where a sum or a broadcast
// joins them, and where a run stops.
#include "server/graph/chain_fusion.h"

#include <memory>
#include <string>

#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace distarray {
namespace {

ArrayPtr Meta(Shape shape, IndexMap map, DType dtype = DType::kFloat64) {
  return std::make_shared<const Array>(
      MetadataOnly(ArrayMeta{std::move(shape), dtype, Mode::kReplica, std::move(map)}));
}

IndexMap RowsOver(int64_t n, int devices) {
  IndexMap map;
  for (int d = 0; d < devices; ++d) {
    map.push_back(ChunkSpec{d, {Range{n * d / devices, n * (d + 1) / devices, 1}}});
  }
  return map;
}

IndexMap ScalarsOn(int devices) {
  IndexMap map;
  for (int d = 0; d < devices; ++d) map.push_back(ChunkSpec{d, {}});
  return map;
}

v1::Program Parse(const char* text) {
  v1::Program program;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &program));
  return program;
}

class ChainFusionTest : public ::testing::TestWithParam<int> {
 protected:
  std::optional<FusedChainPlan> Plan(const v1::Program& program, int start = 0) {
    OpContext context;
    return PlanFusedChain(program.statements(), start, env_, context);
  }
  absl::flat_hash_map<std::string, ArrayPtr> env_;
};

// A CG update: beta * d + r with beta 0-d, then q = that * that, then sum(q): one run whose
// kernel also adds up q; beta is a broadcast input, the sum's partials one per row block.
TEST_P(ChainFusionTest, BroadcastsZeroDInputsAndEndsInASum) {
  const int devices = GetParam();
  env_["r"] = Meta({1000}, RowsOver(1000, devices));
  env_["d"] = Meta({1000}, RowsOver(1000, devices));
  env_["beta"] = Meta({}, ScalarsOn(devices));
  const v1::Program program = Parse(R"pb(
    statements {
      target: "bd"
      elementwise {
        op: ELEMENTWISE_OP_MULTIPLY
        operands { variable: "beta" }
        operands { variable: "d" }
      }
    }
    statements {
      target: "d2"
      elementwise {
        op: ELEMENTWISE_OP_ADD
        operands { variable: "r" }
        operands { variable: "bd" }
      }
    }
    statements {
      target: "q"
      elementwise {
        op: ELEMENTWISE_OP_MULTIPLY
        operands { variable: "d2" }
        operands { variable: "d2" }
      }
    }
    statements {
      target: "s"
      reduce {
        op: REDUCE_OP_SUM
        operand { variable: "q" }
        combine: true
      }
    }
    statements { target: "after" copy: "s" }
  )pb");
  std::optional<FusedChainPlan> plan = Plan(program);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->statements, 4);
  ASSERT_TRUE(plan->sum.has_value());
  EXPECT_EQ(plan->sum_target, "s");
  ASSERT_TRUE(plan->chain.sum.has_value());
  EXPECT_FALSE(plan->chain.sum->is_input);
  EXPECT_EQ(plan->sum->plan.result_map.size(), static_cast<size_t>(devices));
  ASSERT_EQ(plan->inputs.size(), 3u);
  for (size_t k = 0; k < plan->inputs.size(); ++k) {
    EXPECT_EQ(plan->chain.inputs[k].broadcast, plan->inputs[k] == "beta") << plan->inputs[k];
  }
  EXPECT_EQ(plan->stores, (std::vector<std::string>{"bd", "d2", "q"}));
  EXPECT_EQ(plan->scalar_map, ScalarsOn(devices));
}

// A 0-d input the run also assigns ends the run before that statement once vectors are in it.
TEST_P(ChainFusionTest, AZeroDInputTheRunAssignsStartsTheNextRun) {
  const int devices = GetParam();
  env_["x"] = Meta({64}, RowsOver(64, devices));
  env_["alpha"] = Meta({}, ScalarsOn(devices));
  const v1::Program program = Parse(R"pb(
    statements {
      target: "ax"
      elementwise {
        op: ELEMENTWISE_OP_MULTIPLY
        operands { variable: "alpha" }
        operands { variable: "x" }
      }
    }
    statements {
      target: "x2"
      elementwise {
        op: ELEMENTWISE_OP_ADD
        operands { variable: "x" }
        operands { variable: "ax" }
      }
    }
    statements { target: "alpha" copy: "x2" }
  )pb");
  std::optional<FusedChainPlan> plan = Plan(program);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->statements, 2);
  EXPECT_FALSE(plan->sum.has_value());
}

// A vector held whole on every device: its sum is not fused (each device would add all of it).
TEST_P(ChainFusionTest, ASumOverOverlappingChunksIsNotFused) {
  const int devices = GetParam();
  IndexMap whole;
  for (int d = 0; d < devices; ++d) whole.push_back(ChunkSpec{d, {Range{0, 100, 1}}});
  env_["x"] = Meta({100}, whole);
  const v1::Program program = Parse(R"pb(
    statements {
      target: "t"
      elementwise {
        op: ELEMENTWISE_OP_MULTIPLY
        operands { variable: "x" }
        operands { variable: "x" }
      }
    }
    statements {
      target: "u"
      elementwise {
        op: ELEMENTWISE_OP_ADD
        operands { variable: "t" }
        operands { scalar { float_value: 1 } }
      }
    }
    statements {
      target: "s"
      reduce {
        op: REDUCE_OP_SUM
        operand { variable: "u" }
        combine: true
      }
    }
  )pb");
  std::optional<FusedChainPlan> plan = Plan(program);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->statements, devices == 1 ? 3 : 2);
  EXPECT_EQ(plan->sum.has_value(), devices == 1);
}

INSTANTIATE_TEST_SUITE_P(Devices, ChainFusionTest, ::testing::Values(1, 2));

}  // namespace
}  // namespace distarray
