// A program's create statement (Statement.create) through the C++ SDK's ProgramBuilder::Create:
// the values match CreateArray's for the same fill in another layout (the fills depend only on
// each element's global index and the seed), a create inside a recorded loop is made anew each
// iteration, and a program of creates alone needs no input.
#include <random>
#include <vector>

#include "distarray/array_functions.h"
#include "distarray/graph.h"
#include "distarray/index_maps.h"
#include "tests/support/backend_fixture.h"

namespace distarray::testing {
namespace {

namespace g = distarray::graph;

class CreateStatementTest : public BackendTest {};

TEST_P(CreateStatementTest, FillsMatchCreateArrayInAnyLayout) {
  const std::vector<int> on = {dev(0), dev(1), dev(2)};
  const std::vector<int64_t> shape = {37, 11};
  const v1::IndexMap rows = Split(2, 0, 37, on), columns = Split(2, 1, 11, {dev(1), dev(0)});
  struct Case {
    const char* name;
    v1::DType dtype;
    v1::Fill fill;
  };
  for (const Case& c : {Case{"arange", v1::DTYPE_FLOAT64, fills::Arange(-3, 0.5)},
                        Case{"normal", v1::DTYPE_FLOAT32, fills::Normal(1, 2, 7)},
                        Case{"integers", v1::DTYPE_INT64, fills::Integers(-5, 9, 8)},
                        Case{"full", v1::DTYPE_INT32, fills::Full(42)},
                        Case{"eye", v1::DTYPE_FLOAT64, fills::Eye(2)}}) {
    g::ProgramBuilder p;
    p.Output("x", p.Create(shape, c.dtype, rows, c.fill));
    ASSERT_OK_AND_ASSIGN(GraphRun run, client().RunGraph(p.program(), {}));
    ASSERT_OK_AND_ASSIGN(Array want, client().Create(shape, c.dtype, {columns}, c.fill));
    const Array& got = run.outputs.at("x");
    EXPECT_EQ(got.info().dtype(), c.dtype) << c.name;
    EXPECT_EQ(got.info().index_map().chunks_size(), 3) << c.name << ": the layout asked for";
    ASSERT_OK_AND_ASSIGN(Array got64, AsType(got, v1::DTYPE_FLOAT64));
    ASSERT_OK_AND_ASSIGN(Array want64, AsType(want, v1::DTYPE_FLOAT64));
    EXPECT_EQ(*got64.Download<double>(), *want64.Download<double>()) << c.name;
  }
}

// x = 0; while x[0] < 5: x = x + ones, the ones made in the body every iteration, over a layout
// split across devices.
TEST_P(CreateStatementTest, CreateInARecordedLoopBody) {
  const int64_t n = 24;
  const v1::IndexMap map = Split(1, 0, n, {dev(0), dev(1)});
  g::ProgramBuilder p;
  const g::Var zeros = p.Create({n}, v1::DTYPE_FLOAT32, map);
  const g::Vars out =
      p.WhileLoop([](std::span<const g::Var> v) { return g::All(v[0] < 5.0); },
                  [&](std::span<const g::Var> v) {
                    return g::Vars{v[0] + p.Create({n}, v1::DTYPE_FLOAT32, map, fills::Ones())};
                  },
                  {zeros}, 100);
  p.Output("x", out[0]);
  ASSERT_OK_AND_ASSIGN(GraphRun run, client().RunGraph(p.program(), {}));
  EXPECT_EQ(*run.outputs.at("x").Download<float>(), std::vector<float>(n, 5.0f));
}

DISTARRAY_INSTANTIATE_BACKENDS(CreateStatementTest);

}  // namespace
}  // namespace distarray::testing
