// Zero-size arrays (an axis of length 0) end to end through the SDK, as NumPy has them: creation
// in any layout (the normalized map has no chunks), uploads and downloads of zero bytes,
// elementwise ops and their broadcasting, reductions (the identity of an empty reduction, NaN for
// mean, INVALID_ARGUMENT for max, min, argmax and argmin), matmul with an empty shared axis (zeros)
// or an empty result, the indexing and shape ops, reshard and change_mode, and the same ops as
// program statements; and the refusals.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "distarray/graph.h"
#include "distarray/indexing.h"
#include "tests/support/backend_fixture.h"
#include "tests/support/compute_reference.h"

namespace distarray::testing {
namespace {

namespace g = distarray::graph;

class ZeroSizeTest : public BackendTest {
 protected:
  // The layouts a client may give a zero-size array: the whole of it on one device (unset
  // slices), a split of its first axis over two devices, and no chunk at all.
  std::vector<std::pair<std::string, v1::IndexMap>> Maps(const Shape& shape) const {
    const int rank = static_cast<int>(shape.size());
    std::vector<std::pair<std::string, v1::IndexMap>> maps = {
        {"on one device", OnDevice(rank, dev(1))}, {"no chunks", v1::IndexMap()}};
    if (rank > 0) maps.emplace_back("rows split", Split(rank, 0, shape[0], {dev(0), dev(1)}));
    return maps;
  }

  absl::StatusOr<Array> Empty(const Shape& shape, v1::DType dtype = v1::DTYPE_FLOAT64) const {
    return client().Create(shape, dtype, ArrayOpts(OnDevice(static_cast<int>(shape.size()), 0)));
  }

  absl::StatusOr<Array> Values(const Shape& shape, const std::vector<double>& values,
                               const v1::IndexMap& map) const {
    return client().Upload<double>(std::span<const double>(values), shape, ArrayOpts(map));
  }
};

std::string ShapeText(const Shape& shape) {
  return absl::StrCat("(", absl::StrJoin(shape, ", "), ")");
}

// A zero-size result: its shape, no chunks, no bytes on any device, and nothing to download.
void ExpectEmpty(const Array& a, const Shape& shape, const std::string& what) {
  EXPECT_EQ(a.shape(), shape) << what;
  EXPECT_EQ(a.info().index_map().chunks_size(), 0) << what;
  EXPECT_TRUE(a.info().bytes_per_device().empty()) << what;
  std::string bytes = "x";
  ASSERT_OK(a.client().DownloadBytes(a.handle(), {}, &bytes));
  EXPECT_TRUE(bytes.empty()) << what;
}

void ExpectDoubles(const Array& a, const Shape& shape, const std::vector<double>& want,
                   const std::string& what) {
  EXPECT_EQ(a.shape(), shape) << what;
  ASSERT_OK_AND_ASSIGN(HostArray got, DownloadHost(a));
  ASSERT_EQ(got.values.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(static_cast<double>(got.values[i]))) << what << " [" << i << "]";
    } else {
      EXPECT_EQ(static_cast<double>(got.values[i]), want[i]) << what << " [" << i << "]";
    }
  }
}

TEST_P(ZeroSizeTest, CreateUploadDownloadInEveryLayout) {
  for (const Shape& shape : {Shape{0}, Shape{3, 0}, Shape{0, 3}, Shape{2, 0, 4}}) {
    for (const auto& [name, map] : Maps(shape)) {
      const std::string what = absl::StrCat(ShapeText(shape), " ", name);
      for (v1::DType dtype : {v1::DTYPE_FLOAT64, v1::DTYPE_INT32, v1::DTYPE_BOOL}) {
        ASSERT_OK_AND_ASSIGN(Array a, client().Create(shape, dtype, ArrayOpts(map)));
        ASSERT_NO_FATAL_FAILURE(ExpectEmpty(a, shape, what));
        EXPECT_EQ(a.size(), 0);
      }
      ASSERT_OK_AND_ASSIGN(Array up, Values(shape, {}, map));
      ASSERT_NO_FATAL_FAILURE(ExpectEmpty(up, shape, what + " uploaded"));
      ASSERT_OK_AND_ASSIGN(std::vector<double> down, up.Download<double>());
      EXPECT_TRUE(down.empty()) << what;
      // An upload into it carries no bytes either; one byte more is refused.
      ASSERT_OK(up.Write<double>(std::span<const double>()));
      const double one = 1;
      EXPECT_TRUE(StatusIs(up.Write<double>(std::span<const double>(&one, 1)),
                           absl::StatusCode::kInvalidArgument, {"data"}))
          << what;
      ASSERT_OK_AND_ASSIGN(Array described, client().Open(up.handle()));
      EXPECT_EQ(described.info().index_map().chunks_size(), 0) << what;
    }
  }
  // Every fill, generated ones included, gives nothing to generate: arange's ends never exist
  // (0 - 1 is outside uint8), linspace has no step, eye and tri take any matrix.
  std::vector<v1::Fill> fills(6);
  fills[0].mutable_arange()->set_step(1);
  fills[1].mutable_linspace()->set_stop(1);
  fills[2].mutable_eye()->set_k(1);
  fills[3].mutable_tri();
  fills[4].mutable_uniform()->set_high(1);
  fills[5].mutable_full()->mutable_value()->set_int_value(7);
  for (const v1::Fill& fill : fills) {
    ASSERT_OK_AND_ASSIGN(
        Array a, client().Create({0, 3}, v1::DTYPE_UINT8, ArrayOpts(OnDevice(2, dev(0))), fill));
    ASSERT_NO_FATAL_FAILURE(ExpectEmpty(a, {0, 3}, fill.ShortDebugString()));
  }
  // A region of a zero-size array selects nothing; one outside it is still OUT_OF_RANGE.
  ASSERT_OK_AND_ASSIGN(Array a, Empty({3, 0}));
  std::string bytes;
  ASSERT_OK(client().DownloadBytes(a.handle(), MakeRegion({{1, 2}, {}}), &bytes));
  EXPECT_TRUE(bytes.empty());
  EXPECT_TRUE(StatusIs(client().DownloadBytes(a.handle(), MakeRegion({{0, 4}, {}}), &bytes),
                       absl::StatusCode::kOutOfRange, {"region.slices[0]"}));
}

TEST_P(ZeroSizeTest, ReshardAndChangeMode) {
  ASSERT_OK_AND_ASSIGN(Array a, Empty({0, 5}));
  ASSERT_OK_AND_ASSIGN(Array split, a.Reshard(Split(2, 1, 5, {dev(0), dev(1)})));
  ASSERT_NO_FATAL_FAILURE(ExpectEmpty(split, {0, 5}, "resharded"));
  ASSERT_OK_AND_ASSIGN(Array sum, a.ChangeMode(v1::MODE_SUM));
  EXPECT_EQ(sum.info().mode(), v1::MODE_SUM);
  ASSERT_NO_FATAL_FAILURE(ExpectEmpty(sum, {0, 5}, "in SUM mode"));
  ASSERT_OK(a.ReshardInPlace(v1::IndexMap()));
  ASSERT_NO_FATAL_FAILURE(ExpectEmpty(a, {0, 5}, "resharded in place"));
}

TEST_P(ZeroSizeTest, ElementwiseBroadcastsAsNumPy) {
  ASSERT_OK_AND_ASSIGN(Array e, Empty({0}));
  ASSERT_OK_AND_ASSIGN(Array e3, Empty({0, 3}));
  ASSERT_OK_AND_ASSIGN(Array one, Values({1}, {2}, OnDevice(1, dev(1))));
  ASSERT_OK_AND_ASSIGN(Array two, Values({2}, {1, 2}, Split(1, 0, 2, {dev(0), dev(1)})));
  ASSERT_OK_AND_ASSIGN(Array row, Values({1, 3}, {1, 2, 3}, Replicated(2, {dev(0), dev(1)})));
  ASSERT_OK_AND_ASSIGN(Array sum, e + one);
  ASSERT_NO_FATAL_FAILURE(ExpectEmpty(sum, {0}, "(0,) + (1,)"));
  ASSERT_OK_AND_ASSIGN(Array flipped, one + e);
  ASSERT_NO_FATAL_FAILURE(ExpectEmpty(flipped, {0}, "(1,) + (0,)"));
  ASSERT_OK_AND_ASSIGN(Array scaled, e3 * 2.0);
  ASSERT_NO_FATAL_FAILURE(ExpectEmpty(scaled, {0, 3}, "(0, 3) * 2"));
  // A non-empty operand stretched into a zero-size result moves nothing.
  ASSERT_OK_AND_ASSIGN(Array rows, row - e3);
  ASSERT_NO_FATAL_FAILURE(ExpectEmpty(rows, {0, 3}, "(1, 3) - (0, 3)"));
  ASSERT_OK_AND_ASSIGN(Array less, Ufunc(v1::ELEMENTWISE_OP_LESS, {e3, row}));
  EXPECT_EQ(less.info().dtype(), v1::DTYPE_BOOL);
  ASSERT_NO_FATAL_FAILURE(ExpectEmpty(less, {0, 3}, "(0, 3) < (1, 3)"));
  ASSERT_OK_AND_ASSIGN(Array cast, AsType(e3, v1::DTYPE_INT16));
  EXPECT_EQ(cast.info().dtype(), v1::DTYPE_INT16);
  ASSERT_NO_FATAL_FAILURE(ExpectEmpty(cast, {0, 3}, "astype"));
  ASSERT_OK_AND_ASSIGN(Array where, Ufunc(v1::ELEMENTWISE_OP_WHERE, {less, 1.0, e3}));
  ASSERT_NO_FATAL_FAILURE(ExpectEmpty(where, {0, 3}, "where"));
  // out= a zero-size array, and a result index map for a zero-size result.
  v1::ElementwiseRequest into;
  into.mutable_spec()->set_op(v1::ELEMENTWISE_OP_ADD);
  *into.mutable_spec()->add_operands() = e3.AsOperand();
  *into.mutable_spec()->add_operands() = row.AsOperand();
  into.mutable_spec()->set_out(e3.handle());
  ASSERT_OK_AND_ASSIGN(Array out, client().Elementwise(into));
  ASSERT_NO_FATAL_FAILURE(ExpectEmpty(out, {0, 3}, "out="));
  into.mutable_spec()->clear_out();
  *into.mutable_spec()->mutable_result_index_map() = Split(2, 1, 3, {dev(0), dev(1)});
  ASSERT_OK_AND_ASSIGN(Array mapped, client().Elementwise(into));
  ASSERT_NO_FATAL_FAILURE(ExpectEmpty(mapped, {0, 3}, "result_index_map"));
  // (0,) against (2,) does not broadcast, as in NumPy.
  EXPECT_TRUE(StatusIs((e + two).status(), absl::StatusCode::kInvalidArgument,
                       {"spec.operands[1]", "(2,)", "does not broadcast"}));
}

TEST_P(ZeroSizeTest, ReductionsOfNothingAreTheIdentity) {
  ASSERT_OK_AND_ASSIGN(Array a, Empty({3, 0}));
  const double nan = std::nan("");
  struct Case {
    v1::ReduceOp op;
    std::vector<double> along_empty;  // over axis 1: three empty rows
  };
  for (const Case& c : std::vector<Case>{{v1::REDUCE_OP_SUM, {0, 0, 0}},
                                         {v1::REDUCE_OP_PROD, {1, 1, 1}},
                                         {v1::REDUCE_OP_ANY, {0, 0, 0}},
                                         {v1::REDUCE_OP_ALL, {1, 1, 1}},
                                         {v1::REDUCE_OP_MEAN, {nan, nan, nan}}}) {
    const std::string what = ReduceName(c.op);
    for (bool combine : {false, true}) {
      ASSERT_OK_AND_ASSIGN(Array r, Reduce(a, c.op, {1}, false, combine));
      EXPECT_EQ(r.info().mode(), v1::MODE_REPLICA) << what;
      ASSERT_NO_FATAL_FAILURE(ExpectDoubles(r, {3}, c.along_empty, what + " over axis 1"));
    }
    ASSERT_OK_AND_ASSIGN(Array all, Reduce(a, c.op));
    ASSERT_NO_FATAL_FAILURE(ExpectDoubles(all, {}, {c.along_empty[0]}, what + " over all"));
    ASSERT_OK_AND_ASSIGN(Array kept, Reduce(a, c.op, {}, /*keepdims=*/true));
    ASSERT_NO_FATAL_FAILURE(ExpectDoubles(kept, {1, 1}, {c.along_empty[0]}, what + " keepdims"));
    // Along the non-empty axis of a zero-size array: a zero-size result.
    ASSERT_OK_AND_ASSIGN(Array none, Reduce(a, c.op, {0}));
    ASSERT_NO_FATAL_FAILURE(ExpectEmpty(none, {0}, what + " over axis 0"));
  }
  // NumPy's result dtypes hold: sum of int32 is int64, mean of float32 stays float32, any bool.
  ASSERT_OK_AND_ASSIGN(Array ints, Empty({0}, v1::DTYPE_INT32));
  ASSERT_OK_AND_ASSIGN(Array isum, Reduce(ints, v1::REDUCE_OP_SUM));
  EXPECT_EQ(isum.info().dtype(), v1::DTYPE_INT64);
  EXPECT_EQ(isum.Download<int64_t>().value(), std::vector<int64_t>{0});
  ASSERT_OK_AND_ASSIGN(Array floats, Empty({0}, v1::DTYPE_FLOAT32));
  ASSERT_OK_AND_ASSIGN(Array fmean, Reduce(floats, v1::REDUCE_OP_MEAN));
  EXPECT_EQ(fmean.info().dtype(), v1::DTYPE_FLOAT32);
  EXPECT_TRUE(std::isnan(fmean.Download<float>().value().at(0)));
  ASSERT_OK_AND_ASSIGN(Array fany, Reduce(floats, v1::REDUCE_OP_ANY));
  EXPECT_EQ(fany.info().dtype(), v1::DTYPE_BOOL);
  // max, min, argmax and argmin over no element have no identity: INVALID_ARGUMENT, as NumPy's
  // ValueError; over a non-empty axis their result is zero-size.
  for (v1::ReduceOp op :
       {v1::REDUCE_OP_MAX, v1::REDUCE_OP_MIN, v1::REDUCE_OP_ARGMAX, v1::REDUCE_OP_ARGMIN}) {
    const std::string what = ReduceName(op);
    EXPECT_TRUE(StatusIs(Reduce(a, op, {1}).status(), absl::StatusCode::kInvalidArgument,
                         {"spec.axes", "no identity"}))
        << what;
    EXPECT_TRUE(StatusIs(Reduce(a, op).status(), absl::StatusCode::kInvalidArgument,
                         {"spec.axes", "no identity"}))
        << what;
    ASSERT_OK_AND_ASSIGN(Array none, Reduce(a, op, {0}));
    ASSERT_NO_FATAL_FAILURE(ExpectEmpty(none, {0}, what + " over axis 0"));
  }
}

TEST_P(ZeroSizeTest, MatmulWithAnEmptyAxis) {
  // k = 0: a sum over no terms, zeros.
  ASSERT_OK_AND_ASSIGN(Array a, Empty({2, 0}));
  ASSERT_OK_AND_ASSIGN(Array b, Empty({0, 3}));
  ASSERT_OK_AND_ASSIGN(Array zeros, Matmul(a, b));
  EXPECT_EQ(zeros.info().mode(), v1::MODE_REPLICA);
  ASSERT_NO_FATAL_FAILURE(ExpectDoubles(zeros, {2, 3}, std::vector<double>(6, 0), "(2,0)@(0,3)"));
  v1::MatmulRequest mapped;
  *mapped.mutable_spec()->mutable_a() = a.AsOperand();
  *mapped.mutable_spec()->mutable_b() = b.AsOperand();
  *mapped.mutable_spec()->mutable_result_index_map() = Split(2, 0, 2, {dev(0), dev(1)});
  ASSERT_OK_AND_ASSIGN(Array split, client().Matmul(mapped));
  EXPECT_EQ(split.info().index_map().chunks_size(), 2);
  ASSERT_NO_FATAL_FAILURE(
      ExpectDoubles(split, {2, 3}, std::vector<double>(6, 0), "(2,0)@(0,3) split"));
  ASSERT_OK_AND_ASSIGN(Array v, Empty({0}));
  ASSERT_OK_AND_ASSIGN(Array dot, Matmul(v, v));
  ASSERT_NO_FATAL_FAILURE(ExpectDoubles(dot, {}, {0}, "(0,)@(0,)"));
  // m or n = 0: an empty result.
  ASSERT_OK_AND_ASSIGN(Array m4, Values({2, 4}, std::vector<double>(8, 1), OnDevice(2, dev(1))));
  ASSERT_OK_AND_ASSIGN(Array e04, Empty({0, 4}));
  ASSERT_OK_AND_ASSIGN(Array e40, Empty({4, 0}));
  ASSERT_OK_AND_ASSIGN(Array m43, Values({4, 3}, std::vector<double>(12, 1), OnDevice(2, dev(0))));
  ASSERT_OK_AND_ASSIGN(Array rows, Matmul(e04, m43));
  ASSERT_NO_FATAL_FAILURE(ExpectEmpty(rows, {0, 3}, "(0,4)@(4,3)"));
  ASSERT_OK_AND_ASSIGN(Array cols, Matmul(m4, e40));
  ASSERT_NO_FATAL_FAILURE(ExpectEmpty(cols, {2, 0}, "(2,4)@(4,0)"));
  ASSERT_OK_AND_ASSIGN(Array stack, Empty({0, 2, 4}));
  ASSERT_OK_AND_ASSIGN(Array batched, Matmul(stack, m43));
  ASSERT_NO_FATAL_FAILURE(ExpectEmpty(batched, {0, 2, 3}, "(0,2,4)@(4,3)"));
  // Shapes that do not align are still refused.
  EXPECT_TRUE(StatusIs(Matmul(a, m43).status(), absl::StatusCode::kInvalidArgument,
                       {"spec.b", "not aligned"}));
}

TEST_P(ZeroSizeTest, IndexingAndShapes) {
  std::vector<double> values(48);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i);
  ASSERT_OK_AND_ASSIGN(Array full, Values({8, 6}, values, Split(2, 0, 8, {dev(0), dev(1)})));
  // Keys selecting nothing from a non-empty array.
  ASSERT_OK_AND_ASSIGN(Array none, GetItem(full, {Slice{5, 2}}));
  ASSERT_NO_FATAL_FAILURE(ExpectEmpty(none, {0, 6}, "a[5:2]"));
  ASSERT_OK_AND_ASSIGN(Array dropped, GetItem(full, {Slice{3, 3}, 0}));
  ASSERT_NO_FATAL_FAILURE(ExpectEmpty(dropped, {0}, "a[3:3, 0]"));
  ASSERT_OK_AND_ASSIGN(Array listed, GetItem(full, {Positions{}}));
  ASSERT_NO_FATAL_FAILURE(ExpectEmpty(listed, {0, 6}, "a[[]]"));
  // Keys into a zero-size array.
  ASSERT_OK_AND_ASSIGN(Array e, Empty({3, 0}));
  ASSERT_OK_AND_ASSIGN(Array row, GetItem(e, {1}));
  ASSERT_NO_FATAL_FAILURE(ExpectEmpty(row, {0}, "e[1]"));
  ASSERT_OK_AND_ASSIGN(Array rows, GetItem(e, {Slice{1, std::nullopt}, NewAxis()}));
  ASSERT_NO_FATAL_FAILURE(ExpectEmpty(rows, {2, 1, 0}, "e[1:, None]"));
  EXPECT_TRUE(StatusIs(GetItem(e, {Slice{}, 0}).status(), absl::StatusCode::kOutOfRange,
                       {"spec.get_item.key.items[1]", "size 0"}));
  // set_item of an empty region changes nothing; into a zero-size target too.
  ASSERT_OK(full.SetItem({Slice{4, 4}}, -1.0));
  ASSERT_NO_FATAL_FAILURE(ExpectDoubles(full, {8, 6}, values, "after a[4:4] = -1"));
  ASSERT_OK(e.SetItem({Slice{}}, 2.0));
  ASSERT_NO_FATAL_FAILURE(ExpectEmpty(e, {3, 0}, "e[:] = 2"));
  ASSERT_OK_AND_ASSIGN(Array e6, Empty({0, 6}));
  ASSERT_OK(full.SetItem({Slice{2, 2}}, e6));
  ASSERT_NO_FATAL_FAILURE(ExpectDoubles(full, {8, 6}, values, "after a[2:2] = (0, 6)"));
  ASSERT_OK_AND_ASSIGN(Array six, GetItem(full, {0}));
  EXPECT_TRUE(StatusIs(full.SetItem({Slice{2, 2}, Slice{0, 0}}, six),
                       absl::StatusCode::kInvalidArgument, {"does not broadcast"}));
  // permute_dims, reshape, broadcast_to, concat and stack.
  ASSERT_OK_AND_ASSIGN(Array t, PermuteDims(e, {1, 0}));
  ASSERT_NO_FATAL_FAILURE(ExpectEmpty(t, {0, 3}, "e.T"));
  ASSERT_OK_AND_ASSIGN(Array r, Reshape(e, {0, 5, 7}));
  ASSERT_NO_FATAL_FAILURE(ExpectEmpty(r, {0, 5, 7}, "reshape to (0, 5, 7)"));
  ASSERT_OK_AND_ASSIGN(Array inferred, Reshape(e, {-1, 3}));
  ASSERT_NO_FATAL_FAILURE(ExpectEmpty(inferred, {0, 3}, "reshape to (-1, 3)"));
  EXPECT_TRUE(StatusIs(Reshape(e, {-1, 0}).status(), absl::StatusCode::kInvalidArgument,
                       {"spec.reshape.shape", "cannot infer"}));
  EXPECT_TRUE(StatusIs(Reshape(full, {0, 48}).status(), absl::StatusCode::kInvalidArgument,
                       {"spec.reshape.shape", "cannot reshape"}));
  ASSERT_OK_AND_ASSIGN(Array one, Values({1}, {4}, OnDevice(1, dev(1))));
  ASSERT_OK_AND_ASSIGN(Array b0, BroadcastTo(one, {0}));
  ASSERT_NO_FATAL_FAILURE(ExpectEmpty(b0, {0}, "broadcast (1,) to (0,)"));
  ASSERT_OK_AND_ASSIGN(Array b30, BroadcastTo(row, {3, 0}));
  ASSERT_NO_FATAL_FAILURE(ExpectEmpty(b30, {3, 0}, "broadcast (0,) to (3, 0)"));
  ASSERT_OK_AND_ASSIGN(Array pair, Values({2}, {1, 2}, OnDevice(1, dev(0))));
  EXPECT_TRUE(StatusIs(BroadcastTo(pair, {0}).status(), absl::StatusCode::kInvalidArgument,
                       {"spec.broadcast_to.shape", "does not broadcast"}));
  ASSERT_OK_AND_ASSIGN(Array joined, Concat({e6, full, e6}, 0));
  ASSERT_NO_FATAL_FAILURE(ExpectDoubles(joined, {8, 6}, values, "concat (0,6), (8,6), (0,6)"));
  ASSERT_OK_AND_ASSIGN(Array sideways, Concat({e, e}, 1));
  ASSERT_NO_FATAL_FAILURE(ExpectEmpty(sideways, {3, 0}, "concat (3,0), (3,0) along 1"));
  ASSERT_OK_AND_ASSIGN(Array stacked, Stack({row, row}, 0));
  ASSERT_NO_FATAL_FAILURE(ExpectEmpty(stacked, {2, 0}, "stack two (0,)"));
  EXPECT_TRUE(StatusIs(Concat({e, e6}, 0).status(), absl::StatusCode::kInvalidArgument,
                       {"spec.concat.sources[1]", "does not match"}));
}

TEST_P(ZeroSizeTest, SortAndSearchSorted) {
  ASSERT_OK_AND_ASSIGN(Array e, Empty({3, 0}));
  for (int32_t axis : {0, 1}) {
    ASSERT_OK_AND_ASSIGN(Array sorted, Sort(e, axis));
    ASSERT_NO_FATAL_FAILURE(ExpectEmpty(sorted, {3, 0}, absl::StrCat("sort along ", axis)));
    ASSERT_OK_AND_ASSIGN(Array order, Argsort(e, axis, /*descending=*/true));
    EXPECT_EQ(order.info().dtype(), v1::DTYPE_INT64);
    ASSERT_NO_FATAL_FAILURE(ExpectEmpty(order, {3, 0}, absl::StrCat("argsort along ", axis)));
  }
  // Into no elements every value goes at 0; no value gives no position.
  ASSERT_OK_AND_ASSIGN(Array none, Empty({0}));
  ASSERT_OK_AND_ASSIGN(Array values,
                       Values({2, 2}, {3, -1, 0, 7}, Split(2, 0, 2, {dev(0), dev(1)})));
  for (bool right : {false, true}) {
    ASSERT_OK_AND_ASSIGN(Array at, SearchSorted(none, values, right));
    ASSERT_NO_FATAL_FAILURE(ExpectDoubles(at, {2, 2}, {0, 0, 0, 0}, "searchsorted into (0,)"));
  }
  ASSERT_OK_AND_ASSIGN(Array haystack, Values({3}, {1, 2, 3}, OnDevice(1, dev(1))));
  ASSERT_OK_AND_ASSIGN(Array nothing, SearchSorted(haystack, none));
  ASSERT_NO_FATAL_FAILURE(ExpectEmpty(nothing, {0}, "searchsorted of (0,)"));
}

// The same ops as program statements, eagerly and recorded: zero-size values flow through a
// program like any other, and a reduction over them gives its identity.
TEST_P(ZeroSizeTest, ProgramStatements) {
  g::ProgramBuilder p;
  const g::Var x = p.Input("x");
  const g::Var y = p.Input("y");
  const g::Var sum = x + y;
  const g::Var total = p.Reduce(sum, v1::REDUCE_OP_SUM, {0});
  const g::Var prod = p.Reduce(sum, v1::REDUCE_OP_PROD, {0});
  const g::Var picked = g::GetItem(y, {Slice{2, 2}});
  const g::Var grown = g::Reshape(x, {3, 0});
  const g::Var empty_value = x * 2.0;
  p.ValueOutput("empty", empty_value);
  p.Output("sum", sum);
  p.Output("total", total);
  p.Output("prod", prod);
  p.Output("picked", picked);
  p.Output("grown", grown);
  for (const v1::IndexMap& map : {OnDevice(2, dev(0)), Split(2, 1, 3, {dev(0), dev(1)})}) {
    SCOPED_TRACE(map.ShortDebugString());
    ASSERT_OK_AND_ASSIGN(Array x_array, Empty({0, 3}));
    ASSERT_OK_AND_ASSIGN(Array y_array, Values({1, 3}, {1, 2, 3}, map));
    for (int run_index = 0; run_index < 2; ++run_index) {
      ASSERT_OK_AND_ASSIGN(GraphRun run,
                           client().RunGraph(p.program(), {{"x", &x_array}, {"y", &y_array}}));
      ASSERT_NO_FATAL_FAILURE(ExpectEmpty(run.outputs.at("sum"), {0, 3}, "x + y"));
      ASSERT_NO_FATAL_FAILURE(ExpectDoubles(run.outputs.at("total"), {3}, {0, 0, 0}, "sum"));
      ASSERT_NO_FATAL_FAILURE(ExpectDoubles(run.outputs.at("prod"), {3}, {1, 1, 1}, "prod"));
      ASSERT_NO_FATAL_FAILURE(ExpectEmpty(run.outputs.at("picked"), {0, 3}, "y[2:2]"));
      ASSERT_NO_FATAL_FAILURE(ExpectEmpty(run.outputs.at("grown"), {3, 0}, "reshape"));
      // A zero-size value output: its shape and dtype, no bytes.
      const v1::Value& value = run.values.at("empty");
      EXPECT_EQ(value.shape().dims_size(), 2);
      EXPECT_EQ(value.shape().dims(0), 0);
      EXPECT_EQ(value.dtype(), v1::DTYPE_FLOAT64);
      EXPECT_TRUE(value.data().empty());
    }
  }
}

TEST_P(ZeroSizeTest, Refusals) {
  // Negative lengths, and a zero-size shape whose other axes would not fit (as NumPy counts).
  EXPECT_TRUE(
      StatusIs(client().Create({2, -1}, v1::DTYPE_FLOAT32, ArrayOpts(OnDevice(2, 0))).status(),
               absl::StatusCode::kInvalidArgument, {"spec.shape.dims[1]", "must not be negative"}));
  EXPECT_TRUE(StatusIs(client()
                           .Create({int64_t{1} << 40, 0, int64_t{1} << 40}, v1::DTYPE_FLOAT32,
                                   ArrayOpts(OnDevice(3, 0)))
                           .status(),
                       absl::StatusCode::kInvalidArgument, {"spec.shape", "too large"}));
  // A zero-size array's chunks are checked before they are dropped.
  EXPECT_TRUE(StatusIs(
      client()
          .Create({3, 0}, v1::DTYPE_FLOAT32, ArrayOpts(MakeIndexMap({MakeChunk(0, {{}, {0, 1}})})))
          .status(),
      absl::StatusCode::kInvalidArgument, {"spec.index_map.chunks[0].slices[1]", "out of bounds"}));
  EXPECT_TRUE(StatusIs(
      client()
          .Create({3, 0}, v1::DTYPE_FLOAT32, ArrayOpts(MakeIndexMap({MakeChunk(99, {{}, {}})})))
          .status(),
      absl::StatusCode::kInvalidArgument, {"spec.index_map.chunks[0].device"}));
  // A non-empty array still needs a chunk, and chunks that select something.
  EXPECT_TRUE(StatusIs(client().Create({3}, v1::DTYPE_FLOAT32, ArrayOpts(v1::IndexMap())).status(),
                       absl::StatusCode::kInvalidArgument,
                       {"spec.index_map", "at least one chunk"}));
}

DISTARRAY_INSTANTIATE_BACKENDS(ZeroSizeTest);

}  // namespace
}  // namespace distarray::testing
