// set_item inside programs writes into its target's buffers when the statement rebinds the
// target (u = set_item(u, ...)): the caller's input arrays must stay as they were, a value that
// reads the target must see its old elements, and the loop's result must match the host.
#include <random>

#include "distarray/graph.h"
#include "distarray/index_maps.h"
#include "tests/support/backend_fixture.h"
#include "tests/support/reference.h"

namespace distarray::testing {
namespace {

namespace g = graph;

class SetItemProgramTest : public BackendTest {};

v1::Statement SetItemStatement(const std::string& target, const std::string& source,
                               const std::vector<Index>& key, const v1::Operand& value) {
  v1::Statement s;
  s.set_target(target);
  v1::SetItemSpec* set = s.mutable_manipulate()->mutable_set_item();
  set->mutable_target()->set_variable(source);
  *set->mutable_key() = MakeIndexKey(key);
  *set->mutable_value() = value;
  return s;
}

v1::Operand Variable(const std::string& name) {
  v1::Operand o;
  o.set_variable(name);
  return o;
}

TEST_P(SetItemProgramTest, InputsStayAsTheyWereAndOutputsMatchTheHost) {
  std::mt19937_64 rng(21);
  const int64_t n = 12;
  const std::vector<float> start = RandomValues<float>(n, rng);
  std::vector<int> on;
  for (int d = 0; d < std::min(devices(), 2); ++d) on.push_back(d);
  ASSERT_OK_AND_ASSIGN(Array u, client().Upload<float>(start, {n}, {Split(1, 0, n, on)}));

  // u = set_item(u, [1:4], 7); w = set_item(u, [::-1], u)  (w reads u reversed while it is written)
  v1::Program program;
  program.add_inputs("u");
  v1::Operand seven;
  seven.mutable_scalar()->set_float_value(7);
  *program.add_statements() = SetItemStatement("u", "u", {Slice{1, 4}}, seven);
  *program.add_statements() = SetItemStatement("u", "u", {Slice{.step = -1}}, Variable("u"));
  program.add_outputs("u");
  ASSERT_OK_AND_ASSIGN(GraphRun run, client().RunGraph(program, {{"u", &u}}));

  std::vector<float> want = start;
  for (int i = 1; i < 4; ++i) want[i] = 7;
  const std::vector<float> before_reverse = want;
  for (int64_t i = 0; i < n; ++i) want[i] = before_reverse[n - 1 - i];
  EXPECT_EQ(*run.outputs.at("u").Download<float>(), want);
  EXPECT_EQ(*u.Download<float>(), start);  // the caller's array is untouched
}

TEST_P(SetItemProgramTest, AStencilLoopWritesItsCarriedValueInPlace) {
  std::mt19937_64 rng(22);
  const int64_t n = 40, sweeps = 25;
  const std::vector<float> start = RandomValues<float>(n, rng);
  std::vector<int> on;
  for (int d = 0; d < std::min(devices(), 2); ++d) on.push_back(d);
  ASSERT_OK_AND_ASSIGN(Array u, client().Upload<float>(start, {n}, {Split(1, 0, n, on)}));
  ASSERT_OK_AND_ASSIGN(Array i, client().Create({}, v1::DTYPE_INT32, {Replicated(0, on)}));
  g::ProgramBuilder p;
  g::Vars out = p.WhileLoop([sweeps](auto v) { return v[1] < static_cast<double>(sweeps); },
                            [](auto v) {
                              g::ProgramBuilder& b = v[0].builder();
                              const g::Var next = 0.5 * (b.GetItem(v[0], {Slice{.stop = -2}}) +
                                                         b.GetItem(v[0], {Slice{.start = 2}}));
                              return g::Vars{b.SetItem(v[0], {Slice{1, -1}}, next), v[1] + 1};
                            },
                            {p.Input("u"), p.Input("i")}, sweeps + 1);
  p.Output("u", out[0]);
  ASSERT_OK_AND_ASSIGN(GraphRun run, client().RunGraph(p.program(), {{"u", &u}, {"i", &i}}));
  EXPECT_EQ(run.iterations, sweeps);

  std::vector<double> host(start.begin(), start.end());
  for (int64_t k = 0; k < sweeps; ++k) {
    std::vector<double> next = host;
    for (int64_t x = 1; x < n - 1; ++x) next[x] = 0.5 * (host[x - 1] + host[x + 1]);
    host = next;
  }
  ASSERT_OK_AND_ASSIGN(std::vector<float> got, run.outputs.at("u").Download<float>());
  for (int64_t x = 0; x < n; ++x) EXPECT_NEAR(got[x], host[x], 1e-5) << "element " << x;
  EXPECT_EQ(*u.Download<float>(), start);
}

DISTARRAY_INSTANTIATE_BACKENDS(SetItemProgramTest);

}  // namespace
}  // namespace distarray::testing
