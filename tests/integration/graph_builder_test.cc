// The C++ SDK's program builder on its own (no daemon): the statements it traces, that bodies
// assign carried values without copies where nothing reads the old value, and that simultaneous
// assignments (a body returning its carried values swapped) stay correct.
#include <gtest/gtest.h>

#include "distarray/graph.h"

namespace distarray::testing {
namespace {

namespace g = graph;

int CountCopies(const google::protobuf::RepeatedPtrField<v1::Statement>& block) {
  int copies = 0;
  for (const v1::Statement& s : block) copies += s.has_copy() ? 1 : 0;
  return copies;
}

TEST(GraphBuilder, SeedLoopBodyNeedsNoCopy) {
  g::ProgramBuilder p;
  g::Var a = p.Input("a");
  g::Vars out = p.WhileLoop([](auto v) { return g::All(v[0] < 1000.0f); },
                            [](auto v) { return g::Vars{v[0] + 1.0f}; }, {a}, 100);
  p.Output("out", out[0]);
  const v1::Program& program = p.program();
  ASSERT_EQ(program.inputs_size(), 1);
  ASSERT_EQ(program.outputs(0), "out");
  // copy a (the loop's own variable), less, all (renamed to the condition), while, output copy
  // renamed away: the loop variable is read by nothing else, but it is the loop's, so the output
  // is a copy of it.
  const v1::Statement* loop = nullptr;
  for (const v1::Statement& s : program.statements()) {
    if (s.has_while_loop()) loop = &s;
  }
  ASSERT_NE(loop, nullptr);
  const auto& body = loop->while_loop().body();
  EXPECT_EQ(CountCopies(body), 0) << program.DebugString();
  ASSERT_EQ(body.size(), 3) << program.DebugString();  // add, less, all
  const std::string carried = body[0].target();
  EXPECT_EQ(body[0].elementwise().operands(0).variable(), carried);  // a = a + 1
  EXPECT_EQ(body[2].target(), loop->while_loop().condition());
  EXPECT_EQ(loop->while_loop().max_iterations(), 100);
}

TEST(GraphBuilder, SwappedCarriedValuesAreStagedFirst) {
  g::ProgramBuilder p;
  g::Var x = p.Input("x"), y = p.Input("y");
  g::Vars out = p.WhileLoop([](auto v) { return g::All(v[0] < 10.0); },
                            [](auto v) {
                              return g::Vars{v[1], v[0]};
                            },
                            {x, y}, 5);
  p.Output("x", out[0]);
  p.Output("y", out[1]);
  const v1::Statement* loop = nullptr;
  for (const v1::Statement& s : p.program().statements()) {
    if (s.has_while_loop()) loop = &s;
  }
  ASSERT_NE(loop, nullptr);
  const auto& body = loop->while_loop().body();
  const std::string vx = out[0].name(), vy = out[1].name();
  // Whatever the statements, running them must give x' = y, y' = x: simulate the copies.
  std::map<std::string, std::string> env{{vx, "X"}, {vy, "Y"}};
  for (const v1::Statement& s : body) {
    if (s.has_copy()) env[s.target()] = env.at(s.copy());
  }
  EXPECT_EQ(env[vx], "Y") << p.program().DebugString();
  EXPECT_EQ(env[vy], "X") << p.program().DebugString();
}

TEST(GraphBuilder, ReadsOfTheOldValueKeepACopy) {
  // body: t = v + 1; u = v * 2 (reads the old v); returns {t, u}: t cannot be renamed to v
  // before u is computed.
  g::ProgramBuilder p;
  g::Var a = p.Input("a"), b = p.Input("b");
  g::Vars out = p.WhileLoop([](auto v) { return g::All(v[0] < 10.0); },
                            [](auto v) {
                              g::Var t = v[0] + 1.0;
                              g::Var u = v[0] * 2.0;
                              return g::Vars{t, u};
                            },
                            {a, b}, 5);
  p.Output("a", out[0]);
  const v1::Statement* loop = nullptr;
  for (const v1::Statement& s : p.program().statements()) {
    if (s.has_while_loop()) loop = &s;
  }
  ASSERT_NE(loop, nullptr);
  const auto& body = loop->while_loop().body();
  // The statement computing v * 2 must still read v's old value: no statement before it assigns
  // v.
  const std::string v = out[0].name();
  for (const v1::Statement& s : body) {
    if (s.has_elementwise() && s.elementwise().op() == v1::ELEMENTWISE_OP_MULTIPLY) break;
    EXPECT_NE(s.target(), v) << p.program().DebugString();
  }
}

TEST(GraphBuilder, CondAssignsBothBranchesToTheSameVariables) {
  g::ProgramBuilder p;
  g::Var a = p.Input("a");
  g::Vars r = p.Cond(
      g::Any(a > 0.0), [](auto v) { return g::Vars{v[0] * 2.0}; },
      [](auto v) { return g::Vars{v[0] - 1.0}; }, {a});
  p.Output("r", r[0]);
  const v1::Statement* branch = nullptr;
  for (const v1::Statement& s : p.program().statements()) {
    if (s.has_if_else()) branch = &s;
  }
  ASSERT_NE(branch, nullptr);
  ASSERT_EQ(branch->if_else().then_body_size(), 1);
  ASSERT_EQ(branch->if_else().else_body_size(), 1);
  EXPECT_EQ(branch->if_else().then_body(0).target(), r[0].name());
  EXPECT_EQ(branch->if_else().else_body(0).target(), r[0].name());
}

}  // namespace
}  // namespace distarray::testing
