// The compute planners as pure functions: layouts, modes and moves they choose.
#include <gtest/gtest.h>

#include "server/ops/elementwise_planner.h"
#include "server/ops/matmul_planner.h"
#include "server/ops/reduce_planner.h"

namespace distarray {
namespace {

Range R(int64_t start, int64_t count) { return Range{start, 1, count}; }

// rows x cols split by rows over `devices`.
ArrayMeta RowSplit(int64_t rows, int64_t cols, std::vector<int> devices,
                   DType dtype = DType::kFloat32) {
  ArrayMeta a{{rows, cols}, dtype, Mode::kReplica, {}};
  const int64_t n = static_cast<int64_t>(devices.size());
  for (int64_t p = 0; p < n; ++p) {
    a.map.push_back(
        ChunkSpec{devices[p], {R(rows * p / n, rows * (p + 1) / n - rows * p / n), R(0, cols)}});
  }
  return a;
}

TEST(ElementwisePlannerTest, RowVectorIsReplicatedToEachRowChunk) {
  const ArrayMeta matrix = RowSplit(8, 5, {0, 1});
  const ArrayMeta row{{5}, DType::kFloat32, Mode::kReplica, {ChunkSpec{2, {R(0, 5)}}}};
  ElementwiseInput input;
  input.op = ElementwiseOpId::kAdd;
  input.operands = {OperandMeta{&matrix, {}}, OperandMeta{&row, {}}};
  auto plan = PlanElementwise(input);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->result_map, matrix.map);
  EXPECT_TRUE(plan->operands[0].in_place);
  ASSERT_EQ(plan->operands[1].aligned_map.size(), 2u);
  for (int c = 0; c < 2; ++c) {
    EXPECT_EQ(plan->operands[1].aligned_map[c].device, c);  // to each device holding rows
    EXPECT_EQ(plan->operands[1].aligned_map[c].box, Box{R(0, 5)});
    EXPECT_EQ(plan->operands[1].views[c].stride[0], 0);  // broadcast along rows
    EXPECT_FALSE(plan->operands[1].contiguous[c]);
  }
}

TEST(ElementwisePlannerTest, MixedDTypesCastToTheCompute) {
  const ArrayMeta a = RowSplit(4, 4, {0}, DType::kInt32);
  const ArrayMeta b = RowSplit(4, 4, {0}, DType::kFloat32);
  ElementwiseInput input;
  input.op = ElementwiseOpId::kAdd;
  input.operands = {OperandMeta{&a, {}}, OperandMeta{&b, {}}};
  auto plan = PlanElementwise(input);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->compute, DType::kFloat64);
  EXPECT_TRUE(plan->operands[0].cast);
  EXPECT_TRUE(plan->operands[1].cast);
}

TEST(ReducePlannerTest, DisjointPartialsAreReplicaOverlappingOnesSum) {
  const ArrayMeta a = RowSplit(8, 6, {0, 1});
  ReduceInput over_cols{v1::REDUCE_OP_SUM, &a, {1}, false};
  auto rows = PlanReduce(over_cols);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->result_mode, Mode::kReplica);
  EXPECT_FALSE(rows->prepare);
  ReduceInput over_rows{v1::REDUCE_OP_SUM, &a, {0}, false};
  auto cols = PlanReduce(over_rows);
  ASSERT_TRUE(cols.ok()) << cols.status();
  EXPECT_EQ(cols->result_mode, Mode::kSum);
  EXPECT_EQ(cols->result_shape, Shape{6});
}

TEST(ReducePlannerTest, ReplicatedOperandIsMaskedOnce) {
  ArrayMeta a{
      {4}, DType::kFloat32, Mode::kReplica, {ChunkSpec{0, {R(0, 4)}}, ChunkSpec{1, {R(0, 4)}}}};
  auto plan = PlanReduce(ReduceInput{v1::REDUCE_OP_SUM, &a, {}, false});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->prepare);
  EXPECT_EQ(plan->prepare_mode, Mode::kSum);  // later copies hold zeros
}

TEST(ReducePlannerTest, AxisErrorsNameTheField) {
  const ArrayMeta a = RowSplit(4, 4, {0});
  EXPECT_EQ(PlanReduce(ReduceInput{v1::REDUCE_OP_MAX, &a, {2}, false}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PlanReduce(ReduceInput{v1::REDUCE_OP_MAX, &a, {0, -2}, false}).status().message(),
            "spec.axes[1]: axis 0 is repeated");
}

TEST(MatmulPlannerTest, RowSplitTimesReplicatedMovesNothing) {
  const ArrayMeta a = RowSplit(8, 6, {0, 1});
  ArrayMeta b{{6, 5},
              DType::kFloat32,
              Mode::kReplica,
              {ChunkSpec{0, {R(0, 6), R(0, 5)}}, ChunkSpec{1, {R(0, 6), R(0, 5)}}}};
  auto plan = PlanMatmul(a, b);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->result_mode, Mode::kReplica);
  ASSERT_EQ(plan->gemms.size(), 2u);
  for (size_t p = 0; p < 2; ++p) {
    EXPECT_EQ(plan->a_blocks[p], a.map[p]);  // each product where its rows are
    EXPECT_EQ(plan->b_blocks[p].device, a.map[p].device);
  }
}

TEST(MatmulPlannerTest, SplitSharedAxisGivesSum) {
  ArrayMeta a{{4, 6},
              DType::kFloat64,
              Mode::kReplica,
              {ChunkSpec{0, {R(0, 4), R(0, 3)}}, ChunkSpec{1, {R(0, 4), R(3, 3)}}}};
  ArrayMeta b{{6, 2},
              DType::kFloat64,
              Mode::kReplica,
              {ChunkSpec{0, {R(0, 3), R(0, 2)}}, ChunkSpec{1, {R(3, 3), R(0, 2)}}}};
  auto plan = PlanMatmul(a, b);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->result_mode, Mode::kSum);
  EXPECT_EQ(plan->gemms.size(), 2u);
}

// A stack of `batch` rows x cols matrices split along the batch axis over `devices`.
ArrayMeta BatchSplit(int64_t batch, int64_t rows, int64_t cols, std::vector<int> devices) {
  ArrayMeta a{{batch, rows, cols}, DType::kFloat32, Mode::kReplica, {}};
  const int64_t n = static_cast<int64_t>(devices.size());
  for (int64_t p = 0; p < n; ++p) {
    a.map.push_back(
        ChunkSpec{devices[p],
                  {R(batch * p / n, batch * (p + 1) / n - batch * p / n), R(0, rows), R(0, cols)}});
  }
  return a;
}

TEST(MatmulPlannerTest, BatchSplitTimesReplicatedMatrixIsOneStridedGemmPerDevice) {
  const ArrayMeta a = BatchSplit(6, 4, 3, {0, 1});
  ArrayMeta b{{3, 5},
              DType::kFloat32,
              Mode::kReplica,
              {ChunkSpec{0, {R(0, 3), R(0, 5)}}, ChunkSpec{1, {R(0, 3), R(0, 5)}}}};
  auto plan = PlanMatmul(a, b);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->result_shape, (Shape{6, 4, 5}));
  EXPECT_EQ(plan->result_mode, Mode::kReplica);
  ASSERT_EQ(plan->gemms.size(), 2u);
  for (size_t p = 0; p < 2; ++p) {
    EXPECT_EQ(plan->a_blocks[p], a.map[p]);  // nothing moves
    EXPECT_EQ(plan->b_blocks[p].device, a.map[p].device);
    EXPECT_EQ(plan->b_blocks[p].box, (Box{R(0, 3), R(0, 5)}));
    EXPECT_EQ(plan->result_map[p].box, (Box{a.map[p].box[0], R(0, 4), R(0, 5)}));
    const GemmShape& g = plan->gemms[p];
    EXPECT_EQ(g.batch, 3);
    EXPECT_EQ(g.stride_a, 4 * 3);
    EXPECT_EQ(g.stride_b, 0);  // one matrix for the whole stack
    EXPECT_EQ(g.stride_c, 4 * 5);
  }
}

TEST(MatmulPlannerTest, BatchAxesBroadcastAsNumPys) {
  // (2, 1, 4, 3) @ (5, 3, 6) -> (2, 5, 4, 6); a broadcasts along axis 1 and not along axis 0,
  // so each box holds one entry of axis 0.
  ArrayMeta a{{2, 1, 4, 3},
              DType::kFloat64,
              Mode::kReplica,
              {ChunkSpec{0, {R(0, 2), R(0, 1), R(0, 4), R(0, 3)}}}};
  ArrayMeta b{
      {5, 3, 6}, DType::kFloat64, Mode::kReplica, {ChunkSpec{0, {R(0, 5), R(0, 3), R(0, 6)}}}};
  auto plan = PlanMatmul(a, b);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->result_shape, (Shape{2, 5, 4, 6}));
  ASSERT_EQ(plan->gemms.size(), 2u);
  for (size_t p = 0; p < 2; ++p) {
    const int64_t entry = static_cast<int64_t>(p);
    EXPECT_EQ(plan->a_blocks[p].box, (Box{R(entry, 1), R(0, 1), R(0, 4), R(0, 3)}));
    EXPECT_EQ(plan->b_blocks[p].box, (Box{R(0, 5), R(0, 3), R(0, 6)}));
    EXPECT_EQ(plan->result_map[p].box, (Box{R(entry, 1), R(0, 5), R(0, 4), R(0, 6)}));
    EXPECT_EQ(plan->gemms[p].batch, 5);
    EXPECT_EQ(plan->gemms[p].stride_a, 0);
    EXPECT_EQ(plan->gemms[p].stride_b, 3 * 6);
  }
}

TEST(MatmulPlannerTest, BatchAxesThatDoNotBroadcastAreRefusedNamingBothShapes) {
  const ArrayMeta a = BatchSplit(4, 2, 3, {0});
  const ArrayMeta b = BatchSplit(3, 3, 2, {0});
  const absl::Status status = PlanMatmul(a, b).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("(4, 2, 3)"), std::string::npos) << status;
  EXPECT_NE(status.message().find("(3, 3, 2)"), std::string::npos) << status;
}

TEST(MatmulPlannerTest, EveryIndexCutsStopAtTheProductLimit) {
  // a broadcast along a long axis and not along another: a cut per entry of axis 0, which here
  // would be 70,000 products.
  ArrayMeta a{{70000, 1, 2, 2},
              DType::kFloat32,
              Mode::kReplica,
              {ChunkSpec{0, {R(0, 70000), R(0, 1), R(0, 2), R(0, 2)}}}};
  ArrayMeta b{{1, 3, 2, 2},
              DType::kFloat32,
              Mode::kReplica,
              {ChunkSpec{0, {R(0, 1), R(0, 3), R(0, 2), R(0, 2)}}}};
  EXPECT_EQ(PlanMatmul(a, b).status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(MatmulPlannerTest, VectorsDropTheirAddedAxes) {
  // Two vectors split alike along the shared axis: a 0-d SUM-mode result, one dot per device.
  ArrayMeta v{
      {6}, DType::kFloat32, Mode::kReplica, {ChunkSpec{0, {R(0, 3)}}, ChunkSpec{1, {R(3, 3)}}}};
  auto dot = PlanMatmul(v, v);
  ASSERT_TRUE(dot.ok()) << dot.status();
  EXPECT_TRUE(dot->a_vector && dot->b_vector);
  EXPECT_EQ(dot->result_shape, Shape{});
  EXPECT_EQ(dot->result_mode, Mode::kSum);
  ASSERT_EQ(dot->result_map.size(), 2u);
  EXPECT_TRUE(dot->result_map[0].box.empty());
  EXPECT_EQ(dot->a_blocks[1].box, (Box{R(0, 1), R(3, 3)}));  // a unit row axis before its own
  EXPECT_EQ(dot->b_blocks[1].box, (Box{R(3, 3), R(0, 1)}));  // a unit column axis after
  // matrix @ vector: (8,), rows where the matrix's are.
  auto mv = PlanMatmul(RowSplit(8, 6, {0, 1}),
                       ArrayMeta{{6},
                                 DType::kFloat32,
                                 Mode::kReplica,
                                 {ChunkSpec{0, {R(0, 6)}}, ChunkSpec{1, {R(0, 6)}}}});
  ASSERT_TRUE(mv.ok()) << mv.status();
  EXPECT_EQ(mv->result_shape, Shape{8});
  EXPECT_EQ(mv->result_map[1].box, Box{R(4, 4)});
  // A vector of the wrong length is named as given.
  const absl::Status bad = PlanMatmul(v, RowSplit(5, 2, {0})).status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("(6,)"), std::string::npos) << bad;
}

TEST(MatmulPlannerTest, ShapesThatDoNotAlignAreRefused) {
  const ArrayMeta a = RowSplit(4, 6, {0});
  const ArrayMeta b = RowSplit(5, 2, {0});
  EXPECT_EQ(PlanMatmul(a, b).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace distarray
