// tests/compiler/passes/dce_cse_test.cc — dead-code and common-subexpression elimination.
#include "compiler/passes/cse.h"
#include "compiler/passes/dce.h"

#include "tests/compiler/passes/pass_test_util.h"

namespace keel::passes {
namespace {

using namespace keel::passes::testing;  // NOLINT

TEST(DceTest, RemovesDeadChainsAndConstants) {
  ir::Graph g;
  ir::Value* x = g.AddInput("x", F32({4}));
  ir::Value* w = Const(g, "w", {4}, 1);
  ir::Node* live = g.AddNode("Relu", "live", {x}, 1);
  ir::Node* dead1 = g.AddNode("Mul", "dead1", {x, w}, 1);
  g.AddNode("Sigmoid", "dead2", {dead1->output(0)}, 1);
  g.AddOutput(live->output(0));
  size_t values_before = g.values().size();
  DcePass dce;
  ASSERT_TRUE(dce.Run(g).ok());
  EXPECT_EQ(g.num_nodes(), 1u);
  EXPECT_EQ(g.nodes()[0], live);
  EXPECT_EQ(g.values().size(), values_before - 3);  // two outputs + the weight
  EXPECT_TRUE(g.Verify(false).ok());
}

TEST(CseTest, MergesIdenticalNodesOnly) {
  ir::Graph g;
  ir::Value* x = g.AddInput("x", F32({4}));
  ir::Node* r1 = g.AddNode("Relu", "r1", {x}, 1);
  ir::Node* r2 = g.AddNode("Relu", "r2", {x}, 1);
  ir::Node* c1 = g.AddNode("Clip", "c1", {x}, 1);
  c1->attrs().Set("min", 0.0);
  c1->attrs().Set("max", 6.0);
  ir::Node* c2 = g.AddNode("Clip", "c2", {x}, 1);
  c2->attrs().Set("min", 0.0);
  c2->attrs().Set("max", 5.0);  // different attribute: not merged
  ir::Node* a1 = g.AddNode("Add", "a1", {r1->output(0), c1->output(0)}, 1);
  ir::Node* a2 = g.AddNode("Add", "a2", {r2->output(0), c2->output(0)}, 1);
  ir::Node* out = g.AddNode("Mul", "out", {a1->output(0), a2->output(0)}, 1);
  g.AddOutput(out->output(0));
  CsePass cse;
  ASSERT_TRUE(cse.Run(g).ok());
  auto h = Histogram(g);
  EXPECT_EQ(h["Relu"], 1);
  EXPECT_EQ(h["Clip"], 2);
  EXPECT_EQ(h["Add"], 2);  // a2 now reads r1 but c2 differs
  EXPECT_EQ(a2->input(0), r1->output(0));
  EXPECT_TRUE(g.Verify(false).ok());
}

TEST(CseTest, MergesEqualConstantsThenExpressions) {
  ir::Graph g;
  ir::Value* x = g.AddInput("x", F32({2}));
  ir::Value* k1 = g.AddConstant("k1", ops::MakeTensorF32({2}, {1, 2}));
  ir::Value* k2 = g.AddConstant("k2", ops::MakeTensorF32({2}, {1, 2}));
  ir::Value* k3 = g.AddConstant("k3", ops::MakeTensorF32({2}, {1, 3}));
  ir::Node* m1 = g.AddNode("Mul", "m1", {x, k1}, 1);
  ir::Node* m2 = g.AddNode("Mul", "m2", {x, k2}, 1);
  ir::Node* m3 = g.AddNode("Mul", "m3", {x, k3}, 1);
  ir::Node* s = g.AddNode("Add", "s", {m1->output(0), m2->output(0)}, 1);
  ir::Node* t = g.AddNode("Add", "t", {s->output(0), m3->output(0)}, 1);
  g.AddOutput(t->output(0));
  CsePass cse;
  ASSERT_TRUE(cse.Run(g).ok());
  EXPECT_EQ(Histogram(g)["Mul"], 2);
  EXPECT_EQ(s->input(0), s->input(1));
}

TEST(CseTest, KeepsGraphOutputs) {
  ir::Graph g;
  ir::Value* x = g.AddInput("x", F32({2}));
  ir::Node* r1 = g.AddNode("Relu", "r1", {x}, 1, {"y1"});
  ir::Node* r2 = g.AddNode("Relu", "r2", {x}, 1, {"y2"});
  g.AddOutput(r1->output(0));
  g.AddOutput(r2->output(0));
  CsePass cse;
  ASSERT_TRUE(cse.Run(g).ok());
  EXPECT_EQ(g.outputs()[1]->name(), "y2");
  EXPECT_TRUE(g.Verify(false).ok());
}

}  // namespace
}  // namespace keel::passes
